"""What closing a writable DataHub Lite handle costs as the store grows: Lite's own close() against the adapter's.

    python benchmarks/lite_close_bench.py [--sizes 100,1000,5000] [--repeat 3]

For each size, a throwaway sqlite store is filled with that many datasets (properties, status and a schema of
five fields each, written through `controlplane.datahub.lite.LiteMetadata`). Then, alternately, one session
writes what a run writes to one dataset (properties and status) and closes: once through Lite's close(), which
deletes and rebuilds the browse index of every entity in the store, and once through the adapter's close(),
which adds the browse edges of the entities the session wrote. The fastest of `--repeat` closes of each is shown
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


def _run_writes(store: LiteMetadata, k: int) -> None:
    urn = make_dataset_urn("file", "bench.table_00000")
    store.emit([MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(name=f"run {k}"))])
    store.emit([MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=k % 2 == 1))])


def _lites_own_close(store: LiteMetadata) -> None:
    writer = store._writer
    store._writer = None
    store._written.clear()
    writer.close()


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
            timings: dict[str, list[float]] = {"lite": [], "adapter": []}
            for k in range(args.repeat):
                for name, close in (("lite", _lites_own_close), ("adapter", LiteMetadata.close)):
                    store = LiteMetadata(path)
                    _run_writes(store, k)
                    started = time.perf_counter()
                    close(store)
                    timings[name].append((time.perf_counter() - started) * 1000)
            lite, adapter = min(timings["lite"]), min(timings["adapter"])
            print(f"  {size:>9,}  {lite:>13.1f}  {adapter:>16.1f}  {lite / adapter:>6.0f}x", flush=True)


if __name__ == "__main__":
    main()
