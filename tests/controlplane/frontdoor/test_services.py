"""controlplane/frontdoor/services.py, `guard`: the guard on the demo feature table through the front door: no false
alarms, each failure class caught and localized, fail closed (DataHub's incidents, deprecations, contracts)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.urns import contract_urn
from controlplane.frontdoor.services import guard as guard_pipeline
from demo.generate import generate_eta_features
from demo.seed import FEATURE_TABLE, PIPELINE, UPSTREAMS
from guard import registry
from guard.findings import Verdict
from guard.kinds import FindingKind as K
from tests.support import DEMO_NOW, active_incident

NOW_MS = int((DEMO_NOW + timedelta(minutes=10)).timestamp() * 1000)


@pytest.fixture(scope="module")
def clean(demo_run) -> pd.DataFrame:
    ws, _ = demo_run
    return pd.read_parquet(ws.data / "eta_features.parquet")


@pytest.fixture(scope="module")
def newest_day(clean) -> pd.DataFrame:
    """The table's newest daily batch: what `guard --data BATCH` is given (a batch, judged against the cadence)."""
    return clean[clean["event_ts"] > clean["event_ts"].max() - pd.Timedelta(days=1)].reset_index(drop=True)


def guard_frame(ws, frame: pd.DataFrame, tmp_path, now_ms: int = NOW_MS):
    path = tmp_path / "candidate.parquet"
    frame.to_parquet(path, index=False)
    return guard_pipeline(ws, PIPELINE, path, now_ms)


def kinds(report) -> set[tuple[str, str | None]]:
    return {(f.kind.value, f.column) for f in report.blocking}


@pytest.mark.parametrize("seed", range(20))
def test_clean_data_from_any_seed_is_clean(demo_run, tmp_path, seed):
    ws, _ = demo_run
    frame = generate_eta_features(days=40, seed=100 + seed, anchor=DEMO_NOW)
    report = guard_frame(ws, frame, tmp_path)
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]
    assert report.blocking == ()
    # another seed's extremes may sit beyond the reference's batches: said as warnings a person may accept
    assert {f.kind.value for f in report.warnings} <= {"out_of_range", "drift", "new_category"}


def _rename(f):
    return f.rename(columns={"prep_time_min": "prep_minutes"})


def _as_strings(f):
    return f.assign(courier_load=f["courier_load"].astype(str))


def _nulls(f):
    return f.assign(rain_mm=f["rain_mm"].mask(np.arange(len(f)) % 5 == 0))


def _label_lag(f):
    late = f["event_ts"] > f["event_ts"].max() - pd.Timedelta(days=3)
    return f.assign(eta_minutes=f["eta_minutes"].mask(late), label_ts=f["label_ts"].mask(late))


def _stale(f):
    return f.assign(label_ts=f["label_ts"] - pd.Timedelta(days=3), event_ts=f["event_ts"] - pd.Timedelta(days=3))


def _casing(f):
    return f.assign(vehicle_type=f["vehicle_type"].str.upper())


def _new_category(f):
    return f.assign(vehicle_type=f["vehicle_type"].where(np.arange(len(f)) % 10 != 0, "drone"))


