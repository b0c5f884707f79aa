"""The HTTP API (`kintsugi serve`): FastAPI over `controlplane.frontdoor.services`, and the operator page.

Kept import-light: `create_app` lives in `controlplane.api.app`, the result shapes in `controlplane.frontdoor.views`.
"""

from __future__ import annotations

__all__: list[str] = []
