"""One failure over consecutive batches is one finding; findings without a column or playbook sort too."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from controlplane.stages.guarding import coalesce
from guard.findings import Finding, RowSelector, make_finding
from guard.kinds import FindingKind
from profiles.profile import TimeWindow

URN = "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)"
WINDOWS = [TimeWindow("ts", 0, 90), TimeWindow("ts", 100, 190), TimeWindow("ts", 200, 290), TimeWindow("ts", 290, None)]


def _unit(window: TimeWindow, scale: float = 1000.0, median: float = 3.0) -> Finding:
    return make_finding(
        FindingKind.UNIT_MISMATCH,
        URN,
        "distance_km",
        observed="m",
        expected="km",
        message="m",
        playbook="unit_rescale",
        actual_unit="m",
        scale=scale,
        observed_median=median,  # evidence: it differs from batch to batch
        rows=RowSelector.of_window(window),
    )


def test_the_same_conversion_in_consecutive_batches_is_one_finding_over_their_rows():
    findings = tuple(_unit(w, median=1000.0 + i) for i, w in enumerate(WINDOWS))
    (merged,) = coalesce(findings, WINDOWS)
    assert merged.rows == RowSelector("ts", 0, None)


def test_the_same_conversion_over_every_row_and_over_each_batch_is_named_once_by_the_batches():
    every_row = replace(_unit(WINDOWS[0]), rows=None)
    (merged,) = coalesce((every_row, *(_unit(w) for w in WINDOWS[:3])), WINDOWS)
    assert merged.rows == RowSelector("ts", 0, 290)


def test_a_batch_in_between_that_passed_keeps_them_apart():
    merged = coalesce((_unit(WINDOWS[0]), _unit(WINDOWS[2])), WINDOWS)
    assert [f.rows.after_ms for f in merged if f.rows is not None] == [0, 200]


def test_two_conversions_with_different_plans_stay_two_findings():
    merged = coalesce((_unit(WINDOWS[0], scale=1000.0), _unit(WINDOWS[1], scale=1.609)), WINDOWS)
    assert len(merged) == 2


def test_a_finding_that_counts_its_rows_as_evidence_coalesces_by_its_typed_rows():
    counted = [
        make_finding(
            FindingKind.NEW_CATEGORY,
            URN,
            "kind",
            observed={"x": 3},
            expected=["a"],
            message="new",
            rows_affected=3 + i,
            rows=RowSelector.of_window(w),
        )
        for i, w in enumerate(WINDOWS[:2])
    ]
    (merged,) = coalesce(tuple(counted), WINDOWS)
    assert merged.rows == RowSelector("ts", 0, 190) and merged.params["rows_affected"] == 3


def test_findings_without_a_column_or_playbook_beside_others_do_not_break_the_sort():
    table_wide = make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        URN,
        None,
        observed=5,
        expected=0,
        message="5 h",
        rows=RowSelector.of_window(WINDOWS[3]),
    )
    on_column = make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        URN,
        "ts",
        observed=5,
        expected=0,
        message="5 h",
        playbook="timestamp_shift",
        rows=RowSelector.of_window(WINDOWS[3]),
    )
    assert len(coalesce((table_wide, on_column), WINDOWS)) == 2


def test_rows_read_back_from_json_are_the_same_typed_value_and_a_malformed_selector_is_refused():
    finding = _unit(WINDOWS[1])
    assert Finding.from_dict(json.loads(json.dumps(finding.to_dict()))) == finding
    with pytest.raises(ValueError, match="epoch milliseconds"):
        Finding.from_dict({**finding.to_dict(), "rows": {"column": "ts", "after_ms": "soon"}})


def test_non_finite_evidence_is_written_as_json():
    finding = make_finding(
        FindingKind.DRIFT,
        URN,
        "x",
        observed={"jump": float("inf")},
        expected=None,
        message="far",
        distance=float("nan"),
    )
    assert json.loads(json.dumps(finding.to_dict(), allow_nan=False))["observed"]["jump"] == "inf"
