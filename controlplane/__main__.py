"""`python -m controlplane` is the `kintsugi` command."""

from controlplane.cli.main import main

main()
