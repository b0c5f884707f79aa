"""The signing library's one error: what was wrong, and what to do about it."""
from __future__ import annotations

__all__ = ["SigningError"]


class SigningError(Exception):
    """A key or a signature could not be made or read. `message` says what; `fix` says what to do."""

    code = "signing"

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"
