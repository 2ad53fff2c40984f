/**
 * The table page's DOM: seats around the felt, the layout, the player's hand and
 * buttons, scores, history, chat, the connection-independent overlays (hand summary,
 * game over) and the waiting room. `update(state, ui)` redraws only the regions whose
 * inputs changed (the store shares unchanged parts of the document by reference).
 * User intents go to the `actions` callbacks; nothing here talks to the network.
 */
import { playsByTile, canMove, currentHint } from "../store.js";
import { boardSvg, boxFor, BoardZoom } from "./board.js";
import { el, fill, seatLabel } from "./dom.js";
import { clockText, clockTitle, seatClock } from "../clock_format.js";
import { armSound, isMuted, playSound, setMuted } from "../sound.js";
import { tileBack, uprightTile } from "./tiles.js";
import { dialogKey, drawDialog, drawWaitingRoom } from "./dialogs.js";
import { ratingText } from "../ratings.js";
import { FeedbackView } from "./feedback.js";
import { countersShown } from "../why.js";

const CHAT_ICON = `<svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><path d="M2 2h12a1 1 0 0 1 1 1v8a1 1 0 0 1-1 1H7l-3.5 3v-3H2a1 1 0 0 1-1-1V3a1 1 0 0 1 1-1z"/></svg>`;
const SOUND_ICON = `<svg class="icon" viewBox="0 0 16 16" aria-hidden="true"><path d="M2 6h3l4-3.5v11L5 10H2z"/><path class="waves" d="M11 5.2a4 4 0 0 1 0 5.6M12.8 3.4a6.5 6.5 0 0 1 0 9.2" fill="none" stroke="currentColor" stroke-width="1.4" stroke-linecap="round"/><path class="cross" d="M11 5.5l4 5m0-5l-4 5" fill="none" stroke="currentColor" stroke-width="1.4" stroke-linecap="round"/></svg>`;

const MOVE_WORDS = {
  not_your_turn: "It is not your turn.",
  stale_version: "The table moved on; try again.",
};
/** Why a move made while the connection was down was not played, by refusal code. */
const OFFLINE_WORDS = {
  stale_version: "the game moved on while you were offline",
  not_your_turn: "the game moved on while you were offline",
  game_over: "the game ended while you were offline",
  between_hands: "the hand ended while you were offline",
};

