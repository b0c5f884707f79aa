"""The control plane's words, defined once: run status and kind, policy, stage, ledger kind and promotion verdict.

Exit codes, API/MCP literals and DataHub tags all come from these enums.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "Policy",
    "RunStatus",
    "RunKind",
    "Stage",
    "LedgerKind",
    "Verdict",
    "Gate",
    "EXIT_BLOCKED",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_DECIDE",
]

EXIT_BLOCKED = 1  # a verdict: the guard or the gate blocked; a scheduler should not retry
EXIT_ERROR = 2  # an error: bad input, a store down, a bug...; the message says what to do
EXIT_DECIDE = 3  # a person must decide: a run paused at a gate, a candidate that needs review
EXIT_INTERRUPTED = 130  # Ctrl-C (the shell's 128 + SIGINT): not a verdict either; a run it cut short is recovered


class Policy(StrEnum):
    AUTO = "auto"  # heal, publish and promote on the gate's verdict
    RATIFY = "ratify"  # pause before publishing a heal and before moving the champion alias
    DRY_RUN = "dry-run"  # detect and plan; write nothing anywhere

    @property
    def writes(self) -> bool:
        return self is not Policy.DRY_RUN


class RunStatus(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"  # at a ratify gate (or a NEEDS_REVIEW candidate): `approve` or `reject`
    PROMOTED = "promoted"
    KEPT = "kept"  # the gate kept the champion: the candidate lost to it on complete evidence (a decision)
    UNCHANGED = "unchanged"  # a candidate would be fit on exactly the champion's rows and spec: the champion stands
    NEEDS_REVIEW = "needs-review"  # trained, not promoted: a soft verdict a person may approve
    PLANNED = "planned"  # dry-run
    BLOCKED = "blocked"
    REJECTED = "rejected"
    FAILED = "failed"  # an error ended the run; its writes were rolled back or never made
    INTERRUPTED = "interrupted"  # its process is gone mid-run: `kintsugi recover RUN_ID`
    RECOVERED = "recovered"  # an interrupted run rolled back to a consistent state
    UNDOING = "undoing"  # an undo in progress (an interrupted undo is finished by `undo` again)
    UNDONE = "undone"
    WATCHED = "watched"  # a watch pass recorded what it learned (models at risk, a flag, a postmortem)
    ROLLED_BACK = "rolled-back"  # a watch pass moved an unsafe champion back to an earlier, clean version
    ONBOARDED = "onboarded"  # `kintsugi init` registered the pipeline (a record of what it wrote, not a run)
    LANDED = "landed"  # `kintsugi land` appended a batch (likewise)

    @property
    def exit_code(self) -> int:
        """What a scheduler sees, one question each: 0 decided (promoted, the champion kept, nothing to do),
        1 the data is blocked, 2 an error, 3 a person must decide."""
        if self in (RunStatus.BLOCKED, RunStatus.REJECTED):
            return EXIT_BLOCKED
        if self in (RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.RUNNING, RunStatus.UNDOING):
            return EXIT_ERROR
        if self in (RunStatus.PAUSED, RunStatus.NEEDS_REVIEW):
            return EXIT_DECIDE
        return 0

    @property
    def finished(self) -> bool:
        return self not in (RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.UNDOING)


class RunKind(StrEnum):
    """What a run record is the record of: a run of the loop, or another command that writes and is journaled."""

    LOOP = "run"  # detect, heal, train, promote (`kintsugi run`, approve and reject continue one)
    INIT = "init"  # `kintsugi init` onboarding a pipeline
    LAND = "land"  # `kintsugi land` appending a batch
    PROMOTE = "promote"  # `kintsugi promote` moving the champion by hand
    WATCH = "watch"  # a watch pass (models at risk, a flag, postmortems)
    ROLLBACK = "rollback"  # a watch pass moving an unsafe champion back

    @property
    def command(self) -> bool:
        """An init or a land: a record of what it wrote, no publish, no model version to take back."""
        return self in (RunKind.INIT, RunKind.LAND)


class Stage(StrEnum):
    DETECT = "detect"
    INCIDENT = "incident"
    HEAL = "heal"
    VERIFY = "verify"
    PUBLISH = "publish"
    RESOLVE = "resolve"
    REFERENCE = "reference"
    TRAIN = "train"
    PROMOTE = "promote"
    APPROVE = "approve"
    REJECT = "reject"
    UNDO = "undo"
    RECOVER = "recover"
    WATCH = "watch"
    ROLLBACK = "rollback"
    INIT = "init"
    LAND = "land"
    ERROR = "error"


class ChangedTable(StrEnum):
    """What a take-back does with a table changed since the run published it (a producer's write, not a run's)."""

    REFUSE = "refuse"  # the default: nothing is changed, the refusal names the two ways out
    RESTORE = "restore"  # put the run's kept bytes back over the change (`undo --table restore`)
    KEEP = "keep"  # keep the changed bytes, take back the rest (`recover --table keep`)


class Gate(StrEnum):
    PUBLISH = "publish"
    PROMOTE = "promote"
    ROLLBACK = "rollback"  # a proposed rollback of an unsafe champion (controlplane.champion.rollout)


class LedgerKind(StrEnum):
    """Every external write a run makes; each is journaled as intended before it is made."""

    DATAHUB = "datahub-aspect"
    PUBLISH = "publish"
    REFERENCE = "reference"
    MLFLOW_RUN = "mlflow-run"
    MLFLOW_VERSION = "mlflow-version"
    MLFLOW_TAGS = "mlflow-tags"
    ALIAS = "mlflow-alias"
    RESTORE = "restore"
    WORKSPACE_FILE = "workspace-file"  # a spec or contract file written under the workspace (init)
    APPEND = "append"  # a batch appended to the table where it lives (land)


class Verdict(StrEnum):
    """The promotion gate's verdict on a candidate, and an operator's rejection of it."""

    APPROVED = "APPROVED"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    BLOCKED = "BLOCKED"
    REJECTED = "REJECTED"

    @property
    def tag(self) -> str:
        """The DataHub tag a version carries (`champion` is separate: exactly one version holds it)."""
        return "urn:li:tag:" + self.value.lower().replace("_", "-")

    def run_status(self, champion_kept: bool = False) -> RunStatus:
        """How a run that concluded with this verdict ends: a candidate BLOCKED only because it lost to the champion
        on complete evidence keeps the champion (a decision), not a block of the data."""
        if champion_kept and self is Verdict.BLOCKED:
            return RunStatus.KEPT
        return {
            Verdict.APPROVED: RunStatus.PROMOTED,
            Verdict.NEEDS_REVIEW: RunStatus.NEEDS_REVIEW,
            Verdict.BLOCKED: RunStatus.BLOCKED,
            Verdict.REJECTED: RunStatus.REJECTED,
        }[self]
