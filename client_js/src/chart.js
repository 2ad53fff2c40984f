/**
 * A small line chart of a rating's history, as inline SVG built with DOM APIs (the page's
 * Content-Security-Policy allows no inline style: only SVG attributes and classes from
 * style.css). `chartGeometry` is the pure part: scales, the path and the axis ticks.
 */

const SVG = "http://www.w3.org/2000/svg";

/** A "nice" step for an axis covering `span` in about `count` steps (1, 2, 5 × 10^k). */
export function niceStep(span, count = 4) {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const f = raw / pow;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * pow;
}

/**
 * The chart of `history` ([{at, rating}], any order: sorted by time) in a `width`×`height` box
 * with `pad` around the plot: {points: [{x, y, at, rating, start}], path, min, max,
 * ticks: [{y, value}], plot: {left, right, top, bottom}}. Games are spread evenly from left to
 * right in the order they were played (a rating moves by game, not by day); one point sits in
 * the middle; the value range always spans at least `minSpan` rating points around the data.
 */
export function chartGeometry(history, { width = 320, height = 120, pad = {}, minSpan = 40 } = {}) {
  const p = { left: 36, right: 8, top: 8, bottom: 18, ...pad };
  const plot = { left: p.left, right: width - p.right, top: p.top, bottom: height - p.bottom };
  const data = (history ?? [])
    .filter((h) => h && Number.isFinite(h.rating) && Number.isFinite(h.at))
    .slice()
    .sort((a, b) => a.at - b.at);
  if (data.length === 0) return { points: [], path: "", min: null, max: null, ticks: [], plot };
  let lo = Math.min(...data.map((h) => h.rating));
  let hi = Math.max(...data.map((h) => h.rating));
  if (hi - lo < minSpan) {
    const mid = (hi + lo) / 2;
    lo = mid - minSpan / 2;
    hi = mid + minSpan / 2;
  }
  const step = niceStep(hi - lo);
  const min = Math.floor(lo / step) * step;
  const max = Math.ceil(hi / step) * step;
  const w = plot.right - plot.left;
  const h = plot.bottom - plot.top;
  const xOf = (i) => (data.length === 1 ? plot.left + w / 2 : plot.left + (i / (data.length - 1)) * w);
  const yOf = (v) => plot.bottom - ((v - min) / (max - min)) * h;
  const round = (n) => Math.round(n * 10) / 10;
  const points = data.map((d, i) => ({ x: round(xOf(i)), y: round(yOf(d.rating)),
    at: d.at, rating: d.rating, start: Boolean(d.start) }));
  const path = points.map((pt, i) => `${i ? "L" : "M"}${pt.x} ${pt.y}`).join(" ");
  const ticks = [];
  for (let v = min; v <= max + step / 2; v += step) ticks.push({ y: round(yOf(v)), value: v });
  return { points, path, min, max, ticks, plot };
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

/** The chart as an <svg> element (scales with its container's width). */
export function lineChart(history, { width = 320, height = 130, label = "rating history" } = {}) {
  const g = chartGeometry(history, { width, height, pad: { left: 40 } });
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "rating-chart",
    role: "img", "aria-label": label });
  root.append(svg("title", {}, label));
  if (g.points.length === 0) {
    root.append(svg("text", { x: width / 2, y: height / 2, class: "chart-empty",
      "text-anchor": "middle" }, "No rated games yet"));
    return root;
  }
  for (const t of g.ticks) {
    root.append(svg("line", { x1: g.plot.left, x2: g.plot.right, y1: t.y, y2: t.y, class: "chart-grid" }));
    root.append(svg("text", { x: g.plot.left - 4, y: t.y + 3, class: "chart-tick",
      "text-anchor": "end" }, String(t.value)));
  }
  root.append(svg("path", { d: g.path, class: "chart-line", fill: "none" }));
  const last = g.points[g.points.length - 1];
  for (const pt of g.points.length <= 40 ? g.points : [last]) {
    const dot = svg("circle", { cx: pt.x, cy: pt.y, r: pt === last ? 3 : 2,
      class: pt === last ? "chart-dot last" : "chart-dot" });
    dot.append(svg("title", {}, pt.start ? `${pt.rating} to start with`
      : `${pt.rating} on ${new Date(pt.at).toLocaleDateString()}`));
    root.append(dot);
  }
  return root;
}

/**
 * Several lines over the same x steps (the replay's expected points per side): `series` is a
 * list of equally long lists of numbers, one per line. Returns {lines: [{points: [{x, y,
 * value}], path}], xs, min, max, ticks, plot}; x steps are spread evenly (one step sits in the
 * middle); the value range spans at least `minSpan` and always includes 0.
 */
