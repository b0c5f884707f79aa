"""Contracts as Open Data Contract Standard (ODCS v3) YAML, mapped to the guard's `Contract`; `read_contract` reads
the one applied to a dataset back from DataHub, where it is kept verbatim.

The mapping (what ODCS lacks lives in its customProperties):
- top-level customProperties `datahubDataset` (required): the dataset URN the contract governs;
  `maxImmatureLabelFraction`: the share of rows allowed to have no label yet.
- one schema object; each property gives a column: `logicalType`, `required`, `primaryKey`,
  `logicalTypeOptions.minimum/maximum`, quality `nullValues` with `mustBeLessOrEqualTo`
  (`unit: percent` or `rows`... only percent is accepted), quality `invalidValues` with
  `arguments.validValues`; customProperties `unit` (see guard.units), `role`
  (label | label_timestamp | event_timestamp), `driftBlocking`, and `atLeast`: another column of the same unit
  this one is never below on any row (a day's maximum temperature at least its minimum), which the guard holds as
  a bound whether or not the reference ever reached it.
- slaProperties `latency` (or `freshness`) with `element: <table>.<label timestamp column>`,
  `unit: h` (or d, m): the label freshness SLA.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.protocols
import jsonschema.validators
from open_data_contract_standard.model import OpenDataContractStandard, SchemaProperty

from controlplane.datahub.contracts import read_raw_contract
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import check_dataset_urn
from controlplane.documents.safeyaml import YamlRefused, load_yaml
from controlplane.errors import ContractError, InputError
from guard.contract import LOGICAL_TYPES, ColumnContract, Contract
from guard.units import UNITS, same_unit

__all__ = ["read_contract", "contract_of", "parse_odcs", "load_odcs_document"]

_HOURS = {"h": 1.0, "hour": 1.0, "hours": 1.0, "d": 24.0, "day": 24.0, "days": 24.0, "m": 1 / 60, "min": 1 / 60}
_FIX = "fix the contract YAML (Open Data Contract Standard v3) and apply it again"


@functools.cache
def _odcs_validator() -> jsonschema.protocols.Validator:
    """The ODCS v3 JSON schema compiled once per process (every stage reads the contract)."""
    schema = json.loads(resources.files("open_data_contract_standard").joinpath("schema.json").read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema)


def load_odcs_document(text: str, source: str) -> OpenDataContractStandard:
    """Parse and validate against the ODCS JSON schema; one clear error naming the problem."""
    try:
        raw = load_yaml(text)
    except YamlRefused as exc:
        raise ContractError(f"{source} {exc}", _FIX) from exc
    if not isinstance(raw, dict):
        raise ContractError(f"{source} is not an ODCS document (expected a mapping)", _FIX)
    try:
        error = jsonschema.exceptions.best_match(_odcs_validator().iter_errors(raw))  # as jsonschema.validate
        if error is not None:
            raise error
        return OpenDataContractStandard.model_validate(raw)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise ContractError(f"{source} breaks ODCS v3 at {where}: {exc.message}", _FIX) from exc
    except ValueError as exc:
        raise ContractError(f"{source} breaks ODCS v3: {exc}", _FIX) from exc


def parse_odcs(text: str, source: str = "contract") -> Contract:
    document = load_odcs_document(text, source)
    top = _custom(document.customProperties)
    dataset = top.get("datahubDataset")
    if not dataset:
        raise ContractError(f"{source} has no customProperties entry `datahubDataset`", _FIX)
    try:
        check_dataset_urn(str(dataset), f"{source} datahubDataset")
    except InputError as exc:
        raise ContractError(exc.message, exc.fix) from exc
    if not document.schema_ or len(document.schema_) != 1:
        raise ContractError(f"{source} must describe exactly one schema object (the feature table)", _FIX)
    columns = tuple(_column(prop, source) for prop in document.schema_[0].properties or [])
    roles = {
        c: _custom(p.customProperties).get("role")
        for c, p in zip((c.name for c in columns), document.schema_[0].properties or [])
    }
    by_role = {role: name for name, role in roles.items() if role}
    _check_orders(columns, source)
    return Contract(
        dataset_urn=str(dataset),
        columns=columns,
        label_column=by_role.get("label"),
        label_timestamp_column=by_role.get("label_timestamp"),
        event_timestamp_column=by_role.get("event_timestamp"),
        label_freshness_hours=_freshness_hours(document, source),
        max_immature_label_fraction=float(top.get("maxImmatureLabelFraction", 0.05)),
    )


def _column(prop: SchemaProperty, source: str) -> ColumnContract:
    if prop.logicalType not in LOGICAL_TYPES:
        raise ContractError(
            f"{source}: column {prop.name!r} has logicalType {prop.logicalType!r}; "
            f"use one of {', '.join(LOGICAL_TYPES)}",
            _FIX,
        )
    custom = _custom(prop.customProperties)
    unit = custom.get("unit")
    if unit is not None and unit not in UNITS:
        raise ContractError(
            f"{source}: column {prop.name!r} declares unit {unit!r}; known units: {', '.join(sorted(UNITS))}", _FIX
        )
    options = prop.logicalTypeOptions or {}
    if unit is not None and prop.logicalType not in ("number", "integer"):
        raise ContractError(
            f"{source}: column {prop.name!r} is {prop.logicalType} but declares unit {unit!r}; only numbers have units",
            _FIX,
        )
    low, high = options.get("minimum"), options.get("maximum")
    if low is not None and high is not None and low > high:
        raise ContractError(f"{source}: column {prop.name!r} has minimum {low} above maximum {high}", _FIX)
    quality = {q.metric: q for q in prop.quality or [] if q.metric}
    return ColumnContract(
        name=str(prop.name),
        logical_type=prop.logicalType,
        required=bool(prop.required),
        unit=unit,
        max_null_fraction=_null_limit(quality.get("nullValues"), prop.name, source),
        minimum=options.get("minimum"),
        maximum=options.get("maximum"),
        allowed_values=_valid_values(quality.get("invalidValues")),
        drift_blocking=str(custom.get("driftBlocking", "false")).lower() == "true",
        primary_key=bool(prop.primaryKey),
        at_least=None if custom.get("atLeast") is None else str(custom["atLeast"]),
    )


def _check_orders(columns: tuple[ColumnContract, ...], source: str) -> None:
    """Each `atLeast` names another numeric column of the same unit (or both without one)."""
    by_name = {c.name: c for c in columns}
    for column in columns:
        if column.at_least is None:
            continue
        other = by_name.get(column.at_least)
        numeric = ("number", "integer")
        if other is None or other is column or column.logical_type not in numeric or other.logical_type not in numeric:
            raise ContractError(
                f"{source}: column {column.name!r} declares atLeast {column.at_least!r}, which is not another "
                "number column of the contract",
                _FIX,
            )
        if (column.unit is None) != (other.unit is None) or (
            column.unit and not same_unit(column.unit, other.unit or "")
        ):
            raise ContractError(
                f"{source}: column {column.name!r} ({column.unit or 'no unit'}) declares atLeast {other.name!r} "
                f"({other.unit or 'no unit'}); an order holds between columns of one unit",
                _FIX,
            )


def _null_limit(rule: Any, column: str | None, source: str) -> float | None:
    if rule is None:
        return None
    limit = rule.mustBeLessOrEqualTo if rule.mustBeLessOrEqualTo is not None else rule.mustBe
    if limit is None or (rule.unit or "percent") != "percent":
        raise ContractError(
            f"{source}: column {column!r} nullValues needs `mustBeLessOrEqualTo` with `unit: percent`", _FIX
        )
    return float(limit) / 100.0


def _valid_values(rule: Any) -> tuple[str, ...] | None:
    if rule is None or not rule.arguments or "validValues" not in rule.arguments:
        return None
    return tuple(str(v) for v in rule.arguments["validValues"])


def _freshness_hours(document: OpenDataContractStandard, source: str) -> float | None:
    for sla in document.slaProperties or []:
        if (sla.property or "").lower() in ("latency", "freshness"):
            unit = (sla.unit or "h").lower()
            if unit not in _HOURS or not isinstance(sla.value, (int, float)):
                raise ContractError(f"{source}: SLA {sla.property} needs a number and a unit of h, d or m", _FIX)
            return float(sla.value) * _HOURS[unit]
    return None


def _custom(properties: Any) -> dict[str, Any]:
    return {p.property: p.value for p in properties or [] if p.property}


def read_contract(port: MetadataPort, dataset: str) -> tuple[Contract | None, str | None]:
    """(contract, None), or (None, why) when it is missing or does not parse — the guard blocks on either."""
    return contract_of(read_raw_contract(port, dataset), dataset)


def contract_of(raw: str | None, dataset: str) -> tuple[Contract | None, str | None]:
    """`read_contract` of the ODCS text DataHub gave (None: no contract); no I/O, so it can run beside other work."""
    if raw is None:
        return None, None
    try:
        return parse_odcs(raw, f"the contract of {dataset}"), None
    except ContractError as exc:
        return None, str(exc)
