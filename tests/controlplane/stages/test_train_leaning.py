"""The features a candidate leans on are measured only where the gate reads them: a guard warning that names a
feature. A warning on another column, on the table or none at all asks nothing of them."""

from __future__ import annotations

import pytest

from controlplane.stages.train import _warns_of_a_feature
from guard.findings import GuardReport, make_finding
from guard.kinds import FindingKind, Severity

FEATURES = ("distance", "hour")


def _report(*columns: str | None) -> GuardReport:
    warnings = tuple(
        make_finding(
            FindingKind.DRIFT,
            "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)",
            column,
            observed={},
            expected={},
            message="moved inside what a person may accept",
            severity=Severity.WARN,
        )
        for column in columns
    )
    return GuardReport("urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)", warnings)


@pytest.mark.parametrize(
    "columns, measured",
    [
        ((), False),  # a clean batch: the gate reads no leaning
        (("notes",), False),  # a column no feature: it cannot change what the model does
        ((None,), False),  # the table as a whole: the gate asks a person whatever the model leans on
        (("notes", "hour"), True),  # a feature: whether the model leans on it decides the gate
    ],
)
def test_the_leaning_is_measured_only_where_a_warning_names_a_feature(columns, measured):
    report = _report(*columns)
    assert len(report.warnings) == len(columns)
    assert _warns_of_a_feature(report, FEATURES) is measured
