"""One door for reading a file whose bytes must be the bytes a hash named: every byte decoded is hashed as it is read.

A stage that checks a file's hash and then opens it by path reads whatever the file holds at the open: a rewrite
in between reaches the decoder. Here the check is made on the read itself. `digests_of` takes the file's sha256 and,
in the same pass, one digest per `BLOCK`-byte range; while `verified(path, digests)` is open, every parquet reader
that opens `path` through `open_parquet` reads it through a `VerifiedFile`, which reads whole blocks, compares each
with its digest and serves the reader from those very bytes (bounded memory: a few blocks cached, one pread per
request). A block that no longer matches is never decoded: the read raises `ReadChanged`, and `verified` raises it
again on leaving, even where a reader caught it, so no stage can pass over bytes it did not read.

A reader that opens the file by other means (a JVM, a subprocess) is outside the door; its caller checks the hash
after the read instead (`controlplane.stages.pin.verify_file`).
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence, cast

import pyarrow as pa
import pyarrow.parquet as pq

from tables.objectstore import copy_hashing

__all__ = [
    "BLOCK",
    "Digests",
    "ReadChanged",
    "VerifiedFile",
    "copy_file",
    "digests_of",
    "open_parquet",
    "read_table",
    "verified",
]

BLOCK = 1 << 18  # 256 KiB: the unit that is hashed, and read whole
_CACHED_BLOCKS = 64  # per open reader: 16 MiB at most


class ReadChanged(Exception):
    """The file's bytes are not the bytes its digests name (rewritten, truncated, grown, gone)."""

    def __init__(self, path: Path | str, how: str) -> None:
        super().__init__(f"{path} {how}")
        self.path, self.how = str(path), how


@dataclass(frozen=True)
class Digests:
    """A file's sha256 (hex) and the digest of each `BLOCK`-byte range of it, taken in one pass."""

    sha256: str
    size: int
    blocks: tuple[bytes, ...] = field(repr=False)


def digests_of(path: Path, expected: str) -> Digests:
    """The digests of `path`, whose sha256 must be `expected` (hex, or `sha256:`hex); else `ReadChanged`.
    Taken once per (file, expected hash) in a process: every later read is checked against them anyway."""
    return _digests(os.path.realpath(path), expected.removeprefix("sha256:"))


@lru_cache(maxsize=8)
def _digests(real: str, expected: str) -> Digests:
    whole, blocks, size = hashlib.sha256(), [], 0
    try:
        with open(real, "rb") as handle:
            while block := _read_full(handle, BLOCK):
                whole.update(block)
                blocks.append(hashlib.sha256(block).digest())
                size += len(block)
    except OSError as exc:
        raise ReadChanged(real, f"cannot be read ({exc.strerror})") from exc
    if whole.hexdigest() != expected:
        raise ReadChanged(real, f"no longer hashes to sha256:{expected}")
    return Digests(expected, size, tuple(blocks))


def _read_full(handle: io.BufferedReader, size: int) -> bytes:
    parts, left = [], size
    while left and (part := handle.read(left)):
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


@dataclass
class _Trust:
    digests: Digests
    holders: int = 0
    changed: str | None = None


_lock = threading.Lock()
_trusted: dict[str, _Trust] = {}


@contextmanager
def verified(path: Path, digests: Digests) -> Iterator[None]:
    """While open, `open_parquet(path)` reads `path` through a `VerifiedFile` of `digests` (in every thread).
    On leaving, a read that found other bytes raises `ReadChanged`, whatever the reader made of it."""
    real = os.path.realpath(path)
    with _lock:
        trust = _trusted.setdefault(real, _Trust(digests))
        if trust.digests.sha256 != digests.sha256:
            raise ValueError(f"{path} is read as two different files at once")
        trust.holders += 1
    try:
        yield
    except ReadChanged:
        raise
    except Exception as exc:
        if trust.changed is not None:  # whatever went wrong, the file changed under the reader first
            raise ReadChanged(path, trust.changed) from exc
        raise
    finally:
        with _lock:
            trust.holders -= 1
            if trust.holders == 0:
                del _trusted[real]
    if trust.changed is not None:
        raise ReadChanged(path, trust.changed)


def _trust_of(path: Path | str) -> _Trust | None:
    with _lock:
        return _trusted.get(os.path.realpath(path))


def open_parquet(path: Path | str, **options: object) -> pq.ParquetFile:
    """`pq.ParquetFile(path, **options)`, read through a `VerifiedFile` while `path` is `verified`."""
    trust = _trust_of(path)
    if trust is None:
        return pq.ParquetFile(path, **options)  # type: ignore[arg-type]
    return pq.ParquetFile(VerifiedFile(path, trust), **options)  # type: ignore[arg-type]


def read_table(path: Path | str, columns: Sequence[str] | None = None) -> pa.Table:
    """`pq.read_table(path, columns=...)` of one parquet file, through the door."""
    if _trust_of(path) is None:
        return pq.read_table(path, columns=list(columns) if columns is not None else None)
    return open_parquet(path).read(columns=list(columns) if columns is not None else None)


def copy_file(source: Path, target: Path) -> str:
    """Copy `source` into a new file `target` through the door; the hash (`sha256:`hex) of the bytes written."""
    trust = _trust_of(source)
    target.unlink(missing_ok=True)
    with VerifiedFile(source, trust) if trust is not None else open(source, "rb") as handle:
        return "sha256:" + copy_hashing(cast(BinaryIO, handle), target)


class VerifiedFile(io.RawIOBase):
    """A read-only file whose every byte served was read in a block whose digest matched."""

    def __init__(self, path: Path | str, trust: _Trust) -> None:
        super().__init__()
        self._path, self._trust, self._digests = str(path), trust, trust.digests
        self._fd = os.open(path, os.O_RDONLY)
        self._pos = 0
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._digests.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int = -1) -> bytes:
        start = self._pos
        end = self._digests.size if size is None or size < 0 else min(self._digests.size, start + size)
        if end <= start:
            return b""
        first, last = start // BLOCK, (end - 1) // BLOCK
        if first == last:
            data = self._block(first)
            out = data[start - first * BLOCK : end - first * BLOCK]
        else:  # one pread of the whole span, each block checked in place
            base = first * BLOCK
            span = self._pread(base, min(self._digests.size, (last + 1) * BLOCK) - base)
            view = memoryview(span)
            for index in range(first, last + 1):
                self._check(index, view[(index - first) * BLOCK : (index - first + 1) * BLOCK])
            out = span[start - base : end - base]
        self._pos = end
        return out

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readall(self) -> bytes:
        return self.read(-1)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()

    def _block(self, index: int) -> bytes:
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        data = self._pread(index * BLOCK, BLOCK)
        self._check(index, memoryview(data))
        self._cache[index] = data
        if len(self._cache) > _CACHED_BLOCKS:
            self._cache.popitem(last=False)
        return data

    def _pread(self, offset: int, size: int) -> bytes:
        parts, left = [], size
        while left:
            part = os.pread(self._fd, left, offset + size - left)
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def _check(self, index: int, data: memoryview) -> None:
        blocks = self._digests.blocks
        expected_size = min(BLOCK, self._digests.size - index * BLOCK)
        if index >= len(blocks) or len(data) != expected_size or hashlib.sha256(data).digest() != blocks[index]:
            how = f"changed at bytes {index * BLOCK}-{index * BLOCK + expected_size} after its hash was taken"
            self._trust.changed = self._trust.changed or how
            raise ReadChanged(self._path, how)
