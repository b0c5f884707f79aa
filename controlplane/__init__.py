"""The control plane: the loop, pipeline specs, the run journal, DataHub adapters, CLI and API."""
