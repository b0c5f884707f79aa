"""What a heal says to a person: the playbook, the rows it changed, its parameters in words (no raw dict, no
epoch milliseconds, no None), as the run's timeline, the console and the incident's heal notes show it."""

from __future__ import annotations

from remediations.registry import HealStep

AFTER_MS = 1_795_679_994_022  # 2026-11-26 07:59:54 UTC


def test_a_unit_rescale_reads_as_the_unit_change_with_its_factor_and_the_rows_by_time() -> None:
    params = {"from_unit": "m", "to_unit": "km", "scale": 1000.0, "offset": 0.0}
    rows = {"column": "event_ts", "after_ms": AFTER_MS, "through_ms": None}
    note = HealStep("unit_rescale", "unit_mismatch", "distance", {**params, "rows": rows}, rows_touched=4000).note()
    assert note == (
        "unit_rescale on distance: 4000 rows changed; m -> km (/1000); rows with event_ts after 2026-11-26 07:59 UTC"
    )


def test_an_affine_change_says_its_offset_and_a_window_both_its_ends() -> None:
    params = {"from_unit": "degF", "to_unit": "degC", "scale": 1.8, "offset": 32.0}
    rows = {"column": "ts", "after_ms": AFTER_MS, "through_ms": AFTER_MS + 3_600_000}
    note = HealStep("unit_rescale", "unit_mismatch", "t", {**params, "rows": rows}, rows_touched=7).note()
    assert "degF -> degC (/1.8, -32)" in note
    assert "rows with ts after 2026-11-26 07:59 UTC and through 2026-11-26 08:59 UTC" in note


def test_rows_dropped_or_set_aside_are_counted_and_no_parameter_is_said_as_none() -> None:
    dropped = HealStep("dedupe_keys", "duplicate_keys", "id", {"since_ms": AFTER_MS, "gone": None}, 0, 40).note()
    assert dropped == "dedupe_keys on id: 40 rows dropped; since 2026-11-26 07:59 UTC"
    aside = HealStep("quarantine_rows", "sentinel_value", "age", {"values": [-1]}, 0, rows_quarantined=3).note()
    assert aside == "quarantine_rows on age: 3 rows set aside; values -1"
    renamed = HealStep("rename_columns", "schema_drift", None, {"mapping": {"a": "b"}}, rows_touched=0).note()
    assert renamed == "rename_columns on the table: no row changed; mapping a -> b"
    assert all("None" not in n and "{" not in n for n in (dropped, aside, renamed))
