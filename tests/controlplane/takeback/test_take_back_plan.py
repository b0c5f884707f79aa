"""What a take-back plans from a run's record, read and checked before anything is touched: a batch the run kept
is forgotten once (an undo after a recovery leaves the reference alone), and a ledger entry lacking what its write
recorded is a damaged record naming the run and the fix, never a KeyError half way through."""

from __future__ import annotations

import pytest

from controlplane.errors import DamagedRecord
from controlplane.runs.journal import DONE, LedgerEntry, RunRecord
from controlplane.takeback.rollback import Forget, plan_take_back
from controlplane.vocab import Policy
from controlplane.workspace import Workspace

KEPT = {"batches": 3, "watermark_ms": 30}


def _record(*entries: tuple[str, dict, dict]) -> RunRecord:
    ledger = [LedgerEntry(i + 1, kind, "p", detail, DONE, result) for i, (kind, detail, result) in enumerate(entries)]
    return RunRecord("r-1", "p", Policy.AUTO, started_ms=1, ledger=ledger)


def _plan(tmp_path, record: RunRecord):
    return plan_take_back(Workspace(tmp_path), None, record, unfinished=False)  # no publish: the spec is not read


def test_a_batch_forgotten_by_a_recovery_is_not_forgotten_again(tmp_path):
    kept = ("reference", {"batch": "b", "previous": KEPT}, {})
    forgotten = ("reference", {"forget": "b"}, {})
    assert _plan(tmp_path, _record(kept, forgotten)).forgets == ()
    assert _plan(tmp_path, _record(kept)).forgets == (Forget("b", 3, 30),)
    again = ("reference", {"batch": "b", "previous": {"batches": 4, "watermark_ms": 40}}, {})
    assert _plan(tmp_path, _record(kept, forgotten, again)).forgets == (Forget("b", 4, 40),)  # kept once more


@pytest.mark.parametrize(
    "entry, named",
    [
        (("reference", {"batch": "b"}, {}), "lacks detail 'previous'"),
        (("reference", {"batch": "b", "previous": "three"}, {}), "where the reference stood"),
        (("publish", {"backup": "runs/r-1/backup"}, {}), "lacks detail 'before_hash'"),
        (("mlflow-version", {}, {"version": "v3"}), "not a number"),
    ],
)
def test_a_ledger_entry_lacking_what_its_write_recorded_is_a_damaged_record(tmp_path, entry, named):
    with pytest.raises(DamagedRecord) as refused:
        _plan(tmp_path, _record(("datahub-aspect", {}, {}), entry))
    assert refused.value.message.startswith("the record of run r-1 is damaged: ledger entry 2 (")
    assert named in refused.value.message and "kintsugi recover r-1" in refused.value.fix
