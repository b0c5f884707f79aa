"""`python -m controlplane` is the `kintsugi` command."""
from controlplane.cli import main

main()
