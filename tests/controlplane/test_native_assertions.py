"""The guard's checks are recorded in DataHub's own assertion types where DataHub has one (read back from the demo's
DataHub Lite), CUSTOM stays for units, and the temporal join still finds a failing check by its name."""

from __future__ import annotations

import pytest
from datahub.metadata import schema_classes as s

from controlplane.datahub.assertions import VolumeLimits, assertion_mcps
from controlplane.datahub.history import failing_assertions_at
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.urns import assertion_urn
from demo.seed import FEATURE_TABLE
from guard.findings import CheckOutcome, GuardReport


@pytest.fixture
def store(demo_run):
    ws, _ = demo_run
    lite = LiteMetadata(ws.datahub_db, read_only=True)
    yield lite
    lite.close()


def _info(store, check, column=None) -> s.AssertionInfoClass:
    info = store.aspect(assertion_urn(FEATURE_TABLE, check, column), s.AssertionInfoClass)
    assert info is not None, (check, column)
    assert info.customProperties == {"check": check, "column": column or ""} and info.entityUrn == FEATURE_TABLE
    return info


def test_nulls_are_a_field_metric_with_the_contract_limit(store):
    info = _info(store, "nulls", "distance_km")
    assert info.type == s.AssertionTypeClass.FIELD and info.customAssertion is None
    metric = info.fieldAssertion.fieldMetricAssertion
    assert info.fieldAssertion.type == s.FieldAssertionTypeClass.FIELD_METRIC
    assert (metric.field.path, metric.metric, metric.operator) == (
        "distance_km",
        s.FieldMetricTypeClass.NULL_PERCENTAGE,
        s.AssertionStdOperatorClass.LESS_THAN_OR_EQUAL_TO,
    )
    assert float(metric.parameters.value.value) == 1.0


def test_ranges_and_categories_are_field_values(store):
    distance = _info(store, "domain", "distance_km").fieldAssertion.fieldValuesAssertion
    assert distance.operator == s.AssertionStdOperatorClass.BETWEEN
    assert (float(distance.parameters.minValue.value), float(distance.parameters.maxValue.value)) == (0.0, 50.0)
    vehicle = _info(store, "domain", "vehicle_type").fieldAssertion.fieldValuesAssertion
    assert vehicle.operator == s.AssertionStdOperatorClass.IN
    assert vehicle.parameters.value.value == '["bike", "scooter", "car"]'


def test_volume_freshness_and_schema_are_native(store):
    volume = _info(store, "volume")
    assert volume.type == s.AssertionTypeClass.VOLUME
    # the demo's last run guarded its new batch (4,000 rows): the limits are of the table's growth
    assert volume.volumeAssertion.type == s.VolumeAssertionTypeClass.ROW_COUNT_CHANGE
    change = volume.volumeAssertion.rowCountChange
    assert (change.type, change.operator) == (
        s.AssertionValueChangeTypeClass.ABSOLUTE,
        s.AssertionStdOperatorClass.BETWEEN,
    )
    assert 0 < float(change.parameters.minValue.value) <= 4000 <= float(change.parameters.maxValue.value)
    freshness = _info(store, "label_freshness")
    assert freshness.type == s.AssertionTypeClass.FRESHNESS
    assert freshness.freshnessAssertion.schedule.fixedInterval.multiple == 24
    schema = _info(store, "schema", "distance_km")
    assert schema.type == s.AssertionTypeClass.DATA_SCHEMA
    assert schema.schemaAssertion.compatibility == s.SchemaAssertionCompatibilityClass.SUPERSET
    assert [f.fieldPath for f in schema.schemaAssertion.schema.fields] == ["distance_km"]


def test_units_stay_custom_and_the_temporal_join_reads_every_type_back(demo_run, store):
    _, result = demo_run
    units = _info(store, "units", "distance_km")
    assert units.type == s.AssertionTypeClass.CUSTOM and units.customAssertion.type == "kintsugi.units"
    failing = failing_assertions_at(store, {FEATURE_TABLE}, result.healed.now_ms)
    assert ("units", "distance_km") in {(f["check"], f["column"]) for f in failing}, failing


def test_without_a_contract_the_type_is_native_and_the_parameter_left_out():
    report = GuardReport(
        FEATURE_TABLE, (), (CheckOutcome("nulls", "rain_mm", True, 0.0), CheckOutcome("volume", None, True, 10))
    )
    nulls, _, volume, _ = [m.aspect for m in assertion_mcps(report, "run", 1)]
    assert nulls.fieldAssertion.fieldMetricAssertion.parameters is None
    assert volume.volumeAssertion.rowCountTotal.parameters.value.value == "1.0"


def test_a_whole_table_is_a_row_count_total_between_the_volume_limits():
    report = GuardReport(FEATURE_TABLE, (), (CheckOutcome("volume", None, True, 10),))
    info = assertion_mcps(report, "run", 1, volume=VolumeLimits(5, 30, of_batch=False))[0].aspect
    total = info.volumeAssertion
    assert total.type == s.VolumeAssertionTypeClass.ROW_COUNT_TOTAL and total.rowCountChange is None
    assert total.rowCountTotal.operator == s.AssertionStdOperatorClass.BETWEEN
    assert (total.rowCountTotal.parameters.minValue.value, total.rowCountTotal.parameters.maxValue.value) == (
        "5.0",
        "30.0",
    )
