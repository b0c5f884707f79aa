"""What closing a writable DataHub Lite handle costs as the store grows: Lite's own close() against the adapter's.

    python benchmarks/lite_close_bench.py [--sizes 100,1000,5000] [--repeat 3]

For each size, a throwaway sqlite store is filled with that many datasets (properties, status and a schema of
five fields each, written through `controlplane.datahub.lite.LiteMetadata`). Then a session writes what a run
writes to one dataset (properties and status) and closes, `--repeat` times through Lite's own handle, whose close()
deletes and rebuilds the browse index of every entity in the store, and as many times through the adapter, whose
close() adds the browse edges of the entities the session wrote. The fastest close of each is shown
side by side, with the ratio. Both leave the same index (tests/controlplane/datahub/test_lite_index.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datahub.emitter.mce_builder import make_dataset_urn  # noqa: E402
from datahub.emitter.mcp import MetadataChangeProposalWrapper  # noqa: E402
from datahub.lite.lite_util import get_datahub_lite  # noqa: E402
from datahub.metadata.schema_classes import (  # noqa: E402
    DatasetPropertiesClass,
    NumberTypeClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StatusClass,
)

from controlplane.datahub.lite import LiteMetadata  # noqa: E402


def _dataset(i: int) -> list[MetadataChangeProposalWrapper]:
    urn = make_dataset_urn("file", f"bench.table_{i:05d}")
    fields = [SchemaFieldClass(f"f{j}", SchemaFieldDataTypeClass(NumberTypeClass()), "double") for j in range(5)]
    schema = SchemaMetadataClass(f"table_{i}", "urn:li:dataPlatform:file", 0, "", OtherSchemaClass(""), fields)
    return [
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(name=f"table_{i}")),
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=False)),
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=schema),
    ]


def _run_writes(k: int) -> list[MetadataChangeProposalWrapper]:
    urn = make_dataset_urn("file", "bench.table_00000")
    return [
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(name=f"run {k}")),
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=k % 2 == 1)),
    ]


def _through_lite(path: Path, k: int) -> float:
    """Lite's own handle: the writes, then the seconds its close() takes."""
    lite = get_datahub_lite({"type": "sqlite", "config": {"file": str(path)}}, read_only=False)
    for mcp in _run_writes(k):
        lite.write(mcp)
    started = time.perf_counter()
    lite.close()
    return time.perf_counter() - started


def _through_adapter(path: Path, k: int) -> float:
    """The adapter: the same writes, then the seconds its close() takes."""
    store = LiteMetadata(path)
    store.emit(_run_writes(k))
    started = time.perf_counter()
    store.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("closing a writable DataHub Lite handle after a run's writes (fastest of each, ms)")
    print(f"  {'datasets':>9}  {'Lite close()':>13}  {'adapter close()':>16}  {'ratio':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "datahub.db"
            store = LiteMetadata(path)
            for i in range(size):
                store.emit(_dataset(i))
            store.close()
            lite = 1000 * min(_through_lite(path, k) for k in range(args.repeat))
            adapter = 1000 * min(_through_adapter(path, k) for k in range(args.repeat))
            print(f"  {size:>9,}  {lite:>13.1f}  {adapter:>16.1f}  {lite / adapter:>6.0f}x", flush=True)


if __name__ == "__main__":
    main()
