// Cumulative spending over time as step lines, one per agent or lane, drawn in SVG.
import { svg, h, colour, money, count, empty } from "./dom.js";

const W = 460, H = 170, L = 52, R = 10, T = 10, B = 22;

function ticks(max) {
  if (max <= 0) return [0];
  const step = Math.pow(10, Math.floor(Math.log10(max)));
  const unit = max / step > 5 ? step * 2 : max / step > 2 ? step : step / 2;
  const found = [];
  for (let v = 0; v <= max * 1.0001; v += unit) found.push(v);
  return found;
}

export function costPlot(title, all, unit, start, end) {
  const series = all.filter((s) => s[unit] > 0);
  if (!series.length) return h("div", { class: "plot" }, h("h3", {}, title), empty("Nothing spent yet."));
  const fmt = unit === "cost_usd" ? money : count;
  const max = Math.max(...series.map((s) => s[unit]), 0) || 1;
  const t0 = start ?? 0, t1 = Math.max(end ?? 1, t0 + 1);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / max) * (H - T - B);
  const grid = ticks(max).map((v) => svg("g", { class: "tick" },
    svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v) }),
    svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, fmt(v))));
  const shown = series.slice(0, 8);
  const lines = shown.map((s) => {
    let d = `M${x(t0)},${y(0)}`;
    let last = 0;
    for (const p of s.points) {
      d += ` L${x(p.time)},${y(last)} L${x(p.time)},${y(p[unit])}`;
      last = p[unit];
    }
    d += ` L${x(t1)},${y(last)}`;
    return svg("path", { class: "line", d, stroke: colour(s.key) }, svg("title", {}, `${s.key}: ${fmt(s[unit])}`));
  });
  const axis = [svg("text", { x: L, y: H - 6, class: "axis" }, new Date(t0 * 1000).toLocaleTimeString()),
    svg("text", { x: W - R, y: H - 6, class: "axis", "text-anchor": "end" }, new Date(t1 * 1000).toLocaleTimeString())];
  const legend = h("ul", { class: "legend-list" }, shown.map((s) =>
    h("li", {}, h("i", { class: "swatch", "data-colour": colour(s.key) }), h("span", { class: "name" }, s.key),
      h("b", {}, fmt(s[unit])))));
  legend.querySelectorAll(".swatch").forEach((el) => el.style.setProperty("background", el.dataset.colour));
  return h("div", { class: "plot" }, h("h3", {}, title),
    svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": title }, grid, lines, axis),
    legend);
}
