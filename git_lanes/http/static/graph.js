// The task graph: each task placed in the column of its longest chain of dependencies, edges from a task to
// those that wait for it, nodes coloured by status. Titles are SVG text nodes, never markup.
import { svg, h, colour, empty } from "./dom.js";

const W = 190, H = 48, GAP_X = 56, GAP_Y = 14, PAD = 10;

function depths(tasks) {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const memo = new Map();
  const depth = (id, seen = new Set()) => {
    if (memo.has(id)) return memo.get(id);
    if (seen.has(id)) return 0; // a cycle cannot be stored, but a drawing must never hang on one
    seen.add(id);
    const deps = (byId.get(id)?.depends || []).filter((d) => byId.has(d));
    const value = deps.length ? 1 + Math.max(...deps.map((d) => depth(d, seen))) : 0;
    memo.set(id, value);
    return value;
  };
  tasks.forEach((t) => depth(t.id));
  return memo;
}

function statusOf(task) {
  if (task.status === "open" && task.ready) return "ready";
  return task.status;
}

function clip(text, max) {
  const value = String(text || "");
  return value.length > max ? value.slice(0, max - 1) + "…" : value;
}

export function taskGraph(tasks, tickets) {
  if (!tasks.length) return empty("No tasks yet: `git lanes task create TITLE`.");
  const column = depths(tasks);
  const columns = [];
  for (const t of tasks) (columns[column.get(t.id)] ||= []).push(t);
  const place = new Map();
  columns.forEach((list, x) => list.forEach((t, y) => place.set(t.id, {
    x: PAD + x * (W + GAP_X), y: PAD + y * (H + GAP_Y),
  })));
  const width = PAD * 2 + columns.length * (W + GAP_X) - GAP_X;
  const height = PAD * 2 + Math.max(...columns.map((c) => c.length)) * (H + GAP_Y) - GAP_Y;
  const ticketTitle = new Map((tickets || []).map((t) => [t.id, t.title]));
  const edges = [];
  for (const t of tasks) {
    for (const dep of t.depends || []) {
      const from = place.get(dep), to = place.get(t.id);
      if (!from || !to) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2, mid = (x1 + x2) / 2;
      edges.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 4},${y2}`,
        "marker-end": "url(#arrow)" }));
    }
  }
  const nodes = tasks.map((t) => {
    const at = place.get(t.id);
    const status = statusOf(t);
    const owner = t.owner ? `@${t.owner}` : "";
    const ticket = t.ticket ? `#${ticketTitle.get(t.ticket) || t.ticket.slice(0, 6)}` : "";
    return svg("g", { class: `node ${status}`, transform: `translate(${at.x},${at.y})`, "data-task": t.id },
      svg("title", {}, `${t.title}\n${status}${owner ? " · " + owner : ""}${t.blocked_reason ? "\nblocked: " + t.blocked_reason : ""}`),
      svg("rect", { width: W, height: H, rx: 6 }),
      svg("rect", { class: "band", width: 5, height: H, rx: 2 }),
      svg("text", { x: 12, y: 19, class: "title" }, clip(t.title, 27)),
      svg("text", { x: 12, y: 37, class: "meta" },
        svg("tspan", { class: "status" }, status),
        owner ? svg("tspan", { dx: 6, fill: colour(t.owner) }, clip(owner, 14)) : null,
        ticket ? svg("tspan", { dx: 6, class: "ticket" }, clip(ticket, 14)) : null));
  });
  // needs_review: an integration collided or failed a gate, and the task went back to its owner
  const legend = h("div", { class: "legend" }, ["ready", "open", "claimed", "blocked", "needs_review", "done"].map((s) =>
    h("span", { class: `key ${s}` }, s.replace("_", " "))));
  return h("div", { class: "graph" }, legend, h("div", { class: "scroll" },
    svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "task graph" },
      svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7,
        markerHeight: 7, orient: "auto" }, svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" }))),
      edges, nodes)));
}
