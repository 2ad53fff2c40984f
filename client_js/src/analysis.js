/**
 * The post-game analysis in the replay viewer (GET /api/games/{id}/analysis, players.md
 * "Analysis"): which replay view each analysed move starts from, the words for a move and its
 * loss, the better play as a ghost tile on the board, the chart of each side's expected points
 * through a hand, the blunders to jump to, and a summary per player. The pure parts (mapping,
 * wording, series) are exported for the unit tests; `AnalysisView` draws them.
 */
import { seriesChart } from "./chart.js";
import { boardSvg } from "./view/board.js";
import { el, fill } from "./view/dom.js";
import { ghostSpot } from "./view/feedback.js";
import { placeLayout } from "./view/geometry.js";
import { tileSvg } from "./view/tiles.js";

/**
 * For each replay view, the analysed move made from it (or null). The views are, for each
 * round, its start and then the position after each of its moves: the k-th view of a round
 * (from 0) is the position before that round's move k.
 */
export function entriesByView(views, analysis) {
  const byMove = new Map();
  for (const m of analysis?.moves ?? []) byMove.set(`${m.round}:${m.move}`, m);
  const out = [];
  let round = null;
  let k = 0;
  for (const v of views ?? []) {
    if (v.round !== round) {
      round = v.round;
      k = 0;
    } else {
      k += 1;
    }
    out.push(byMove.get(`${round}:${k}`) ?? null);
  }
  return out;
}

/** "6-4 on 4-4", "6-4" (a lead), "draw", "pass". */
export function moveText(move) {
  if (!move) return "";
  if (move.draw) return "draw";
  if (move.pass) return "pass";
  return move.on ? `${move.play} on ${move.on}` : String(move.play ?? "");
}

/** A number of points with at most `digits` decimals, a true minus sign when negative. */
export function points(n, digits = 1) {
  if (!Number.isFinite(n)) return "–";
  const r = Number(n.toFixed(digits));
  return r < 0 ? `−${Math.abs(r)}` : String(r);
}

/** The loss of the move played: "best move", or "−12.5 points" (", blunder" when one). */
export function lossText(entry) {
  if (!entry) return "";
  if (entry.chosen === 0 || !(entry.loss > 0)) return "best move";
  return `−${Number(entry.loss.toFixed(1))} points${entry.blunder ? ", blunder" : ""}`;
}

/** The analysed moves of `round`, in order, and one line of `expected` per side. */
export function handSeries(analysis, round, sides) {
  const entries = (analysis?.moves ?? []).filter((m) => m.round === round);
  const n = Math.max(sides ?? 0, ...entries.map((m) => m.expected?.length ?? 0));
  const lines = Array.from({ length: n }, (_, s) => entries.map((m) => m.expected?.[s] ?? null));
  return { entries, lines };
}

/**
 * Where the ghost of `move` goes on the view's board: markup to add to the drawn SVG
 * ({add}), or, when the tile would move the layout around (or leads), the whole board drawn
 * again with the ghost in it ({board}). null for a draw or a pass.
 */
