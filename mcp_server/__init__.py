"""The bundled MCP server: the same operations as the CLI, through the same gates (`kintsugi mcp`)."""

from __future__ import annotations

__all__ = ["build_server"]


def __getattr__(name: str) -> object:  # import the SDK only when the server is wanted
    if name == "build_server":
        from mcp_server.server import build_server

        return build_server
    raise AttributeError(name)
