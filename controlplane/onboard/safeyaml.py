"""YAML that cannot blow up: a size limit, no aliases (a "billion laughs" document is refused, not expanded),
and the safe loader's plain types only."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_yaml", "YamlRefused", "MAX_YAML_BYTES"]

MAX_YAML_BYTES = 1_000_000


class YamlRefused(ValueError):
    """The document is too large, uses aliases, or is not valid YAML; the message says which."""


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlRefused(
                f"uses a YAML alias (*{event.anchor}) at line {event.start_mark.line + 1}; "
                "aliases are not accepted: write the value out"
            )
        return super().compose_node(parent, index)


def load_yaml(text: str, *, max_bytes: int = MAX_YAML_BYTES) -> Any:
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise YamlRefused(f"is {size} bytes, over the {max_bytes}-byte limit")
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 (a SafeLoader subclass)
    except YamlRefused:
        raise
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise YamlRefused(f"is not valid YAML{line} ({exc.__class__.__name__})") from exc
