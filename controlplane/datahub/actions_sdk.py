"""DataHub Actions' side of the door: the base class an action extends, and the URNs an event names.

acryl-datahub-actions is not a dependency of Kintsugi: without it `ActionBase` is a plain object, so the action
(`controlplane.watch.actions`) still imports, and DataHub Actions, where it is installed, loads it as one of its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ActionBase", "event_urns"]

try:  # the base class when DataHub Actions runs us; a plain object otherwise
    from datahub_actions.action.action import Action as ActionBase  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    ActionBase = object


def event_urns(event: Any) -> list[str]:
    """The URNs an event names: an EntityChangeEvent's entity and modifier (an incident, an assertion...), a
    MetadataChangeLog's entity."""
    payload = getattr(event, "event", event)
    found = [getattr(payload, name, None) for name in ("entityUrn", "modifier")]
    return [urn for urn in found if isinstance(urn, str) and urn.startswith("urn:li:")]
