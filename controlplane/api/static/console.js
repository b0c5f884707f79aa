// The operator console: every view reads the HTTP API, every decision is a POST to it with the bearer token.
// Plain DOM and inline SVG; no library, no build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const SVG = "http://www.w3.org/2000/svg";
const TOKEN_KEY = "kintsugi.token";
const server = { readOnly: true, writesNeedToken: true, readsNeedToken: false };

// -- small DOM helpers ----------------------------------------------------------------------------------------

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}
function chip(text, state) { return el("span", text, "chip " + String(state === undefined ? text : state)); }
function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === null || cell === undefined ? "—" : String(cell);
    tr.appendChild(td);
  }
  return tr;
}
function fill(table, rows, empty) {
  const body = table.querySelector("tbody");
  body.replaceChildren(...rows);
  if (!rows.length) {
    const tr = row([el("span", empty, "empty")]);
    tr.firstChild.colSpan = table.querySelectorAll("thead th").length || 1;
    body.appendChild(tr);
  }
}
function when(ms) { return ms ? new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC" : "—"; }
function shortUrn(urn) {
  const dataset = /,([^,]+),[A-Z]+\)$/.exec(urn);
  if (dataset) return dataset[1];
  const model = /^urn:li:mlModel:\(urn:li:dataPlatform:[^,]+,([^,]+),[A-Z]+\)$/.exec(urn);
  return model ? model[1] : urn;
}
function pct(value) { return value === null || value === undefined ? "n/a" : Math.round(value * 100) + "%"; }
function clip(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

// -- the API --------------------------------------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY); }

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error.message + "; " + body.error.fix : "HTTP " + status);
    this.status = status;
    this.code = body && body.error ? body.error.code : "http";
  }
}

async function call(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => null);
  if (response.status === 401) sessionStorage.removeItem(TOKEN_KEY);  // a wrong token is asked for again
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}
const getJSON = (path) => call("GET", path);

// The token is asked for once, on the first decision (or the first read, on a server that needs it for reads).
function askToken() {
  const dialog = $("#token-dialog");
  $("#token-input").value = "";
  return new Promise((resolve) => {
    const done = (value) => {
      dialog.removeEventListener("close", onClose);
      resolve(value);
    };
    const onClose = () => {
      const value = dialog.returnValue === "ok" ? $("#token-input").value.trim() : "";
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      showMode();
      done(value || null);
    };
    dialog.addEventListener("close", onClose);
    dialog.returnValue = "";
    dialog.showModal();
  });
}

function showMode() {
  const mode = $("#mode");
  const button = $("#token-button");
  document.body.dataset.mode = server.readOnly ? "read-only" : "operator";
  if (server.readOnly) {
    mode.textContent = "read-only server: decisions are made elsewhere";
    button.hidden = true;
  } else {
    mode.textContent = !server.writesNeedToken ? "local server: no token needed" : token() ? "token set for this tab" : "no token yet";
    button.hidden = !server.writesNeedToken;
    button.textContent = token() ? "forget token" : "set token";
  }
  for (const node of document.querySelectorAll(".decide")) node.hidden = server.readOnly;
}

// -- approval queue -------------------------------------------------------------------------------------------

let pausedCandidates = [];
async function loadQueue() {
  const data = await getJSON("/runs?status=paused&limit=100");
  fill($("#approvals"), data.runs.map(queueRow), "no run waits for a decision");
  pausedCandidates = data.runs.filter((r) => r.candidate).map((r) => ({ model: r.pipeline, version: r.candidate, run: r.run_id }));
  passportChoices();
  showMode();
}

function passportLink(model, version) {
  const link = el("a", "passport v" + version, "run passport-link");
  link.addEventListener("click", () => {
    $("#passport-version").value = model + "@" + version;
    passportPicked = true;
    showPassport();
    $("#passport").scrollIntoView();
  });
  return link;
}

