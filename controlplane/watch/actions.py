"""The DataHub Actions action: `kintsugi watch` on DataHub's event stream, for a team that runs DataHub Actions.

Configured by `deploy/datahub-actions/kintsugi-watch.yaml`. Each event only says "look": the action passes the
URNs it names to `controlplane.watch.follow.on_change`, the same handler `kintsugi watch --once` runs, which does a whole
level-based pass when one of them is watched. So a replayed, duplicated or out-of-order event changes nothing a
pass would not, and the action needs no offsets of its own. Runs start and finish inside the pass.

acryl-datahub-actions is not a dependency of Kintsugi: its base class comes through the DataHub door
(`controlplane.datahub.actions_sdk`, a plain object without it), and DataHub Actions loads this action as
`controlplane.watch.actions:KintsugiWatchAction`.
"""

from __future__ import annotations

import logging
from typing import Any

from controlplane.datahub.actions_sdk import ActionBase, event_urns
from controlplane.watch.follow import on_change
from controlplane.workspace import resolve_workspace

__all__ = ["KintsugiWatchAction", "event_urns"]

log = logging.getLogger(__name__)


class KintsugiWatchAction(ActionBase):  # type: ignore[misc,valid-type]
    """config: `workspace` (the Kintsugi workspace folder; default $KINTSUGI_HOME or ./.kintsugi)."""

    def __init__(self, workspace: str | None = None) -> None:
        self.ws = resolve_workspace(workspace)

    @classmethod
    def create(cls, config_dict: dict[str, Any], ctx: Any) -> KintsugiWatchAction:
        return cls((config_dict or {}).get("workspace"))

    def act(self, event: Any) -> None:
        report = on_change(self.ws, event_urns(event))
        if report is not None:
            for line in report.lines():
                log.info("kintsugi watch: %s", line)

    def close(self) -> None:
        return None
