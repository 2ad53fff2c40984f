/**
 * The table page (#/t/<id>): wires the socket, the store and the table view. Holds the
 * little UI state that is not the server's (the tile being placed, the hand summaries
 * already seen), turns clicks into move frames, resends a move left unanswered by a
 * dropped connection (same id, applied once; played at the new version when the table moved
 * on and it still may be, else the player is told it was not played), and asks for a sync
 * when the store sees a gap. It notes the table's deal commitment while the game is on
 * and, once the game is over, checks the seed its transcript reveals against it (fair.js).
 * All game decisions come from the server's `legal` list.
 */
import { api, forgetSeat, playerName, savedSeat, saveSeat, setPlayerName } from "./api.js";
import { checkDeal, rememberCommitment, seenCommitment } from "./fair.js";
import { TableSocket } from "./socket.js";
import { canMove, initialState, mayPlay, playsByTile, positionOf, reduce, sinceVersion } from "./store.js";
import { loadMeta } from "./lobby.js";
import { gameInfo } from "./rules_panel.js";
import { TableView } from "./view/table.js";

const AUTO_DRAW_KEY = "dominoes.autoDraw";
function savedAutoDraw() {
  try {
    return localStorage.getItem(AUTO_DRAW_KEY) === "1";
  } catch {
    return false;
  }
}

let moveCounter = 0;
const newMoveId = () =>
  `m${Date.now().toString(36)}${(moveCounter++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

function wsUrl() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws`;
}