function queueRow(r) {
  const what = el("span", r.outcome);
  if (r.candidate) what.append(" ", passportLink(r.pipeline, r.candidate));
  const cells = [runLink(r.run_id), r.pipeline, chip(r.gate || "gate", "paused"), what];
  const tr = row(cells);
  const decide = document.createElement("td");
  decide.className = "decide";
  decide.hidden = server.readOnly;
  const reason = el("input", null, "reason");
  reason.placeholder = "why (kept in the record and the passport)";
  reason.maxLength = 2000;
  reason.dataset.run = r.run_id;
  const approve = el("button", "approve", "approve");
  const reject = el("button", "reject", "reject");
  for (const [button, action] of [[approve, "approve"], [reject, "reject"]]) {
    button.type = "button";
    button.dataset.run = r.run_id;
    button.addEventListener("click", () => decideRun(r.run_id, action, reason, [approve, reject]));
  }
  decide.append(reason, " ", approve, " ", reject);
  tr.appendChild(decide);
  tr.dataset.run = r.run_id;
  return tr;
}

async function decideRun(runId, action, reasonInput, buttons) {
  const status = $("#decision-status");
  const reason = reasonInput.value.trim();
  if (!reason) {
    reasonInput.classList.add("missing");
    status.textContent = "a reason is required to " + action + " run " + runId;
    reasonInput.focus();
    return;
  }
  reasonInput.classList.remove("missing");
  if (server.writesNeedToken && !token() && !(await askToken())) {
    status.textContent = "no token: nothing was sent";
    return;
  }
  buttons.forEach((b) => { b.disabled = true; });
  status.textContent = (action === "approve" ? "approving " : "rejecting ") + runId + "…";
  try {
    const record = await call("POST", "/runs/" + encodeURIComponent(runId) + "/" + action, { reason });
    status.textContent = "run " + runId + " is " + record.status + ": " + record.outcome;
    status.dataset.result = record.status;
    await refresh();
    showRun(runId);
  } catch (error) {
    status.textContent = "run " + runId + " was not " + (action === "approve" ? "approved" : "rejected") + ": " + error.message;
    status.dataset.result = "error";
    buttons.forEach((b) => { b.disabled = false; });
    showMode();
  }
}

// -- pipelines, incidents, runs -------------------------------------------------------------------------------

async function guardNow(name) {
  try {
    const report = await getJSON("/pipelines/" + encodeURIComponent(name) + "/guard");
    const cell = chip(report.verdict);
    cell.title = report.findings.map((f) => f.kind + (f.column ? " on " + f.column : "")).join(", ") || "no findings";
    return cell;
  } catch (error) {
    return el("span", "unknown", "muted");
  }
}

function lastRun(last) {
  if (!last) return el("span", "never run", "muted");
  const cell = el("div");
  cell.appendChild(chip(last.status));
  cell.appendChild(el("div", last.outcome, "muted"));
  return cell;
}

async function loadPipelines() {
  const data = await getJSON("/pipelines");
  const guards = await Promise.all(data.pipelines.map((p) => guardNow(p.name)));
  fill($("#pipelines"), data.pipelines.map((p, i) => row([
    el("strong", p.name), p.policy || "—", p.schedule ? p.schedule + " (next " + when(p.next_run_ms) + ")" : "—",
    guards[i], lastRun(p.last_run)])), "no pipelines");
}

async function loadIncidents() {
  const data = await getJSON("/incidents");
  const incidents = data.incidents.slice().sort((a, b) =>
    (a.state === "ACTIVE" ? 0 : 1) - (b.state === "ACTIVE" ? 0 : 1) || b.created_ms - a.created_ms);
  fill($("#incidents"), incidents.slice(0, 20).map((i) => {
    const what = el("div");
    what.appendChild(el("div", i.title));
    what.appendChild(el("div", i.datasets.map(shortUrn).join(", ") + " — opened " + when(i.created_ms), "muted"));
    const risk = i.at_risk_models.map(shortUrn).join(", ") || (i.state === "ACTIVE" ? "none" : "none (resolved)");
    return row([chip(i.state), what, risk]);
  }), "no incidents");
}

function runLink(runId) {
  const link = el("a", runId, "run mono");
  link.href = "#run";
  link.addEventListener("click", (e) => { e.preventDefault(); showRun(runId); $("#run").scrollIntoView(); });
  return link;
}