export function seriesGeometry(series, { width = 320, height = 140, pad = {}, minSpan = 10 } = {}) {
  const p = { left: 34, right: 8, top: 8, bottom: 18, ...pad };
  const plot = { left: p.left, right: width - p.right, top: p.top, bottom: height - p.bottom };
  const lines = (series ?? []).map((s) => (s ?? []).map((v) => (Number.isFinite(v) ? v : null)));
  const n = Math.max(0, ...lines.map((s) => s.length));
  const values = lines.flat().filter((v) => v !== null);
  if (n === 0 || values.length === 0) {
    return { lines: lines.map(() => ({ points: [], path: "" })), xs: [], min: null, max: null, ticks: [], plot };
  }
  let lo = Math.min(0, ...values);
  let hi = Math.max(0, ...values);
  if (hi - lo < minSpan) hi = lo + minSpan;
  const step = niceStep(hi - lo);
  const min = Math.floor(lo / step) * step;
  const max = Math.ceil(hi / step) * step;
  const w = plot.right - plot.left;
  const h = plot.bottom - plot.top;
  const round = (v) => Math.round(v * 10) / 10;
  const xs = Array.from({ length: n }, (_, i) => round(n === 1 ? plot.left + w / 2 : plot.left + (i / (n - 1)) * w));
  const yOf = (v) => round(plot.bottom - ((v - min) / (max - min)) * h);
  const out = lines.map((s) => {
    const points = s.map((v, i) => (v === null ? null : { x: xs[i], y: yOf(v), value: v, index: i }))
      .filter(Boolean);
    return { points, path: points.map((pt, i) => `${i ? "L" : "M"}${pt.x} ${pt.y}`).join(" ") };
  });
  const ticks = [];
  for (let v = min; v <= max + step / 2; v += step) ticks.push({ y: yOf(v), value: round(v) });
  return { lines: out, xs, min, max, ticks, plot };
}

/**
 * `seriesGeometry` drawn as an <svg> (scales with its container's width): one path per line
 * with class `chart-line series-<k>`, a dot per value (its title from `titleOf(line, index)`),
 * the step `current` marked by a vertical line, steps listed in `marked` ringed (blunders).
 * `onPick(index)`: a click on a step's dot.
 */
/** The step a key picks on a chart of `n` steps whose current one is `current` (null: none
 * marked yet), or null for a key that picks nothing. */
export function keyStep(key, current, n) {
  if (n === 0) return null;
  if (key === "Home") return 0;
  if (key === "End") return n - 1;
  if (key === "ArrowLeft") return current === null ? n - 1 : Math.max(0, current - 1);
  if (key === "ArrowRight") return current === null ? 0 : Math.min(n - 1, current + 1);
  return null;
}

export function seriesChart(series, {
  width = 320, height = 140, label = "chart", current = null, marked = [], titleOf = null, onPick = null,
  empty = "Nothing to show",
} = {}) {
  const g = seriesGeometry(series, { width, height });
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "series-chart",
    role: "img", "aria-label": label });
  root.append(svg("title", {}, label));
  if (g.xs.length === 0) {
    root.append(svg("text", { x: width / 2, y: height / 2, class: "chart-empty",
      "text-anchor": "middle" }, empty));
    return root;
  }
  for (const t of g.ticks) {
    root.append(svg("line", { x1: g.plot.left, x2: g.plot.right, y1: t.y, y2: t.y,
      class: t.value === 0 ? "chart-grid zero" : "chart-grid" }));
    root.append(svg("text", { x: g.plot.left - 4, y: t.y + 3, class: "chart-tick",
      "text-anchor": "end" }, String(t.value)));
  }
  if (current !== null && g.xs[current] !== undefined) {
    root.append(svg("line", { x1: g.xs[current], x2: g.xs[current], y1: g.plot.top, y2: g.plot.bottom,
      class: "chart-current" }));
  }
  for (const i of marked) {
    if (g.xs[i] === undefined) continue;
    root.append(svg("line", { x1: g.xs[i], x2: g.xs[i], y1: g.plot.bottom, y2: g.plot.bottom + 6,
      class: "chart-mark" }));
  }
  g.lines.forEach((line, k) => {
    root.append(svg("path", { d: line.path, class: `chart-line series-${k}`, fill: "none" }));
    for (const pt of line.points) {
      const dot = svg("circle", { cx: pt.x, cy: pt.y, r: pt.index === current ? 4 : 2.5,
        class: `chart-dot series-${k}${pt.index === current ? " current" : ""}`,
        "data-step": pt.index });
      if (titleOf) dot.append(svg("title", {}, titleOf(k, pt.index)));
      root.append(dot);
    }
  });
  if (onPick) {
    root.addEventListener("click", (e) => {
      const step = e.target.closest?.("[data-step]")?.getAttribute("data-step");
      if (step !== null && step !== undefined) onPick(Number(step));
    });
    // by keyboard: the chart takes the focus, the arrows (Home, End) pick the step
    root.setAttribute("tabindex", "0");
    root.setAttribute("role", "slider");
    root.setAttribute("aria-valuemin", "1");
    root.setAttribute("aria-valuemax", String(g.xs.length));
    if (current !== null) root.setAttribute("aria-valuenow", String(current + 1));
    root.addEventListener("keydown", (e) => {
      const step = keyStep(e.key, current, g.xs.length);
      if (step === null) return;
      e.preventDefault();
      e.stopPropagation(); // the chart's steps, not the page's
      onPick(step);
    });
  }
  return root;
}
