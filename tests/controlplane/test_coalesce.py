"""One failure over consecutive batches is one finding; findings without a column or playbook sort too."""

from __future__ import annotations

import json

from controlplane.guarding import coalesce, rows_of
from guard.findings import make_finding
from guard.kinds import FindingKind
from guard.profile import TimeWindow

URN = "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)"
WINDOWS = [TimeWindow("ts", 0, 90), TimeWindow("ts", 100, 190), TimeWindow("ts", 200, 290), TimeWindow("ts", 290, None)]


def _unit(window: TimeWindow):
    return make_finding(
        FindingKind.UNIT_MISMATCH,
        URN,
        "distance_km",
        observed="m",
        expected="km",
        message="m",
        playbook="unit_rescale",
        actual_unit="m",
        scale=0.001,
        rows=rows_of(window),
    )


def test_the_same_conversion_in_consecutive_batches_is_one_finding_over_their_rows():
    (merged,) = coalesce((_unit(WINDOWS[0]), _unit(WINDOWS[1]), _unit(WINDOWS[2])), WINDOWS)
    assert merged.params["rows"] == {"column": "ts", "after_ms": 0, "through_ms": 290}


def test_a_batch_in_between_that_passed_keeps_them_apart():
    merged = coalesce((_unit(WINDOWS[0]), _unit(WINDOWS[2])), WINDOWS)
    assert [f.params["rows"]["after_ms"] for f in merged] == [0, 200]


def test_findings_without_a_column_or_playbook_beside_others_do_not_break_the_sort():
    table_wide = make_finding(
        FindingKind.TIMESTAMP_SHIFT, URN, None, observed=5, expected=0, message="5 h", rows=rows_of(WINDOWS[3])
    )
    on_column = make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        URN,
        "ts",
        observed=5,
        expected=0,
        message="5 h",
        playbook="timestamp_shift",
        rows=rows_of(WINDOWS[3]),
    )
    assert len(coalesce((table_wide, on_column), WINDOWS)) == 2


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