/** "Your move 5-3 was not played: the game moved on while you were offline." */
export function notPlayedWords(rejected) {
  const m = rejected.move ?? {};
  const what = m.draw ? "draw" : m.pass ? "pass" : `move ${m.play}`;
  const why = OFFLINE_WORDS[rejected.code] ?? String(rejected.message ?? rejected.code).replace(/\.$/, "");
  return `Your ${what} was not played: ${why}.`;
}

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
      // phones: the chat is a sheet behind this button, with a count of unread lines
      chatBadge: el("span", { class: "badge", hidden: true, "aria-hidden": "true" }),
      chatToggle: el("button", { type: "button", class: "ghost tool chat-toggle", "aria-label": "chat",
        "aria-controls": "table-chat", "aria-expanded": "false", title: "chat", html: CHAT_ICON }),
      chatClose: el("button", { type: "button", class: "ghost tool chat-close", "aria-label": "close the chat" },
        "×"),
      soundToggle: el("button", { type: "button", class: "ghost tool sound-toggle", html: SOUND_ICON }),
    };
    const d = this.dom;
    d.chatToggle.append(d.chatBadge);
    d.corner = el("div", { class: "table-corner" }, d.soundToggle, d.chatToggle);
    this.unread = 0;
    this.chatSeen = null;
    d.chatToggle.addEventListener("click", () => this.openChat(!this.page.classList.contains("chat-open")));
    d.chatClose.addEventListener("click", () => this.openChat(false));
    d.soundToggle.addEventListener("click", () => {
      setMuted(!isMuted());
      this.drawSoundToggle();
    });
    armSound();
    const chatForm = el("form", { class: "chat-form" },
      el("input", { name: "text", maxlength: 200, placeholder: "Say something…",
        "aria-label": "chat message", autocomplete: "off" }),
      el("button", { type: "submit" }, "Send"));
    const chatError = el("p", { class: "form-error chat-error", role: "alert" });
    chatForm.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = chatForm.text.value.trim();
      if (!text) return;
      // a line typed while the connection is down stays in the box, to send once it is back
      if (actions.chat(text) === false) {
        chatError.textContent = "Not sent: the table is not connected. Send it again once it is back.";
        return;
      }
      chatError.textContent = "";
      chatForm.text.value = "";
    });
    this.page = el("div", { class: "table-page" },
      // the felt and the player's hand fill one screen; the side panels follow
      el("div", { class: "play" },
        el("section", { class: "felt" }, d.seats, d.waiting, d.board, d.info),
        el("section", { class: "me" }, el("div", { class: "me-row" }, d.me, d.corner), d.hand, d.buttons, d.notice)),
      el("aside", { class: "side" }, d.scores,
        el("details", { class: "panel", open: true }, el("summary", {}, "This hand"), d.history),
        el("div", { class: "panel chat", id: "table-chat" }, el("h2", {}, "Chat", d.chatClose), d.chatLog,
          chatForm, chatError)),
      d.overlay);
    this.drawSoundToggle();
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
    this.zoom = new BoardZoom(d.board);
    // the play area is one screen tall less the header: tell the style sheet its height
    const bar = document.querySelector(".topbar");
    this.barSize = new ResizeObserver(() => document.documentElement.style
      .setProperty("--topbar-h", `${bar?.offsetHeight ?? 0}px`));
    if (bar) this.barSize.observe(bar);
    this.clockTimer = setInterval(() => this.tickClocks(), 500);
    this.feedback = new FeedbackView(this, actions); // feedback.js: the table explains itself
  }

  destroy() {
    document.title = "All Fives";
    this.resize.disconnect();
    clearInterval(this.clockTimer);
    this.barSize.disconnect();
    this.zoom.destroy();
  }

  drawSoundToggle() {
    const muted = isMuted();
    const b = this.dom.soundToggle;
    b.setAttribute("aria-pressed", muted ? "true" : "false");
    b.setAttribute("aria-label", "mute sounds");
    b.title = muted ? "sounds off" : "sounds on";
    b.classList.toggle("muted", muted);
  }

  openChat(open) {
    this.page.classList.toggle("chat-open", open);
    this.dom.chatToggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) {
      this.markChatRead();
      this.page.querySelector(".chat-form input")?.focus();
    }
  }

  /** The chat is in sight: on a wide screen (no chat button) or opened on a phone. */
  chatInSight() {
    return this.page.classList.contains("chat-open") || this.dom.chatToggle.offsetParent === null;
  }

  markChatRead() {
    this.chatSeen = this.last?.[0]?.chat?.length ?? 0;
    this.unread = 0;
    this.drawBadge();
  }

  drawBadge() {
    const b = this.dom.chatBadge;
    b.hidden = this.unread === 0;
    b.textContent = this.unread > 9 ? "9+" : String(this.unread);
    this.dom.chatToggle.setAttribute("aria-label", this.unread ? `chat, ${this.unread} unread` : "chat");
  }

  /** Sounds for what a new version brought: the hand over, a tile played, our turn. */
  sounds(state) {
    if (state.v === this.soundV) return;
    const first = this.soundV === undefined || this.soundV === null;
    this.soundV = state.v;
    const mine = canMove(state);
    const wasMine = this.wasMine;
    this.wasMine = mine;
    if (first) return;
    const ev = state.ev ?? [];
    if (ev.some((e) => e.type === "hand_end" || e.type === "game_end")) {
      playSound("hand");
      return;
    }
    if (ev.some((e) => e.type === "play")) playSound("play");
    if (mine && !wasMine) setTimeout(() => playSound("turn"), 180);
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
    const game_label = ui.gameLabel ?? "All Fives";
    const name = table?.name ? `${table.name} · ${game_label}` : game_label;
    document.title = canMove(state) ? `● Your turn · ${name}` : name;
    this.region("waiting", [table, game, ui.joinError], () => this.drawWaiting(table, game, state, ui));
    this.region("seats", [table, game, state.presence, state.seat, ui.viewFrom], () => this.drawSeats(state));
    // a hint's end, while no tile is picked (then the picked tile's ends are drawn instead)
    const suggested = ui.selected ? null : currentHint(state)?.on ?? null;
    this.region("board", [game?.layout, ui.selected, state.pending, suggested],
      () => this.drawBoard(game, ui, suggested));
    this.region("info", [game, state.ev], () => this.drawInfo(game, table));
    this.region("hand", [game?.hand, game?.legal, ui.selected, state.pending, state.seat, state.ev,
      state.hint, state.v, canMove(state)],
      () => this.drawHand(state, ui));
    this.region("buttons", [game?.legal, ui.selected, state.pending, state.seat, game?.turn,
      table?.hints, state.hint, state.v, ui.hintAsked, state.closed, table?.status],
      () => this.drawButtons(state, ui));
    this.region("notice", [state.rejected, state.error, state.conn, state.closed, state.pending, state.doc !== null],
      () => this.drawNotice(state));
    this.region("scores", [game?.scores, game?.sides, table?.seats, game?.rules, game?.round, state.seat,
      game?.game_over, table?.status],
      () => this.drawScores(game, table));
    this.region("history", [game?.history, table?.seats], () => this.drawHistory(game, table));
    this.region("chat", [state.chat], () => this.drawChat(state.chat));
    this.region("overlay", [game?.rounds, game?.game_over, ui.seenRounds, table?.seats, table?.status, ui.fair,
      table?.ratings, table?.next_hand, ui.closedDialog, ui.readySent, state.seat, state.presence, table?.rematch],
      () => this.drawOverlay(game, table, ui, state));
    this.tickClocks();
    this.sounds(state);
    this.feedback.update(state, ui);
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
      const turn = game && game.turn === i && !game.game_over && table.status !== "finished";
      const side = (game?.sides ?? []).findIndex((members) => members.includes(i));
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
        side >= 0 ? el("span", { class: "score", title: "score", "data-side": side },
          el("span", { class: "label" }, "pts "), `${game.scores?.[side] ?? 0}`) : null,
        // a bot never runs out of time: only seats played by people have a clock
        table.clock?.kind && !s?.bot ? el("span", { class: "clock", "data-clock-seat": i }) : null);
    };
    // around the table as seen from the bottom seat (a spectator looks from seat 0):
    // play passes to the left, so the next seat is on the left, then across, then right
    const bottom = mySeat ?? Math.min(this.last?.[1]?.viewFrom ?? 0, Math.max(0, n - 1));
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

  drawBoard(game, ui, suggested) {
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
    if ((game.layout?.length ?? 0) === 0) this.zoom.reset(); // a new hand
    b.innerHTML = boardSvg(game.layout, { box, candidates, last, fresh: grown, suggested });
    this.zoom.apply();
    b.classList.toggle("choosing", candidates.length > 0);
  }

  drawInfo(game, table) {
    if (!game) {
      this.dom.info.replaceChildren();
      return;
    }
    const last = game.history?.at(-1);
    // the score pop (anchored at the scoring end, with its sum) is feedback.js's
    const shown = countersShown(game.rules ?? {});
    fill(this.dom.info,
      shown.ends ? el("span", { class: "ends" }, "Ends ", el("strong", { class: "end-total" }, game.end_total ?? 0)) : null,
      shown.boneyard ? el("span", { class: "boneyard" }, "Boneyard ", el("strong", {}, game.boneyard ?? 0)) : null,
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
    const hinted = mine ? currentHint(state)?.play ?? null : null;
    fill(h, ...hand.map((tile, i) => {
      const playable = mine && tile in plays;
      const cls = `hand-tile${playable ? " playable" : ""}${ui.selected === tile ? " selected" : ""}${
        drawn.has(tile) ? " drawn" : ""}${hinted === tile ? " hinted" : ""}`;
      return el("button", {
        type: "button", class: cls, "data-tile": tile, tabindex: i === 0 ? 0 : -1,
        "aria-pressed": ui.selected === tile ? "true" : "false",
        "aria-disabled": playable ? "false" : "true",
        "aria-label": `${tile}${playable ? ", playable" : ""}${hinted === tile ? ", suggested" : ""}`,
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
      const text = game.game_over || state.doc.table?.status === "finished" ? "Game over"
        : state.closed ? "Not connected"
          : state.pending ? "Sending…"
            : mine ? "Your turn: choose a tile"
              : turn === null || turn === undefined ? "" : `${this.seatName(state.doc.table, turn)} to play`;
      out.push(el("span", { class: `hint${mine ? " your-turn" : ""}` }, text));
    }
    if (mine && state.doc.table?.hints && !ui.selected) out.push(this.hintPart(state, ui));
    fill(box, ...out);
  }

  /** A practice table's hint: the button that asks for it, or the hint itself. */
  hintPart(state, ui) {
    const hint = currentHint(state);
    if (hint) return el("span", { class: "hint hint-move", role: "status" }, `Hint: ${hintWords(hint)}`);
    const asked = ui.hintAsked === state.v;
    return el("button", { type: "button", class: "ghost", "data-action": "hint", disabled: asked,
      title: "What would the strong bot play?", onclick: () => this.actions.hint() },
    asked ? "Thinking…" : "Hint");
  }

  drawNotice(state) {
    const n = state.rejected ?? state.error;
    const box = this.dom.notice;
    if (n) {
      const words = n.offline ? notPlayedWords(n) : MOVE_WORDS[n.code] ?? n.message;
      fill(box, el("span", {}, words),
        el("button", { type: "button", class: "ghost", "aria-label": "dismiss",
          onclick: () => this.actions.dismiss() }, "×"));
    } else if (state.closed) {
      // closed for good: nothing reaches this page any more until it connects again
      const elsewhere = state.closed.code === 4000;
      fill(box, el("span", {}, elsewhere
        ? "This table is open in another tab or window: play goes on there."
        : `Disconnected: ${state.closed.reason}.`),
      el("button", { type: "button", class: "primary", "data-action": "reconnect",
        onclick: () => this.actions.reconnect() }, elsewhere ? "Play here" : "Reconnect"));
    } else if (state.doc && (state.conn === "reconnecting" || state.conn === "offline")) {
      const words = state.conn === "offline" ? "You are offline: the table reconnects by itself."
        : "Connection lost: reconnecting…";
      fill(box, el("span", { class: "conn-lost" }, words,
        state.pending ? " Your move goes out once the connection is back." : ""));
    } else {
      box.replaceChildren();
    }
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
      this.last?.[0]?.seat !== null && !game.game_over && table?.status !== "finished"
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
    // lines arriving while the chat is out of sight (a phone's closed sheet) are unread
    const mySeat = this.last?.[0]?.seat ?? null;
    if (this.chatSeen === null || chat.length < this.chatSeen || this.chatInSight()) {
      this.chatSeen = chat.length;
      this.unread = 0;
    } else {
      this.unread += chat.slice(this.chatSeen).filter((c) => mySeat === null || c.seat !== mySeat).length;
      this.chatSeen = chat.length;
    }
    this.drawBadge();
  }

  /**
   * Draws the dialog over the felt. The game-over dialog takes the focus when it opens (its
   * first action: Rematch, else the replay); closed to look at the board, its reopen button
   * does; a redrawn dialog gives the focus back to the control that had it.
   */
  drawOverlay(game, table, ui, state) {
    const o = this.dom.overlay;
    const had = o.contains(document.activeElement) ? focusKey(document.activeElement) : null;
    drawDialog(o, { game, table, ui, state, name: (s) => this.seatName(table, s) });
    const key = o.hidden ? null : `${dialogKey(game, table, ui)}${o.classList.contains("collapsed") ? ":closed" : ""}`;
    const opened = key !== this.dialogShown;
    this.dialogShown = key;
    if (!key || o.contains(document.activeElement)) return;
    const again = had ? o.querySelector(had) : null;
    let first = null;
    if (opened && key === "over") {
      first = o.querySelector("[data-rematch]") ?? o.querySelector(".dialog-actions .primary");
    } else if (opened && had && key.endsWith(":closed")) {
      first = o.querySelector("[data-reopen]");
    }
    (again ?? first)?.focus();
  }

  /** Updates the countdown of the seat to move from the document's clock deadline. */
  tickClocks() {
    const state = this.last?.[0];
    const doc = state?.doc;
    const clock = doc?.table?.clock;
    const seats = doc?.table?.seats ?? [];
    const turn = doc?.game?.turn ?? null;
    const over = Boolean(doc?.game?.game_over);
    const now = Date.now();
    for (const span of this.page.querySelectorAll("[data-clock-seat]")) {
      const seat = Number(span.dataset.clockSeat);
      // realtime: the move time left, then the reserve ("0:05 + 1:55"); low (red) near the end
      const c = seatClock(clock, seat, { turn, bot: Boolean(seats[seat]?.bot), over, now });
      const text = clockText(c);
      if (span.textContent !== text) span.textContent = text;
      span.title = clockTitle(c);
      span.classList.toggle("low", Boolean(c?.low));
      span.classList.toggle("running", Boolean(c?.running));
      if (c?.low && seat === state.seat && this.lowWarned !== clock.deadline) {
        this.lowWarned = clock.deadline;
        playSound("low");
      }
    }
  }
}

/** A selector finding a dialog's control again once the dialog is drawn anew (or null). */
function focusKey(node) {
  for (const name of ["data-rematch", "data-close", "data-reopen", "data-ready", "data-dismiss"]) {
    if (node.hasAttribute?.(name)) return `[${name}]`;
  }
  const href = node.getAttribute?.("href");
  return href ? `a[href="${CSS.escape(href)}"]` : null;
}

/** Index of the layout tile played last (the layout is in play order). */
/** A hint's move in words ("play 6-4 on 4-4"). */
export function hintWords(move) {
  if (move.draw) return "draw";
  if (move.pass) return "pass";
  return move.on ? `play ${move.play} on ${move.on}` : `play ${move.play}`;
}

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
