// One function per section: data in, elements out. Every string from the repository is text, never markup.
import { h, short, firstLine, ago, when, money, count, chip, empty, colour } from "./dom.js";

// An agent id may be 64 characters: cut short on the page (style.css), whole in the title.
function agentTag(id) {
  const tag = h("span", { class: "agent", title: id }, h("i", { class: "dot" }), h("span", { class: "id" }, id));
  tag.firstChild.style.setProperty("background", colour(id));
  return tag;
}

// A lane name may be 250 bytes, a glob as long: a long one wraps within a bounded width (style.css) rather
// than widen its table; a short one never breaks, however narrow its column.
const LONG_NAME = 20;
function nameText(name) {
  return h("span", { class: String(name).length > LONG_NAME ? "name-text long" : "name-text" }, name);
}

// `key` names the button across redraws, so the keyboard's focus stays on it (app.js, render).
function actButton(label, kind, ctx, key, onClick) {
  return h("button", { class: `btn ${kind}`, disabled: !ctx.canWrite, onclick: onClick, "data-key": key,
    title: ctx.canWrite ? label : "read-only: open the ?token= link `git lanes serve` printed" }, label);
}

function costLine(c) {
  const tokens = (c?.tokens_in || 0) + (c?.tokens_out || 0);
  return tokens || c?.cost_usd ? `${count(tokens)} tok · ${money(c.cost_usd)}` : "";
}

function gates(t) {
  return (t.evaluations || []).map((e) => chip(`${e.passed ? "✓" : "✗"} ${e.gate}`, e.passed ? "pass" : "fail"));
}

function proposal(t, ctx) {
  return h("div", { class: "proposal", "data-proposal": t.id },
    h("div", { class: "line" }, h("code", {}, short(t.id)), agentTag(t.intent.agent_id),
      h("span", { class: "prompt", title: t.intent.prompt }, firstLine(t.intent.prompt))),
    h("div", { class: "line small" }, h("span", { class: "muted" }, `${t.kind} · ${ago(t.created_at)}`),
      h("span", { class: "muted" }, costLine(t.cost)), gates(t),
      h("span", { class: "spacer" }),
      actButton("Accept", "accept", ctx, `accept-${t.id}`, () => ctx.act(`/transitions/${t.id}/accept`, {}, `accepted ${short(t.id)}`)),
      actButton("Reject", "reject", ctx, `reject-${t.id}`, () => ctx.act(`/transitions/${t.id}/reject`,
        { reason: "rejected from the dashboard" }, `rejected ${short(t.id)}`))));
}

function aheadBehind(row, scale) {
  const bar = (n, kind) => {
    const el = h("i", { class: `bar ${kind}` });
    el.style.setProperty("width", `${Math.min(100, (n / scale) * 100)}%`);
    return h("span", { class: "track" }, el);
  };
  return h("div", { class: "ab", title: `${row.ahead} ahead, ${row.behind} behind the trunk` },
    h("span", { class: "num behind" }, row.behind ? `↓${row.behind}` : ""), bar(row.behind, "behind"),
    bar(row.ahead, "ahead"), h("span", { class: "num ahead" }, row.ahead ? `↑${row.ahead}` : ""));
}

