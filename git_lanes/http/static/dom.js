// Building the page without ever parsing text as HTML: every string an agent wrote (prompts, posts, task
// titles, file names) goes in as a text node. There is no innerHTML anywhere in the dashboard.

const SVG_NS = "http://www.w3.org/2000/svg";

// What a text node would act on rather than show: a bidirectional control reorders what follows it (U+202E
// shows "txt.exe" for "exe.txt"), a control character is invisible. Each is shown as its escape, as the CLI
// shows it ("\u202e"); the API's records keep them exactly. Line breaks and tabs stay.
const UNSHOWN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

export function visible(text) {
  return String(text).replace(UNSHOWN, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

function build(el, props, children) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.setAttribute("class", value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value" || key === "disabled" || key === "checked") el[key] = value;
    else el.setAttribute(key, value === true ? "" : key === "title" ? visible(value) : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(visible(child)));
  }
  return el;
}

export function h(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

export function svg(tag, props, ...children) {
  return build(document.createElementNS(SVG_NS, tag), props, children);
}

export function fill(container, ...children) {
  container.replaceChildren();
  build(container, {}, children);
}

export const short = (oid) => (oid ? String(oid).slice(0, 8) : "–");

export function firstLine(text) {
  return String(text || "").trim().split("\n")[0];
}

export function ago(seconds) {
  if (!seconds) return "–";
  const delta = Date.now() / 1000 - seconds;
  if (delta < 60) return `${Math.max(0, Math.round(delta))}s ago`;
  if (delta < 3600) return `${Math.round(delta / 60)}m ago`;
  if (delta < 86400) return `${Math.round(delta / 3600)}h ago`;
  return `${Math.round(delta / 86400)}d ago`;
}

export function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

export function money(usd) {
  const value = Number(usd || 0);
  return value >= 100 ? `$${value.toFixed(0)}` : value >= 1 ? `$${value.toFixed(2)}` : `$${value.toFixed(4)}`;
}

export function count(n) {
  const value = Number(n || 0);
  return value >= 1e6 ? `${(value / 1e6).toFixed(1)}M` : value >= 1e4 ? `${(value / 1e3).toFixed(0)}k`
    : value >= 1e3 ? `${(value / 1e3).toFixed(1)}k` : String(value);
}

export function chip(text, kind) {
  return h("span", { class: `chip ${kind || text}` }, text);
}

export function empty(text) {
  return h("p", { class: "empty" }, text);
}

// A stable colour per name (agents, lanes), so the same agent looks the same in every section.
const PALETTE = ["#3b82f6", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16",
  "#f97316", "#6366f1", "#14b8a6", "#a855f7"];
export function colour(name) {
  let hash = 0;
  for (const c of String(name)) hash = (hash * 31 + c.codePointAt(0)) >>> 0;
  return PALETTE[hash % PALETTE.length];
}