function timeline(stages) {
  const span = el("span");
  stages.forEach((s, i) => {
    if (i) span.appendChild(el("span", "→", "arrow"));
    span.appendChild(chip(s.stage + " " + s.status, s.status));
  });
  return span;
}

let selected = null;
async function loadRuns() {
  const data = await getJSON("/runs?limit=15");
  fill($("#runs"), data.runs.map((r) =>
    row([runLink(r.run_id), r.pipeline, r.policy, chip(r.status + (r.gate ? " at " + r.gate : ""), r.status), timeline(r.stages)])),
  "no runs yet");
  if (selected === null && data.runs.length) showRun(data.runs[0].run_id);
}

// -- one run: live timeline, findings, ledger ------------------------------------------------------------------

let source = null;
function showRun(runId) {
  if (source) source.close();
  selected = runId;
  $("#run-id").textContent = runId;
  $("#run-status").textContent = "following…";
  const list = $("#events");
  list.replaceChildren();
  if (server.readsNeedToken) {  // an EventSource cannot send the token: the record's events, read once
    runParts(runId, true);
    return;
  }
  source = new EventSource("/runs/" + encodeURIComponent(runId) + "/events/stream");
  source.onmessage = (message) => list.appendChild(eventItem(JSON.parse(message.data)));
  source.addEventListener("end", (message) => {
    const end = JSON.parse(message.data);
    $("#run-status").textContent = end.status + ": " + end.outcome;
    source.close();
    source = null;
    runParts(runId);
  });
  source.onerror = () => { $("#run-status").textContent = "reconnecting…"; };
  runParts(runId);
}

function runParts(runId, withEvents) {
  loadRunParts(runId, withEvents).catch((error) => { $("#run-status").textContent = "the run could not be read: " + error.message; });
}

function eventItem(e) {
  const item = el("li");
  item.appendChild(chip(e.stage + " " + e.status, e.status));
  item.appendChild(el("span", " " + e.summary));
  item.appendChild(el("span", "  " + when(e.at_ms), "muted"));
  return item;
}

function rowsText(rows) {
  if (!rows) return "every row";
  const from = rows.after_ms === null ? "the first row" : when(rows.after_ms);
  const to = rows.through_ms === null ? "the last row" : when(rows.through_ms);
  const also = rows.also && rows.also.length ? " and " + rows.also.length + " named row(s)" : "";
  return rows.column + " in (" + from + ", " + to + "]" + also;
}

async function loadRunParts(runId, withEvents) {
  const [record, found] = await Promise.all([
    getJSON("/runs/" + encodeURIComponent(runId)), getJSON("/runs/" + encodeURIComponent(runId) + "/findings")]);
  if (selected !== runId) return;
  if (withEvents) {
    $("#events").replaceChildren(...record.events.map(eventItem));
    $("#run-status").textContent = record.status + ": " + record.outcome;
  }
  const findings = found.stages.flatMap((stage) => {
    const verdict = chip(stage.stage + " " + (stage.verdict || ""), stage.verdict || "");
    if (!stage.findings.length) return [row([verdict, el("span", "no finding", "muted"), "—", "—", "—", "—"])];
    return stage.findings.map((f) => row([verdict.cloneNode(true), el("code", f.kind), f.column || "—", chip(f.severity),
      el("span", rowsText(f.rows), "mono"), el("span", f.message)]));
  });
  fill($("#findings"), findings, "this run did not run the guard");
  fill($("#ledger"), record.ledger.map((w) => {
    const what = el("div", w.kind);
    const detail = w.detail.aspect || w.detail.what || w.detail.tag || "";
    if (detail) what.appendChild(el("div", detail, "muted"));
    return row([w.seq, what, el("span", clip(w.target, 90), "mono"), chip(w.state)]);
  }), "no external write");
  $("#run").dataset.ready = runId;
}

// -- lineage as a graph ---------------------------------------------------------------------------------------