export function lanesView(s, ctx) {
  const lanes = s.status?.lanes || [];
  if (!lanes.length) return empty("No lanes yet.");
  const positions = new Map((s.radar?.lanes || []).map((r) => [r.lane, r]));
  const scale = Math.max(1, ...[...positions.values()].flatMap((r) => [r.ahead, r.behind]));
  const dirty = new Map((s.status?.dirty || []).map((d) => [d.lane, d]));
  const byLane = new Map();
  for (const p of s.status?.proposals || []) (byLane.get(p.lane) || byLane.set(p.lane, []).get(p.lane)).push(p);
  const agentsOf = (lane) => (s.agents || []).filter((a) => a.lane === lane);
  const overlapping = new Set((s.radar?.overlaps || []).flatMap((o) => [o.a, o.b]));
  const rows = lanes.map((lane) => {
    const pos = positions.get(lane.name) || { ahead: 0, behind: 0 };
    const edits = dirty.get(lane.name);
    const paths = Object.entries(edits?.paths || {});
    return h("tr", { "data-lane": lane.name, class: lane.trunk ? "trunk" : "" },
      h("td", { class: "name" }, nameText(lane.name), lane.trunk ? chip("trunk") : null,
        overlapping.has(lane.name) ? chip("overlap", "warn") : null),
      h("td", {}, h("code", { title: lane.head }, short(lane.head))),
      h("td", {}, agentsOf(lane.name).map((a) => agentTag(a.id))),
      h("td", {}, lane.trunk ? h("span", { class: "muted" }, "trunk") : aheadBehind(pos, scale)),
      h("td", { class: "edits" }, paths.length ? h("details", {},
        h("summary", {}, `${paths.length} unsnapshotted`),
        h("ul", { class: "paths" }, paths.map(([p, kind]) => h("li", {}, h("span", { class: "kind" }, kind), p))))
        : lane.broken ? h("span", { class: "chip warn", title: lane.broken }, "workspace broken")
        : h("span", { class: "muted" }, lane.workspace ? "clean" : "no workspace"),
        (edits?.attention || []).length ? chip(`${edits.attention.length} need attention`, "warn") : null),
      h("td", { class: "proposals" }, (byLane.get(lane.name) || []).map((p) => proposal(p, ctx))));
  });
  return h("table", { class: "grid lanes" },
    h("thead", {}, h("tr", {}, ["lane", "head", "agents", "behind · ahead", "edits", "pending proposals"].map((c) =>
      h("th", {}, c)))), h("tbody", {}, rows));
}

export function radarView(s) {
  const overlaps = s.radar?.overlaps || [];
  if (!overlaps.length) return h("p", { class: "ok" }, "✓ No two lanes changed the same path.");
  const names = [...new Set(overlaps.flatMap((o) => [o.a, o.b]))];
  const cell = new Map(overlaps.flatMap((o) => [[`${o.a}|${o.b}`, o], [`${o.b}|${o.a}`, o]]));
  const max = Math.max(...overlaps.map((o) => o.count));
  const matrix = h("table", { class: "matrix" },
    h("tr", {}, h("th", {}), names.map((n) => h("th", { class: "col", title: n }, h("span", {}, n)))),
    names.map((row) => h("tr", {}, h("th", { class: "rowname", title: row }, row), names.map((col) => {
      const o = cell.get(`${row}|${col}`);
      const td = h("td", { class: o ? "hit" : row === col ? "self" : "", title: o ? `${o.a} ⇄ ${o.b}: ${o.count} path(s)` : "" },
        o ? String(o.count) : "");
      if (o) td.style.setProperty("--heat", String(0.25 + 0.75 * (o.count / max)));
      return td;
    }))));
  const list = h("ul", { class: "pairs" }, overlaps.map((o) => h("li", { "data-pair": `${o.a}|${o.b}` },
    h("div", { class: "pair" }, h("b", {}, o.a), " ⇄ ", h("b", {}, o.b), " ", chip(`${o.count} path${o.count === 1 ? "" : "s"}`,
      o.with_trunk ? "warn" : "hot")),
    h("ul", { class: "paths" }, o.paths.slice(0, 6).map((p) => h("li", {}, h("code", {}, p.path),
      h("span", { class: "muted" }, ` ${o.b} ${p.lane} · ${o.a} ${p.target}`))),
      o.count > 6 ? h("li", { class: "muted" }, `… ${o.count - 6} more`) : null))));
  return h("div", { class: "radar" }, matrix, list);
}

export function agentState(a, s) {
  const asking = (s.openQuestions || []).filter((p) => p.from === a.id);
  const waiting = (s.runs || []).filter((r) => r.agent === a.id && r.awaiting_input);
  const blocked = (s.tasks || []).filter((t) => t.owner === a.id && t.status === "blocked");
  if (asking.length || waiting.length) return ["needs input", "needs"];
  if (blocked.length) return ["blocked", "blocked"];
  if (!a.alive) return ["gone", "gone"];
  if ((a.tasks || []).length) return ["working", "working"];
  return ["idle", "idle"];
}

