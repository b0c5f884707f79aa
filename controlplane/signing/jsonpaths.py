"""The JSON paths at which two documents differ, written as `metrics.candidate.mae` or `lineage[2]`."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["ROOT", "changed_paths"]

ROOT = "(the whole body)"
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def changed_paths(claimed: Any, signed: Any) -> list[str]:
    """Every leaf path where `claimed` and `signed` differ (added, removed or changed), sorted."""
    found: list[str] = []
    _walk(claimed, signed, "", found)
    return sorted(found)


def _walk(a: Any, b: Any, path: str, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            _walk(a.get(key, _Missing), b.get(key, _Missing), _child(path, key), found)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _walk(a[i] if i < len(a) else _Missing, b[i] if i < len(b) else _Missing, f"{path}[{i}]", found)
    elif not _same(a, b):
        found.append(path or ROOT)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same JSON type: true is not 1, and 5 is not 5.0."""
    return type(a) is type(b) and a == b


def _child(path: str, key: str) -> str:
    step = key if _PLAIN_KEY.fullmatch(str(key)) else f"[{json.dumps(key)}]"
    return f"{path}.{step}" if path and not step.startswith("[") else f"{path}{step}"


class _Missing:
    """Marks a key or index present on one side only."""