export function ghostMarkup(view, move, box, label) {
  if (!move?.play) return null;
  const layout = view.layout ?? [];
  const attrs = `data-ghost="${move.play}" data-on="${move.on ?? ""}" aria-label="${label}" role="img"`;
  const asGhost = (markup) => markup.replace(/class="tile ghost-tile/g, 'class="ghost-tile');
  if (layout.length && move.on) {
    const spot = ghostSpot(view, layout, move.play, move.on, box);
    if (spot) {
      return { add: asGhost(tileSvg(spot.near, spot.far, { cx: spot.rect.cx, cy: spot.rect.cy,
        angle: spot.angle, cls: "ghost-tile analysis-ghost", attrs })) };
    }
  }
  // the lead, or a tile that shifts the layout: draw the layout with the tile added
  const [a, b] = move.play.split("-").map(Number);
  let node = { tile: move.play, parent: null, side: null, inner: null, spinner: false };
  if (layout.length) {
    const index = layout.findIndex((n) => n.tile === move.on);
    const end = (view.ends ?? []).find((e) => e.node === index && (e.value === a || e.value === b));
    if (!end) return null;
    node = { tile: move.play, parent: index, side: end.side, inner: end.value, spinner: false };
  }
  const all = layout.concat([node]);
  const placed = placeLayout(all, box).nodes;
  const g = placed[placed.length - 1];
  let markup = boardSvg(all, { box, last: layout.length ? layout.length - 1 : null });
  // the added tile is drawn last: turn it into the ghost
  const ghost = tileSvg(g.near ?? a, g.far ?? b, { cx: g.rect.cx, cy: g.rect.cy, angle: g.angle,
    cls: "ghost-tile analysis-ghost", attrs });
  const cut = markup.lastIndexOf('<g class="tile');
  markup = `${markup.slice(0, cut)}${asGhost(ghost)}</svg>`;
  return { board: markup.replace(/aria-label="layout of \d+ tiles"/, `aria-label="layout of ${layout.length} tiles"`) };
}

const STATUS_WORDS = {
  pending: "Analysis in progress…",
  failed: "The analysis of this game could not be made.",
};

/**
 * The analysis parts of the replay page: `note` (its state) and `move` (the move at the
 * position shown) go under the board, `section` (chart, blunders, summary) below it.
 * `go(i)` jumps to view i; `name(seat)` names a seat.
 */
export class AnalysisView {
  constructor({ go, name }) {
    this.go = go;
    this.name = name;
    this.analysis = null;
    this.entries = [];
    this.views = [];
    this.note = el("p", { class: "analysis-note", role: "status" }, "Loading the analysis…");
    this.move = el("div", { class: "analysis-move", "aria-live": "polite", hidden: true });
    this.chart = el("figure", { class: "analysis-chart" });
    this.blunders = el("div", { class: "analysis-blunders" });
    this.players = el("div", { class: "analysis-players" });
    this.section = el("section", { class: "analysis panel", "aria-label": "analysis", hidden: true },
      el("h2", {}, "Analysis"), this.players, this.chart, this.blunders);
    this.marks = el("div", { class: "slider-marks", "aria-hidden": "true" });
  }

  setStatus(status, text = null) {
    this.note.dataset.status = status;
    this.note.textContent = text ?? STATUS_WORDS[status] ?? "";
    this.note.hidden = status === "done";
  }

  setAnalysis(analysis, views) {
    this.analysis = analysis;
    this.chartKey = null;
    this.views = views;
    this.entries = entriesByView(views, analysis);
    this.setStatus("done");
    this.section.hidden = false;
    this.drawPlayers();
    this.drawBlunders();
    this.drawMarks();
  }

  /** The replay's views (they may arrive after the analysis). */
  setViews(views) {
    this.views = views;
    this.chartKey = null;
    if (this.analysis) this.setAnalysis(this.analysis, views);
  }

  sideName(k) {
    const side = this.views[0]?.sides?.[k] ?? [k];
    return side.map((s) => this.name(s)).join(" & ");
  }

  drawPlayers() {
    const rows = (this.analysis.players ?? []).map((p) => el("tr", { "data-seat": p.seat },
      el("th", { scope: "row" }, this.name(p.seat)),
      el("td", { class: "moves" }, p.moves),
      el("td", { class: "average-loss" }, points(p.average_loss, 2)),
      el("td", { class: "blunders" }, p.blunders),
      el("td", { class: "best" }, p.best)));
    fill(this.players, el("table", { class: "analysis-summary" },
      el("caption", {}, "Per player"),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Player"),
        el("th", { scope: "col", title: "moves analysed (with a choice of plays)" }, "Moves"),
        el("th", { scope: "col", title: "average points lost per move" }, "Avg loss"),
        el("th", { scope: "col" }, "Blunders"),
        el("th", { scope: "col", title: "moves that were the best play" }, "Best"))),
      el("tbody", {}, rows)));
  }

  /** The blunders as a list of buttons that jump to the position before each. */
  drawBlunders() {
    const items = [];
    this.entries.forEach((m, i) => {
      if (!m?.blunder) return;
      items.push(el("li", {}, el("button", { type: "button", class: "ghost blunder-jump", "data-view": i,
        onclick: () => this.go(i) },
      `Hand ${m.round + 1}, move ${m.move + 1}: ${this.name(m.seat)} ${moveText(m.options[m.chosen]?.move)}`,
      el("span", { class: "loss" }, ` −${Number(m.loss.toFixed(1))}`))));
    });
    fill(this.blunders, el("h3", {}, "Blunders"),
      items.length ? el("ol", { class: "blunder-list" }, items) : el("p", { class: "muted" }, "No blunders."));
  }

  /** Ticks under the slider at each analysed move, blunders in red (decorative: see the list). */
  drawMarks() {
    const n = this.views.length;
    const SVGNS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(SVGNS, "svg");
    svg.setAttribute("viewBox", `0 0 ${Math.max(1, n - 1)} 1`);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("class", "marks-svg");
    this.entries.forEach((m, i) => {
      if (!m) return;
      const r = document.createElementNS(SVGNS, "rect");
      const w = Math.max(0.08, (n - 1) / 200);
      r.setAttribute("x", String(i - w / 2));
      r.setAttribute("y", m.blunder ? "0" : "0.45");
      r.setAttribute("width", String(w));
      r.setAttribute("height", m.blunder ? "1" : "0.55");
      r.setAttribute("class", m.blunder ? "mark blunder" : "mark");
      svg.append(r);
    });
    fill(this.marks, svg);
  }

  /** The view `at` is shown; `boardEl` holds its drawn board; `box` the board's box. */
  update(at, boardEl, box) {
    const v = this.views[at];
    const entry = this.entries[at] ?? null;
    if (!this.analysis || !v) {
      this.move.hidden = true;
      return;
    }
    this.drawChart(v.round, at);
    this.blunders.querySelectorAll("button[data-view]").forEach((b) => {
      b.classList.toggle("current", Number(b.dataset.view) === at);
      b.setAttribute("aria-current", Number(b.dataset.view) === at ? "true" : "false");
    });
    if (!entry) {
      this.move.hidden = true;
      fill(this.move);
      return;
    }
    this.move.hidden = false;
    const best = entry.options[0];
    const played = entry.options[entry.chosen];
    const isBest = entry.chosen === 0 || !(entry.loss > 0);
    // the better play, where it would have gone (none when the best play was made)
    const ghost = isBest ? null : ghostMarkup(v, best.move, box, `better: ${moveText(best.move)}`);
    if (ghost?.board) boardEl.innerHTML = ghost.board;
    else if (ghost?.add) boardEl.querySelector("svg.board-svg")?.insertAdjacentHTML("beforeend", ghost.add);
    const opt = (o, k) => el("li", { class: [k === entry.chosen ? "chosen" : "", k === 0 ? "best" : ""].join(" ").trim() },
      el("span", { class: "opt-move" }, moveText(o.move)),
      el("span", { class: "opt-points" }, `${points(o.points)} ± ${points(o.stderr)}`),
      el("span", { class: "opt-wins", title: "chance to win the game in this hand" },
        `${Math.round((o.wins ?? 0) * 100)}% win`));
    this.move.classList.toggle("blunder", Boolean(entry.blunder));
    fill(this.move,
      el("p", { class: "to-move" }, el("strong", {}, this.name(entry.seat)), " to move"),
      el("p", { class: "played" }, "Played ", el("strong", {}, moveText(played?.move)), ": ",
        el("span", { class: isBest ? "loss best-move" : entry.blunder ? "loss blunder-tag" : "loss" },
          lossText(entry))),
      isBest ? null : el("p", { class: "better" }, "Better: ", el("strong", {}, moveText(best.move)),
        ` (${points(best.points)} ± ${points(best.stderr)}), shown on the board`),
      el("details", { class: "options" }, el("summary", {}, `All ${entry.options.length} plays`),
        el("ol", { class: "option-list" }, entry.options.map(opt))));
  }

  drawChart(round, at) {
    const { entries, lines } = handSeries(this.analysis, round, this.views[0]?.sides?.length);
    // the current step: the move made from this view, else the last one made before it
    let current = null;
    entries.forEach((m, k) => {
      const view = this.entries.indexOf(m);
      if (view >= 0 && view <= at) current = k;
    });
    const key = `${round}:${current}`;
    if (this.chartKey === key) return;
    this.chartKey = key;
    const names = lines.map((_, k) => this.sideName(k));
    const last = entries.length ? lines.map((l, k) => `${names[k]} ${points(l.at(-1))}`).join(", ") : "";
    const label = entries.length
      ? `Expected points in hand ${round + 1}, after each of its ${entries.length} analysed moves; last: ${last}`
      : `No analysed moves in hand ${round + 1}`;
    const now = current === null ? "" : `; marked: after ${this.name(entries[current].seat)} ${
      moveText(entries[current].options[entries[current].chosen]?.move)}, ${
      lines.map((l, k) => `${names[k]} ${points(l[current])}`).join(", ")}`;
    const chart = seriesChart(lines, {
      width: 320, height: 150, label: label + now, current,
      marked: entries.map((m, k) => (m.blunder ? k : null)).filter((k) => k !== null),
      titleOf: (side, k) => `${names[side]}: ${points(lines[side][k])} after ${this.name(entries[k].seat)} ${moveText(entries[k].options[entries[k].chosen]?.move)}`,
      onPick: (k) => {
        const view = this.entries.indexOf(entries[k]);
        if (view >= 0) this.go(view);
      },
      empty: "No analysed moves in this hand",
    });
    const focused = this.chart.contains(document.activeElement); // kept by the new chart
    fill(this.chart, chart, el("figcaption", {},
      el("span", { class: "chart-title" }, `Expected points, hand ${round + 1}`),
      el("ul", { class: "chart-legend" }, names.map((n, k) => el("li", { class: `series-${k}` }, n)))));
    if (focused) chart.focus();
  }
}
