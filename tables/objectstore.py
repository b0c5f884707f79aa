"""Byte-level access to where a table's files live: the local file system or an S3-compatible object store.

Two small stores with the same verbs (kind, walk, stat, open, fetch, put, delete). They know nothing of
tables; `tables.locations` decides what the files mean. Every failure is a `LocationError` whose one
line names the fix.

S3 credentials, region and endpoint come from the usual AWS environment: AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), AWS_REGION or AWS_DEFAULT_REGION, and AWS_ENDPOINT_URL_S3 or
AWS_ENDPOINT_URL for an S3-compatible server (e.g. http://127.0.0.1:9000).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable
from urllib.parse import urlsplit

from pyarrow import fs as pafs

__all__ = [
    "LocationError",
    "TableChanged",
    "StoredFile",
    "LocalStore",
    "S3Store",
    "sha256_file",
    "file_hash",
    "bytes_hash",
    "content_hash",
    "copy_hashing",
    "sha256_stream",
]

_BLOCK = 1 << 20


class LocationError(Exception):
    """A table location that cannot be used as it is: `message` says what was wrong, `fix` what to do."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = " ".join(str(message).split())  # always one line
        self.fix = " ".join(str(fix).split())

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"


class TableChanged(LocationError):
    """The bytes are not the ones expected: a pin that changed, a compare-and-swap that lost, a damaged backup."""


@dataclass(frozen=True)
class StoredFile:
    path: str  # absolute local path, or "bucket/key"
    size: int
    version: str  # local: "mtime_ns=<n>;ino=<i>"; S3: "etag=<etag>"


def content_hash(shas: Iterable[tuple[str, str]]) -> str:
    """One hash over a table's files: sorted (relative name, sha256 of its bytes) pairs."""
    digest = hashlib.sha256()
    for name, sha in sorted(shas):
        digest.update(f"{name}\0{sha}\n".encode())
    return "sha256:" + digest.hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return sha256_stream(handle)


def file_hash(path: Path) -> str:
    """The one hash of a file's bytes the loop records and compares: `sha256:` and the hex digest."""
    return "sha256:" + sha256_file(path)


def bytes_hash(data: bytes | memoryview) -> str:
    """`file_hash` of bytes already in memory: what a reader that hashes exactly the bytes it decodes compares."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha256_stream(handle: BinaryIO) -> str:
    """The sha256 of what is left to read in `handle`, read block by block."""
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(_BLOCK), b""):
        digest.update(block)
    return digest.hexdigest()


def copy_hashing(source: BinaryIO, target: Path) -> str:
    """Copy a stream into a new local file (fsynced), returning the sha256 of exactly the bytes written."""
    digest = hashlib.sha256()
    with open(target, "xb") as out:
        for block in iter(lambda: source.read(_BLOCK), b""):
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _explain(exc: BaseException, where: str) -> LocationError:
    if isinstance(exc, LocationError):
        return exc
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, PermissionError) or "ACCESS_DENIED" in text or "AccessDenied" in text:
        return LocationError(
            f"cannot read {where}: permission denied",
            "give the user running kintsugi read and write access to it, or fix the data: path",
        )
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in text or "NoSuchKey" in text:
        return LocationError(f"no table at {where}", "fix the data: path, or create it (land a first batch)")
    if "connect" in text.lower() or "Couldn't connect" in text or "resolve host" in text.lower():
        return LocationError(
            f"cannot reach the object store for {where}: {text}",
            "check AWS_ENDPOINT_URL, the network and the credentials",
        )
    return LocationError(f"cannot use {where}: {text}", "check the path, its permissions and the file system")


# --------------------------------------------------------------------------------------------- local


class LocalStore:
    """The local file system, with the operations that make local publishes atomic."""

    scheme = "file"

    def display(self, path: str) -> str:
        return path

    def kind(self, path: str) -> str:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            raise _explain(exc, path) from exc
        if stat.S_ISDIR(info.st_mode):
            return "dir"
        return "file" if stat.S_ISREG(info.st_mode) else "other"

    def walk(self, root: str) -> list[str]:
        """Every regular file under `root`, recursively, sorted; an unreadable folder is an error."""
        found: list[str] = []

        def fail(exc: OSError) -> None:
            raise _explain(exc, exc.filename or root) from exc

        for folder, dirs, names in os.walk(root, onerror=fail):
            dirs.sort()
            found.extend(os.path.join(folder, name) for name in sorted(names))
        return sorted(found)

    def stat(self, path: str) -> StoredFile:
        try:
            info = os.stat(path)
        except OSError as exc:
            raise _explain(exc, path) from exc
        return StoredFile(path, info.st_size, f"mtime_ns={info.st_mtime_ns};ino={info.st_ino}")

    def open(self, path: str) -> BinaryIO:
        try:
            return open(path, "rb")
        except OSError as exc:
            raise _explain(exc, path) from exc

    def fetch(self, path: str, target: Path) -> str:
        """An independent copy (never a link) of `path` at `target`; returns its sha256."""
        with self.open(path) as source:
            try:
                return copy_hashing(source, target)
            except OSError as exc:
                raise _explain(exc, path) from exc

    def sha256(self, path: str) -> str:
        with self.open(path) as handle:
            try:
                return sha256_stream(handle)
            except OSError as exc:
                raise _explain(exc, path) from exc

    def put(self, path: str, source: Path) -> None:
        """Replace (or create) `path` with the bytes of `source`, atomically: temp file + fsync + rename."""
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, f".{os.path.basename(path)}.kintsugi-tmp")
        try:
            with open(source, "rb") as handle:
                if os.path.exists(temporary):
                    os.unlink(temporary)
                copy_hashing(handle, Path(temporary))
            os.replace(temporary, path)
        except OSError as exc:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise _explain(exc, path) from exc
        fsync_dir(folder)

    def put_new(self, path: str, source: Path) -> bool:
        """Create `path` with `source`'s bytes only if nothing is there (link(2) never overwrites).

        Returns False (and writes nothing) when the name is already taken.
        """
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, f".{os.path.basename(path)}.kintsugi-tmp")
        try:
            if os.path.exists(temporary):
                os.unlink(temporary)
            shutil.copyfile(source, temporary)
            with open(temporary, "rb+") as handle:
                os.fsync(handle.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(temporary)
        except OSError as exc:
            raise _explain(exc, path) from exc
        fsync_dir(folder)
        return True

    def delete(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _explain(exc, path) from exc


def fsync_dir(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# --------------------------------------------------------------------------------------------- S3


def s3_filesystem() -> pafs.S3FileSystem:
    """pyarrow's S3 file system configured from the usual AWS environment variables."""
    options: dict[str, object] = {
        "connect_timeout": 5,
        "request_timeout": 30,
        "allow_bucket_creation": False,
        "allow_bucket_deletion": False,
    }
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        options["endpoint_override"] = parts.netloc
        options["scheme"] = parts.scheme
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options)  # credentials: the AWS default chain (environment first)


