/**
 * The table page's DOM: seats around the felt, the layout, the player's hand and
 * buttons, scores, history, chat, the connection-independent overlays (hand summary,
 * game over) and the waiting room. `update(state, ui)` redraws only the regions whose
 * inputs changed (the store shares unchanged parts of the document by reference).
 * User intents go to the `actions` callbacks; nothing here talks to the network.
 */
import { playsByTile, canMove } from "../store.js";
import { boardSvg, boxFor } from "./board.js";
import { el, fill, formatClock, seatLabel } from "./dom.js";
import { tileBack, uprightTile } from "./tiles.js";
import { drawDialog, drawWaitingRoom } from "./dialogs.js";
import { ratingText } from "../ratings.js";

const MOVE_WORDS = {
  not_your_turn: "It is not your turn.",
  stale_version: "The table moved on; try again.",
};

export class TableView {
  constructor(root, actions) {
    this.actions = actions;
    this.memo = {};
    this.root = root;
    this.dom = {
      seats: el("div", { class: "seats" }),
      board: el("div", { class: "board", "aria-label": "layout" }),
      info: el("div", { class: "info-bar", "aria-live": "polite" }),
      me: el("div", { class: "me-chip" }),
      hand: el("div", { class: "hand", role: "toolbar", "aria-label": "your hand" }),
      buttons: el("div", { class: "buttons" }),
      notice: el("div", { class: "notice", role: "alert" }),
      scores: el("div", { class: "scoreboard" }),
      history: el("ol", { class: "history", "aria-label": "moves this hand" }),
      chatLog: el("ol", { class: "chat-log", "aria-live": "polite" }),
      overlay: el("div", { class: "overlay", hidden: true }),
      waiting: el("div", { class: "waiting panel", hidden: true }),
    };
    const d = this.dom;
    const chatForm = el("form", { class: "chat-form" },
      el("input", { name: "text", maxlength: 200, placeholder: "Say something…",
        "aria-label": "chat message", autocomplete: "off" }),
      el("button", { type: "submit" }, "Send"));
    chatForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = chatForm.text.value.trim();
      if (text) actions.chat(text);
      chatForm.text.value = "";
    });
    this.page = el("div", { class: "table-page" },
      el("section", { class: "felt" }, d.seats, d.waiting, d.board, d.info),
      el("section", { class: "me" }, d.me, d.hand, d.buttons, d.notice),
      el("aside", { class: "side" }, d.scores,
        el("details", { class: "panel", open: true }, el("summary", {}, "This hand"), d.history),
        el("div", { class: "panel chat" }, el("h2", {}, "Chat"), d.chatLog, chatForm)),
      d.overlay);
    fill(root, this.page);
    d.hand.addEventListener("keydown", (e) => this.handKeys(e));
    d.hand.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-tile]");
      if (b) actions.pick(b.dataset.tile);
    });
    const chooseEnd = (e) => {
      const g = e.target.closest("[data-on]");
      if (g) actions.playOn(g.dataset.on);
    };
    d.board.addEventListener("click", chooseEnd);
    d.board.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        chooseEnd(e);
      }
    });
    d.overlay.addEventListener("click", (e) => {
      if (e.target.closest("[data-dismiss]")) actions.dismissRound();
    });
    this.resize = new ResizeObserver(() => {
      this.memo.board = null;
      if (this.last) this.update(...this.last);
    });
    this.resize.observe(d.board);
    this.clockTimer = setInterval(() => this.tickClocks(), 500);
  }

  destroy() {
    document.title = "All Fives";
    this.resize.disconnect();
    clearInterval(this.clockTimer);
  }

  /** Runs `draw` when any of `deps` changed since the last call for `key`. */
  region(key, deps, draw) {
    const old = this.memo[key];
    if (old && old.length === deps.length && old.every((x, i) => x === deps[i])) return;
    this.memo[key] = deps;
    draw();
  }

  update(state, ui) {
    this.last = [state, ui];
    const doc = state.doc;
    const game = doc?.game ?? null;
    const table = doc?.table ?? null;
    this.page.dataset.seat = state.seat ?? "spectator";
    this.page.dataset.v = state.v ?? "";
    this.page.classList.toggle("spectator", state.seat === null);
    this.page.classList.toggle("my-turn", canMove(state));
    const name = table?.name ? `${table.name} · All Fives` : "All Fives";
    document.title = canMove(state) ? `● Your turn · ${name}` : name;
    this.region("waiting", [table, game, ui.joinError], () => this.drawWaiting(table, game, state, ui));
    this.region("seats", [table, game, state.presence, state.seat], () => this.drawSeats(state));
    this.region("board", [game?.layout, ui.selected, state.pending],
      () => this.drawBoard(game, ui));
    this.region("info", [game, state.ev], () => this.drawInfo(game, table));
    this.region("hand", [game?.hand, game?.legal, ui.selected, state.pending, state.seat, state.ev],
      () => this.drawHand(state, ui));
    this.region("buttons", [game?.legal, ui.selected, state.pending, state.seat, game?.turn],
      () => this.drawButtons(state, ui));
    this.region("notice", [state.rejected, state.error, state.conn],
      () => this.drawNotice(state));
    this.region("scores", [game?.scores, game?.sides, table?.seats, game?.rules, game?.round, state.seat],
      () => this.drawScores(game, table));
    this.region("history", [game?.history, table?.seats], () => this.drawHistory(game, table));
    this.region("chat", [state.chat], () => this.drawChat(state.chat));
    this.region("overlay", [game?.rounds, game?.game_over, ui.seenRounds, table?.seats, table?.status, ui.fair,
      table?.ratings],
      () => this.drawOverlay(game, table, ui, state));
    this.tickClocks();
  }

  seatName(table, seat) {
    return seatLabel(table?.seats ?? [], seat);
  }

  drawWaiting(table, game, state, ui) {
    const name = (s) => this.seatName(table, s);
    drawWaitingRoom(this.dom.waiting, { table, game, state, ui, actions: this.actions, name });
  }

  drawSeats(state) {
    const { doc, presence, seat: mySeat } = state;
    const table = doc?.table;
    const game = doc?.game;
    const n = table?.seats?.length ?? 0;
    const chip = (i) => {
      const s = table.seats[i];
      const count = game?.hand_counts?.[i];
      const online = s?.bot ? true : Boolean(presence[i]);
      const turn = game && game.turn === i && !game.game_over;
      const backs = count !== undefined && i !== mySeat
        ? el("span", { class: "backs", html: tileBack().repeat(Math.min(count, 9)) }) : null;
      return el("div", { class: `seat-chip${turn ? " turn" : ""}`, "data-seat": i },
        el("span", { class: `dot ${online ? "on" : "off"}`, title: online ? "connected" : "away" }),
        el("span", { class: "seat-name" }, this.seatName(table, i),
          s?.bot && !/bot/i.test(this.seatName(table, i)) ? el("small", {}, " (bot)") : null),
        s?.player ? el("span", { class: "seat-rating", title: s.player.provisional
          ? "rating (provisional: few rated games yet)" : "rating" }, ratingText(s.player)) : null,
        count !== undefined ? el("span", { class: "count", title: "tiles in hand" }, `${count}`) : null,
        backs,
        el("span", { class: "clock", "data-clock-seat": i }));
    };
    // around the table as seen from the bottom seat (a spectator looks from seat 0):
    // play passes to the left, so the next seat is on the left, then across, then right
    const bottom = mySeat ?? 0;
    const others = Array.from({ length: Math.max(0, n - 1) }, (_, k) => (bottom + 1 + k) % n);
    const places = n === 2 ? ["top"] : n === 3 ? ["left", "right"] : ["left", "top", "right"];
    const placed = (i, k) => {
      const c = chip(i);
      c.dataset.pos = places[k] ?? "top";
      return c;
    };
    fill(this.dom.seats, ...(table ? others.map(placed) : []));
    this.dom.seats.parentElement.classList.toggle("has-sides", n > 2);
    const me = table && n > 0 ? chip(bottom) : null;
    if (me) me.dataset.pos = "bottom";
    fill(this.dom.me, me);
  }

  drawBoard(game, ui) {
    const b = this.dom.board;
    if (!game) {
      b.innerHTML = "";
      return;
    }
    const plays = playsByTile(game);
    const candidates = ui.selected ? (plays[ui.selected] ?? []).filter(Boolean) : [];
    const last = lastPlayIndex(game);
    const box = boxFor(b.clientWidth || 600, b.clientHeight || 400);
    const grown = (game.layout?.length ?? 0) > (this.layoutSize ?? Infinity);
    this.layoutSize = game.layout?.length ?? 0;
    b.innerHTML = boardSvg(game.layout, { box, candidates, last, fresh: grown });
    b.classList.toggle("choosing", candidates.length > 0);
  }

  drawInfo(game, table) {
    if (!game) {
      this.dom.info.replaceChildren();
      return;
    }
    const last = game.history?.at(-1);
    const scored = (this.last?.[0]?.ev ?? []).filter((e) => e.type === "play" && e.points > 0);
    const timeouts = (this.last?.[0]?.ev ?? []).filter((e) => e.type === "timeout");
    const news = [...timeouts, ...scored].map((e) => (e.type === "timeout"
      ? `${this.seatName(table, e.seat)}: time is up`
      : `${this.seatName(table, e.seat)} +${e.points}`));
    if (news.length) {
      // one pop-up at a time: a newer one replaces the last
      this.dom.board.parentElement.querySelectorAll(".score-pop").forEach((p) => p.remove());
      const pop = el("div", { class: "score-pop", "aria-hidden": "true" }, news.join(" · "));
      pop.addEventListener("animationend", () => pop.remove());
      this.dom.board.parentElement.append(pop);
    }
    fill(this.dom.info,
      el("span", { class: "ends" }, "Ends ", el("strong", { class: "end-total" }, game.end_total ?? 0)),
      el("span", { class: "boneyard" }, "Boneyard ", el("strong", {}, game.boneyard ?? 0)),
      el("span", { class: "round" }, `Hand ${(game.round ?? 0) + 1}`),
      last ? el("span", { class: "last-move" }, describeMove(last, table, this)) : null);
  }

  drawHand(state, ui) {
    const game = state.doc?.game;
    const hand = game?.hand;
    const h = this.dom.hand;
    h.hidden = !hand;
    if (!hand) return;
    const focused = document.activeElement?.closest?.(".hand button")?.dataset.tile;
    const plays = playsByTile(game);
    const mine = canMove(state);
    const drawn = new Set((state.ev ?? []).filter((e) => e.type === "draw" && e.tile).map((e) => e.tile));
    fill(h, ...hand.map((tile, i) => {
      const playable = mine && tile in plays;
      const cls = `hand-tile${playable ? " playable" : ""}${ui.selected === tile ? " selected" : ""}${
        drawn.has(tile) ? " drawn" : ""}`;
      return el("button", {
        type: "button", class: cls, "data-tile": tile, tabindex: i === 0 ? 0 : -1,
        "aria-pressed": ui.selected === tile ? "true" : "false",
        "aria-disabled": playable ? "false" : "true",
        "aria-label": `${tile}${playable ? ", playable" : ""}`,
        html: uprightTile(tile),
      });
    }));
    const again = focused && h.querySelector(`button[data-tile="${focused}"]`);
    if (again) {
      h.querySelectorAll("button").forEach((b) => b.setAttribute("tabindex", "-1"));
      again.setAttribute("tabindex", "0");
      again.focus();
    }
  }

  handKeys(e) {
    const buttons = [...this.dom.hand.querySelectorAll("button")];
    const i = buttons.indexOf(document.activeElement);
    if (i < 0) return;
    let j = null;
    if (e.key === "ArrowRight" || e.key === "ArrowDown") j = (i + 1) % buttons.length;
    if (e.key === "ArrowLeft" || e.key === "ArrowUp") j = (i - 1 + buttons.length) % buttons.length;
    if (e.key === "Home") j = 0;
    if (e.key === "End") j = buttons.length - 1;
    if (e.key === "Escape") this.actions.pick(null);
    if (j === null) return;
    e.preventDefault();
    buttons.forEach((b) => b.setAttribute("tabindex", "-1"));
    buttons[j].setAttribute("tabindex", "0");
    buttons[j].focus();
  }

  drawButtons(state, ui) {
    const game = state.doc?.game;
    const box = this.dom.buttons;
    if (!game) {
      box.replaceChildren();
      return;
    }
    if (state.seat === null) {
      const turn = game.turn;
      fill(box, el("span", { class: "hint" }, "Watching",
        turn === null || turn === undefined ? "" : ` · ${this.seatName(state.doc.table, turn)} to play`));
      return;
    }
    const mine = canMove(state);
    const legal = mine ? game.legal : [];
    const out = [];
    if (ui.selected && mine) {
      const ons = (playsByTile(game)[ui.selected] ?? []).filter(Boolean);
      out.push(el("span", { class: "hint" }, `Play ${ui.selected} on:`));
      for (const on of ons) {
        out.push(el("button", { type: "button", class: "primary end-choice", "data-on": on,
          onclick: () => this.actions.playOn(on) }, on));
      }
      out.push(el("button", { type: "button", class: "ghost", onclick: () => this.actions.pick(null) }, "Cancel"));
    } else if (legal.some((m) => m.draw)) {
      out.push(el("button", { type: "button", class: "primary", "data-action": "draw",
        onclick: () => this.actions.move({ draw: true }) }, "Draw a tile"));
    } else if (legal.some((m) => m.pass)) {
      out.push(el("button", { type: "button", class: "primary", "data-action": "pass",
        onclick: () => this.actions.move({ pass: true }) }, "Pass"));
    }
    if (out.length === 0) {
      const turn = game.turn;
      const text = game.game_over ? "Game over"
        : state.pending ? "Sending…"
          : mine ? "Your turn: choose a tile"
            : turn === null || turn === undefined ? "" : `${this.seatName(state.doc.table, turn)} to play`;
      out.push(el("span", { class: `hint${mine ? " your-turn" : ""}` }, text));
    }
    fill(box, ...out);
  }

  drawNotice(state) {
    const n = state.rejected ?? state.error;
    const box = this.dom.notice;
    if (!n) {
      box.replaceChildren();
      return;
    }
    fill(box, el("span", {}, MOVE_WORDS[n.code] ?? n.message),
      el("button", { type: "button", class: "ghost", "aria-label": "dismiss",
        onclick: () => this.actions.dismiss() }, "×"));
  }

  drawScores(game, table) {
    const box = this.dom.scores;
    if (!game) {
      box.replaceChildren();
      return;
    }
    const target = game.rules?.target;
    fill(box, el("h2", {}, `Score`, target ? el("small", {}, ` to ${target}`) : null),
      el("ul", {}, (game.sides ?? []).map((side, k) => el("li", { class: "side-score", "data-side": k },
        el("span", {}, side.map((s) => this.seatName(table, s)).join(" & ")),
        el("strong", {}, game.scores?.[k] ?? 0)))),
      game.rules?.scale > 1
        ? el("p", { class: "muted unit" }, `Scores in points of ${game.rules.scale} pips`) : null,
      this.last?.[0]?.seat !== null && !game.game_over
        ? el("button", { type: "button", class: "ghost leave", onclick: () => {
          const words = table?.rated ? "Leave the game? At a rated table leaving resigns: your side loses."
            : "Leave the game? A bot takes your seat.";
          if (confirm(words)) this.actions.leave();
        } }, "Leave the game") : null);
  }

  drawHistory(game, table) {
    const items = (game?.history ?? []).slice(-30).map((m) =>
      el("li", { class: m.points > 0 ? "scored" : "" }, describeMove(m, table, this)));
    fill(this.dom.history, ...items);
    this.dom.history.scrollTop = this.dom.history.scrollHeight;
  }

  drawChat(chat) {
    fill(this.dom.chatLog, ...chat.map((c) =>
      el("li", {}, el("b", {}, c.name || (c.seat === null ? "spectator" : `Seat ${c.seat + 1}`)), " ", c.text)));
    this.dom.chatLog.scrollTop = this.dom.chatLog.scrollHeight;
  }

  drawOverlay(game, table, ui, state) {
    drawDialog(this.dom.overlay, { game, table, ui, state, name: (s) => this.seatName(table, s) });
  }

  /** Updates the countdown of the seat to move from the document's clock deadline. */
  tickClocks() {
    const doc = this.last?.[0]?.doc;
    const clock = doc?.table?.clock;
    const turn = doc?.game?.turn;
    for (const span of this.page.querySelectorAll("[data-clock-seat]")) {
      const seat = Number(span.dataset.clockSeat);
      if (clock?.deadline && seat === turn && !doc.game.game_over) {
        const left = clock.deadline - Date.now();
        span.textContent = formatClock(left);
        span.classList.toggle("low", left < 10000);
      } else {
        const reserve = clock?.reserve?.[seat];
        span.textContent = reserve !== undefined && reserve !== null ? formatClock(reserve) : "";
        span.classList.remove("low");
      }
    }
  }
}

/** Index of the layout tile played last (the layout is in play order). */
function lastPlayIndex(game) {
  const layout = game.layout ?? [];
  return layout.length ? layout.length - 1 : null;
}

function describeMove(m, table, view) {
  const who = view.seatName(table, m.seat);
  if (m.draw) return `${who} drew`;
  if (m.pass) return `${who} passed`;
  const on = m.on ? ` on ${m.on}` : "";
  const score = m.points > 0 ? ` · +${m.points}` : "";
  return `${who} played ${m.play}${on} · ends ${m.end_total}${score}`;
}