function lineageNodes(data) {
  const nodes = new Map();
  for (const d of data.datasets) {
    nodes.set(d.urn, { id: d.urn, label: d.name, kind: "dataset", bad: d.active_incidents.length > 0,
      title: d.urn + (d.active_incidents.length ? "\n" + d.active_incidents.length + " open incident(s)" : "") });
  }
  for (const m of data.models) {
    nodes.set(m.urn, { id: m.urn, label: m.model + " v" + m.version + (m.champion ? " ★" : ""), kind: "model",
      verdict: m.verdict, champion: m.champion, title: m.urn + "\nverdict " + (m.verdict || "none") + (m.champion ? "\nchampion" : "") });
  }
  const edges = data.edges.filter((e) => nodes.has(e.from) && nodes.has(e.to));
  const used = new Set(edges.flatMap((e) => [e.from, e.to]));
  return { nodes: [...nodes.values()].filter((n) => used.has(n.id)), edges };
}

function layers(nodes, edges) {
  const depth = new Map(nodes.map((n) => [n.id, 0]));
  for (let pass = 0; pass < nodes.length; pass++) {  // longest path from a source; a cycle stops at N passes
    let moved = false;
    for (const e of edges) {
      if (depth.get(e.to) < depth.get(e.from) + 1) { depth.set(e.to, depth.get(e.from) + 1); moved = true; }
    }
    if (!moved) break;
  }
  const columns = [];
  for (const n of nodes) (columns[depth.get(n.id)] = columns[depth.get(n.id)] || []).push(n);
  const at = new Map();
  columns.forEach((column, c) => {
    if (c > 0) {  // order each column by where its inputs sit (one barycentre pass)
      const centre = (n) => {
        const ins = edges.filter((e) => e.to === n.id && at.has(e.from)).map((e) => at.get(e.from));
        return ins.length ? ins.reduce((a, b) => a + b, 0) / ins.length : 0;
      };
      column.sort((a, b) => centre(a) - centre(b) || a.label.localeCompare(b.label));
    } else {
      column.sort((a, b) => a.label.localeCompare(b.label));
    }
    column.forEach((n, i) => at.set(n.id, i));
  });
  return columns;
}

function drawLineage(data) {
  const box = $("#lineage-graph");
  const { nodes, edges } = lineageNodes(data);
  if (!nodes.length) { box.replaceChildren(el("p", "no lineage in DataHub yet", "empty")); return; }
  const columns = layers(nodes, edges);
  const W = 176, H = 34, GAP_X = 84, GAP_Y = 16, PAD = 12;
  const tallest = Math.max(...columns.map((c) => c.length));
  const width = PAD * 2 + columns.length * W + (columns.length - 1) * GAP_X;
  const height = PAD * 2 + tallest * H + (tallest - 1) * GAP_Y;
  const place = new Map();
  columns.forEach((column, c) => {
    const offset = (height - (column.length * H + (column.length - 1) * GAP_Y)) / 2;
    column.forEach((n, i) => place.set(n.id, { x: PAD + c * (W + GAP_X), y: offset + i * (H + GAP_Y) }));
  });
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "lineage graph" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a8a90" }));
  defs.appendChild(marker);
  root.appendChild(defs);
  for (const e of edges) {
    const a = place.get(e.from), b = place.get(e.to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2, mid = (x1 + x2) / 2;
    root.appendChild(svg("path", { d: `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`, fill: "none",
      stroke: "#a8a8ae", "stroke-width": 1.4, "marker-end": "url(#arrowhead)", class: "edge" }));
  }
  for (const n of nodes) {
    const p = place.get(n.id);
    const fillColour = n.bad ? "#fdecea" : n.kind === "model" ? (n.verdict === "APPROVED" ? "#e7f6ec" : n.verdict ? "#fff4e5" : "#f0f0f2") : "#f4f6fb";
    const stroke = n.bad ? "#b42318" : n.champion ? "#b8860b" : "#c9c9cf";
    const g = svg("g", { class: "node " + n.kind, "data-urn": n.id });
    g.appendChild(svg("title", {}, n.title));
    g.appendChild(svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: n.kind === "model" ? 14 : 5,
      fill: fillColour, stroke, "stroke-width": n.champion || n.bad ? 2 : 1 }));
    g.appendChild(svg("text", { x: p.x + W / 2, y: p.y + H / 2 + 4, "text-anchor": "middle", "font-size": 12,
      fill: n.bad ? "#b42318" : "#1d1d1f" }, clip(n.label, 25)));
    root.appendChild(g);
  }
  box.replaceChildren(root);
}