export function agentsView(s) {
  const agents = [...(s.agents || [])];
  if (!agents.length) return empty("No agents registered yet.");
  const order = { needs: 0, blocked: 1, working: 2, idle: 3, gone: 4 };
  agents.sort((a, b) => order[agentState(a, s)[1]] - order[agentState(b, s)[1]] || a.id.localeCompare(b.id));
  const titles = new Map((s.tasks || []).map((t) => [t.id, t.title]));
  return h("table", { class: "grid agents" },
    h("thead", {}, h("tr", {}, ["agent", "state", "lane", "tasks", "claims", "dirty", "seen"].map((c) => h("th", {}, c)))),
    h("tbody", {}, agents.map((a) => {
      const [label, kind] = agentState(a, s);
      const question = (s.openQuestions || []).find((p) => p.from === a.id);
      return h("tr", { "data-agent": a.id, class: kind },
        h("td", {}, agentTag(a.id), a.kind && a.kind !== "agent" ? h("span", { class: "muted" }, ` ${a.kind}`) : null),
        h("td", {}, chip(label, kind),
          question ? h("div", { class: "ask clamp", title: question.text }, question.text) : null),
        h("td", {}, a.lane ? nameText(a.lane) : h("span", { class: "muted" }, "–")),
        h("td", {}, (a.tasks || []).map((t) => h("div", { class: "small" }, titles.get(t) || short(t)))),
        h("td", { class: "small" }, (a.claims || []).map((glob) => [nameText(glob), " "])),
        h("td", {}, a.dirty ? String(a.dirty) : ""),
        h("td", { class: "muted small", title: when(a.last_seen) }, ago(a.last_seen)));
    })));
}

function budgetBars(budget, phase) {
  return h("div", { class: "budgets" }, Object.entries(budget || {}).map(([name, b]) => {
    const spent = Number(b?.spent || 0), limit = b?.budget;
    const el = h("i", { class: "fill" + (limit !== null && limit !== undefined && spent >= limit ? " over" : "") });
    el.style.setProperty("width", `${limit ? Math.min(100, (spent / limit) * 100) : spent ? 100 : 0}%`);
    return h("div", { class: `budget${name === phase ? " current" : ""}`, title: `${name}: ${spent} of ${limit ?? "no limit"}` },
      h("span", { class: "label" }, name), h("span", { class: "track" }, el),
      h("span", { class: "num" }, `${+spent.toFixed(1)}/${limit ?? "∞"}`));
  }));
}

export function runsView(s) {
  if (s.runs === undefined) return null; // this version of git-lanes has no runs
  if (!s.runs.length) return h("div", {}, h("h3", {}, "Runs"), empty("No runs yet: agent hooks start them."));
  const order = (r) => (r.awaiting_input ? 0 : r.status === "active" ? 1 : 2);
  const runs = [...s.runs].sort((a, b) => order(a) - order(b) || b.updated_at - a.updated_at).slice(0, 20);
  return h("div", {}, h("h3", {}, "Runs"), h("table", { class: "grid runs" },
    h("thead", {}, h("tr", {}, ["run", "agent", "phase · budget", "blocked", "in flight", "tokens", "cost"].map((c) => h("th", {}, c)))),
    h("tbody", {}, runs.map((r) => {
      const tokens = Object.values(r.tokens || {}).reduce((x, y) => x + Number(y || 0), 0);
      const state = r.awaiting_input ? chip("needs input", "needs") : chip(r.status, r.status === "active" ? "working" : "gone");
      return h("tr", { "data-run": r.id, class: r.awaiting_input ? "needs" : r.status },
        h("td", {}, h("code", { title: r.goal || "" }, short(r.id)), " ", state,
          r.goal ? h("div", { class: "small muted clamp", title: r.goal }, r.goal) : null),
        h("td", {}, agentTag(r.agent), r.lane ? h("div", { class: "small muted" }, nameText(r.lane)) : null),
        h("td", {}, h("div", { class: "small" }, r.phase), budgetBars(r.budget, r.phase)),
        h("td", { class: r.blocked ? "alert" : "" }, String(r.blocked || 0)),
        h("td", {}, (r.in_flight || []).map((c) => h("div", { class: "small", title: c.input || "" }, c.tool || c.id)),
          // a call its session died in (as `run show` lists them): it may have half happened
          (r.interrupted || []).map((c) => h("div", { class: "small interrupted",
            title: `interrupted in an earlier session: ${c.input || c.id}` }, chip("interrupted", "warn"), " ", c.tool || c.id))),
        h("td", {}, count(tokens)),
        h("td", {}, money(r.cost_usd)));
    }))));
}

