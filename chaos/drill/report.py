"""The scoreboard written out: JSON, a markdown table, and a chart (matplotlib, Agg backend)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["write_reports", "markdown", "pipeline_markdown", "chart", "summary_lines"]


def write_reports(board: dict[str, Any], out: Path) -> list[Path]:
    """scoreboard.json, scoreboard.md and scoreboard.png in `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "scoreboard.json", out / "scoreboard.md", out / "scoreboard.png"]
    paths[0].write_text(json.dumps(board, indent=2, sort_keys=True) + "\n")
    paths[1].write_text(markdown(board))
    chart(board, paths[2])
    return paths


def summary_lines(board: dict[str, Any]) -> list[str]:
    drill = board["drill"]
    return [
        f"seeds {drill['seeds']}, {drill['runs']} scenario runs, {drill['controls']} clean controls",
        f"detection recall {_pct(board['detection_recall'])}, localization {_pct(board['localization_rate'])}, "
        f"heal rate {_pct(board['heal_rate'])}, correct blocks {_pct(board['block_rate'])}, "
        f"pass rate {_pct(board['pass_rate'])}",
        f"false alarms {board['false_alarms']} of {drill['controls']} clean controls "
        f"({board['controls_promoted']} promoted); harmful misses in the sweeps: {board['harmful_misses']}",
        f"failed: {', '.join(board['scenarios_failed']) or 'none'}",
    ]


def markdown(board: dict[str, Any]) -> str:
    if board["drill"].get("mode") == "pipeline":
        return pipeline_markdown(board)
    lines = [
        "# Kintsugi chaos drill scoreboard",
        "",
        *[f"- {line}" for line in summary_lines(board)],
        "",
        "| scenario | expected | det | loc | healed+verified | outcome | repair acc | collateral | "
        "metric poisoned / healed / clean | recovery | smallest detected | harmful misses | pass |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in board["scenarios"]:
        lines.append("| " + " | ".join(_cells(row)) + " |")
    failures = [(row["name"], reason) for row in board["scenarios"] for reason in row["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + [f"- **{name}**: {reason}" for name, reason in failures]
    alarms = [c for c in board["controls"] if c["alarm"]]
    if alarms:
        lines += ["", "## False alarms", ""] + [
            f"- seed {c['seed']} batch {c['batch_seed']}: {', '.join(c['findings'])}" for c in alarms
        ]
    return "\n".join(lines) + "\n"


def pipeline_markdown(board: dict[str, Any]) -> str:
    """A pipeline drill's scoreboard: a row per scenario and scope, then the clean controls."""
    drill, controls = board["drill"], board["controls"]
    lines = [
        f"# Kintsugi drill: pipeline {drill['pipeline']}",
        "",
        f"- newest batch {drill['newest_batch']} of {drill['batches']}; runs at {drill['now']}; seeds "
        f"{drill['seeds']}; {drill['runs']} scenario runs",
        f"- detected {_pct(board['detection_recall'])}, named right {_pct(board['localization_rate'])}, "
        f"corrections healed {_pct(board['heal_rate'])}, quarantined {_pct(board['quarantine_rate'])}, "
        f"held as expected {_pct(board['block_rate'])}, pass rate {_pct(board['pass_rate'])}",
        f"- clean controls: {board['false_alarms']} false block(s) of {drill['controls']} "
        f"({board['controls_promoted']} promoted); invented published cells: {board['invented_cells']}",
        "- skipped: " + ("; ".join(f"{s['name']} ({s['why']})" for s in board["skipped"]) or "none"),
        f"- failed: {', '.join(board['scenarios_failed']) or 'none'}",
        "",
        "| scenario | rows | expected | detected | named | healed / quarantined | outcome | invented | pass |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in board["scenarios"]:
        lines.append("| " + " | ".join(_pipeline_cells(row)) + " |")
    lines += [
        "",
        "| control | clean batch | false block | run ended | blocking findings | warnings |",
        "|---|---|---|---|---|---|",
    ]
    for c in controls:
        ended = c["status"] + (" (by the model gate)" if c.get("trained") and not c["promoted"] else "")
        lines.append(
            f"| {c['batch_seed']} | {c['batch']} | {'**yes**' if c['alarm'] else 'no'} | {ended} | "
            f"{', '.join(c['findings']) or '-'} | {', '.join(c.get('warnings', [])) or '-'} |"
        )
    failures = [(row["name"], reason) for row in board["scenarios"] for reason in row["failures"]]
    if failures:
        lines += ["", "## Failures", ""] + [f"- **{name}**: {reason}" for name, reason in failures]
    return "\n".join(lines) + "\n"


def _pipeline_cells(row: dict[str, Any]) -> list[str]:
    expected, runs = row["expected"], row["runs"]
    name, scope = row["name"].rsplit("@", 1)
    unit = f" ({expected['unit']})" if expected.get("unit") else ""
    if expected["healable"]:
        handled = _rate(row["healed"]) + " healed"
    elif any(r["quarantined"] for r in runs):
        handled = "quarantined " + "/".join(str(r["quarantined"]) for r in runs) + " rows"
    else:
        handled = "-"
    return [
        f"`{name}`",
        scope,
        f"{expected['kind']} @ {'/'.join(expected['columns'])}{unit} → {expected['outcome']}",
        _rate(row["detected"]),
        _rate(row["localized"]),
        handled,
        ", ".join(f"{k} {v}" for k, v in row["outcomes"].items()),
        str(sum(r["invented_cells"] for r in runs)),
        "yes" if row["passed_all"] else "**no**",
    ]


def _cells(row: dict[str, Any]) -> list[str]:
    expected = row["expected"]
    where = expected["upstream"].split(",")[1] if expected["upstream"] else "/".join(expected["columns"]) or "-"
    impact = row["impact"]
    sweep = row["sweep"] or {}
    healed = _both(row["healed"], row["verified"]) if expected["healable"] else "n/a"
    return [
        f"`{row['name']}`",
        f"{expected['kind']} @ {where}{' (heal)' if expected['healable'] else ''}",
        _rate(row["detected"]),
        _rate(row["localized"]),
        healed,
        ", ".join(f"{k} {v}" for k, v in row["outcomes"].items()),
        _num(row["repair_accuracy"], pct=True),
        _num(row["collateral_damage"], pct=True),
        f"{_poisoned(impact)} / {_num(impact['healed'])} / {_num(impact['clean'])}",
        _num(impact["recovery"]),
        "-" if not sweep else (f"{sweep['smallest_detected']:g}" if sweep["smallest_detected"] is not None else "none"),
        "-" if not sweep else str(sweep["harmful_misses"]),
        "yes" if row["passed_all"] else "**no**",
    ]


def chart(board: dict[str, Any], path: Path) -> None:
    """Left: customer impact (poisoned vs healed, relative to clean). Right: the magnitude sweeps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = board["scenarios"]
    names = [r["name"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 0.38 * len(rows) + 2), sharey=True)
    ys = list(range(len(rows)))
    poisoned = [_mean(r["impact"]["poisoned_vs_clean"]) for r in rows]
    healed = [_mean(r["impact"]["healed_vs_clean"]) for r in rows]
    left.barh(
        ys,
        [v if v is not None else 0.0 for v in poisoned],
        height=0.6,
        color="#c0392b",
        label="trained on poisoned data",
    )
    left.scatter(
        [v for v in healed if v is not None],
        [y for y, v in zip(ys, healed) if v is not None],
        marker="D",
        color="#27ae60",
        zorder=3,
        label="trained on healed data",
    )
    left.axvline(0.02, color="grey", linestyle="--", linewidth=0.8)
    left.set_xscale("symlog", linthresh=0.02)
    ticks = [-0.1, 0.0, 0.02, 0.1, 1.0, 10.0]
    left.set_xticks(ticks, [f"{t:+.0%}" if t else "0" for t in ticks])
    left.set_yticks(ys, [f"{n} {'✓' if r['passed_all'] else '✗'}" for n, r in zip(names, rows)])
    left.invert_yaxis()
    left.set_xlabel("holdout metric vs the clean model (worse →; dashed: 2% harm)")
    left.legend(loc="lower right", fontsize=8)
    left.set_title("customer impact")
    _sweep_panel(right, rows)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sweep_panel(axis: Any, rows: list[dict[str, Any]]) -> None:
    for y, row in enumerate(rows):
        points = (row["sweep"] or {}).get("points", [])
        for rank, point in enumerate(points):
            harmful = (point["impact"] or {}).get("mean", 0.0) > 0.02
            detected = point["detected"] == 1.0
            axis.scatter(
                rank,
                y,
                s=60,
                marker="o",
                facecolors="#2c3e50" if detected else "none",
                edgecolors="#c0392b" if harmful and not detected else "#2c3e50",
                linewidths=1.5,
            )
            axis.annotate(
                f"{point['magnitude']:g}", (rank, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=6
            )
    steps = max((len((r["sweep"] or {}).get("points", [])) for r in rows), default=0)
    axis.set_xticks(range(steps), [str(step + 1) for step in range(steps)])
    axis.set_xlabel("sweep step, magnitude above each point (filled: detected; red ring: a harmful miss)")
    axis.set_title("magnitude sweeps")


def _poisoned(impact: dict[str, Any]) -> str:
    if impact["poisoned"] is None and impact.get("poisoned_untrainable"):
        return "fails to train"
    return _num(impact["poisoned"])


def _mean(stat: dict[str, Any] | None) -> float | None:
    return None if stat is None else stat["mean"]


def _rate(stat: dict[str, Any] | None) -> str:
    return "-" if stat is None else f"{stat['mean']:.0%}"


def _both(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    return f"{_rate(a)}/{_rate(b)}"


def _num(stat: dict[str, Any] | None, *, pct: bool = False) -> str:
    if stat is None:
        return "-"
    mean, spread = stat["mean"], stat["spread"]
    if pct:
        return f"{mean:.1%}" + (f" ±{spread:.1%}" if spread else "")
    return f"{mean:.3g}" + (f" ±{spread:.2g}" if spread else "")


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"
