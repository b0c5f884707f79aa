"""The playbooks as Spark column transforms: the same findings healed over a DataFrame, never collected.

Each transform takes a DataFrame and a `SparkHeal` (finding, contract, reference) and returns the healed
DataFrame and its `HealStep`, with the same limits and refusals as its pandas twin in
`remediations.playbooks` (the limit checks and the parameter checks are shared). Counting what a step
touches runs one Spark aggregation; the rows themselves stay on the executors.

A finding that names its rows (`Finding.rows`, a time window: `remediations.rows`) is healed on those rows
only, as in pandas (`unit_rescale`, the one transform here whose pandas twin selects rows).

Two transforms choose rows where pandas relies on row order, deterministically whatever the partitioning:
`dedupe_keys` keeps, of each key's rows, the one with the smallest values (all columns in name order)
where pandas keeps the first. No Spark transform fills or sets aside null rows: a Spark pipeline's null
spike or sentinel has no playbook here and ends BLOCKED with its incident open (never invented values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from guard.contract import Contract
from guard.findings import Finding
from profiles.profile import DatasetProfile
from remediations.playbooks import cast_types as cast_pb
from remediations.playbooks import category_casing as casing_pb
from remediations.playbooks import dedupe_keys as dedupe_pb
from remediations.playbooks.unit_rescale import rescale_step
from remediations.registry import PLAYBOOKS, HealInput, HealStep, PlaybookRefused, table_column

__all__ = ["SparkHeal", "SPARK_PLAYBOOKS", "spark_playbook_for"]


@dataclass(frozen=True)
class SparkHeal:
    frame: Any  # pyspark DataFrame
    finding: Finding
    contract: Contract
    reference: DatasetProfile | None

    def pandas_input(self) -> HealInput:
        """The pandas playbooks' input without a table: for the parameter checks they share."""
        return HealInput(None, self.finding, self.contract, self.reference)  # type: ignore[arg-type]


SparkTransform = Callable[[SparkHeal], tuple[Any, HealStep]]
SPARK_PLAYBOOKS: dict[str, SparkTransform] = {}


def _register(name: str) -> Callable[[SparkTransform], SparkTransform]:
    def decorate(fn: SparkTransform) -> SparkTransform:
        if name in SPARK_PLAYBOOKS:
            raise ValueError(f"spark playbook {name!r} is already registered")
        SPARK_PLAYBOOKS[name] = fn
        return fn

    return decorate


def spark_playbook_for(finding: Finding) -> SparkTransform | None:
    """The Spark transform of the allowlisted playbook the finding names, if that playbook heals its kind."""
    import remediations.playbooks  # noqa: F401  (registers the allowlist)

    playbook = PLAYBOOKS.get(finding.playbook or "")
    if playbook is None or finding.kind not in playbook.heals:
        return None
    return SPARK_PLAYBOOKS.get(playbook.name)


def _F() -> Any:
    from pyspark.sql import functions as F

    return F


def _column(heal: SparkHeal, name: str | None) -> str:
    return table_column(heal.frame.columns, name, str(heal.finding.playbook))


def _rows(heal: SparkHeal) -> Any:
    """The Spark condition of the finding's rows (`remediations.rows.selected_rows`): its window, else every row."""
    from profiles.engines.spark import SparkEngineError, window_condition
    from profiles.profile import TimeWindow

    F, rows = _F(), heal.finding.rows
    if rows is None:
        return F.lit(True)
    column, after, through = rows.column, rows.after_ms, rows.through_ms
    if rows.also:
        raise PlaybookRefused(
            f"the {heal.finding.kind.value} finding names rows one by one, which the Spark playbooks do not read; "
            "heal it with the arrow engine (`engine: arrow` in the pipeline's spec) or by hand"
        )
    if column not in heal.frame.columns:
        raise PlaybookRefused(
            f"the {heal.finding.kind.value} finding names rows by {column!r}, which the table "
            "does not have; re-run the guard on the current table"
        )
    try:
        return window_condition(heal.frame, TimeWindow(column, after, through))
    except SparkEngineError as exc:  # not a time column
        raise PlaybookRefused(f"the {heal.finding.kind.value} finding names rows by {column!r}: {exc}") from exc


def _count(frame: Any, condition: Any) -> int:
    F = _F()
    return int(frame.select(F.sum(F.when(condition, 1).otherwise(0))).first()[0] or 0)


@_register("unit_rescale")
def unit_rescale(heal: SparkHeal) -> tuple[Any, HealStep]:
    F, finding = _F(), heal.finding
    column = _column(heal, finding.column)
    scale, offset = finding.params.get("scale"), finding.params.get("offset", 0.0)
    if not scale:
        raise PlaybookRefused(f"unit_rescale needs a non-zero scale in the finding on {column!r}")
    kind = dict(heal.frame.dtypes)[column]
    if kind in ("string", "boolean", "timestamp", "date"):
        raise PlaybookRefused(f"unit_rescale: column {column!r} is {kind}, not a number")
    rows = _rows(heal) & F.col(column).isNotNull()
    value = F.col(column).cast("double")
    healed = heal.frame.withColumn(
        column, F.when(rows, (value - F.lit(float(offset))) / F.lit(float(scale))).otherwise(value)
    )
    return healed, rescale_step(finding, scale, offset, _count(heal.frame, rows))


