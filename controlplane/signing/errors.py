"""The signing library's one error, on the project's tree: a key or a signature could not be made or read."""

from __future__ import annotations

from controlplane.errors import WorkspaceError

__all__ = ["SigningError"]


class SigningError(WorkspaceError):
    """A key or a signature could not be made or read. `message` says what; `fix` says what to do."""

    code = "signing"
