"""Heal a run's copy of the table with Spark: the twin of `remediations.sandbox.heal_copy` for `engine: spark`.

The same sandbox files and the same `HealOutcome`, so verify, publish, undo and the passport do not know which
engine healed: `input.parquet` (the copy), `healed.parquet` (the table to publish, one parquet file). Spark reads
the copy, applies each finding's Spark transform (`remediations.spark.playbooks`) in playbook order, with the
pandas playbooks' limits, and writes its partitions; they are then joined into `healed.parquet` one row group at a
time (bounded memory), every column the heal did not retype cast back to its type in the copy (Spark reads
timestamps in microseconds, strings as `string`), so an unchanged table comes back in its own schema. Spark
keeps microseconds: the nanoseconds of a pandas timestamp ride beside their column through the transforms
(`read_frame(keep_nanos=True)`) and are put back when the file is joined, so no value changes unasked.

What Spark cannot do is refused, never approximated: a playbook with no Spark transform (quarantines, timestamp
shifts, column swaps) refuses its finding, so the run ends BLOCKED with the incident open.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from guard.contract import Contract
from guard.findings import Finding
from profiles.engines.spark import NANOS_PREFIX, read_frame
from remediations.registry import HealStep, PlaybookRefused, playbook_for
from remediations.sandbox import HealOutcome, check_limit, content_hash, in_playbook_order
from remediations.spark.playbooks import SparkHeal, spark_playbook_for
from tables.readonce import copy_file

__all__ = ["heal_copy_spark", "ROW_GROUP_ROWS"]

ROW_GROUP_ROWS = 1024 * 1024  # pyarrow's default: the healed file's row groups are what pandas would write


def heal_copy_spark(
    session: Any, source: Path, sandbox: Path, findings: tuple[Finding, ...], contract: Contract, reference: Any
) -> HealOutcome:
    """Apply the Spark transform of every finding's playbook to a copy of `source` inside `sandbox`; the healed
    table is written only when every finding was healed."""
    sandbox.mkdir(parents=True, exist_ok=True)
    copy = sandbox / "input.parquet"
    before, healed = copy_file(source, copy), sandbox / "healed.parquet"  # Spark reads the copy by path
    healed.unlink(missing_ok=True)
    try:
        original = read_frame(session, copy, keep_nanos=True)
    except Exception as exc:  # Spark cannot read the copy: nothing is healed, every finding says why
        return HealOutcome(healed, before, "", (), refused=_all_refused(findings, "read the copy", exc))
    frame, steps, unhealable, refused, corrected = _transform(
        original, findings, contract, reference, pq.ParquetFile(copy).metadata.num_rows
    )
    if unhealable or refused or not steps:
        return HealOutcome(healed, before, "", tuple(steps), tuple(unhealable), tuple(refused))
    try:
        _write_one_file(frame, original.schema, pq.read_schema(copy), sandbox / "healed.spark", healed)
    except Exception as exc:  # a write that fails refuses the heal; it never leaves half a table to publish
        healed.unlink(missing_ok=True)
        return HealOutcome(healed, before, "", (), refused=_all_refused(corrected, "write the healed table", exc))
    return HealOutcome(healed, before, content_hash(healed), tuple(steps), corrected=tuple(corrected))


def _all_refused(
    findings: tuple[Finding, ...] | list[Finding], what: str, exc: Exception
) -> tuple[tuple[Finding, str], ...]:
    why = f"spark could not {what}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return tuple((f, why) for f in findings)


def _transform(
    frame: Any, findings: tuple[Finding, ...], contract: Contract, reference: Any, rows: int
) -> tuple[Any, list[HealStep], list[Finding], list[tuple[Finding, str]], list[Finding]]:
    profile = getattr(reference, "profile", reference)
    steps: list[HealStep] = []
    unhealable: list[Finding] = []
    refused: list[tuple[Finding, str]] = []
    corrected: list[Finding] = []
    for finding in in_playbook_order(findings):
        playbook, transform = playbook_for(finding), spark_playbook_for(finding)
        if playbook is None:
            unhealable.append(finding)
            continue
        if transform is None:
            refused.append(
                (
                    finding,
                    f"the spark engine has no transform for {playbook.name} ({finding.kind.value} "
                    f"on {finding.column or 'the dataset'}): heal by hand, or with engine: arrow",
                )
            )
            continue
        try:
            result, step = transform(SparkHeal(frame, finding, contract, profile))
            check_limit(playbook, step, rows)
        except PlaybookRefused as exc:
            refused.append((finding, str(exc)))
            continue
        except Exception as exc:  # a playbook that breaks refuses; it never half-heals silently
            refused.append((finding, f"{playbook.name} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}"))
            continue
        frame, rows = result, rows - step.rows_dropped
        steps.append(step)
        corrected.append(finding)
    return frame, steps, unhealable, refused, corrected


def _write_one_file(frame: Any, original: Any, copy_schema: pa.Schema, parts: Path, target: Path) -> None:
    """Spark writes its partitions to `parts`; they are joined, in partition order, into the one file `target`."""
    shutil.rmtree(parts, ignore_errors=True)
    try:
        frame.write.parquet(str(parts))
        files = sorted(parts.glob("part-*.parquet"))
        if not files:
            raise ValueError(f"spark wrote no parquet part in {parts}")
        schema = _target_schema(frame.schema, original, copy_schema, pq.read_schema(files[0]))
        with pq.ParquetWriter(target, schema) as writer:
            buffer = schema.empty_table()
            for file in files:
                for batch in pq.ParquetFile(file).iter_batches():
                    part = _nanos_back(pa.Table.from_batches([batch]), schema).select(schema.names).cast(schema)
                    buffer = pa.concat_tables([buffer, part])
                    while buffer.num_rows >= ROW_GROUP_ROWS:  # full row groups, as pyarrow's write_table cuts them
                        writer.write_table(buffer.slice(0, ROW_GROUP_ROWS), row_group_size=ROW_GROUP_ROWS)
                        buffer = buffer.slice(ROW_GROUP_ROWS)
            if buffer.num_rows:
                writer.write_table(buffer, row_group_size=ROW_GROUP_ROWS)
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def _nanos_back(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Each kept nanosecond column's exact values: its microseconds x 1000 + the nanoseconds that rode beside it."""
    for name in [n[len(NANOS_PREFIX) :] for n in table.column_names if n.startswith(NANOS_PREFIX)]:
        target = schema.field(name).type if name in schema.names else None
        if target is None or not pa.types.is_timestamp(target) or target.unit != "ns":
            raise ValueError(f"column {name!r} held nanoseconds and the heal renamed or retyped it")
        micros = table.column(name).cast(pa.int64())
        exact = pc.add_checked(pc.multiply_checked(micros, 1000), table.column(NANOS_PREFIX + name)).cast(target)
        table = table.set_column(table.column_names.index(name), name, exact).drop_columns([NANOS_PREFIX + name])
    return table


def _target_schema(healed: Any, original: Any, copy_schema: pa.Schema, written: pa.Schema) -> pa.Schema:
    """The copy's own type for every column the heal kept (same name, same Spark type); Spark's for the others.
    When every column comes back, the copy's schema whole, its metadata (pandas') included."""
    kept = {
        f.name
        for f in original.fields
        if f.name in healed.fieldNames() and healed[f.name].dataType == f.dataType and f.name in copy_schema.names
    }
    fields = [
        copy_schema.field(f.name) if f.name in kept else f for f in written if not f.name.startswith(NANOS_PREFIX)
    ]
    if [f.name for f in fields] == copy_schema.names and all(f.name in kept for f in fields):
        return copy_schema
    return pa.schema(fields)
