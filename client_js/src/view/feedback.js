/**
 * What the table says about itself, drawn next to the table view's regions: the "how this
 * game scores" panel, why the hand's tiles are dimmed, the target-reached banner, the score
 * pop anchored at the scoring end (with the ends' sum), ghost tiles where the selected tile
 * would go, the "draw until playable" toggle, the spectators' count and the seat a spectator
 * watches from, and focus back to the hand on the player's turn. Draw only: intents go to
 * `actions`; the words come from why.js and rules_panel.js.
 */
import { canMove, playsByTile } from "../store.js";
import { rulesPanel } from "../rules_panel.js";
import { scoreSum, targetReached, whyDimmed } from "../why.js";
import { boxFor } from "./board.js";
import { countdownText } from "./dialogs.js";
import { el, fill, seatLabel } from "./dom.js";
import { placeLayout } from "./geometry.js";
import { tileSvg } from "./tiles.js";

export class FeedbackView {
  constructor(view, actions) {
    this.view = view;
    this.actions = actions;
    this.memo = {};
    const d = view.dom;
    this.dom = {
      rules: el("div", { class: "rules-slot" }),
      why: el("p", { class: "why", "aria-live": "polite", hidden: true }),
      banner: el("p", { class: "target-banner", role: "status", hidden: true }),
      tools: el("div", { class: "table-tools" }),
    };
    d.buttons.after(this.dom.why);
    this.dom.why.after(this.dom.tools);
    d.info.after(this.dom.banner);
    d.scores.before(this.dom.rules);
    d.overlay.addEventListener("click", (e) => {
      const closing = e.target.closest("[data-close]");
      if (closing) actions.closeDialog(closing.dataset.close);
      if (e.target.closest("[data-reopen]")) actions.closeDialog(null);
      if (e.target.closest("[data-ready]")) actions.ready();
    });
    // the countdown to the next hand; stops once the page is gone
    const timer = setInterval(() => {
      if (!document.contains(view.page)) {
        clearInterval(timer);
        return;
      }
      for (const c of view.page.querySelectorAll(".countdown[data-deadline]")) {
        c.textContent = countdownText(Number(c.dataset.deadline));
      }
    }, 250);
  }

  region(key, deps, draw) {
    const old = this.memo[key];
    if (old && old.length === deps.length && old.every((x, i) => x === deps[i])) return;
    this.memo[key] = deps;
    draw();
  }

  update(state, ui) {
    const game = state.doc?.game ?? null;
    const table = state.doc?.table ?? null;
    this.region("rules", [ui.meta, game?.rules, game?.players],
      () => fill(this.dom.rules, game ? rulesPanel(ui.meta, game.rules, game.players) : null));
    const mine = canMove(state);
    this.region("why", [game?.legal, game?.hand, mine, ui.gameLabel], () => {
      const text = whyDimmed(game, { label: ui.gameLabel, mine });
      this.dom.why.hidden = !text;
      this.dom.why.textContent = text ?? "";
    });
    this.region("banner", [game?.scores, game?.turn, game?.game_over], () => {
      const on = targetReached(game);
      this.dom.banner.hidden = !on;
      this.dom.banner.textContent = on ? "Target reached: the game ends after this hand" : "";
    });
    this.region("tools", [game?.rules, state.seat, ui.autoDraw, state.watching, table?.seats, ui.viewFrom,
      game?.game_over, table?.status], () => this.drawTools(state, ui));
    this.drawGhosts(game, ui);
    this.region("pop", [state.ev], () => this.drawPop(state, table));
    this.placePop();
    this.focusHand(state);
  }

  /** The draw toggle (players), the spectators' count (while somebody watches) and the seat
   * to watch from. */
  drawTools(state, ui) {
    const game = state.doc?.game;
    const table = state.doc?.table;
    const out = [];
    if (game && state.seat !== null && game.rules?.draw !== "none" && !game.game_over
      && table?.status !== "finished") {
      out.push(el("label", { class: "check auto-draw" },
        el("input", { type: "checkbox", name: "auto-draw", checked: Boolean(ui.autoDraw),
          onchange: (e) => this.actions.autoDraw(e.target.checked) }),
        " Draw until playable"));
    }
    const n = state.watching;
    if (typeof n === "number" && n >= 1) { // nobody watching: nothing to say
      out.push(el("span", { class: "watching", title: "spectators watching this table" },
        `${n} watching`));
    }
    const seats = table?.seats ?? [];
    if (state.seat === null && game && seats.length) {
      const from = ui.viewFrom ?? 0;
      out.push(el("label", { class: "view-from" }, el("span", {}, "Watch from "),
        el("select", { name: "view-from", onchange: (e) => this.actions.viewFrom(Number(e.target.value)) },
          seats.map((s, i) => el("option", { value: i, selected: i === from },
            seatLabel(seats, i))))));
    }
    fill(this.dom.tools, ...out);
  }