@_register("rename_columns")
def rename_columns(heal: SparkHeal) -> tuple[Any, HealStep]:
    finding, present = heal.finding, set(heal.frame.columns)
    mapping = {str(k): str(v) for k, v in (finding.params.get("mapping") or {}).items()}
    if not mapping:
        raise PlaybookRefused("rename_columns needs params['mapping'] = {new: contracted}; re-run the guard")
    pending, done = {}, {}
    for new, old in sorted(mapping.items()):
        if heal.contract.column(old) is None:
            raise PlaybookRefused(f"rename_columns will only rename to a contracted column; {old!r} is not one")
        if new in present and old in present:
            raise PlaybookRefused(f"rename_columns cannot rename {new!r} to {old!r}: the target name already exists")
        if new in present:
            pending[new] = old
        elif old in present:
            done[new] = old
        else:
            raise PlaybookRefused(f"rename_columns found neither {new!r} nor {old!r}; re-run the guard")
    healed = heal.frame.withColumnsRenamed(pending) if pending else heal.frame
    rows = heal.frame.count() if pending else 0
    return healed, HealStep(
        "rename_columns",
        finding.kind.value,
        finding.column,
        {"mapping": mapping, "renamed": pending, "already_renamed": done},
        rows_touched=rows,
    )


_SPARK_TYPES = {
    "number": "double",
    "integer": "bigint",
    "timestamp": "timestamp",
    "string": "string",
    "boolean": "boolean",
}


@_register("cast_types")
def cast_types(heal: SparkHeal) -> tuple[Any, HealStep]:
    F, finding = _F(), heal.finding
    column = _column(heal, finding.column)
    target = cast_pb._target_type(heal.pandas_input())
    if target not in _SPARK_TYPES:
        raise PlaybookRefused(f"cast_types can cast to {', '.join(_SPARK_TYPES)}, not {target!r}; heal by hand")
    source = F.trim(F.col(column).cast("string")) if target != "string" else F.col(column)
    if target == "number":
        source = F.regexp_replace(source, r"^\+", "")
    cast = F.col(column).cast("string") if target == "string" else source.try_cast(_SPARK_TYPES[target])
    failed = F.col(column).isNotNull() & cast.isNull()
    total = _count(heal.frame, F.col(column).isNotNull())
    unparsed = _count(heal.frame, failed)
    params: dict[str, Any] = {
        "from_type": dict(heal.frame.dtypes)[column],
        "target_type": target,
        "parsed": total - unparsed,
        "unparsed": unparsed,
    }
    if total and unparsed / total > cast_pb.MAX_UNPARSED_FRACTION:
        raise PlaybookRefused(
            f"cast_types would null {unparsed} of {total} non-null values of {column!r} "
            f"({unparsed / total:.1%}) that do not parse as {target}; over its limit of "
            f"{cast_pb.MAX_UNPARSED_FRACTION:.0%}: fix the producer or heal by hand"
        )
    return heal.frame.withColumn(column, cast), HealStep(
        "cast_types", finding.kind.value, column, params, rows_touched=unparsed
    )


@_register("category_casing")
def category_casing(heal: SparkHeal) -> tuple[Any, HealStep]:
    F, finding = _F(), heal.finding
    column = _column(heal, finding.column)
    mapping = casing_pb._checked_mapping(heal.pandas_input())
    hits = F.col(column).isin(list(mapping))
    lookup = F.create_map(*[F.lit(v) for pair in sorted(mapping.items()) for v in pair])
    healed = heal.frame.withColumn(column, F.when(hits, lookup[F.col(column)]).otherwise(F.col(column)))
    touched = _count(heal.frame, hits)
    return healed, HealStep("category_casing", finding.kind.value, column, {"mapping": mapping}, rows_touched=touched)


@_register("dedupe_keys")
def dedupe_keys(heal: SparkHeal) -> tuple[Any, HealStep]:
    from pyspark.sql import Window

    F, finding, frame = _F(), heal.finding, heal.frame
    keys = list(dedupe_pb.heal_keys(heal.contract, finding))
    if not keys or any(k not in frame.columns for k in keys):
        raise PlaybookRefused(f"dedupe_keys needs the contract's key columns {keys} in the table")
    everything = sorted(frame.columns)
    ranked = frame.withColumn(
        "__kintsugi_rank",
        F.row_number().over(Window.partitionBy(*keys).orderBy(*[F.col(c).asc_nulls_first() for c in everything])),
    )
    exact = frame.dropDuplicates(everything)
    rows, distinct_rows = frame.count(), exact.count()
    kept = exact.select(*keys).distinct().count()
    dropped, conflicts = rows - kept, distinct_rows - kept
    params = {"key_columns": keys, "rows_before": rows, "rows_dropped": dropped, "conflicting_rows": conflicts}
    if rows and conflicts / rows > dedupe_pb.MAX_CONFLICT_FRACTION:
        raise PlaybookRefused(
            f"dedupe_keys found {conflicts} of {rows} rows repeating a key of {keys} with other "
            f"values; over its limit of {dedupe_pb.MAX_CONFLICT_FRACTION:.1%}: resolve by hand"
        )
    if rows and dropped / rows > dedupe_pb.MAX_DROP_FRACTION:
        raise PlaybookRefused(
            f"dedupe_keys would drop {dropped} of {rows} rows ({dropped / rows:.1%}), over its "
            f"limit of {dedupe_pb.MAX_DROP_FRACTION:.0%}: find the repeated load upstream"
        )
    healed = ranked.where(F.col("__kintsugi_rank") == 1).drop("__kintsugi_rank")
    return healed, HealStep(
        "dedupe_keys", finding.kind.value, finding.column, params, rows_touched=0, rows_dropped=dropped
    )
