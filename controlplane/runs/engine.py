"""The engine a pipeline's table is profiled, healed and sampled with: `engine: arrow` in this process (the default)
or `engine: spark` on a local session (`local[N]`) or a cluster through Spark Connect (`sc://host:port`).

`open_run` gives each stretch of a run one `TableEngine` and closes it at the stretch's end. A spark engine starts
its session on first use. Sessions are counted per process (`_SESSIONS`): a local Spark session is one per
process whatever its master, so runs in one process (a server's concurrent runs, a test's) share it, and the last
to close stops it. Spark failing to start, answer or read becomes a DataError naming the fix, never a pass.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from controlplane.errors import DataError
from controlplane.spec import PipelineSpec
from profiles import engines
from profiles.snapshot import Snapshot

__all__ = ["TableEngine", "acquire_session", "release_session"]

_LOCK = threading.Lock()
_SESSIONS: dict[str, list[Any]] = {}  # key -> [session, users]


def _key(master: str) -> str:
    return "local" if master.startswith("local") else master


def acquire_session(master: str) -> Any:
    """The process's Spark session for `master` (started when none is held); pair with `release_session`."""
    from profiles.engines.spark import SparkEngineError, spark_session

    with _LOCK:
        held = _SESSIONS.get(_key(master))
        if held is None:
            try:
                held = _SESSIONS[_key(master)] = [spark_session(master, app_name="kintsugi"), 0]
            except SparkEngineError as exc:
                raise DataError(
                    str(exc),
                    "fix `spark: {master: ...}` in the pipeline spec, or choose "
                    "engine: arrow; `kintsugi doctor` checks the master",
                ) from exc
        held[1] += 1
        return held[0]


def release_session(master: str) -> None:
    """One user fewer; the last one stops the session."""
    with _LOCK:
        held = _SESSIONS.get(_key(master))
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del _SESSIONS[_key(master)]
            try:
                held[0].stop()
            except Exception:  # a session that cannot stop cleanly has nothing left to give the run  # noqa: BLE001
                pass


@dataclass
class TableEngine:
    name: str = "arrow"
    master: str | None = None
    _session: Any = field(default=None, repr=False)

    @classmethod
    def of(cls, spec: PipelineSpec) -> TableEngine:
        return cls(spec.engine, spec.spark_master)

    @property
    def spark(self) -> bool:
        return self.name == "spark"

    def session(self) -> Any:
        """The Spark session, started on first use."""
        if not self.spark or self.master is None:
            raise ValueError(f"the {self.name} engine has no Spark session")
        if self._session is None:
            self._session = acquire_session(self.master)
        return self._session

    def snapshot(self, table: Path, *, keys: Sequence[str], **options: Any) -> Snapshot:
        """The snapshot of `table` (`profiles.snapshot.read_snapshot`'s options: window, batch id...) computed by this
        engine. `keys`: the contract's key columns (empty without a key). Both engines take the sample by the same
        rule, the rows of smallest hash of their key (of the whole row without one), and hash the keys in the same
        pass: the same rows whichever engine reads the table, and duplicate keys counted with no second read."""
        if not self.spark:
            return engines.snapshot("arrow", table, keys=tuple(keys), **options)
        return engines.snapshot("spark", table, session=self.session(), keys=tuple(keys), **options)

    def close(self) -> None:
        if self._session is not None and self.master is not None:
            self._session = None
            release_session(self.master)