def _duplicates(f):
    return pd.concat([f, f.iloc[: len(f) // 10]], ignore_index=True)


def _leak(f):
    return f.assign(prep_time_min=f["eta_minutes"] * 0.5)


def _out_of_range(f):  # varied impossible loads; one repeated code (99 for 'unknown') is a sentinel instead
    return f.assign(courier_load=f["courier_load"].where(np.arange(len(f)) % 50 != 0, f["courier_load"] + 25))


def _sentinel(f):
    return f.assign(courier_load=f["courier_load"].where(np.arange(len(f)) % 50 != 0, 99))


CASES = [
    ("metres", lambda f: f.assign(distance_km=f["distance_km"] * 1000), (K.UNIT_MISMATCH, "distance_km")),
    ("miles", lambda f: f.assign(distance_km=f["distance_km"] / 1.609344), (K.UNIT_MISMATCH, "distance_km")),
    ("seconds", lambda f: f.assign(prep_time_min=f["prep_time_min"] * 60), (K.UNIT_MISMATCH, "prep_time_min")),
    ("inches", lambda f: f.assign(rain_mm=f["rain_mm"] / 25.4), (K.UNIT_MISMATCH, "rain_mm")),
    ("unexplained", lambda f: f.assign(distance_km=f["distance_km"] * 7.3), (K.SCALE_SHIFT, "distance_km")),
    ("rename", _rename, (K.COLUMN_RENAMED, "prep_time_min")),
    ("dropped", lambda f: f.drop(columns=["rain_mm"]), (K.COLUMN_MISSING, "rain_mm")),
    ("type drift", _as_strings, (K.TYPE_CHANGED, "courier_load")),
    ("null spike", _nulls, (K.NULL_LIMIT, "rain_mm")),
    ("label lag", _label_lag, (K.LABEL_IMMATURE, "eta_minutes")),
    ("stale labels", _stale, (K.LABEL_STALE, "label_ts")),
    ("volume drop", lambda f: f.iloc[::5], (K.VOLUME_DROP, None)),  # four shards of five lost
    ("duplicate load", _duplicates, (K.DUPLICATE_KEYS, "order_id")),
    ("casing", _casing, (K.CATEGORY_CASING, "vehicle_type")),
    ("new category", _new_category, (K.NEW_CATEGORY, "vehicle_type")),
    ("out of range", _out_of_range, (K.OUT_OF_RANGE, "courier_load")),
    ("sentinel", _sentinel, (K.SENTINEL, "courier_load")),
    ("leakage", _leak, (K.TARGET_LEAKAGE, "prep_time_min")),
]


@pytest.mark.parametrize("name,corrupt,expected", CASES, ids=[c[0] for c in CASES])
def test_each_failure_class_blocks_with_the_right_kind_and_column(
    demo_run, newest_day, tmp_path, name, corrupt, expected
):
    ws, _ = demo_run
    report = guard_frame(ws, corrupt(newest_day.copy()), tmp_path)
    assert report.verdict is Verdict.BLOCKED
    kind, column = expected
    assert (kind.value, column) in kinds(report), [f.message for f in report.findings]


def test_a_column_the_contract_does_not_name_is_a_warning_that_names_it(demo_run, clean, tmp_path):
    ws, _ = demo_run
    report = guard_frame(ws, clean.assign(tip_eur=1.0), tmp_path)
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.blocking]
    assert [(f.column, f.severity.value) for f in report.warnings if f.kind is K.COLUMN_UNEXPECTED] == [
        ("tip_eur", "warn")
    ]


def test_a_unit_failure_names_the_actual_unit_and_a_rename_gives_the_mapping(demo_run, clean, tmp_path):
    ws, _ = demo_run
    metres = guard_frame(ws, clean.assign(distance_km=clean["distance_km"] * 1000), tmp_path)
    (unit,) = [f for f in metres.findings if f.kind is K.UNIT_MISMATCH]
    assert unit.observed["unit"] == "m" and unit.params["actual_unit"] == "m" and unit.playbook == "unit_rescale"
    renamed = guard_frame(ws, _rename(clean), tmp_path)
    (rename,) = [f for f in renamed.findings if f.kind is K.COLUMN_RENAMED]
    assert rename.params["mapping"] == {"prep_minutes": "prep_time_min"}
    assert {f.kind for f in renamed.findings}.isdisjoint({K.COLUMN_MISSING, K.COLUMN_UNEXPECTED})


def test_an_upstream_incident_raised_by_hand_blocks_the_pipeline(demo_copy, clean, tmp_path):
    ws, _ = demo_copy
    info = active_incident(UPSTREAMS[0], "orders late", NOW_MS - 60_000)
    with metadata_session(ws) as metadata:
        metadata.emit([MCP(entityUrn="urn:li:incident:by-hand", aspect=info)], NOW_MS - 60_000)
    report = guard_pipeline(ws, PIPELINE, None, NOW_MS)
    (finding,) = [f for f in report.blocking if f.kind is K.UPSTREAM_INCIDENT]
    assert finding.observed == ["urn:li:incident:by-hand"] and finding.params["upstream"] == UPSTREAMS[0]


def test_deprecated_and_stale_upstreams_block(demo_copy):
    ws, _ = demo_copy
    with metadata_session(ws) as metadata:
        metadata.emit(
            [
                MCP(
                    entityUrn=UPSTREAMS[1],
                    aspect=s.DeprecationClass(
                        deprecated=True, note="replaced by fleet_v2", actor="urn:li:corpuser:fleet"
                    ),
                )
            ]
        )
    report = guard_pipeline(ws, PIPELINE, None, NOW_MS + 3 * 86_400_000)
    found = {(f.kind, f.params.get("upstream")) for f in report.blocking}
    assert (K.UPSTREAM_DEPRECATED, UPSTREAMS[1]) in found
    assert (K.UPSTREAM_STALE, UPSTREAMS[2]) in found


def test_a_check_that_raises_blocks(demo_run, monkeypatch):
    ws, _ = demo_run

    def broken(ctx):
        raise RuntimeError("boom")

    monkeypatch.setitem(registry.CHECKS, "broken", registry.RegisteredCheck("broken", broken, per_column=False))
    report = guard_pipeline(ws, PIPELINE, None, NOW_MS)
    assert report.verdict is Verdict.BLOCKED
    (error,) = report.blocking
    assert error.kind is K.CHECK_ERROR and "boom" in error.message and error.check == "broken"


@pytest.mark.parametrize(
    "raw, kind",
    [("", K.CONTRACT_MISSING), ("kind: [oops", K.CONTRACT_INVALID)],
    ids=["missing", "no-longer-parses"],
)
def test_a_missing_or_unparseable_contract_blocks(demo_copy, raw, kind):
    ws, _ = demo_copy
    with metadata_session(ws) as metadata:
        metadata.emit(
            [
                MCP(
                    entityUrn=contract_urn(FEATURE_TABLE),
                    aspect=s.DataContractPropertiesClass(entity=FEATURE_TABLE, rawContract=raw),
                )
            ]
        )
    report = guard_pipeline(ws, PIPELINE, None, NOW_MS)
    assert [f.kind for f in report.blocking] == [kind]


def test_an_unparseable_label_timestamp_blocks(demo_run, clean, tmp_path):
    ws, _ = demo_run
    frame = clean.assign(label_ts=clean["label_ts"].dt.strftime("%d/%m/%Y %Hh%M"))
    report = guard_frame(ws, frame, tmp_path)
    assert (K.TIMESTAMP_UNPARSEABLE.value, "label_ts") in kinds(report)


def test_a_short_batch_of_lengths_in_metres_is_never_healed_as_yards(demo_run, tmp_path):
    """m and yd are 9% apart: on 100 rows either can fit inside natural variation, and the nearer is a guess whose
    heal would verify. A unit comes with a playbook only by a margin over the runner-up; otherwise the finding
    names both and has none (the verified heal of this failure, if there was one, decides)."""
    ws, _ = demo_run
    metres = generate_eta_features(days=2, seed=205, anchor=DEMO_NOW)
    metres = metres.assign(distance_km=metres["distance_km"] * 1000)
    seen = []
    for start in range(0, len(metres) - 100, 100):
        report = guard_frame(ws, metres.iloc[start : start + 100], tmp_path)
        (found,) = [f for f in report.blocking if f.kind is K.UNIT_MISMATCH and f.column == "distance_km"]
        if "explained_by" in found.observed:
            assert set(found.observed["explained_by"]) == {"m", "yd"} and found.playbook is None, found.message
            seen.append("either")
        else:
            assert (found.observed["unit"], found.playbook) == ("m", "unit_rescale"), found.message
            seen.append("m")
    assert "either" in seen  # some slices cannot tell (without the margin, one of seven is healed as yards)
