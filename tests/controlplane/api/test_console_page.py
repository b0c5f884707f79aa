"""The operator console in headless Chromium, driven over the DevTools protocol (playwright with the system's
chromium), against `kintsugi serve`'s app on a real workspace: every view renders what the stores hold, read-only
mode offers no decision, and a rollback approved from the page moves the champion in MLflow.

Each view is also saved as a PNG in $KINTSUGI_CONSOLE_SHOTS (default: the test's temporary folder)."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from controlplane.api.app import create_app
from controlplane.frontdoor.access import ApiSettings
from controlplane.pipeline import run_pipeline
from controlplane.runs.identity import rebase_if_moved
from controlplane.spec import load_spec
from controlplane.vocab import Policy, RunStatus
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from demo.serving import serve_next_day
from demo.story import land_batch, ms
from mcp_server.commands import build_app
from tests.controlplane.watch.test_watch import INCIDENT
from tests.support import TOKEN, champion, copy_workspace, served

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (apt-get install -y chromium)")
DRILLED = ["volume_drop", "upstream_deprecated"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (make install-dev)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("KINTSUGI_CONSOLE_SHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def console(at_risk_estate) -> Iterator[tuple[str, Workspace, str]]:
    """(url, workspace, paused rollback): the app `kintsugi serve` composes (API, drills, MCP), with a token."""
    ws, proposal = at_risk_estate
    with served(build_app(ws, ApiSettings(token=TOKEN, token_name="console-operator"))) as url:
        yield url, ws, proposal


def _open(browser: Any, url: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("body[data-loaded=yes]", timeout=90_000)
    page.wait_for_selector("#passport[data-ready]", timeout=90_000)
    assert not errors, errors
    return page


def _text(page: Any, selector: str) -> str:
    return re.sub(r"\s+", " ", page.inner_text(selector))


def test_read_only_mode_lists_the_queue_without_decisions_and_shows_empty_states(browser, at_risk_estate, shots):
    ws, proposal = at_risk_estate
    with served(create_app(ws, ApiSettings(read_only=True))) as url:
        page = _open(browser, url + "/")
        try:
            assert page.get_attribute("body", "data-mode") == "read-only"
            assert "read-only server" in _text(page, "#mode") and page.locator("#token-button").is_hidden()
            row = page.locator(f"#approvals tr[data-run='{proposal}']")
            assert "rollback" in _text(page, f"#approvals tr[data-run='{proposal}']")
            assert row.locator("button").count() == 2 and row.locator("button.approve").is_hidden()
            assert page.locator("#approvals th.decide").is_hidden()
            assert page.get_attribute("#drill", "data-ready") == "none"
            assert "no drill has run here yet" in _text(page, "#drill")
            page.locator("#queue").screenshot(path=str(shots / "queue-read-only.png"))
            page.locator("#drill").screenshot(path=str(shots / "drill-empty.png"))
        finally:
            page.close()


def test_where_reads_need_the_token_the_page_asks_for_it_once_before_it_reads(browser, at_risk_estate, demo_run):
    ws, _ = at_risk_estate
    with served(create_app(ws, ApiSettings(token=TOKEN, host="0.0.0.0"))) as url:
        page = browser.new_page()
        try:
            page.goto(url + "/")
            page.wait_for_selector("#token-dialog[open]")
            assert page.get_attribute("body", "data-loaded") is None  # nothing was read without it
            page.fill("#token-input", TOKEN)
            page.click("#token-form button[type=submit]")
            page.wait_for_selector("body[data-loaded=yes]", timeout=90_000)
            assert _text(page, "#error") == "" and "delivery-eta" in _text(page, "#pipelines")
            healed = demo_run[1].healed.run_id
            page.locator("#runs a.run", has_text=healed).click()  # no EventSource (it cannot send the token)
            page.wait_for_selector(f"#run[data-ready='{healed}']")
            assert _text(page, "#events").startswith("detect BLOCKED") and "promoted" in _text(page, "#run-status")
            page.reload()  # kept for the tab: not asked again
            page.wait_for_selector("body[data-loaded=yes]", timeout=90_000)
            assert page.locator("#token-dialog[open]").count() == 0
        finally:
            page.close()


def test_every_view_renders_what_the_workspace_holds(browser, console, demo_run, shots):
    url, ws, proposal = console
    drill = httpx.post(
        url + "/drills",
        json={"scenarios": DRILLED, "seeds": 1, "controls": 1},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=600,
    )
    assert drill.status_code == 200, drill.text
    page = _open(browser, url + "/")
    try:
        # the queue: the proposed rollback, with a reason box and both buttons
        queue = page.locator(f"#approvals tr[data-run='{proposal}']")
        assert "paused at the rollback gate: v2 -> v1 proposed" in _text(page, f"#approvals tr[data-run='{proposal}']")
        assert queue.locator("button.approve").is_visible() and queue.locator("button.reject").is_visible()
        page.locator("#queue").screenshot(path=str(shots / "queue.png"))
        # a run: its timeline, its findings with the rows they name, its ledger
        healed = demo_run[1].healed.run_id
        page.locator("#runs a.run", has_text=healed).click()
        page.wait_for_selector(f"#run[data-ready='{healed}']")
        page.wait_for_function("document.querySelector('#run-status').textContent.startsWith('promoted')")
        events = _text(page, "#events")
        assert events.startswith("detect BLOCKED") and "promote APPROVED" in events
        findings = _text(page, "#findings")
        assert re.search(r"detect BLOCKED unit_mismatch distance_km block event_ts in \(2026-10-\d\d", findings), (
            findings
        )
        assert "verify CLEAN no finding" in findings
        ledger = _text(page, "#ledger")
        assert "publish" in ledger and "mlflow-alias" in ledger and ledger.count("done") >= 10
        page.locator("#run").screenshot(path=str(shots / "run.png"))
        # the lineage as a graph: a box per dataset and model with lineage, an arrow per edge
        lineage = httpx.get(url + "/lineage").json()
        nodes = {e["from"] for e in lineage["edges"]} | {e["to"] for e in lineage["edges"]}
        assert page.locator("#lineage-graph svg g.node").count() == len(nodes)
        assert page.locator("#lineage-graph svg path.edge").count() == len(lineage["edges"])
        graph = page.locator("#lineage-graph svg").text_content()
        assert "eta_features" in graph and f"{PIPELINE} v2 ★" in graph and f"{PIPELINE} v1" in graph
        page.locator("#lineage-view").screenshot(path=str(shots / "lineage.png"))
        # the champion's passport, verified now
        assert page.get_attribute("#passport", "data-ready") == "valid"
        page.select_option("#passport-version", f"{PIPELINE}@2")
        page.wait_for_function("document.querySelector('#passport-summary').textContent.startsWith('delivery-eta v2')")
        assert _text(page, "#passport-state") == "valid"
        assert "signature valid: signed by trusted key" in _text(page, "#passport-reasons")
        page.locator("#passport").screenshot(path=str(shots / "passport.png"))
        # the watch: what it decided, the version at risk, the record it wrote
        decisions = _text(page, "#watch-decisions")
        assert re.search(rf"{PIPELINE} proposed v2 → v1 paused at the rollback gate", decisions), decisions
        assert re.search(r"ACTIVE delivery-eta\.v2 " + re.escape(INCIDENT), _text(page, "#watch-risks"))
        assert proposal in _text(page, "#watch-records")
        page.locator("#watch").screenshot(path=str(shots / "watch.png"))
        # the drill kept by POST /drills: a bar per scenario and figure, the clean controls' false blocks
        assert page.get_attribute("#drill", "data-ready") == "yes"
        board = httpx.get(url + "/drills/latest").json()["scoreboard"]
        assert [s["name"] for s in board["scenarios"]] == DRILLED
        chart = page.locator("#drill-chart svg")
        assert chart.locator("rect.bar.recall").count() == chart.locator("rect.bar.named").count() == len(DRILLED)
        assert chart.locator("rect.bar.false-blocks").count() == 1
        labels = [t.strip() for t in chart.locator("text.scenario").all_text_contents()]
        assert labels == [f"✓ {name}" for name in DRILLED] + ["clean controls"]
        assert "detection recall 100%" in _text(page, "#drill-summary")
        page.locator("#drill").screenshot(path=str(shots / "drill.png"))
        page.screenshot(path=str(shots / "console.png"), full_page=True)
    finally:
        page.close()


def test_a_rollback_approved_from_the_page_moves_the_champion_in_mlflow(browser, console, shots):
    url, ws, proposal = console
    assert champion(ws) == 2
    page = _open(browser, url + "/")
    try:
        row = page.locator(f"#approvals tr[data-run='{proposal}']")
        row.locator("button.approve").click()  # no reason: nothing is sent
        assert "a reason is required" in _text(page, "#decision-status")
        assert httpx.get(f"{url}/runs/{proposal}").json()["status"] == "paused"
        row.locator("input.reason").fill("orders were double-counted; v1 predates it")
        row.locator("button.approve").click()  # the token is asked for once: a wrong one is refused by the API
        page.fill("#token-input", "not-the-token")
        page.click("#token-form button[type=submit]")
        page.wait_for_function("document.querySelector('#decision-status').dataset.result === 'error'")
        assert "the bearer token is not the API token" in _text(page, "#decision-status")
        assert champion(ws) == 2 and httpx.get(f"{url}/runs/{proposal}").json()["status"] == "paused"
        row.locator("button.approve").click()  # asked again after a 401; this time the right one
        page.fill("#token-input", TOKEN)
        page.click("#token-form button[type=submit]")
        page.wait_for_function(
            "document.querySelector('#decision-status').dataset.result === 'rolled-back'", timeout=120_000
        )
        assert page.evaluate("sessionStorage.getItem('kintsugi.token')") == TOKEN
        assert champion(ws) == 1  # read back from MLflow
        record = httpx.get(f"{url}/runs/{proposal}").json()
        assert (
            record["status"] == "rolled-back"
            and "approved by http:console-operator: orders were double-counted" in record["outcome"]
        )
        page.wait_for_function("document.querySelector('#approvals').textContent.includes('no run waits')")
        page.locator("#queue").screenshot(path=str(shots / "queue-after-approve.png"))
    finally:
        page.close()


@pytest.fixture(scope="module")
def decided_estate(demo_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str, int]:
    """(workspace, paused run, its candidate): the demo's next day served (which keeps its served errors), then a
    clean day run under ratify, whose better candidate waits at the promote gate with a draft passport."""
    source, result = demo_run
    ws = copy_workspace(source, tmp_path_factory.mktemp("decided") / "ws")
    rebase_if_moved(ws)
    serve_next_day(ws, result.healed, seed=7, now=result.now)
    spec = load_spec(ws, PIPELINE)
    day = result.now + timedelta(days=2)
    land_batch(ws, spec, seed=7, anchor=day, metres=False)
    paused = run_pipeline(ws, spec, now_ms=ms(day + timedelta(minutes=5)), policy=Policy.RATIFY)
    assert paused.status is RunStatus.PAUSED, paused.outcome
    return ws, paused.run_id, int(paused.checkpoint["trained"]["version"])


def _digits_past_the_point(text: str) -> int:
    return max((len(m) for m in re.findall(r"\.(\d+)", text)), default=0)


def test_the_passport_shows_what_is_signed_a_paused_draft_opens_and_the_served_error_is_drawn(
    browser, decided_estate, shots
):
    ws, paused, candidate = decided_estate
    with served(build_app(ws, ApiSettings(token=TOKEN, token_name="console-operator"))) as url:
        page = _open(browser, url + "/")
        try:
            # the served error, with and without the gate, as the demo measured it
            page.wait_for_selector("#served[data-ready=yes]")
            (measured,) = httpx.get(url + "/served").json()["served"]
            chart = page.locator("#served-chart svg")
            assert [chart.locator(f"rect.bar.{k}").count() for k in ("without-gate", "with-gate", "clean")] == [1, 1, 1]
            values = [float(v) for v in chart.locator("text.value").all_text_contents()]
            assert values == [pytest.approx(measured[k], rel=1e-3) for k in ("without_gate", "with_gate", "clean")]
            assert values[0] > 1.5 * values[1] and "the cost of serving the feed as sent" in _text(
                page, "#served-summary"
            )
            page.locator("#served").screenshot(path=str(shots / "served.png"))
            # the paused candidate's passport opens from the queue: a draft, with its trust and the champion beside it
            page.locator(f"#approvals tr[data-run='{paused}'] a.passport-link").click()
            page.wait_for_selector(f"#passport[data-ready=draft][data-version='{PIPELINE}@{candidate}']")
            assert _text(page, "#passport-state") == "draft"
            assert f"waits at the promote gate of run {paused}" in _text(page, "#passport-reasons")
            assert re.fullmatch(r"trust \d+/100, (high|medium|low)", _text(page, "#passport-trust"))
            assert page.locator("#passport-deductions li").count() >= 1
            assert f"run {paused} waits for a person" in _text(page, "#passport-approval")
            metrics = _text(page, "#passport-metrics")
            assert "mae (the gate's)" in metrics and f"(v{candidate - 1})" in metrics
            assert _digits_past_the_point(metrics) <= 4, metrics  # rounded, not 16 digits
            assert "pii" in _text(page, "#passport-governance")
            page.locator("#passport").screenshot(path=str(shots / "passport-draft.png"))
            # approved from the page with a reason: the signed passport names the approver and the reason
            row = page.locator(f"#approvals tr[data-run='{paused}']")
            row.locator("input.reason").fill("holdout checked against last week's deliveries")
            row.locator("button.approve").click()
            page.fill("#token-input", TOKEN)
            page.click("#token-form button[type=submit]")
            page.wait_for_function(
                "document.querySelector('#decision-status').dataset.result === 'promoted'", timeout=120_000
            )
            assert champion(ws) == candidate  # read back from MLflow
            page.wait_for_function(  # the refreshed picker names the signed version, no longer a draft
                "[...document.querySelectorAll('#passport-version option')]"
                f".some((o) => o.textContent === '{PIPELINE} v{candidate} (champion)')"
            )
            page.select_option("#passport-version", f"{PIPELINE}@{candidate}")
            page.wait_for_selector(f"#passport[data-ready=valid][data-version='{PIPELINE}@{candidate}']")
            assert _text(page, "#passport-approval") == (
                "approved by http:console-operator: holdout checked against last week's deliveries"
            )
            trust = httpx.get(f"{url}/models/{PIPELINE}/trust?version={candidate}").json()
            assert _text(page, "#passport-trust") == f"trust {trust['score']}/100, {trust['band']}"
            shown = _text(page, "#passport-deductions")
            assert all(f"−{d['points']} {d['reason']}" in shown for d in trust["deductions"])
            page.locator("#passport").screenshot(path=str(shots / "passport-approved.png"))
        finally:
            page.close()
