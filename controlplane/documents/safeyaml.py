"""YAML that cannot blow up: a size limit, a nesting limit (the composer recurses once per level: a document of
nested brackets would end in a RecursionError), no aliases (a "billion laughs" document is refused, not
expanded), and the safe loader's plain types only."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_yaml", "YamlRefused", "MAX_YAML_BYTES", "MAX_YAML_DEPTH"]

MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = 64  # a spec or a contract is a few levels deep


class YamlRefused(ValueError):
    """The document is too large, too deeply nested, uses aliases, or is not valid YAML; the message says which."""


class _NoAliasLoader(yaml.SafeLoader):
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YamlRefused(
                f"uses a YAML alias (*{event.anchor}) at line {event.start_mark.line + 1}; "
                "aliases are not accepted: write the value out"
            )
        if self.depth >= MAX_YAML_DEPTH:
            line = self.peek_event().start_mark.line + 1
            raise YamlRefused(f"nests deeper than {MAX_YAML_DEPTH} levels (at line {line})")
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


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
