/**
 * The replay viewer (#/replay/<id>): steps through a finished game move by move from
 * GET /api/tables/{id}/replay (the spectator view after each move). Buttons, a slider
 * and the arrow keys move through it; the board is drawn by the same view code as a
 * live table. Autoplay steps on by itself; "next hand" jumps to the next hand's first view;
 * once the game is over every hand's summary is shown. The game's post-game analysis
 * (analysis.js) is fetched alongside and polled while it is still being made: each analysed
 * move's loss and the better play on the board, a chart per hand, blunders to jump to and a
 * summary per player. A private game's invite rides in the hash: #/replay/<id>?invite=CODE.
 */
import { AnalysisView } from "./analysis.js";
import { api } from "./api.js";
import { boardSvg, boxFor } from "./view/board.js";
import { el, fill, seatLabel } from "./view/dom.js";
import { roundSummary } from "./view/summary.js";

/** How often a pending analysis is asked for again, and how many times a missing one is. */
const POLL_MS = 3000;
const MISSING_TRIES = 10;

export function showReplay(root, id) {
  const invite = new URLSearchParams(location.hash.split("?")[1] ?? "").get("invite");
  let views = [];
  let gone = false; // the page was left (or the replay could not be loaded): no more polling
  let poll = null;
  let missing = 0;
  let loaded = false;
  let table = null;
  let at = 0;
  const board = el("div", { class: "board replay-board" });
  const info = el("div", { class: "info-bar", "aria-live": "polite" });
  const scores = el("ul", { class: "replay-scores" });
  const counts = el("ul", { class: "replay-counts" });
  const summary = el("div", { class: "replay-summary" });
  const slider = el("input", { type: "range", min: 0, max: 0, value: 0, "aria-label": "move" });
  const counter = el("span", { class: "counter" });
  let autoplay = null;
  const go = (i) => {
    at = Math.max(0, Math.min(views.length - 1, i));
    if (autoplay !== null && at >= views.length - 1) stopAutoplay();
    draw();
  };
  const play = el("button", { type: "button", class: "ghost autoplay", "aria-pressed": "false",
    "aria-label": "autoplay", title: "autoplay", onclick: () => (autoplay === null ? startAutoplay() : stopAutoplay()) },
  "▶ Play");
  function startAutoplay() {
    if (at >= views.length - 1) go(0);
    autoplay = setInterval(() => go(at + 1), 700);
    play.setAttribute("aria-pressed", "true");
    play.textContent = "❚❚ Pause";
  }
  function stopAutoplay() {
    clearInterval(autoplay);
    autoplay = null;
    play.setAttribute("aria-pressed", "false");
    play.textContent = "▶ Play";
  }
  /** The first view of the hand after the one shown (the last view when none follows). */
  const nextHand = () => {
    const round = views[at]?.round ?? 0;
    const i = views.findIndex((v, k) => k > at && v.round > round);
    go(i < 0 ? views.length - 1 : i);
  };
  const btn = (label, icon, f) => el("button", { type: "button", class: "ghost", "aria-label": label,
    title: label, onclick: f, html: `<svg viewBox="0 0 16 16" aria-hidden="true">${icon}</svg>` });
  const left = '<path d="M12 2 4 8l8 6z"/>';
  const right = '<path d="M4 2l8 6-8 6z"/>';
  const analysis = new AnalysisView({ go: (i) => go(i), name: (seat) => name(seat) });
  const controls = el("div", { class: "replay-controls" },
    btn("first move", `<rect x="2" y="2" width="2" height="12"/>${left}`, () => go(0)),
    btn("previous move", left, () => go(at - 1)),
    el("div", { class: "slider-wrap" }, slider, analysis.marks),
    btn("next move", right, () => go(at + 1)),
    btn("last move", `${right}<rect x="12" y="2" width="2" height="12"/>`, () => go(views.length - 1)),
    play,
    el("button", { type: "button", class: "ghost next-hand", onclick: nextHand,
      html: `Next hand <svg viewBox="0 0 16 16" aria-hidden="true">${right}<rect x="12" y="2" width="2" height="12"/></svg>` }),
    counter);
  slider.addEventListener("input", () => go(Number(slider.value)));
  const onKey = (e) => {
    if (e.defaultPrevented || (e.target instanceof HTMLInputElement && e.target !== slider)) return;
    if (e.key === "ArrowRight") go(at + 1);
    else if (e.key === "ArrowLeft") go(at - 1);
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(views.length - 1);
    else return;
    e.preventDefault();
  };
  document.addEventListener("keydown", onKey);
  const title = el("h1", {}, "Replay");
  fill(root, el("div", { class: "replay-page" },
    el("section", { class: "felt" }, title, board, info, controls, analysis.note, analysis.move),
    analysis.section,
    el("aside", { class: "side panel" }, el("h2", {}, "Score"), scores,
      el("h3", {}, "Tiles in hand"), counts, summary,
      el("p", {}, el("a", { href: "#/", class: "button ghost" }, "Lobby")))));

  const name = (seat) => seatLabel(table?.seats ?? [], seat);
  function draw() {
    const v = views[at];
    if (!v) return;
    slider.max = String(views.length - 1);
    slider.value = String(at);
    counter.textContent = `${at + 1} / ${views.length}`;
    const box = boxFor(board.clientWidth || 600, board.clientHeight || 400);
    board.innerHTML = boardSvg(v.layout, {
      box, last: v.layout.length ? v.layout.length - 1 : null, empty: "The hand is dealt",
    });
    analysis.update(at, board, box);
    const m = v.history?.at(-1);
    const what = !m ? "Hand starts"
      : m.draw ? `${name(m.seat)} drew` : m.pass ? `${name(m.seat)} passed`
        : `${name(m.seat)} played ${m.play}${m.on ? ` on ${m.on}` : ""} · ends ${m.end_total}${m.points ? ` · +${m.points}` : ""}`;
    fill(info, el("span", {}, `Hand ${v.round + 1}`), el("span", { class: "last-move" }, what),
      el("span", {}, "Boneyard ", el("strong", {}, v.boneyard)),
      v.game_over ? el("strong", { class: "final-tag" }, "Final") : null);
    fill(counts, ...v.hand_counts.map((n, seat) =>
      el("li", { class: v.turn === seat ? "turn" : "" }, el("span", {}, name(seat)), el("strong", {}, n))));
    // the game is over: every hand; else the hand of this view, once it is over
    summary.innerHTML = v.game_over && v.rounds?.length
      ? `<section class="replay-all"><h3>All hands</h3>${v.rounds.map((r, k) => roundSummary(r, k, v, name)).join("")}</section>`
      : (v.rounds?.length ?? 0) > v.round ? roundSummary(v.rounds[v.round], v.round, v, name) : "";
    fill(scores, ...v.sides.map((side, k) =>
      el("li", { class: "side-score" }, el("span", {}, side.map(name).join(" & ")),
        el("strong", {}, v.scores[k]))));
  }

  loadAnalysis(); // alongside the replay
  (async () => {
    try {
      const [data, summary] = await Promise.all([
        api.replay(id, invite), api.getTable(id, invite).catch(() => null)]);
      views = data.views ?? [];
      table = summary;
      title.textContent = `Replay: ${summary?.name ?? id}`;
      if (views.length === 0) board.textContent = "No moves to show.";
      analysis.setViews(views);
      go(0);
    } catch (e) {
      gone = true;
      clearTimeout(poll);
      analysis.note.hidden = true;
      board.textContent = e.code === "game_not_over"
        ? "The replay opens when the game is over." : `Could not load the replay: ${e.message}`;
    }
  })();
  /** The analysis, asked for again every few seconds while it is pending (or not there yet). */
  async function loadAnalysis() {
    poll = null;
    if (gone || loaded) return;
    let again = false;
    try {
      const got = await api.analysis(id, invite);
      if (gone) return;
      if (got.status === "done" && got.analysis) {
        loaded = true;
        analysis.setAnalysis(got.analysis, views);
        draw();
      } else if (got.status === "failed") {
        analysis.setStatus("failed");
      } else {
        analysis.setStatus("pending");
        again = true;
      }
    } catch (e) {
      if (gone) return;
      // a game is archived (and queued for analysis) a moment after it ends
      if ((e.code === "unknown_game" || e.status === 503) && ++missing < MISSING_TRIES) {
        analysis.setStatus("pending");
        again = true;
      } else {
        analysis.setStatus("failed", e.code === "unknown_game"
          ? "There is no analysis of this game." : `The analysis could not be loaded: ${e.message}`);
      }
    }
    if (again && !gone) poll = setTimeout(loadAnalysis, POLL_MS);
  }

  return () => {
    gone = true;
    clearTimeout(poll);
    stopAutoplay();
    document.removeEventListener("keydown", onKey);
  };
}
