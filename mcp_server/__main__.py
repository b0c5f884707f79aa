"""`python -m mcp_server --workspace DIR [--read-only]`: the MCP server over stdio (same as `kintsugi mcp`)."""

from __future__ import annotations

from mcp_server.commands import run_mcp_cli

run_mcp_cli()
