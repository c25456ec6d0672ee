// The dashboard: fetch the API's records, draw them, and redraw whenever the event stream says something
// moved (a lane, a proposal, a ledger op, a run) — within a second of the change.
import { h, fill, money, count, visible } from "./dom.js";
import { taskGraph } from "./graph.js";
import { costPlot } from "./plot.js";
import { lanesView, radarView, agentsView, runsView, boardView, historyView, agentState } from "./views.js";

const API = "/api/v1";
const state = { costUnit: "cost_usd", historyStatus: "" };
const drafts = new Map();
const $ = (id) => document.getElementById(id);

async function getJSON(path) {
  const reply = await fetch(API + path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!reply.ok) {
    const record = await reply.json().catch(() => ({}));
    throw Object.assign(new Error(`${path}: ${reply.status}`), { status: reply.status, record });
  }
  return reply.json();
}

function toast(text, kind) {
  const box = $("toast");
  box.textContent = visible(text);
  box.className = `toast ${kind || ""}`;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 8000 : 3000);
}

function actor() {
  return $("actor").value.trim() || "human";
}

async function act(path, body, done) {
  try {
    const reply = await fetch(API + path, { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body) });
    const record = await reply.json().catch(() => ({}));
    if (!reply.ok) {
      toast(`${record.message || reply.statusText}${record.hint ? " — " + record.hint : ""}`, "error");
      return false;
    }
    toast(done, "ok");
    refresh();
    return true;
  } catch (err) {
    toast(String(err), "error");
    return false;
  }
}

const SOURCES = {
  session: "/session", status: "/status", radar: "/radar", agents: "/agents", tasks: "/tasks",
  tickets: "/tickets", board: "/board?limit=100", questions: "/board?unanswered_only=true", cost: "/cost",
};

async function load() {
  const names = Object.keys(SOURCES);
  const history = `/transitions?limit=200${state.historyStatus ? "&status=" + state.historyStatus : ""}`;
  const runs = state.session?.runs ? getJSON("/runs?budgets=true") : Promise.reject(new Error("no runs"));
  const results = await Promise.allSettled([...names.map((n) => getJSON(SOURCES[n])), getJSON(history), runs]);
  names.forEach((name, i) => { if (results[i].status === "fulfilled") state[name] = results[i].value; });
  if (results[names.length].status === "fulfilled") state.history = results[names.length].value;
  const ran = results[names.length + 1];
  state.runs = ran.status === "fulfilled" ? ran.value : undefined;
  // Every open question however old, from the ledger's index: the recent posts alone lost one with 100 after it.
  state.openQuestions = state.questions?.posts || [];
  const gone = results.find((r) => r.status === "rejected" && r.reason.status === 410);
  if (gone) showGone(gone.reason.record);
  // Off loopback every read needs the token: refused, the page must not draw an empty, quiet project.
  const refused = results.find((r) => r.status === "rejected" && r.reason.status === 401);
  state.refused = refused ? refused.reason.record : null;
}

const SECTIONS = ["lanes", "radar", "agents", "runs", "tasks", "board", "cost", "history"];

function showRefused(error) {
  const dot = $("live");
  dot.textContent = "token needed"; dot.className = "live off"; dot.title = visible(error.message || "");
  const why = `Not shown: ${error.message || "this server needs the token"}` +
    `${error.hint ? " — " + error.hint : ""}.`;
  for (const id of SECTIONS) fill($(id), id === "lanes" ? h("p", { class: "refused" }, why) : []);
}

// The repository was removed or moved under the server: what the page shows is the last it could read.
function showGone(error) {
  const dot = $("live");
  if (dot.dataset.gone) return;
  dot.dataset.gone = "1";
  dot.textContent = "repository gone"; dot.className = "live off"; dot.title = visible(error.message || "");
  toast(`${error.message || "the repository is gone"}${error.hint ? " — " + error.hint : ""}`, "error");
  clearTimeout(toast.timer);  // it stays: nothing on the page will change any more
}

function needingInput() {
  return (state.agents || []).filter((a) => agentState(a, state)[1] === "needs").length;
}

function tiles() {
  const needs = needingInput();
  const tile = (label, value, kind) => h("div", { class: `tile ${kind || ""}` }, h("b", {}, value), h("span", {}, label));
  const total = state.cost?.total || {};
  return [
    tile("lanes", String(state.status?.lanes?.length ?? "–")),
    tile("pending", String(state.status?.proposals?.length ?? "–"), state.status?.proposals?.length ? "warn" : ""),
    tile("overlaps", String(state.radar?.overlaps?.length ?? "–"), state.radar?.overlaps?.length ? "hot" : ""),
    tile("agents alive", String((state.agents || []).filter((a) => a.alive).length)),
    tile("needs input", String(needs), needs ? "needs" : ""),
    tile("spent", `${money(total.cost_usd)} · ${count(total.tokens)} tok`),
  ];
}