  /**
   * A ghost of the selected tile at each end it may go on, clickable like the highlighted
   * layout tile (data-on). Placed by the same geometry as the layout, with the tile added at
   * that end; an end whose ghost would move the layout around is left to the highlight.
   */
  drawGhosts(game, ui) {
    const svg = this.view.dom.board.querySelector("svg.board-svg");
    if (!svg || this.memo.ghostSvg === svg && this.memo.ghostFor === ui.selected) return;
    this.memo.ghostSvg = svg;
    this.memo.ghostFor = ui.selected;
    svg.querySelectorAll(".ghost-tile").forEach((g) => g.remove());
    if (!game || !ui.selected) return;
    const ons = (playsByTile(game)[ui.selected] ?? []).filter(Boolean);
    const layout = game.layout ?? [];
    const b = this.view.dom.board;
    const box = boxFor(b.clientWidth || 600, b.clientHeight || 400);
    const base = placeLayout(layout, box).nodes;
    const ghosts = [];
    for (const on of ons) {
      const spot = ghostSpot(game, layout, ui.selected, on, box, base);
      if (!spot) continue;
      ghosts.push(tileSvg(spot.near, spot.far, {
        cx: spot.rect.cx, cy: spot.rect.cy, angle: spot.angle, cls: "ghost-tile",
        attrs: `data-on="${on}" data-ghost="${ui.selected}" tabindex="0" role="button" aria-label="play ${ui.selected} on ${on}"`,
      }));
    }
    // a ghost is not a layout tile: no "tile" class (counted and styled as the layout)
    svg.insertAdjacentHTML("beforeend", ghosts.join("").replace(/class="tile ghost-tile/g, 'class="ghost-tile'));
  }

  /** The score pop of the last move, anchored at the tile just played; cleared by the next move. */
  drawPop(state, table) {
    const ev = state.ev ?? [];
    const felt = this.view.dom.board.parentElement;
    const moved = ev.some((e) => ["play", "draw", "pass", "deal", "hand_end"].includes(e.type));
    const scored = ev.filter((e) => e.type === "play" && e.points > 0);
    const timeouts = ev.filter((e) => e.type === "timeout");
    if (!moved && !timeouts.length) return;
    felt.querySelectorAll(".score-pop").forEach((p) => p.remove());
    if (!scored.length && !timeouts.length) return;
    const name = (seat) => seatLabel(table?.seats ?? [], seat);
    const game = state.doc?.game;
    const sum = scored.length && !ev.some((e) => e.type === "hand_end") ? scoreSum(game?.ends, game?.rules) : null;
    const pop = el("div", { class: "score-pop anchored", "aria-hidden": "true" },
      el("span", { class: "pop-main" }, [...timeouts.map((e) => `${name(e.seat)}: time is up`),
        ...scored.map((e) => `${name(e.seat)} +${e.points}`)].join(" · ")),
      sum ? el("span", { class: "pop-sum" }, sum) : null);
    felt.append(pop);
    this.placePop();
  }

  placePop() {
    const felt = this.view.dom.board.parentElement;
    const pop = felt.querySelector(".score-pop.anchored");
    if (!pop) return;
    const tile = this.view.dom.board.querySelector(".tile.last");
    const f = felt.getBoundingClientRect();
    if (!tile) {
      pop.style.left = "50%";
      pop.style.top = "40%";
      return;
    }
    const r = tile.getBoundingClientRect();
    // the pop is placed in the felt's padding box: its border is not part of it
    pop.style.left = `${Math.round(r.left + r.width / 2 - f.left - felt.clientLeft)}px`;
    pop.style.top = `${Math.round(r.top - f.top - felt.clientTop)}px`;
  }

  /** On the player's turn, focus left on nothing (the page body) goes back to the hand. */
  focusHand(state) {
    if (!canMove(state)) return;
    const active = document.activeElement;
    if (active && active !== document.body && active.id !== "app") return;
    if (!this.view.dom.overlay.hidden && !this.view.dom.overlay.classList.contains("collapsed")) return;
    const hand = this.view.dom.hand;
    const target = hand.querySelector("button.playable") ?? hand.querySelector("button");
    if (!target) return;
    hand.querySelectorAll("button").forEach((b) => b.setAttribute("tabindex", "-1"));
    target.setAttribute("tabindex", "0");
    target.focus({ preventScroll: true });
  }
}

/**
 * Where `tile` would lie played on layout tile `on`: the placed node of the layout with the
 * tile added at the first open end of `on` that matches it, or null.
 */
export function ghostSpot(game, layout, tile, on, box, base = null) {
  const index = layout.findIndex((n) => n.tile === on);
  if (index < 0) return null;
  const [a, b] = tile.split("-").map(Number);
  const end = (game.ends ?? []).find((e) => e.node === index && (e.value === a || e.value === b));
  if (!end) return null;
  const node = { tile, parent: index, side: end.side, inner: end.value, spinner: false };
  const placed = placeLayout(layout.concat([node]), box).nodes;
  const before = base ?? placeLayout(layout, box).nodes;
  const same = before.every((n, i) => placed[i]
    && Math.abs(placed[i].rect.cx - n.rect.cx) < 1e-6 && Math.abs(placed[i].rect.cy - n.rect.cy) < 1e-6);
  if (!same) return null;
  return placed[placed.length - 1];
}