function lineagePaths(data) {
  const box = $("#lineage");
  box.replaceChildren();
  const byUrn = new Map(data.datasets.map((d) => [d.urn, d]));
  const features = data.datasets.filter((d) => d.upstreams.length || data.models.some((m) => m.trained_on.includes(d.urn)));
  for (const feature of features) {
    const line = el("div", null, "lineage-row");
    feature.upstreams.forEach((u, i) => {
      const up = byUrn.get(u);
      const name = chip((up ? up.name : shortUrn(u)) + (up && up.active_incidents.length ? " ⚠" : ""), "");
      if (up && up.active_incidents.length) name.classList.add("ACTIVE");
      if (i) line.appendChild(el("span", " "));
      line.appendChild(name);
    });
    if (feature.upstreams.length) line.appendChild(el("span", "→", "arrow"));
    const table = chip(feature.name + (feature.active_incidents.length ? " ⚠ " + feature.active_incidents.length + " incident(s)" : ""), "");
    if (feature.active_incidents.length) table.classList.add("ACTIVE");
    line.appendChild(table);
    const models = data.models.filter((m) => m.trained_on.includes(feature.urn));
    if (models.length) line.appendChild(el("span", "→", "arrow"));
    for (const m of models) {
      const c = chip(m.model + " v" + m.version, m.verdict || "");
      c.title = (m.verdict || "") + (m.champion ? " (champion)" : "");
      line.appendChild(c);
    }
    box.appendChild(line);
  }
  if (!features.length) box.appendChild(el("p", "no lineage in DataHub yet", "empty"));
}

let lineageModels = [];
async function loadLineage() {
  const data = await getJSON("/lineage");
  drawLineage(data);
  lineagePaths(data);
  lineageModels = data.models;
  passportChoices();
}

// -- a model's passport ---------------------------------------------------------------------------------------

let passportPicked = false;
function passportChoices() {
  const select = $("#passport-version");
  const signed = lineageModels.map((m) => [m.model + "@" + m.version, m.model + " v" + m.version + (m.champion ? " (champion)" : "")]);
  const drafts = pausedCandidates.filter((c) => !lineageModels.some((m) => m.model === c.model && m.version === c.version))
    .map((c) => [c.model + "@" + c.version, c.model + " v" + c.version + " (paused: draft)"]);
  const choices = [...signed, ...drafts];
  const wanted = choices.map(([value]) => value);
  const have = [...select.options].map((o) => [o.value, o.textContent]);
  if (JSON.stringify(choices) === JSON.stringify(have)) return;
  const keep = passportPicked ? select.value : "";  // a person's pick stays; until then, the champion
  select.replaceChildren(...choices.map(([value, label]) => {
    const option = el("option", label);
    option.value = value;
    return option;
  }));
  const champion = lineageModels.find((m) => m.champion);
  select.value = wanted.includes(keep) ? keep : champion ? champion.model + "@" + champion.version : wanted[0] || "";
  showPassport();
}

function showPassport() {
  loadPassport().catch((error) => {
    $("#passport-summary").textContent = "the passport could not be read: " + error.message;
    $("#passport").dataset.ready = "error";
  });
}

function rounded(value) {
  return typeof value === "number" && isFinite(value) ? String(Number(value.toPrecision(4))) : "—";
}

function decidedBy(body, data) {
  const approval = body.approval;
  if (approval) return (approval.approved ? "approved by " : "rejected by ") + approval.by + ": " + approval.reason;
  if (data.passport.draft) return "no one yet: run " + data.passport.draft.run_id + " waits for a person to approve or reject it, with a reason";
  const verdict = (body.verdict || {}).verdict;
  return verdict === "APPROVED" ? "the gate, on its own: the pipeline's policy promotes an APPROVED candidate without a person" : "no person's decision is recorded";
}

