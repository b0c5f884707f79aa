"""Helpers for the table-location tests: deterministic rows, and one `Backend` per store that writes and reads
raw bytes without going through the code under test."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def table_rows() -> pd.DataFrame:
    """Eight deterministic rows: two files' worth."""
    return pd.DataFrame(
        {
            "id": list(range(1, 9)),
            "distance_km": [1.5, 2.25, 3.0, 4.75, 5.5, 6.0, 7.125, 8.5],
            "city": ["Lyon", "Oslo", None, "Lima", "Pune", "Kobe", "Graz", "Cork"],
            "when": pd.to_datetime([f"2024-03-0{d} 0{d}:30:00" for d in range(1, 9)]),
        }
    )


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink)
    return sink.getvalue()


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()


class Backend:
    """Raw byte access to a store, independent of tables.locations."""

    def location(self, relative: str) -> str: ...
    def write(self, relative: str, data: bytes) -> None: ...
    def read_all(self, relative: str) -> dict[str, bytes]: ...


@dataclass
class LocalBackend(Backend):
    base: Path

    def location(self, relative: str) -> str:
        return relative  # relative to the base folder, as a spec would say it

    def write(self, relative: str, data: bytes) -> None:
        path = self.base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.test-tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)  # writers replace atomically

    def read_all(self, relative: str) -> dict[str, bytes]:
        root = self.base / relative
        if root.is_file():
            return {root.name: root.read_bytes()}
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class S3Backend(Backend):
    fs: object
    bucket: str

    def location(self, relative: str) -> str:
        return f"s3://{self.bucket}/{relative}"

    def write(self, relative: str, data: bytes) -> None:
        with self.fs.open_output_stream(f"{self.bucket}/{relative}") as out:
            out.write(data)

    def read_all(self, relative: str) -> dict[str, bytes]:
        from pyarrow import fs as pafs

        root = f"{self.bucket}/{relative}".rstrip("/")
        info = self.fs.get_file_info(root)
        if info.type == pafs.FileType.File:
            return {root.rsplit("/", 1)[1]: self._read(root)}
        infos = self.fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        return {
            i.path[len(root) + 1 :]: self._read(i.path)
            for i in sorted(infos, key=lambda i: i.path)
            if i.type == pafs.FileType.File
        }

    def _read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as stream:
            return stream.read()
