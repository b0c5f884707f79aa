"""What the watch's last pass decided, kept in `<workspace>/watch.json` beside its signals, so a front door (the
operator console) shows it whichever process ran the pass: `kintsugi watch`, the server's watch or DataHub Actions.

Per pipeline: the decision on its champion (healthy, rolled back, proposed, waiting, flagged, reported), the
versions at risk and the record that acted on it; and the retrains started, what changed, the errors. A record of
what was seen, never an input to the next pass (each pass decides from the current state).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from controlplane.champion.rollout import ChampionOutcome

__all__ = ["ChampionDecision", "LastPass", "last_pass_of", "last_pass_json", "last_pass_from"]


@dataclass(frozen=True)
class ChampionDecision:
    """One pipeline's champion as the pass left it."""

    pipeline: str
    action: str  # healthy | rolled-back | proposed | waiting | flagged | reported | watched | none
    champion: int | None  # the champion the pass found
    target: int | None  # the version a rollback moves (or would move) to
    why: str
    at_risk: tuple[str, ...]  # "v2 <- urn" per version at risk and its cause
    record: str | None  # the run record that wrote it, if it wrote anything
    message: str


@dataclass(frozen=True)
class LastPass:
    at_ms: int
    decisions: tuple[ChampionDecision, ...]
    changes: tuple[str, ...]
    retrains: tuple[str, ...]  # one status line per pipeline due a retrain
    errors: tuple[str, ...]


def last_pass_of(
    now_ms: int,
    champions: list[ChampionOutcome],
    changes: list[str],
    retrains: list[dict[str, Any]],
    errors: list[str],
) -> LastPass:
    """A pass's report (`controlplane.watch.follow.PassReport`'s fields) as it is kept."""
    decisions = tuple(
        ChampionDecision(
            c.pipeline,
            c.action,
            c.decision.champion,
            c.decision.target,
            c.decision.why,
            c.at_risk,
            c.record,
            c.message or c.decision.why,
        )
        for c in champions
    )
    lines = tuple(f"{r['pipeline']}: {r['status']}" for r in retrains)
    return LastPass(now_ms, decisions, tuple(changes), lines, tuple(errors))


def last_pass_json(last: LastPass) -> dict[str, Any]:
    return asdict(last)


def last_pass_from(data: Any) -> LastPass:
    """The last pass as `last_pass_json` wrote it; a ValueError says what is wrong with a damaged one."""
    if not isinstance(data, Mapping):
        raise ValueError(f"the last pass is {type(data).__name__}, not an object")
    try:
        decisions = tuple(
            ChampionDecision(**{**d, "at_risk": tuple(d.get("at_risk", ()))}) for d in data.get("decisions", [])
        )
        return LastPass(
            int(data["at_ms"]),
            decisions,
            tuple(str(c) for c in data.get("changes", [])),
            tuple(str(r) for r in data.get("retrains", [])),
            tuple(str(e) for e in data.get("errors", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the last pass does not read back ({type(exc).__name__}: {exc})") from exc
