"""The agent skill the server offers its clients: `skills/kintsugi-promote-gate/SKILL.md`, as a resource (to read)
and a prompt (to start a session with), so an agent needs nothing beside the server.

Where it is: installed beside the package (`share/kintsugi/skills/`, pyproject's data-files), or in the source tree
the package runs from (an editable install, a checkout)."""

from __future__ import annotations

import sys
from pathlib import Path

from controlplane.errors import NotFound

__all__ = ["SKILL_NAME", "SKILL_URI", "skill_text"]

SKILL_NAME = "kintsugi-promote-gate"
SKILL_URI = f"kintsugi://skills/{SKILL_NAME}"
_PLACES = (
    Path(sys.prefix) / "share" / "kintsugi" / "skills" / SKILL_NAME / "SKILL.md",
    Path(__file__).resolve().parents[1] / "skills" / SKILL_NAME / "SKILL.md",
)


def skill_text() -> str:
    """The skill's markdown, front matter included; one clear error where it is not installed."""
    for place in _PLACES:
        if place.is_file():
            return place.read_text(encoding="utf-8")
    raise NotFound(
        f"the skill {SKILL_NAME} is not installed beside this server",
        "reinstall kintsugi (pip install kintsugi) or run the server from its source checkout",
    )