function render() {
  const ctx = { canWrite: !!state.session?.can_write, act, actor, drafts, refuse: (text) => toast(text, "error") };
  // A redraw replaces every element: the one holding the keyboard's focus (a draft, a button) is found
  // again by its key, else the focus would fall back to the top of the page on every change.
  const focused = document.activeElement?.dataset?.key;
  const caret = "selectionStart" in (document.activeElement || {}) && document.activeElement.selectionStart !== null
    ? [document.activeElement.selectionStart, document.activeElement.selectionEnd] : null;
  $("repo").textContent = state.session ? visible(`${state.session.repository} · trunk ${state.session.trunk}`) : "";
  // The tab tells dashboards apart, and says from the background that someone waits for an answer.
  const needs = state.refused ? 0 : needingInput();
  document.title = visible(`${needs ? `(${needs}) ` : ""}${state.session ? state.session.repository + " · " : ""}git lanes`);
  const auth = $("auth");
  auth.textContent = ctx.canWrite ? "can act" : "read-only";
  auth.className = `chip ${ctx.canWrite ? "pass" : "gone"}`;
  auth.title = ctx.canWrite ? "this browser holds the token" : "open the ?token= link `git lanes serve` printed to act";
  if (state.refused) {
    fill($("tiles"), []);
    showRefused(state.refused);
    document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
    return;
  }
  fill($("tiles"), tiles());
  fill($("lanes"), lanesView(state, ctx));
  fill($("radar"), radarView(state));
  fill($("agents"), agentsView(state));
  fill($("runs"), runsView(state));
  fill($("tasks"), taskGraph(state.tasks || [], state.tickets || []));
  fill($("board"), boardView(state, ctx));
  fill($("cost"), costPlot("by agent", state.cost?.by_agent || [], state.costUnit, state.cost?.start, state.cost?.end),
    costPlot("by lane", state.cost?.by_lane || [], state.costUnit, state.cost?.start, state.cost?.end));
  fill($("history"), historyView(state));
  if (focused) {
    const again = document.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    if (again) { again.focus(); if (caret && again.setSelectionRange) again.setSelectionRange(...caret); }
  }
  document.body.dataset.rendered = String((Number(document.body.dataset.rendered) || 0) + 1);
}

let pending = null;
let running = false;
let again = false;
async function refresh() {
  if (running) { again = true; return; }
  running = true;
  try {
    await load();
    render();
  } finally {
    running = false;
    if (again) { again = false; refresh(); }
  }
}

function soon() {
  clearTimeout(pending);
  pending = setTimeout(refresh, 60);
}

function live() {
  const dot = $("live");
  const stream = new EventSource(API + "/events");
  stream.addEventListener("hello", () => { dot.textContent = "live"; dot.className = "live on"; soon(); });
  stream.addEventListener("change", soon);
  stream.onerror = () => {
    if (dot.dataset.gone || state.refused) return;
    dot.textContent = stream.readyState === EventSource.CLOSED ? "not live" : "reconnecting";
    dot.className = "live off";
  };
  stream.addEventListener("gone", (event) => { stream.close(); showGone(JSON.parse(event.data).events[0]); });
}

// The chosen button of a toggle, in colour and, for assistive technology, as pressed.
function choose(group, chosen) {
  $(group).querySelectorAll("button").forEach((b) => {
    b.classList.toggle("on", b === chosen);
    b.setAttribute("aria-pressed", String(b === chosen));
  });
}

function toggles() {
  $("cost-unit").addEventListener("click", (e) => {
    const unit = e.target.dataset?.unit;
    if (!unit) return;
    state.costUnit = unit;
    choose("cost-unit", e.target);
    render();
  });
  $("history-filter").addEventListener("click", (e) => {
    if (e.target.dataset?.status === undefined) return;
    state.historyStatus = e.target.dataset.status;
    choose("history-filter", e.target);
    refresh();
  });
  const input = $("actor");
  input.value = localStorage.getItem("git-lanes.actor") || "human";
  input.addEventListener("change", () => localStorage.setItem("git-lanes.actor", actor()));
}

toggles();
refresh();
live();
// Unsnapshotted edits move no ref; the server reports them every few seconds, and this is a last resort.
setInterval(() => { if (document.visibilityState === "visible") refresh(); }, 15000);
