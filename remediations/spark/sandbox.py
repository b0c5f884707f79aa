"""Heal a Spark table at scale: a new version written beside the current one, published by a commit marker.

A Spark pipeline's table is a directory (or file) of parquet (`root`), written by its team: version 0.
Healed versions live beside it, in `<root>.kintsugi/` (`v00001/`, `v00002/`...: not inside the table,
where Spark's listing would take them for partitions, nor in `_`-named folders, which Spark will not
read), and the file `<root>.kintsugi/CURRENT` names the published one. Readers resolve the current
version with `current_path` (a table format's commit, in one small file).

- `heal_spark` reads the current version, applies each finding's Spark playbook (`spark_playbooks`) and
  writes the result to a staging folder `staging-<version>`: the source is never touched.
- `publish_spark` renames the staging folder to its version folder, then swaps the marker atomically
  (a temporary file `os.replace`d over it): readers see the old version or the new, never a mix. The
  previous version stays on disk, and the marker's history (`HISTORY`) keeps the chain.
- `undo_spark` swaps the marker back to the previous version, atomically: the exact rows, hence the
  exact content hash, come back.

Content hashes are computed by the engine (`profiles.engines.spark.spark_content_hash`): the
order-independent hash of canonical row hashes that the arrow engine computes alike.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard.contract import Contract
from guard.findings import Finding
from profiles.engines.spark import read_frame, spark_content_hash
from profiles.profile import DatasetProfile
from remediations.registry import HealStep, PlaybookRefused
from remediations.sandbox import PLAYBOOK_ORDER
from remediations.spark.playbooks import SparkHeal, spark_playbook_for

__all__ = [
    "SparkHealOutcome",
    "current_path",
    "current_version",
    "versions_of",
    "heal_spark",
    "publish_spark",
    "undo_spark",
    "MARKER",
]

MARKER = "CURRENT"
HISTORY = "HISTORY"


def versions_of(root: Path) -> Path:
    """The folder beside the table that holds its healed versions, marker and history."""
    root = Path(root)
    return root.with_name(root.name + ".kintsugi")


@dataclass(frozen=True)
class SparkHealOutcome:
    root: Path
    version: str  # the version folder this heal will publish as
    healed_path: Path  # the staging folder (the sandbox)
    before_hash: str
    after_hash: str
    steps: tuple[HealStep, ...]
    unhealable: tuple[Finding, ...] = ()
    refused: tuple[tuple[Finding, str], ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return bool(self.steps) and not self.unhealable and not self.refused


def current_version(root: Path) -> str | None:
    marker = versions_of(root) / MARKER
    return (marker.read_text().strip() or None) if marker.exists() else None


def current_path(root: Path) -> Path:
    """The folder of the published version (the table itself when no heal was published)."""
    version = current_version(root)
    return versions_of(root) / version if version else Path(root)


def _next_version(root: Path) -> str:
    numbers = [int(p.name[1:]) for p in versions_of(root).glob("v[0-9]*") if p.name[1:].isdigit()]
    return f"v{max(numbers, default=0) + 1:05d}"


def heal_spark(
    session: Any, root: Path, findings: tuple[Finding, ...], contract: Contract, reference: DatasetProfile | None
) -> SparkHealOutcome:
    """Apply each finding's Spark playbook to the current version; write the result to a staging folder."""
    root = Path(root)
    frame = read_frame(session, current_path(root))
    before = spark_content_hash(frame)
    steps, unhealable, refused = [], [], []
    for finding in sorted(
        findings,
        key=lambda f: PLAYBOOK_ORDER.index(f.playbook) if f.playbook in PLAYBOOK_ORDER else len(PLAYBOOK_ORDER),
    ):
        transform = spark_playbook_for(finding)
        if transform is None:
            unhealable.append(finding)
            continue
        try:
            frame, step = transform(SparkHeal(frame, finding, contract, reference))
        except PlaybookRefused as exc:
            refused.append((finding, str(exc)))
            continue
        except Exception as exc:  # a playbook that breaks refuses; it never half-heals silently
            refused.append((finding, f"{finding.playbook} failed: {type(exc).__name__}: {exc}"))
            continue
        steps.append(step)
    version = _next_version(root)
    versions_of(root).mkdir(exist_ok=True)
    staging = versions_of(root) / f"staging-{version}"
    if staging.exists():
        shutil.rmtree(staging)
    frame.write.parquet(str(staging))
    after = spark_content_hash(read_frame(session, staging))
    return SparkHealOutcome(root, version, staging, before, after, tuple(steps), tuple(unhealable), tuple(refused))


def publish_spark(outcome: SparkHealOutcome) -> tuple[str | None, str]:
    """Make the healed version current: folder renamed into place, then the marker swapped atomically.
    Returns (the previous version, the new one)."""
    root, target = outcome.root, versions_of(outcome.root) / outcome.version
    if target.exists():
        raise FileExistsError(f"version {target} already exists: heal again to stage a new version")
    os.rename(outcome.healed_path, target)
    previous = current_version(root)
    _append_history(
        root,
        {"from": previous, "to": outcome.version, "before_hash": outcome.before_hash, "after_hash": outcome.after_hash},
    )
    _swap_marker(root, outcome.version)
    return previous, outcome.version


def undo_spark(root: Path) -> str | None:
    """Point the marker back at the version before the current one (atomically); returns it."""
    root = Path(root)
    published: list[dict[str, Any]] = []  # publishes not yet undone, oldest first
    for entry in _history(root):
        if entry.get("undo"):
            published.pop()
        else:
            published.append(entry)
    current = current_version(root)
    if not published or published[-1]["to"] != current:
        raise ValueError(f"nothing to undo in {root}: no published heal leads to the current version")
    step = published[-1]
    _append_history(root, {"from": current, "to": step["from"], "undo": True})
    _swap_marker(root, step["from"])
    return step["from"]


def _swap_marker(root: Path, version: str | None) -> None:
    temporary = versions_of(root) / f".{MARKER}.tmp"
    temporary.write_text(version or "")
    os.replace(temporary, versions_of(root) / MARKER)


def _history(root: Path) -> list[dict[str, Any]]:
    path = versions_of(root) / HISTORY
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def _append_history(root: Path, entry: dict[str, Any]) -> None:
    with open(versions_of(root) / HISTORY, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
