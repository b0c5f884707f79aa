"""The sandbox: heal a copy, never the source; publish only a verified heal, atomically, keeping the old bytes."""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from guard.contract import Contract
from guard.findings import Finding
from guard.profile import DatasetProfile
import remediations.playbooks  # noqa: F401  (registers the playbooks)
from remediations.registry import HealInput, HealStep, Playbook, PlaybookRefused, playbook_for

__all__ = ["HealOutcome", "content_hash", "heal_copy", "publish", "restore", "PLAYBOOK_ORDER"]

# Structural repairs first, so that value repairs see the contracted column names and types.
PLAYBOOK_ORDER = ("rename_columns", "cast_types", "category_casing", "unit_rescale", "dedupe_keys",
                  "null_impute", "label_window")


@dataclass(frozen=True)
class HealOutcome:
    healed_path: Path
    before_hash: str
    after_hash: str
    steps: tuple[HealStep, ...]
    unhealable: tuple[Finding, ...] = ()
    refused: tuple[tuple[Finding, str], ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return bool(self.steps) and not self.unhealable and not self.refused


def content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def heal_copy(source: Path, sandbox: Path, findings: tuple[Finding, ...], contract: Contract,
              reference: DatasetProfile | None) -> HealOutcome:
    """Apply the allowlisted playbook of every finding to a copy of `source` inside `sandbox`."""
    sandbox.mkdir(parents=True, exist_ok=True)
    copy = sandbox / "input.parquet"
    shutil.copyfile(source, copy)
    table = pd.read_parquet(copy)
    steps, unhealable, refused = [], [], []
    for finding in _in_playbook_order(findings):
        playbook = playbook_for(finding)
        if playbook is None:
            unhealable.append(finding)
            continue
        try:
            table, step = _apply(playbook, HealInput(table, finding, contract, reference))
        except PlaybookRefused as exc:
            refused.append((finding, str(exc)))
            continue
        except Exception as exc:  # a playbook that breaks refuses; it never half-heals silently
            refused.append((finding, f"{playbook.name} failed: {type(exc).__name__}: {exc}"))
            continue
        steps.append(step)
    healed = sandbox / "healed.parquet"
    table.to_parquet(healed, index=False)
    return HealOutcome(healed, content_hash(copy), content_hash(healed), tuple(steps), tuple(unhealable),
                       tuple(refused))


def _apply(playbook: Playbook, heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    rows = max(len(heal.table), 1)
    healed, step = playbook.apply(heal)
    touched = max(step.rows_touched, step.rows_dropped) / rows
    if touched > playbook.max_fraction_touched:
        raise PlaybookRefused(f"{playbook.name} would touch {touched:.1%} of rows, over its limit of "
                              f"{playbook.max_fraction_touched:.1%}; heal by hand or raise the limit in the spec")
    return healed, step


def _in_playbook_order(findings: tuple[Finding, ...]) -> list[Finding]:
    def rank(finding: Finding) -> int:
        name = finding.playbook or ""
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