async function loadPassport() {
  const choice = $("#passport-version").value;
  const section = $("#passport");
  if (!choice) {
    $("#passport-state").textContent = "no model yet";
    section.dataset.ready = "none";
    return;
  }
  const [model, version] = choice.split("@");
  $("#passport-summary").textContent = "checking " + model + " v" + version + "…";
  const data = await getJSON("/models/" + encodeURIComponent(model) + "/passport?version=" + encodeURIComponent(version));
  if ($("#passport-version").value !== choice) return;
  const check = data.verification;
  const state = $("#passport-state");
  state.textContent = check.status.replace("_", " ");
  state.className = "chip " + check.status;
  $("#passport-summary").textContent = model + " v" + data.version + (check.ok ? ": both copies verify against the trusted key" :
    data.passport.draft ? ": not signed yet, what approving it would sign" : ": does not verify");
  $("#passport-reasons").replaceChildren(...check.reasons.map((r) => el("li", r)));
  const body = data.passport.body || {};
  const trust = body.trust || {};
  $("#passport-trust").textContent = trust.score === undefined || trust.score === null ? "no trust score stated" :
    "trust " + trust.score + "/100, " + trust.band;
  $("#passport-deductions").replaceChildren(...(trust.deductions || []).map((d) => {
    const item = el("li", "−" + d.points + " " + d.reason);
    item.appendChild(el("div", clip(d.evidence, 240), "muted"));
    return item;
  }));
  if (!(trust.deductions || []).length) $("#passport-deductions").replaceChildren(el("li", "no deduction", "empty"));
  $("#passport-approval").textContent = decidedBy(body, data);
  const metrics = body.metrics || {};
  const candidate = metrics.candidate || {}, champion = metrics.champion || {};
  fill($("#passport-metrics"), Object.keys(candidate).sort().map((name) => row([
    el("span", name + (name === metrics.metric ? " (the gate's)" : ""), name === metrics.metric ? "" : "muted"),
    rounded(candidate[name]), metrics.champion_version ? rounded(champion[name]) + " (v" + metrics.champion_version + ")" : "no champion then",
  ])), "no metrics stated");
  const findings = (body.governance || {}).findings || [];
  fill($("#passport-governance"), findings.map((f) => row([chip(f.severity, f.severity === "block" ? "block" : f.severity === "review" ? "warn" : ""),
    f.kind, el("span", clip(f.message, 220), "muted")])), "no governance finding");
  const facts = [
    ["trained at", when(body.trained_at_ms)],
    ["verdict", ((body.verdict || {}).verdict || "—") + ((body.verdict || {}).reasons || []).map((r) => ": " + r).slice(0, 1).join("")],
    ["trained on", body.snapshot ? shortUrn(body.snapshot.dataset) + ", " + body.snapshot.rows + " rows, " + clip(body.snapshot.content_hash || "", 24) : "—"],
    ["heals", (body.remediations || []).map((h) => h.playbook + " on " + (h.column || "the table") + ", " + h.rows_touched + " rows").join("; ") || "none"],
    ["incidents healed", (body.incidents || []).map((i) => i.urn).join(", ") || "none"],
    ["signed by key", data.passport.envelope && data.passport.envelope.signatures && data.passport.envelope.signatures.length ?
      clip(data.passport.envelope.signatures[0].keyid, 20) : "no signature"],
  ];
  $("#passport-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", k), el("dd", v, "mono")]));
  section.dataset.ready = check.status;
  section.dataset.version = choice;
}

// -- served error, with and without the gate ------------------------------------------------------------------

async function loadServed() {
  const data = await getJSON("/served");
  const chart = $("#served-chart");
  if (!data.served.length) {
    $("#served-summary").textContent = "";
    chart.replaceChildren(el("p", "no served-error measurement here yet: `kintsugi demo` serves its next day and keeps one", "empty"));
    $("#served").dataset.ready = "none";
    return;
  }
  $("#served-summary").textContent = data.served.map((m) => m.pipeline + ": " + m.rows + " rows served " + when(m.measured_at_ms) + "; " + m.note).join(" · ");
  chart.replaceChildren(servedChart(data.served));
  $("#served").dataset.ready = "yes";
}

