"""A batch holding a category value the reference never held runs through the loop: the finding counts its rows as
evidence and names them by their typed time window, so nothing downstream reads a count as a window."""

from __future__ import annotations

from controlplane.runs.journal import list_runs

from onboard_support import NAME, cli, copy_ws, weather

AT = "2013-02-01T06:00:00+00:00"


def test_a_value_the_reference_never_held_is_a_finding_not_a_crash(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    batch = weather("2013-01-01", "2013-02-01")
    batch.loc[batch.index[:4], "weather"] = "hail"
    path = tmp_path / "january.parquet"
    batch.to_parquet(path, index=False)
    assert cli("land", NAME, str(path), "--now", AT, workspace=ws.root)[0] == 0
    code, out, err = cli("run", NAME, "--now", "2013-02-01T07:00:00+00:00", "--json", workspace=ws.root)
    assert code in (0, 1) and "Traceback" not in err, err
    (run,) = [r for r in list_runs(ws) if r.kind != "land" and r.now_ms > 1359600000000]
    assert run.status.value != "failed", run.outcome
    assert "new_category" in out and "'hail'" in out