/** Shows table `id` in `root`; returns a function that tears it down. */
export function showTable(root, id, { invite = null, onConnection = () => {}, onRematch = () => {} } = {}) {
  let state = initialState(id);
  const ui = {
    selected: null, seenRounds: null, invite, name: playerName(), joinError: null,
    fair: null, // the fair-deal check of the finished game (fair.js checkDeal), once started
    meta: null, // GET /api/meta: the presets' labels and key rules
    gameLabel: null, // the preset's label ("Bergen")
    autoDraw: savedAutoDraw(), // keep drawing while drawing is all `legal` offers
    viewFrom: null, // the seat a spectator watches from (at the bottom)
    closedDialog: null, // the dialog closed to look at the board (view/dialogs.js dialogKey)
    readySent: null, // the hand after which this seat said it is ready
    hintAsked: null, // the version a hint was asked for (practice tables), until it comes
  };
  let pausedAfter = null; // the hand the table is paused after (table.next_hand), or null
  let autoDrawTimer = null;
  let noted = seenCommitment(id); // the commitment seen while the game was on
  let resumeTo = null;
  let socket = null;
  let view = null;

  const render = () => {
    const rules = state.doc?.game?.rules;
    ui.gameLabel = rules ? gameInfo(ui.meta, rules, state.doc.game.players).label : null;
    view.update(state, { ...ui });
  };

  function dispatch(msg) {
    const p = state.pending;
    if (msg.t === "rejected" && msg.code === "stale_version" && p?.resent && p.id === msg.id) {
      // the move that waited for the connection came too late for its version: judged below
      state = reduce(state, { t: "local/stale", id: msg.id, v: msg.v ?? state.v });
    } else {
      state = reduce(state, msg);
    }
    if (msg.t === "hint" || (msg.t === "error" && ui.hintAsked !== null)) ui.hintAsked = null;
    if (msg.t === "welcome") resumeTo = msg.v;
    if (state.broken && socket) {
      // our document no longer matches the server's: start again from a snapshot
      state = reduce(state, { t: "local/reset" });
      socket.reopen();
    } else if (state.gap !== null && socket) {
      socket.askSync(state.gap);
    }
    if (msg.t === "error" && msg.code === "bad_token") {
      forgetSeat(id);
    }
    afterChange();
    render();
  }

  function watchDeal() {
    const table = state.doc?.table;
    if (!table?.commitment) return;
    if (table.status !== "finished") {
      if (!noted) {
        noted = table.commitment;
        rememberCommitment(id, noted);
      }
      return;
    }
    if (ui.fair) return;
    ui.fair = { status: "checking" };
    const shown = table.commitment;
    api.transcript(id, ui.invite)
      .then((transcript) => checkDeal({ transcript, seen: noted, shown }))
      .catch((e) => ({ status: "error", reason: `the transcript could not be read: ${e.message}` }))
      .then((result) => {
        ui.fair = result;
        render();
      });
  }

  function afterChange() {
    watchDeal();
    // the rematch table is made: a seated player claims the new seat and moves there
    if (state.doc?.table?.rematch?.table && state.seat !== null && state.seat !== undefined) onRematch(id);
    const game = state.doc?.game;
    // The first document seen: earlier hand summaries are history, not news.
    if (ui.seenRounds === null && game) ui.seenRounds = game.rounds?.length ?? 0;
    if (ui.selected && !(canMove(state) && ui.selected in playsByTile(game))) ui.selected = null;
    const paused = state.doc?.table?.next_hand && game && (game.turn === null || game.turn === undefined)
      ? (game.rounds?.length ?? 0) : null;
    if (pausedAfter !== null && paused === null && !game?.game_over) {
      // the next hand was dealt: the pause's summary has been seen
      ui.seenRounds = game?.rounds?.length ?? ui.seenRounds;
      ui.readySent = null;
      if (ui.closedDialog?.startsWith("between:")) ui.closedDialog = null;
    }
    pausedAfter = paused;
    keepDrawing();
    resendPending();
  }

  /**
   * A move nobody answered (made while the connection was down, or sent just before it
   * dropped) goes out again, with its id, once the page has caught up after a reconnect: the
   * server applies it at most once and answers `accepted` or `rejected`. Refused because the
   * table moved on meanwhile, it is sent again at the version now held when nothing was
   * played since it was made (only seats or clocks changed) and it still may be played (the
   * seat to move, the move legal); else it is dropped and the notice says so.
   */
  function resendPending() {
    const caughtUp = resumeTo !== null && state.v !== null && state.v >= resumeTo;
    if (caughtUp) resumeTo = null;
    const p = state.pending;
    if (!p) return;
    if (p.staleAt !== null) {
      if (state.v === null || state.v < p.staleAt) return; // the versions it missed are coming
      if (p.at === positionOf(state) && mayPlay(state, p.move)) { // nothing played since
        state = reduce(state, { t: "local/resend", v: state.v });
        socket.send({ t: "move", id: p.id, v: state.v, move: p.move });
        return;
      }
      const game = state.doc?.game;
      const code = game?.game_over || state.doc?.table?.status === "finished" ? "game_over"
        : state.doc?.table?.next_hand ? "between_hands" : "stale_version";
      state = reduce(state, { t: "local/refuse", code });
    } else if (caughtUp) {
      state = reduce(state, { t: "local/resend" });
      socket.send({ t: "move", id: p.id, v: p.v, move: p.move });
    }
  }

  /** "Draw until playable": while drawing is all the legal list offers, draw again. */
  function keepDrawing() {
    const legal = state.doc?.game?.legal ?? [];
    if (!ui.autoDraw || autoDrawTimer !== null || !canMove(state)) return;
    if (!(legal.length > 0 && legal.every((m) => m.draw))) return;
    autoDrawTimer = setTimeout(() => {
      autoDrawTimer = null;
      const now = state.doc?.game?.legal ?? [];
      if (ui.autoDraw && canMove(state) && now.length > 0 && now.every((m) => m.draw)) {
        sendMove({ draw: true });
      }
    }, 350);
  }

  function connect() {
    socket?.close();
    resumeTo = null;
    state = { ...initialState(id), chat: state.chat };
    socket = new TableSocket({
      url: wsUrl(),
      table: id,
      token: () => savedSeat(id)?.token ?? null,
      invite: () => ui.invite,
      version: () => sinceVersion(state),
      onMessage: dispatch,
      onStatus: (status, detail, code) => {
        // a close after which the socket gives up names its code and why
        dispatch({ t: "local/conn", status, closed: code && detail ? { code, reason: detail } : null });
        onConnection(status, detail);
        if (code === 4005) forgetSeat(id); // the seat was left (here or on another device)
        if ((code === 4002 || code === 4005) && savedSeat(id) === null) {
          // the seat token was refused (the seat was left): watch instead
          setTimeout(connect, 0);
        }
      },
    });
  }

  function sendMove(move) {
    if (!canMove(state)) return;
    const frame = { t: "move", id: newMoveId(), v: state.v, move };
    ui.selected = null;
    state = reduce(state, { t: "local/move", id: frame.id, v: frame.v, move });
    render();
    socket.send(frame);
  }

  const actions = {
    pick(tile) {
      if (tile === null || ui.selected === tile) {
        ui.selected = null;
        render();
        return;
      }
      const ons = playsByTile(state.doc?.game)[tile];
      if (!canMove(state) || !ons) return;
      if (ons.length === 1) {
        sendMove(ons[0] === null ? { play: tile } : { play: tile, on: ons[0] });
        return;
      }
      ui.selected = tile;
      render();
    },
    playOn(on) {
      if (!ui.selected) return;
      const ons = playsByTile(state.doc?.game)[ui.selected] ?? [];
      if (ons.includes(on)) sendMove({ play: ui.selected, on });
    },
    move: sendMove,
    /** Sends a chat line; false when it could not go out (not connected). */
    chat(text) {
      return socket.send({ t: "chat", text: text.slice(0, 200) });
    },
    /** Connects again after the connection was closed for good (opened in another tab). */
    reconnect() {
      connect();
      render();
    },
    dismiss() {
      state = reduce(state, { t: "local/dismiss" });
      render();
    },
    dismissRound() {
      ui.seenRounds = state.doc?.game?.rounds?.length ?? ui.seenRounds;
      render();
    },
    autoDraw(on) {
      ui.autoDraw = Boolean(on);
      try {
        localStorage.setItem(AUTO_DRAW_KEY, on ? "1" : "0");
      } catch {
        // private mode: the toggle lasts for this page only
      }
      keepDrawing();
      render();
    },
    viewFrom(seat) {
      ui.viewFrom = Number.isInteger(seat) ? seat : null;
      render();
    },
    closeDialog(key) {
      ui.closedDialog = key ?? null;
      render();
    },
    hint() {
      if (!canMove(state) || !state.doc?.table?.hints || ui.hintAsked === state.v) return;
      if (socket.send({ t: "hint" })) ui.hintAsked = state.v;
      render();
    },
    ready() {
      const k = (state.doc?.game?.rounds?.length ?? 0) - 1;
      if (state.seat === null || !state.doc?.table?.next_hand) return;
      if (socket.send({ t: "ready" })) ui.readySent = k;
      render();
    },
    setName(name) {
      // kept so that a redrawn waiting room shows what was typed
      ui.name = name;
    },
    async leave() {
      const mine = savedSeat(id);
      if (!mine) return;
      try {
        await api.leave(id, mine.token);
      } catch (e) {
        if (e.code !== "bad_token") {
          ui.joinError = e.message;
          render();
          return;
        }
      }
      forgetSeat(id);
      connect();
    },
    async join(seat, name) {
      const who = (name ?? ui.name ?? "").trim() || "player";
      setPlayerName(who);
      ui.name = who;
      try {
        const joined = await api.join(id, seat, who, ui.invite);
        saveSeat(id, { seat: joined.seat, token: joined.token, name: who });
        ui.joinError = null;
        connect();
      } catch (e) {
        ui.joinError = e.message;
        render();
      }
    },
  };

  view = new TableView(root, actions);
  connect();
  render();
  let gone = false;
  loadMeta().then((meta) => {
    if (gone) return;
    ui.meta = meta;
    render();
  }, () => {});
  return () => {
    gone = true;
    clearTimeout(autoDrawTimer);
    socket?.close();
    view.destroy();
  };
}
