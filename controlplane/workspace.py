"""Where everything lives: one workspace folder (default ./.kintsugi, or KINTSUGI_HOME, or --workspace).

Everything the workspace records about itself is relative to its root, so a copied folder is a workspace of
its own (`rel` and `path` convert); the MLflow store's absolute artifact locations are rebased when a copy is
first opened (`controlplane.runs.identity`).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from controlplane.errors import WorkspaceError

__all__ = ["Workspace", "resolve_workspace", "DEFAULT_WORKSPACE"]

DEFAULT_WORKSPACE = ".kintsugi"


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def datahub_db(self) -> Path:
        return self.root / "datahub.db"

    @property
    def mlflow_db(self) -> Path:
        return self.root / "mlflow.db"

    @property
    def mlflow_uri(self) -> str:
        return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{self.mlflow_db}"

    @property
    def artifacts(self) -> Path:
        return self.root / "mlartifacts"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def pipelines(self) -> Path:
        return self.root / "pipelines"

    @property
    def contracts(self) -> Path:
        return self.root / "contracts"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def references(self) -> Path:
        return self.root / "references"

    @property
    def cache(self) -> Path:
        """What can be computed again, kept to save time (model versions' holdout predictions): never a record."""
        return self.root / "cache"

    @property
    def drills(self) -> Path:
        """Scoreboards kept from drills (`POST /drills`, `kintsugi drill --out <here>/NAME`): one folder each."""
        return self.root / "drills"

    @property
    def served(self) -> Path:
        """Served-error measurements, one file per pipeline (`controlplane.frontdoor.served`): evidence, not state."""
        return self.root / "served"

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def identity_file(self) -> Path:
        return self.root / "workspace.json"

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def rel(self, path: Path | str) -> str:
        """A path inside the workspace as text relative to its root (absolute if it lies outside)."""
        absolute = Path(path) if Path(path).is_absolute() else self.root / path
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return str(absolute)

    def path(self, recorded: str) -> Path:
        """A path as recorded by `rel`, back to an absolute path under this root."""
        candidate = Path(recorded)
        return candidate if candidate.is_absolute() else self.root / candidate

    def ensure(self) -> Workspace:
        """Create the folders, or fail with one line naming the fix."""
        if self.root == Path(self.root.anchor):
            raise WorkspaceError(
                f"{self.root} is the file system's root, not a workspace folder",
                "pass --workspace DIR (a folder of its own) or set KINTSUGI_HOME to one",
            )
        for folder in (self.root, self.data, self.pipelines, self.contracts, self.runs, self.artifacts):
            self._writable(folder, probe=False)
        return self.check_writable()

    def check_writable(self) -> Workspace:
        """Fail with one line naming the fix unless the root and runs/ take new files: what every writer checks
        before it writes anything (the stores' journals go beside them, the locks and run records under runs/),
        so a read-only workspace is refused whole, not half-way through a run."""
        self._writable(self.root)
        self._writable(self.runs)
        return self

    def _writable(self, folder: Path, *, probe: bool = True) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if probe:
                with tempfile.TemporaryFile(dir=folder):  # nameless where it can be: concurrent writers never meet
                    pass
        except OSError as exc:
            why = "not a folder" if folder.exists() and not folder.is_dir() else (exc.strerror or str(exc))
            raise WorkspaceError(
                f"workspace {self.root} is not writable ({folder}: {why})",
                "make it writable, or pass --workspace DIR or set KINTSUGI_HOME to a writable folder",
            ) from exc


def resolve_workspace(option: str | Path | None = None) -> Workspace:
    """--workspace wins, then KINTSUGI_HOME, then ./.kintsugi."""
    chosen = option or os.environ.get("KINTSUGI_HOME") or DEFAULT_WORKSPACE
    return Workspace(Path(chosen).expanduser().resolve())
