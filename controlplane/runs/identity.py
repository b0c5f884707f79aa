"""The workspace's identity, and its stores as evidence.

`workspace.json` records an id and the folder the workspace was last opened in. The id is also written into
each store of record — a tag entity in DataHub, an experiment tag in MLflow — so a store that was replaced or
emptied is an error that names it (`StoreMismatch`), never a silent fresh start that would promote a new "v1"
over the real one.

A workspace copied to another folder is an independent workspace: everything Kintsugi records is relative to
the root, except MLflow's sqlite store, which keeps absolute artifact URIs. On first use in the new folder
those are rebased onto it (`rebase_if_moved`), so the copy never reads or writes the original's artifacts.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import sqlite3
import time
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Iterator

from controlplane.datahub.markers import is_marked, mark_workspace, marker_urn
from controlplane.datahub.port import MetadataPort
from controlplane.errors import StoreMismatch, WorkspaceError
from controlplane.workspace import Workspace

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = [
    "Identity",
    "load_identity",
    "establish_identity",
    "check_datahub",
    "check_mlflow_store",
    "rebase_if_moved",
    "datahub_marker",
    "adopt_stores",
]

_MLFLOW_TABLES = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
)


@dataclass(frozen=True)
class Identity:
    workspace_id: str
    root: str
    created_ms: int
    mlflow_marked: bool = False  # the MLflow store carries the id: from then on, its absence is an error


def load_identity(ws: Workspace) -> Identity | None:
    if not ws.identity_file.is_file():
        return None
    try:
        return Identity(**json.loads(ws.identity_file.read_text()))
    except (ValueError, TypeError) as exc:
        raise WorkspaceError(
            f"{ws.identity_file} is unreadable ({exc})",
            "restore it from a backup of the workspace; it names the stores' identity",
        ) from exc


def _save(ws: Workspace, identity: Identity) -> None:
    temporary = ws.identity_file.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(asdict(identity), indent=2, sort_keys=True))
    os.replace(temporary, ws.identity_file)


def datahub_marker(identity: Identity) -> str:
    return marker_urn(identity.workspace_id)


def establish_identity(ws: Workspace, metadata: MetadataPort, now_ms: int | None = None) -> Identity:
    """A new workspace's identity, marked in DataHub now (MLflow is marked on first use of its store)."""
    identity = load_identity(ws)
    if identity is None:
        identity = Identity(secrets.token_hex(8), str(ws.root), now_ms or int(time.time() * 1000))
        _save(ws, identity)
    mark_workspace(metadata, identity.workspace_id)
    return identity


def check_datahub(ws: Workspace, metadata: MetadataPort) -> None:
    """The metadata store is this workspace's; a workspace without identity yet gets one (first use)."""
    identity = load_identity(ws)
    if identity is None:
        if not getattr(metadata, "read_only", False):
            establish_identity(ws, metadata)
        return
    if not is_marked(metadata, identity.workspace_id):
        raise StoreMismatch(
            f"the DataHub store at {metadata.location} does not carry workspace "
            f"{identity.workspace_id}'s marker: it was replaced or emptied, or is another team's",
            "restore the workspace's DataHub store, or point the workspace at the right one; "
            "`kintsugi workspace adopt` accepts this store on purpose",
        )


def check_mlflow_store(ws: Workspace, store: ModelStore) -> None:
    """The MLflow store is this workspace's: it carries the id, or it is the first use of a fresh store."""
    identity = load_identity(ws)
    if identity is None:
        return  # a store opened outside any estate (tests of training, say): nothing to compare with
    marked = store.workspace_marker()
    if marked == identity.workspace_id:
        return
    if marked is None and not identity.mlflow_marked:  # the first use of this workspace's store
        store.set_workspace_marker(identity.workspace_id)
        _save(ws, Identity(identity.workspace_id, identity.root, identity.created_ms, mlflow_marked=True))
        return
    raise StoreMismatch(
        f"the MLflow store at {store.tracking_uri} is not workspace {identity.workspace_id}'s "
        f"({'it carries ' + marked if marked else 'its marker is gone'}): it was replaced or emptied",
        "restore the workspace's mlflow.db (or tracking server), or run `kintsugi workspace adopt` "
        "to accept this store on purpose",
    )


def adopt_stores(ws: Workspace, metadata: MetadataPort, store: ModelStore) -> Identity:
    """Accept the configured stores as this workspace's on purpose (a new server, a restored backup)."""
    identity = load_identity(ws) or establish_identity(ws, metadata)
    mark_workspace(metadata, identity.workspace_id)
    store.set_workspace_marker(identity.workspace_id)
    adopted = Identity(identity.workspace_id, identity.root, identity.created_ms, mlflow_marked=True)
    _save(ws, adopted)
    return adopted


@contextmanager
def _workspace_lock(ws: Workspace) -> Iterator[None]:
    ws.runs.mkdir(parents=True, exist_ok=True)
    with open(ws.runs / ".workspace.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def rebase_if_moved(ws: Workspace) -> bool:
    """Point the workspace's own sqlite MLflow store at this folder when the workspace was copied or moved."""
    identity = load_identity(ws)
    if identity is None or identity.root == str(ws.root):
        return False
    with _workspace_lock(ws):
        identity = load_identity(ws)
        if identity is None or identity.root == str(ws.root):
            return False
        if ws.mlflow_db.is_file() and ws.mlflow_uri == f"sqlite:///{ws.mlflow_db}":
            _rebase_mlflow(ws, identity.root)
        _save(ws, Identity(identity.workspace_id, str(ws.root), identity.created_ms, identity.mlflow_marked))
    return True


def _rebase_mlflow(ws: Workspace, old_root: str) -> None:
    old, new = f"file://{old_root}/", f"file://{ws.root}/"
    try:
        with closing(sqlite3.connect(ws.mlflow_db)) as db, db:
            for table, column in _MLFLOW_TABLES:
                db.execute(
                    f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608 (fixed names)
                    f"WHERE substr({column}, 1, ?) = ?",
                    (new, len(old) + 1, len(old), old),
                )
    except sqlite3.Error as exc:
        raise WorkspaceError(
            f"cannot rebase the MLflow store {ws.mlflow_db} from {old_root} onto {ws.root} ({exc})",
            "check that the workspace is writable and not in use",
        ) from exc