class S3Store:
    """An S3 bucket through pyarrow. Each object is written whole or not at all (S3 PUT / multipart
    complete are atomic per object); nothing is atomic across objects."""

    scheme = "s3"

    def __init__(self, filesystem: pafs.FileSystem | None = None) -> None:
        self.fs = filesystem or s3_filesystem()

    def display(self, path: str) -> str:
        return f"s3://{path}"

    def _call(self, path: str, action, *args):
        try:
            return action(*args)
        except (OSError, ValueError) as exc:
            raise _explain(exc, self.display(path)) from exc

    def kind(self, path: str) -> str:
        info = self._call(path, self.fs.get_file_info, path)
        return {pafs.FileType.File: "file", pafs.FileType.Directory: "dir"}.get(info.type, "missing")

    def walk(self, root: str) -> list[str]:
        selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
        infos = self._call(root, self.fs.get_file_info, selector)
        return sorted(info.path for info in infos if info.type == pafs.FileType.File)

    def stat(self, path: str) -> StoredFile:
        info = self._call(path, self.fs.get_file_info, path)
        if info.type != pafs.FileType.File:
            raise LocationError(f"no object at {self.display(path)}", "fix the data: path, or land a first batch")
        with self._call(path, self.fs.open_input_stream, path) as stream:  # one HEAD: the ETag
            etag = (stream.metadata() or {}).get("ETag", b"").decode().strip('"')
        return StoredFile(path, info.size, f"etag={etag}" if etag else f"mtime_ns={info.mtime_ns}")

    def open(self, path: str) -> BinaryIO:
        return self._call(path, self.fs.open_input_stream, path)

    def fetch(self, path: str, target: Path) -> str:
        with self.open(path) as stream:
            return self._call(path, copy_hashing, stream, target)

    def sha256(self, path: str) -> str:
        with self.open(path) as stream:
            return self._call(path, sha256_stream, stream)

    def put(self, path: str, source: Path) -> None:
        def upload() -> None:
            with open(source, "rb") as handle, self.fs.open_output_stream(path, metadata={}) as out:
                for block in iter(lambda: handle.read(_BLOCK), b""):
                    out.write(block)

        self._call(path, upload)

    def put_new(self, path: str, source: Path) -> bool:
        """Upload unless the key exists. S3 through pyarrow has no conditional PUT: check, then put."""
        if self.kind(path) != "missing":
            return False
        self.put(path, source)
        return True

    def delete(self, path: str) -> None:
        if self.kind(path) == "missing":
            return
        self._call(path, self.fs.delete_file, path)