function servedChart(measured) {
  const series = [["without the gate", "without_gate", "#b42318"], ["with Kintsugi", "with_gate", "#2e7d4f"], ["clean baseline", "clean", "#8a8a90"]];
  const LABEL = 170, PLOT = 420, BAR = 14, GROUP = 3 * BAR + 16, TOP = 28;
  const width = LABEL + PLOT + 110, height = TOP + measured.length * GROUP + 8;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "served error chart" });
  series.forEach(([name, , colour], i) => {
    root.appendChild(svg("rect", { x: LABEL + i * 140, y: 6, width: 12, height: 12, fill: colour }));
    root.appendChild(svg("text", { x: LABEL + i * 140 + 17, y: 16, "font-size": 12 }, name));
  });
  measured.forEach((m, i) => {
    const y = TOP + i * GROUP;
    const top = Math.max(...series.map(([, key]) => m[key]), 1e-9);
    root.appendChild(svg("text", { x: LABEL - 8, y: y + GROUP / 2, "font-size": 12, "text-anchor": "end", class: "pipeline" }, clip(m.pipeline, 24)));
    root.appendChild(svg("text", { x: LABEL - 8, y: y + GROUP / 2 + 14, "font-size": 11, "text-anchor": "end", fill: "#6b6b70" }, m.metric + ", champion v" + m.champion));
    series.forEach(([name, key, colour], k) => {
      const value = m[key], by = y + k * BAR;
      const bar = svg("rect", { x: LABEL, y: by, width: Math.max(value / top * PLOT, 1.5), height: BAR - 3, fill: colour, class: "bar " + key.replace("_", "-") });
      bar.appendChild(svg("title", {}, name + ": " + m.metric + " " + rounded(value)));
      root.appendChild(bar);
      root.appendChild(svg("text", { x: LABEL + value / top * PLOT + 4, y: by + BAR - 4, "font-size": 11, class: "value" }, rounded(value)));
    });
  });
  return root;
}

// -- the watch ------------------------------------------------------------------------------------------------

async function loadWatch() {
  const data = await getJSON("/watch");
  const last = data.last_pass;
  $("#watch-pass").textContent = last ? "last pass " + when(last.at_ms) + (last.changes.length ? ": " + last.changes.join("; ") : ": no change in DataHub since the pass before") +
    (last.errors.length ? " — errors: " + last.errors.join("; ") : "") : "the watch has not run in this workspace yet (`kintsugi watch --once`, or `kintsugi serve`)";
  fill($("#watch-decisions"), (last ? last.decisions : []).map((d) => row([
    el("strong", d.pipeline), chip(d.action),
    d.champion === null ? "none" : "v" + d.champion + (d.target !== null && d.target !== d.champion ? " → v" + d.target : ""),
    el("span", d.message || d.why), el("span", d.at_risk.map((m) => m.split(" <- ")[0]).join(", ") || "none")])),
  last ? "no pipeline watched" : "no decision yet");
  fill($("#watch-risks"), data.at_risk.map((m) => row([chip(m.state), shortUrn(m.model),
    el("span", m.caused_by, "mono"), el("span", m.message, "muted")])), "no model version is at risk");
  fill($("#watch-records"), data.records.map((r) => row([runLink(r.run_id), r.pipeline, chip(r.status + (r.gate ? " at " + r.gate : ""), r.status),
    el("span", r.outcome)])), "the watch has written nothing");
  $("#watch").dataset.ready = last ? "yes" : "none";
}

// -- the drill scoreboard -------------------------------------------------------------------------------------

async function loadDrill() {
  const data = await getJSON("/drills/latest");
  const board = data.scoreboard;
  const chart = $("#drill-chart");
  if (!board) {
    $("#drill-summary").textContent = "";
    chart.replaceChildren(el("p", "no drill has run here yet: POST /drills, or `kintsugi drill --out " + data.folder + "/NAME`, keeps its scoreboard in " + data.folder + "/", "empty"));
    $("#drill").dataset.ready = "none";
    return;
  }
  $("#drill-summary").textContent = "pipeline " + board.pipeline + ", " + board.runs + " scenario run(s) at " + board.now +
    " — detection recall " + pct(board.detection_recall) + ", named right " + pct(board.localization_rate) + ", false blocks " +
    board.false_blocks + " of " + board.controls + " clean control(s); kept in " + board.folder + " " + when(board.written_ms) +
    (board.failed.length ? "; failed: " + board.failed.join(", ") : "");
  chart.replaceChildren(drillChart(board));
  $("#drill").dataset.ready = "yes";
}