// A click with an empty box is answered, not ignored: else it reads as a board that does not work.
const NOTHING_TO_SEND = "nothing to send: write the text first";

export function boardView(s, ctx) {
  const posts = s.board?.posts || [];
  const open = (s.openQuestions || []);
  const openSeqs = new Set(open.map((p) => p.seq));
  const rest = posts.filter((p) => !openSeqs.has(p.seq)).reverse();
  const answerBox = (p) => {
    const key = `answer-${p.seq}`;
    const input = h("textarea", { rows: 2, placeholder: `Answer ${p.from}…`, "data-key": key,
      value: ctx.drafts.get(key) || "", oninput: (e) => ctx.drafts.set(key, e.target.value) });
    return h("div", { class: "answer" }, input, actButton("Answer", "accept", ctx, `answer-button-${p.seq}`, () => {
      const text = input.value.trim();
      if (!text) return ctx.refuse(NOTHING_TO_SEND);
      ctx.act(`/board/${p.seq}/answer`, { text, agent_id: ctx.actor() }, `answered #${p.seq}`)
        .then((ok) => ok && ctx.drafts.delete(key));
    }));
  };
  const post = (p, asking) => h("li", { class: `post ${p.kind}${asking ? " open" : ""}`, "data-post": String(p.seq) },
    h("div", { class: "head" }, h("span", { class: "muted" }, `#${p.seq}`), chip(p.kind, p.kind), agentTag(p.from),
      p.to ? h("span", { class: "muted" }, " → ", p.to) : null,
      p.reply_to ? h("span", { class: "muted" }, ` re #${p.reply_to}`) : null,
      p.resolved ? chip(`resolved by ${p.resolved.by}`, "pass") : null,
      h("span", { class: "spacer" }), h("span", { class: "muted small", title: when(p.time) }, ago(p.time))),
    h("div", { class: "text" }, p.text), asking ? answerBox(p) : null);
  const composeKey = "compose";
  const compose = h("textarea", { rows: 2, placeholder: "Post to everyone…", "data-key": composeKey,
    value: ctx.drafts.get(composeKey) || "", oninput: (e) => ctx.drafts.set(composeKey, e.target.value) });
  return h("div", {},
    open.length ? h("ul", { class: "posts questions" }, open.map((p) => post(p, true)))
      : h("p", { class: "ok" }, "✓ No unanswered questions."),
    h("div", { class: "compose" }, compose, actButton("Post", "accept", ctx, "post-button", () => {
      const text = compose.value.trim();
      if (!text) return ctx.refuse(NOTHING_TO_SEND);
      ctx.act("/board", { text, agent_id: ctx.actor() }, "posted").then((ok) => ok && ctx.drafts.delete(composeKey));
    })),
    rest.length ? h("ul", { class: "posts" }, rest.map((p) => post(p, false)))
      : empty(open.length ? "No other posts." : "The board is empty."));
}

export function historyView(s) {
  const rows = s.history?.transitions || [];
  const totals = s.history?.totals;
  if (!rows.length) return empty("No transitions yet.");
  return h("div", {},
    totals ? h("p", { class: "muted small" }, `${totals.count} transitions · ${costLine(totals) || "no cost recorded"}`) : null,
    h("table", { class: "grid history" },
      h("thead", {}, h("tr", {}, ["when", "id", "status", "lane", "agent", "prompt", "gates", "cost"].map((c) => h("th", {}, c)))),
      h("tbody", {}, rows.map((t) => h("tr", { class: t.status, "data-transition": t.id },
        h("td", { class: "muted small", title: when(t.created_at) }, ago(t.created_at)),
        h("td", {}, h("code", {}, short(t.id))),
        h("td", {}, chip(t.status), t.kind !== "commit" ? chip(t.kind, "kind") : null),
        h("td", {}, nameText(t.lane)),
        h("td", {}, agentTag(t.intent.agent_id)),
        h("td", { class: "prompt" }, h("div", { title: t.intent.prompt }, firstLine(t.intent.prompt)),
          t.reason ? h("div", { class: "reason clamp", title: t.reason }, t.reason) : null,
          (t.intent.tags || []).map((tag) => chip(tag, "tag"))),
        h("td", {}, gates(t)),
        h("td", { class: "small" }, costLine(t.cost)))))));
}
