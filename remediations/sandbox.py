"""The sandbox: heal a copy, never the source; publish only a verified heal, atomically, keeping the old bytes.

A heal never writes an invented value into the team's table. `heal_copy` writes, inside the sandbox:

- `healed.parquet`, the table to publish: the source with only exact, invertible corrections applied
  (rename, cast, casing, shift, swap, rescale, dedupe, label window); every other cell as it arrived;
- `quarantine.parquet` (when a playbook set rows aside): one line per (row, finding): `row`, the row's
  position in healed.parquet (0-based), `finding` ("kind:column"), `reason` (JSON of what put it there),
  and the row's key columns when the contract has some;
- `training.parquet`, the training view: healed.parquet without the quarantined rows. It is what the guard
  verifies and what a model trains on.

`HealOutcome` says which findings were corrected (their incidents can be resolved once the heal verifies)
and which were only quarantined (`open_findings`: their cause is not corrected, the incidents stay open
with the quarantine noted: `HealOutcome.quarantine.note()`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import remediations.playbooks  # noqa: F401  (registers the playbooks)
from guard.contract import Contract
from guard.findings import Finding
from profiles.profile import DatasetProfile
from profiles.records import Record
from profiles.snapshot import read_frame
from remediations.registry import HealInput, HealStep, Playbook, PlaybookRefused, playbook_for
from tables.objectstore import file_hash as content_hash  # a file's bytes, as the control plane hashes them
from tables.readonce import copy_file

__all__ = [
    "HealOutcome",
    "QuarantineList",
    "content_hash",
    "heal_copy",
    "publish",
    "restore",
    "PLAYBOOK_ORDER",
    "QUARANTINE_FILE",
    "TRAINING_FILE",
    "check_limit",
    "in_playbook_order",
]

# Structural repairs first, so that value repairs see the contracted column names and types; row removals
# next; quarantines last, so that the rows they list are rows of the final table.
PLAYBOOK_ORDER = (
    "rename_columns",
    "cast_types",
    "category_casing",
    "shift_timestamps",
    "swap_columns",
    "unit_rescale",
    "dedupe_keys",
    "label_window",
    "quarantine_rows",
)
QUARANTINE_FILE = "quarantine.parquet"
TRAINING_FILE = "training.parquet"


@dataclass(frozen=True)
class QuarantineList(Record):
    """Rows set aside: kept unchanged in the published table, left out of the training view."""

    path: Path
    rows: int  # distinct rows of the published table
    by_finding: dict[str, int]  # "kind:column" -> rows it set aside

    def note(self) -> str:
        """One line for an incident that stays open."""
        parts = ", ".join(f"{count} for {label}" for label, count in sorted(self.by_finding.items()))
        return f"{self.rows} row(s) quarantined, not corrected ({parts}); listed in {self.path}"


@dataclass(frozen=True)
class HealOutcome:
    healed_path: Path  # the table to publish (exact corrections only)
    before_hash: str
    after_hash: str  # of healed_path
    steps: tuple[HealStep, ...]
    unhealable: tuple[Finding, ...] = ()
    refused: tuple[tuple[Finding, str], ...] = field(default_factory=tuple)
    quarantine: QuarantineList | None = None  # None: no row set aside
    training_path: Path | None = None  # published minus quarantined rows (None: healed_path itself)
    corrected: tuple[Finding, ...] = ()  # findings a correcting playbook healed
    quarantined: tuple[Finding, ...] = ()  # findings whose rows were only set aside

    @property
    def complete(self) -> bool:
        """Every finding was either corrected or quarantined: nothing refused, nothing without a playbook."""
        return bool(self.steps) and not self.unhealable and not self.refused

    @property
    def open_findings(self) -> tuple[Finding, ...]:
        """Findings whose cause is not corrected: their incidents stay open even when the heal verifies."""
        return self.quarantined

    @property
    def training_view(self) -> Path:
        """The file to verify and train on."""
        return self.training_path or self.healed_path

    def to_dict(self) -> dict[str, Any]:
        return {
            "healed_path": str(self.healed_path),
            "before_hash": self.before_hash,
            "after_hash": self.after_hash,
            "steps": [s.__dict__ for s in self.steps],
            "unhealable": [f.to_dict() for f in self.unhealable],
            "refused": [{"finding": f.to_dict(), "why": why} for f, why in self.refused],
            "quarantine": self.quarantine.to_dict() if self.quarantine else None,
            "training_path": str(self.training_path) if self.training_path else None,
            "corrected": [f.to_dict() for f in self.corrected],
            "quarantined": [f.to_dict() for f in self.quarantined],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HealOutcome:
        quarantine = data.get("quarantine")
        training = data.get("training_path")
        return cls(
            Path(data["healed_path"]),
            data["before_hash"],
            data["after_hash"],
            tuple(HealStep(**s) for s in data["steps"]),
            tuple(Finding.from_dict(f) for f in data.get("unhealable", [])),
            tuple((Finding.from_dict(r["finding"]), r["why"]) for r in data.get("refused", [])),
            QuarantineList.from_dict(quarantine) if quarantine else None,
            Path(training) if training else None,
            tuple(Finding.from_dict(f) for f in data.get("corrected", [])),
            tuple(Finding.from_dict(f) for f in data.get("quarantined", [])),
        )


@dataclass
class _Progress:
    table: pd.DataFrame
    steps: list[HealStep] = field(default_factory=list)
    unhealable: list[Finding] = field(default_factory=list)
    refused: list[tuple[Finding, str]] = field(default_factory=list)
    corrected: list[Finding] = field(default_factory=list)
    masks: list[tuple[Finding, np.ndarray]] = field(default_factory=list)
    # (playbook, column) -> the rows of that column its corrections changed so far: no cell is corrected twice
    changed: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)


def heal_copy(
    source: Path, sandbox: Path, findings: tuple[Finding, ...], contract: Contract, reference: Any
) -> HealOutcome:
    """Apply the allowlisted playbook of every finding to a copy of `source` inside `sandbox`.

    `reference` is the reference the guard compared with (a `profiles.reference.Reference` or a
    `DatasetProfile`); playbooks see its merged profile."""
    sandbox.mkdir(parents=True, exist_ok=True)
    copy = sandbox / "input.parquet"  # kept beside the heal: what it was given
    before_hash = copy_file(source, copy)
    progress = _Progress(read_frame(source))  # the source's bytes, checked as they are read (`tables.readonce`)
    profile = getattr(reference, "profile", reference)
    for finding in in_playbook_order(findings):
        _heal_one(progress, finding, contract, profile)
    healed = sandbox / "healed.parquet"
    progress.table.to_parquet(healed, index=False)
    quarantine, training = _set_aside(progress, sandbox, contract)
    quarantined = tuple(f for f, _ in progress.masks)
    return HealOutcome(
        healed,
        before_hash,
        content_hash(healed),
        tuple(progress.steps),
        tuple(progress.unhealable),
        tuple(progress.refused),
        quarantine,
        training,
        tuple(progress.corrected),
        quarantined,
    )


def _heal_one(progress: _Progress, finding: Finding, contract: Contract, profile: DatasetProfile | None) -> None:
    playbook = playbook_for(finding)
    if playbook is None:
        progress.unhealable.append(finding)
        return
    try:
        result, step = _apply(playbook, HealInput(progress.table, finding, contract, profile))
    except PlaybookRefused as exc:
        progress.refused.append((finding, str(exc)))
        return
    except Exception as exc:  # a playbook that breaks refuses; it never half-heals silently
        progress.refused.append((finding, f"{playbook.name} failed: {type(exc).__name__}: {exc}"))
        return
    if playbook.quarantines:
        progress.steps.append(step)
        progress.masks.append((finding, np.asarray(result, dtype=bool)))
        return
    twice = _corrected_twice(progress, playbook.name, result)
    if twice:
        progress.refused.append((finding, twice))
        return
    progress.steps.append(step)
    progress.table = result
    progress.corrected.append(finding)


def _corrected_twice(progress: _Progress, playbook: str, result: pd.DataFrame) -> str | None:
    """Why a correction may not be taken: it changes cells that an earlier finding's correction of the same kind
    already changed (two findings naming one failure: the rows would be converted twice). Records the cells it
    changes otherwise. A step that drops rows starts the record anew (later steps see other positions)."""
    before = progress.table
    if len(result) != len(before):
        progress.changed.clear()
        return None
    changed: dict[tuple[str, str], np.ndarray] = {}
    for column in before.columns.intersection(result.columns):
        moved = _cells_changed(before[column].reset_index(drop=True), result[column].reset_index(drop=True))
        if moved.any():
            changed[(playbook, str(column))] = moved
    for key, moved in changed.items():
        earlier = progress.changed.get(key)
        if earlier is not None and (earlier & moved).any():
            return (
                f"{playbook} would correct {int((earlier & moved).sum())} row(s) of {key[1]!r} that another finding's "
                f"{playbook} already corrected; two findings name one failure, so neither is applied twice: re-run "
                "the guard, or heal by hand"
            )
    for key, moved in changed.items():
        earlier = progress.changed.get(key)
        progress.changed[key] = moved if earlier is None else earlier | moved
    return None


def _cells_changed(old: pd.Series, new: pd.Series) -> np.ndarray:
    """Which cells differ between two versions of a column (missing on both sides is the same)."""
    try:
        same = old == new
    except TypeError:  # categories that differ, say: compare the values themselves
        same = old.astype(object) == new.astype(object)
    both_missing = (old.isna() & new.isna()).to_numpy(dtype=bool)
    return ~(same.fillna(False).to_numpy(dtype=bool) | both_missing)


def _apply(playbook: Playbook, heal: HealInput) -> tuple[Any, HealStep]:
    rows = max(len(heal.table), 1)
    result, step = playbook.apply(heal)
    if playbook.quarantines and len(result) != len(heal.table):
        raise PlaybookRefused(
            f"{playbook.name} returned a mask of {len(result)} rows for a table of "
            f"{len(heal.table)}; a quarantine lists rows, it never changes them"
        )
    check_limit(playbook, step, rows)
    return result, step


def check_limit(playbook: Playbook, step: HealStep, rows: int) -> None:
    """A step may touch at most its playbook's share of the table's `rows`; over it, the playbook refuses."""
    touched = max(step.rows_touched, step.rows_dropped, step.rows_quarantined) / max(rows, 1)
    if touched > playbook.max_fraction_touched:
        raise PlaybookRefused(
            f"{playbook.name} would touch {touched:.1%} of rows, over its limit of "
            f"{playbook.max_fraction_touched:.1%}; heal by hand or raise the limit in the spec"
        )


def _set_aside(progress: _Progress, sandbox: Path, contract: Contract) -> tuple[QuarantineList | None, Path | None]:
    """Write the quarantine list and the training view; (None, None) when no row was set aside."""
    for stale in (QUARANTINE_FILE, TRAINING_FILE):
        (sandbox / stale).unlink(missing_ok=True)
    table = progress.table
    lines = [_lines(table, finding, mask, contract) for finding, mask in progress.masks if mask.any()]
    if not lines:
        return None, None
    listed = pd.concat(lines, ignore_index=True)
    path = sandbox / QUARANTINE_FILE
    listed.to_parquet(path, index=False)
    aside = np.zeros(len(table), dtype=bool)
    aside[listed["row"].to_numpy()] = True
    training = sandbox / TRAINING_FILE
    table.loc[~aside].reset_index(drop=True).to_parquet(training, index=False)
    counts = listed.groupby("finding")["row"].nunique()
    return QuarantineList(path, int(aside.sum()), {str(k): int(v) for k, v in counts.items()}), training


def _lines(table: pd.DataFrame, finding: Finding, mask: np.ndarray, contract: Contract) -> pd.DataFrame:
    rows = np.flatnonzero(mask)
    label = f"{finding.kind.value}:{finding.column or '-'}"
    reason = json.dumps(
        {
            "kind": finding.kind.value,
            "column": finding.column,
            **({"value": finding.params["value"]} if "value" in finding.params else {}),
        },
        sort_keys=True,
    )
    lines = pd.DataFrame({"row": rows.astype(np.int64), "finding": label, "reason": reason})
    for key in contract.key_columns:
        if key in table.columns:
            lines[key] = table[key].to_numpy()[rows]
    return lines


def in_playbook_order(findings: tuple[Finding, ...]) -> list[Finding]:
    def rank(finding: Finding) -> int:
        playbook = playbook_for(finding)
        name = playbook.name if playbook is not None else ""
        return PLAYBOOK_ORDER.index(name) if name in PLAYBOOK_ORDER else len(PLAYBOOK_ORDER)

    return sorted(findings, key=rank)


def publish(healed: Path, target: Path, backup: Path) -> tuple[str, str]:
    """Keep `target`'s bytes at `backup`, then replace `target` with `healed` atomically."""
    backup.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(target, backup)
    _atomic_copy(healed, target)
    return content_hash(backup), content_hash(target)


def restore(backup: Path, target: Path) -> str:
    """Put the kept bytes back, atomically; returns the restored content hash."""
    _atomic_copy(backup, target)
    return content_hash(target)


def _atomic_copy(source: Path, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)
