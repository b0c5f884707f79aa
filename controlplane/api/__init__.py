"""The HTTP API (`kintsugi serve`): FastAPI over `controlplane.operations`, the MCP mount and the operator page.

Kept import-light: `create_app` lives in `controlplane.api.app`, the shared result shapes in
`controlplane.api.schemas`.
"""
from __future__ import annotations

__all__: list[str] = []