function drillChart(board) {
  const series = [["recall", "#2e7d4f"], ["named", "#175cd3"], ["false blocks", "#b42318"]];
  const groups = board.scenarios.map((s) => ({ label: (s.passed ? "✓ " : "✗ ") + s.name, values: [s.recall, s.named, null], title: s.expected }));
  groups.push({ label: "clean controls", values: [null, null, board.controls ? board.false_blocks / board.controls : null],
    title: board.false_blocks + " of " + board.controls + " blocked", count: board.false_blocks + "/" + board.controls });
  const LABEL = 230, PLOT = 420, BAR = 9, GROUP = 3 * BAR + 12, TOP = 28, PAD = 10;
  const width = LABEL + PLOT + 70, height = TOP + groups.length * GROUP + 24;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "drill scoreboard chart" });
  series.forEach(([name, colour], i) => {
    root.appendChild(svg("rect", { x: LABEL + i * 120, y: 6, width: 12, height: 12, fill: colour }));
    root.appendChild(svg("text", { x: LABEL + i * 120 + 17, y: 16, "font-size": 12 }, name));
  });
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const x = LABEL + tick * PLOT;
    root.appendChild(svg("line", { x1: x, y1: TOP - 4, x2: x, y2: height - 20, stroke: "#e3e3e6" }));
    root.appendChild(svg("text", { x, y: height - 6, "font-size": 11, "text-anchor": "middle", fill: "#6b6b70" }, Math.round(tick * 100) + "%"));
  }
  groups.forEach((g, i) => {
    const y = TOP + i * GROUP;
    const label = svg("g");
    label.appendChild(svg("title", {}, g.title));
    label.appendChild(svg("text", { x: LABEL - 8, y: y + GROUP / 2, "font-size": 12, "text-anchor": "end", class: "scenario" }, clip(g.label, 34)));
    root.appendChild(label);
    g.values.forEach((value, k) => {
      if (value === null || value === undefined) return;
      const by = y + k * BAR + 2;
      const bar = svg("rect", { x: LABEL, y: by, width: Math.max(value * PLOT, 1.5), height: BAR - 2, fill: series[k][1], class: "bar " + series[k][0].replace(" ", "-") });
      bar.appendChild(svg("title", {}, series[k][0] + " " + pct(value)));
      root.appendChild(bar);
      root.appendChild(svg("text", { x: LABEL + value * PLOT + 4, y: by + BAR - 2, "font-size": 10, fill: "#6b6b70" },
        k === 2 && g.count ? g.count : pct(value)));
    });
  });
  return root;
}

// -- refresh --------------------------------------------------------------------------------------------------

async function loadServer() {
  const health = await getJSON("/health");
  server.readOnly = health.read_only;
  server.writesNeedToken = health.writes_need_token;
  server.readsNeedToken = health.reads_need_token;
  if (server.readsNeedToken && !token()) await askToken();
  showMode();
}

const VIEWS = [loadQueue, loadPipelines, loadIncidents, loadRuns, loadLineage, loadWatch, loadDrill, loadServed];

async function refresh() {
  const results = await Promise.allSettled(VIEWS.map((view) => view()));
  const failed = results.filter((r) => r.status === "rejected").map((r) => String(r.reason.message || r.reason));
  $("#error").textContent = [...new Set(failed)].join(" · ");
  $("#updated").textContent = "updated " + new Date().toLocaleTimeString();
  document.body.dataset.loaded = "yes";
}

$("#token-button").addEventListener("click", async () => {
  if (token()) { sessionStorage.removeItem(TOKEN_KEY); showMode(); } else { await askToken(); }
});
$("#token-cancel").addEventListener("click", () => $("#token-dialog").close(""));
$("#passport-version").addEventListener("change", () => { passportPicked = true; showPassport(); });

loadServer().catch((error) => { $("#error").textContent = String(error.message || error); }).then(refresh);
setInterval(refresh, 10000);
