"""The `kintsugi` command line: one module per command group, one error mapper (`cli.errors`).

Commands parse input, call `controlplane.frontdoor.services`, and format output. Other packages add their commands
through the `kintsugi.commands` entry point group declared in pyproject.toml (`demo`, `chaos`, `drill`, `mcp`,
`serve`), so the control plane imports none of them.

The app is built in `controlplane.cli.main` (imported by the entry point only), so a plugin can import
`controlplane.cli.options` without building the CLI.
"""
