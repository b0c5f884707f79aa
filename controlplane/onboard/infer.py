"""Propose a data contract (ODCS v3) from a table's profile, for a person to review.

What it proposes, and from what:
- roles: the label (the target given), the event time (the time column given), the label time (given, or a
  timestamp whose name says `label`: asked), keys (given, or an `id`/`*_id`/`*_key` column whose values are unique
  and never null: asked);
- units of numeric columns, from their names and values, each with its evidence (`controlplane.onboard.unitguess`);
- bounds: only what the unit or the column allows by definition (never a negative length, a percentage over 100,
  a month past 12, an hour past 23, a year after next year). What was seen is history, not law: a signed
  quantity (a delay, a balance, a difference) or a trend leaves the init data's range on clean batches, and the
  guard judges values against their batch history instead (a warning beyond it, a block far beyond it);
- categories: none listed, for the same reason: a value the reference has not seen is a warning, not a block.
  A team that wants a closed set lists it in the contract;
- null limits: none allowed in a key or the event time, by definition; elsewhere no limit, for the same reason
  as bounds: the share seen on a few init batches is an estimate with its sampling error (no null in 48 rows
  does not rule out one in 50), and a source's null share drifts as it matures. The guard judges a column's
  nulls against its batch history instead (`null_spike`); a team that wants a law writes one in the contract;
- orders: two numeric columns of one unit whose names differ only in a min/max word (`temp_min`, `temp_max`; also
  minimum/maximum, low/high, lo/hi, lower/upper) and whose every row read holds low <= high: `atLeast` on the
  high one, an order by definition that the guard then holds even where the data never reached it.

`propose` is pure and deterministic. Whatever it is unsure of is a `Question`; an answer is one more hint, and
proposing again with it gives the reviewed contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import yaml

from controlplane.errors import InputError
from controlplane.onboard.unitguess import Domain, UnitGuess, contract_unit, guess_unit, physical_domain, tokens
from guard.statistics import is_categorical
from profiles.profile import ColumnProfile, DatasetProfile

__all__ = [
    "Hints",
    "Roles",
    "ColumnProposal",
    "Question",
    "Proposal",
    "propose",
    "infer_task",
    "key_candidates",
    "MAX_LISTED_CATEGORIES",
]

MAX_LISTED_CATEGORIES = 50
KEY_TYPES = ("string", "integer", "date", "timestamp")
_NULL_MARGIN = 2.0  # a label's immature share allowed: twice the one seen, at least 5%
_NUMERIC = ("number", "integer")
# values seen, none negative, before the history counts as evidence of a floor at 0: by the rule of three, a
# negative value then comes up in under 3% of rows (3 / N); fewer values say too little of the column's sign
SIGN_EVIDENCE = 100
_TIMES = ("timestamp", "date")


@dataclass(frozen=True)
class Hints:
    """What a person said (options and answers); everything else is proposed."""

    target: str | None = None  # `contract infer` proposes without roles
    time_column: str | None = None
    label_time: str | None = None
    keys: tuple[str, ...] = ()
    units: Mapping[str, UnitGuess] = field(default_factory=dict)  # given or answered
    label_sla_hours: float | None = None
    settled: frozenset[str] = frozenset()  # questions answered ("key:COL", "label_time"): not asked again
    now_year: int = 2100


@dataclass(frozen=True)
class Roles:
    label: str | None
    event_time: str | None
    label_time: str | None
    keys: tuple[str, ...]


@dataclass(frozen=True)
class ColumnProposal:
    name: str
    logical_type: str
    role: str | None  # label | label_timestamp | event_timestamp
    key: bool
    unit: UnitGuess | None  # numeric columns only
    minimum: float | None
    maximum: float | None
    bounds_why: str
    categories: tuple[str, ...] | None  # the values seen of a categorical string column: a feature, not a law
    null_limit: float | None  # percent: 0 in a key and the event time; None elsewhere (judged against history)
    nulls_seen: float  # percent
    at_least: str | None = None  # the column of a min/max pair this one is never below

    @property
    def contract_unit(self) -> str | None:
        return contract_unit(self.unit) if self.unit is not None else None


@dataclass(frozen=True)
class Question:
    """A guess a person should confirm: `kind` is unit, key or label_time."""

    kind: str
    column: str
    proposal: str | None
    evidence: str


@dataclass(frozen=True)
class Proposal:
    table: str
    dataset: str
    rows: int
    roles: Roles
    columns: tuple[ColumnProposal, ...]
    questions: tuple[Question, ...]
    label_sla_hours: float | None
    max_immature: float | None

    def column(self, name: str) -> ColumnProposal:
        return next(c for c in self.columns if c.name == name)

    def unitless(self) -> list[str]:
        """Numeric columns recorded without a unit (those the installed guard cannot name included)."""
        return [c.name for c in self.columns if c.logical_type in _NUMERIC and c.contract_unit is None]

    def to_odcs(self, *, contract_id: str, version: str, purpose: str) -> str:
        document: dict[str, Any] = {
            "apiVersion": "v3.0.2",
            "kind": "DataContract",
            "id": contract_id,
            "name": self.table,
            "version": version,
            "status": "active",
            "description": {"purpose": purpose},
            "customProperties": [{"property": "datahubDataset", "value": self.dataset}]
            + ([{"property": "maxImmatureLabelFraction", "value": self.max_immature}] if self.max_immature else []),
        }
        if self.label_sla_hours is not None and self.roles.label_time is not None:
            document["slaProperties"] = [
                {
                    "property": "latency",
                    "value": self.label_sla_hours,
                    "unit": "h",
                    "element": f"{self.table}.{self.roles.label_time}",
                }
            ]
        document["schema"] = [
            {
                "name": self.table,
                "logicalType": "object",
                "physicalType": "table",
                "properties": [_property(c) for c in self.columns],
            }
        ]
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def infer_task(profile: DatasetProfile, target: str) -> str:
    """classification for a string, boolean or 0/1 target; regression otherwise."""
    column = _require(profile, target, "--target")
    if column.logical_type in ("string", "boolean"):
        return "classification"
    binary = column.logical_type == "integer" and column.minimum == 0 and column.maximum == 1
    return "classification" if binary else "regression"


def key_candidates(profile: DatasetProfile) -> list[str]:
    """Columns that could be a key by name and type (`id`, `*_id`, `*_key`; string or integer, never null)."""
    return [
        c.name
        for c in profile.columns.values()
        if c.logical_type in ("string", "integer")
        and c.null_count == 0
        and (tokens(c.name)[-1:] in (["id"], ["key"]) or c.name.lower().endswith("id"))
    ]


def propose(
    profile: DatasetProfile, hints: Hints, *, dataset: str, table: str, unique: frozenset[str] = frozenset()
) -> Proposal:
    """The contract proposed for `profile`; `unique` names the columns whose values are all distinct."""
    roles, questions = _roles(profile, hints, unique)
    columns, unit_questions = [], []
    for column in profile.columns.values():
        proposed = _column(column, roles, hints)
        columns.append(proposed)
        if proposed.unit is not None and not proposed.unit.sure:
            unit_questions.append(Question("unit", column.name, proposed.unit.unit, proposed.unit.evidence))
    orders = _named_orders(profile, {c.name: c for c in columns})
    columns = [replace(c, at_least=orders.get(c.name)) for c in columns]
    label = profile.columns[roles.label] if roles.label else None
    immature = None if not label or not label.null_count else max(0.05, round(_NULL_MARGIN * label.null_fraction, 3))
    sla = hints.label_sla_hours if hints.label_sla_hours is not None else 24.0
    return Proposal(
        table,
        dataset,
        profile.row_count,
        roles,
        tuple(columns),
        tuple(questions + unit_questions),
        sla if roles.label_time else None,
        immature,
    )


_PAIRED_WORDS = (("min", "max"), ("minimum", "maximum"), ("low", "high"), ("lo", "hi"), ("lower", "upper"))


def _named_orders(profile: DatasetProfile, columns: Mapping[str, ColumnProposal]) -> dict[str, str]:
    """high -> low for each min/max pair of one unit that every row read holds in order (`atLeast`)."""
    pairs = profile.relations.pairs if profile.relations is not None else {}
    found: dict[str, str] = {}
    for key, moments in pairs.items():
        a, b = key.split("|")
        named = _min_max(a, b)
        if named is None or a not in columns or b not in columns or not moments.n:
            continue
        low, high = named
        if columns[low].contract_unit != columns[high].contract_unit:
            continue
        held = moments.a_le_b if (low, high) == (a, b) else moments.b_le_a
        if held == moments.n:
            found[high] = low
    return found


def _min_max(a: str, b: str) -> tuple[str, str] | None:
    """(low, high) when the two names differ in one word only, a min/max pair (`temp_min`, `temp_max`)."""
    first, second = tokens(a), tokens(b)
    differ = [(x, y) for x, y in zip(first, second) if x != y]
    if len(first) != len(second) or len(differ) != 1:
        return None
    for low, high in _PAIRED_WORDS:
        if differ[0] == (low, high):
            return a, b
        if differ[0] == (high, low):
            return b, a
    return None


def _require(profile: DatasetProfile, name: str, option: str) -> ColumnProfile:
    if name not in profile.columns:
        raise InputError(f"{option} {name!r} is not a column of the table", f"use one of: {', '.join(profile.columns)}")
    return profile.columns[name]


def _roles(profile: DatasetProfile, hints: Hints, unique: frozenset[str]) -> tuple[Roles, list[Question]]:
    if hints.target is not None:
        _require(profile, hints.target, "--target")
    if (
        hints.time_column is not None
        and _require(profile, hints.time_column, "--time-column").logical_type not in _TIMES
    ):
        raise InputError(
            f"--time-column {hints.time_column!r} is {profile.columns[hints.time_column].logical_type}, "
            "not a timestamp or date",
            "name a timestamp column, or write the column as a timestamp",
        )
    questions = []
    label_time = hints.label_time
    if label_time is not None:
        if _require(profile, label_time, "--label-time").logical_type not in _TIMES:
            raise InputError(f"--label-time {label_time!r} is not a timestamp", "name a timestamp column")
    elif "label_time" not in hints.settled and hints.target is not None:
        guess = next(
            (
                c.name
                for c in profile.columns.values()
                if c.logical_type in _TIMES and c.name != hints.time_column and "label" in tokens(c.name)
            ),
            None,
        )
        if guess is not None:
            questions.append(Question("label_time", guess, guess, f"{guess!r} is a timestamp named like a label's"))
            label_time = guess
    for key in hints.keys:
        if _require(profile, key, "--key").logical_type not in KEY_TYPES:
            raise InputError(
                f"--key {key!r} is {profile.columns[key].logical_type}",
                "a key is a string, integer, date or timestamp column (a panel's key is its entity and its "
                "period) whose values together are unique and never null",
            )
    keys = list(hints.keys)
    for name in key_candidates(profile):
        if name in keys or f"key:{name}" in hints.settled or name in (hints.target, hints.time_column):
            continue
        if name in unique:
            questions.append(Question("key", name, name, f"{name!r} is named like a key and its values are unique"))
            keys.append(name)
    return Roles(hints.target, hints.time_column, label_time, tuple(keys)), questions


def _column(column: ColumnProfile, roles: Roles, hints: Hints) -> ColumnProposal:
    role = {roles.label: "label", roles.event_time: "event_timestamp"}.get(column.name) if column.name else None
    role = "label_timestamp" if column.name == roles.label_time else role
    key = column.name in roles.keys
    unit = minimum = maximum = None
    why = ""
    if column.logical_type in _NUMERIC and not key:
        unit = hints.units.get(column.name) or guess_unit(column.name, column, now_year=hints.now_year)
        minimum, maximum, why = _bounds(column, physical_domain(unit))
    if role in ("label", "label_timestamp"):
        limit = None
    elif key or role == "event_timestamp":
        limit = 0.0
    else:
        limit = None  # what was seen is history: the guard's null_spike judges the share against it
    return ColumnProposal(
        column.name,
        column.logical_type,
        role,
        key,
        unit,
        minimum,
        maximum,
        why,
        _categories(column) if not key else None,
        limit,
        round(100 * column.null_fraction, 3),
    )


def _bounds(column: ColumnProfile, domain: Domain) -> tuple[float | None, float | None, str]:
    """What the unit or the column allows by definition; where neither says, a floor at 0 from the history: a
    quantity never negative among SIGN_EVIDENCE values or more (a count, an amount, a duration, an age) is
    floored, so a placeholder like -1 on a few percent of rows is named. Nothing else seen becomes a bound."""
    seen = (
        "no values seen"
        if column.minimum is None or column.maximum is None
        else (f"seen {column.minimum:g}..{column.maximum:g}")
    )
    low = None if domain.low is None else _tidy(domain.low)
    high = None if domain.high is None else _tidy(domain.high)
    if low is None and column.minimum is not None and column.minimum >= 0 and column.values >= SIGN_EVIDENCE:
        why = f"never negative in {column.values} values: floored at 0 (remove the minimum if it may go below)"
        return 0.0, high, f"{seen}; {why}"
    if low is None and high is None:
        return None, None, f"{seen}; unbounded: nothing says it cannot take any value (a signed quantity)"
    return low, high, f"{seen}; {domain.why}"


def _tidy(value: float) -> float:
    return float(round(value, 10))


def _categories(column: ColumnProfile) -> tuple[str, ...] | None:
    if column.logical_type != "string" or column.value_counts is None or not is_categorical(column):
        return None
    values = tuple(sorted(v for v, _ in column.value_counts))
    return values if 0 < len(values) <= MAX_LISTED_CATEGORIES else None


def _property(column: ColumnProposal) -> dict[str, Any]:
    # required where a null would break the loop (the key, the event time: their null limit is 0); a column merely
    # never null in the rows seen is not promised to stay so: its nulls are judged against its history
    prop: dict[str, Any] = {"name": column.name, "logicalType": column.logical_type, "required": column.null_limit == 0}
    if column.key:
        prop["primaryKey"] = True
    bounds = {
        side: value for side, value in (("minimum", column.minimum), ("maximum", column.maximum)) if value is not None
    }
    if bounds:
        prop["logicalTypeOptions"] = bounds
    custom = [{"property": "unit", "value": column.contract_unit}] if column.contract_unit else []
    custom += [{"property": "role", "value": column.role}] if column.role else []
    custom += [{"property": "atLeast", "value": column.at_least}] if column.at_least else []
    if custom:
        prop["customProperties"] = custom
    quality: list[dict[str, Any]] = []
    if column.null_limit is not None:
        quality.append({"metric": "nullValues", "mustBeLessOrEqualTo": column.null_limit, "unit": "percent"})
    if quality:
        prop["quality"] = quality
    return prop
