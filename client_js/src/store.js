/**
 * Table store: a pure reducer from server messages (and a few local actions) to the
 * state the views draw. It owns the versioned document (snapshot + diff ops), duplicate
 * and gap handling, pending moves and their outcome, chat and presence.
 *
 * Must not import the DOM, the socket, or anything with side effects; it never knows
 * the rules of the game (legal moves come from the server's `legal` list).
 */

/** Number of chat lines kept in memory. */
export const CHAT_LIMIT = 100;

/** The state before anything arrived from the server. */
export function initialState(tableId = null) {
  return {
    table: tableId,
    seat: null,
    conn: "connecting",
    closed: null, // the connection was closed for good ({code, reason}): nothing more comes
    welcomed: false,
    v: null,
    doc: null,
    gap: null,
    ev: [],
    pending: null,
    rejected: null,
    error: null,
    chat: [],
    presence: [],
    watching: null, // spectators watching, when the presence frame says (`spectators`)
    duplicates: 0,
    broken: false,
    hint: null, // the last hint ({v, move}): the strong bot's move at version v (practice tables)
  };
}

/**
 * Applies diff ops to a document without mutating it (copy-on-write along each path).
 * Ops: ["=", path, value] set; ["+", path, items] append; ["-", path] delete key;
 * ["~", path, n] truncate list. Throws on a path that does not exist.
 */
export function applyOps(doc, ops) {
  let out = doc;
  for (const op of ops) {
    const [kind, path] = op;
    if (!Array.isArray(path)) throw new Error(`bad op path: ${JSON.stringify(op)}`);
    switch (kind) {
      case "=":
        out = updateIn(out, path, () => op[2], true);
        break;
      case "+":
        out = updateIn(out, path, (list) => {
          if (!Array.isArray(list)) throw new Error(`"+" on a non-list at ${path}`);
          return list.concat(op[2]);
        });
        break;
      case "~":
        out = updateIn(out, path, (list) => {
          if (!Array.isArray(list)) throw new Error(`"~" on a non-list at ${path}`);
          return list.slice(0, op[2]);
        });
        break;
      case "-": {
        if (path.length === 0) throw new Error(`"-" needs a key`);
        const key = path[path.length - 1];
        out = updateIn(out, path.slice(0, -1), (map) => {
          if (map === null || typeof map !== "object" || Array.isArray(map)) {
            throw new Error(`"-" on a non-map at ${path}`);
          }
          const copy = { ...map };
          delete copy[key];
          return copy;
        });
        break;
      }
      default:
        throw new Error(`unknown op ${JSON.stringify(kind)}`);
    }
  }
  return out;
}

function updateIn(node, path, fn, creating = false, depth = 0) {
  if (depth === path.length) return fn(node);
  const key = path[depth];
  if (node === null || typeof node !== "object") {
    throw new Error(`path ${JSON.stringify(path)} goes through a non-container`);
  }
  const last = depth === path.length - 1;
  if (Array.isArray(node)) {
    if (!Number.isInteger(key) || key < 0 || key > node.length || (key === node.length && !last)) {
      throw new Error(`index ${key} out of range at ${JSON.stringify(path)}`);
    }
    const copy = node.slice();
    copy[key] = updateIn(node[key], path, fn, creating, depth + 1);
    return copy;
  }
  if (!(key in node) && !(creating && last)) {
    throw new Error(`missing key ${JSON.stringify(key)} at ${JSON.stringify(path)}`);
  }
  return { ...node, [key]: updateIn(node[key], path, fn, creating, depth + 1) };
}

/** The hint for the position shown ({play, on} / {draw} / {pass}), or null when there is none
 * or it is for an earlier version. */
export function currentHint(state) {
  return state.hint && state.hint.v === state.v ? state.hint.move : null;
}

/** Reduces one message (server message or local action) into a new state. */
export function reduce(state, msg) {
  switch (msg.t) {
    case "welcome":
      return { ...state, table: msg.table, seat: msg.seat ?? null, welcomed: true, error: null };
    case "snapshot":
      return { ...state, v: msg.v, doc: msg.doc, gap: null, ev: [], broken: false };
    case "diff":
      return reduceDiff(state, msg);
    case "accepted":
      if (state.pending && state.pending.id === msg.id) {
        return { ...state, pending: null, rejected: null };
      }
      return state;
    case "rejected":
      if (state.pending && state.pending.id !== msg.id) return state;
      return {
        ...state,
        pending: null,
        rejected: { id: msg.id, code: msg.code, message: msg.message ?? msg.code, ...offlineMove(state) },
      };
    case "error":
      return { ...state, error: { code: msg.code, message: msg.message ?? msg.code } };
    case "chat": {
      const line = { seat: msg.seat ?? null, name: msg.name ?? "", text: msg.text ?? "", ts: msg.ts };
      return { ...state, chat: state.chat.concat([line]).slice(-CHAT_LIMIT) };
    }
    case "presence":
      return {
        ...state, presence: Array.isArray(msg.online) ? msg.online : [],
        watching: presenceCount(msg),
      };
    case "hint":
      return { ...state, hint: { v: msg.v, move: msg.move ?? null } };
    case "pong":
      return state;
    // local actions
    case "local/conn":
      return {
        ...state, conn: msg.status, welcomed: msg.status === "online" && state.welcomed,
        closed: msg.closed ?? null,
      };
    case "local/move":
      return {
        ...state,
        pending: { id: msg.id, v: msg.v, move: msg.move, at: positionOf(state), resent: false, staleAt: null },
        rejected: null,
      };
    case "local/resend":
      // the pending move goes out again after a reconnect (same id), at version `v`
      if (!state.pending) return state;
      return { ...state, pending: { ...state.pending, v: msg.v ?? state.pending.v, resent: true, staleAt: null } };
    case "local/stale":
      // the server refused the resent move as stale: the table is at `v`, to be judged once held
      if (!state.pending || state.pending.id !== msg.id) return state;
      return { ...state, pending: { ...state.pending, staleAt: msg.v } };
    case "local/refuse":
      // the pending move may not be played any more (`code`: why): it is dropped, and said so
      if (!state.pending) return state;
      return {
        ...state, pending: null,
        rejected: { id: state.pending.id, code: msg.code, message: msg.code, ...offlineMove(state) },
      };
    case "local/reset":
      return { ...state, v: null, doc: null, gap: null, ev: [], broken: false };
    case "local/dismiss":
      return { ...state, rejected: null, error: null };
    default:
      return state;
  }
}

function reduceDiff(state, msg) {
  if (state.v === null || state.doc === null) {
    // Nothing to apply a diff to yet: the snapshot answering our hello is on its way.
    return state;
  }
  if (msg.v <= state.v) return { ...state, duplicates: state.duplicates + 1 };
  if (msg.v > state.v + 1) {
    return state.gap === state.v ? state : { ...state, gap: state.v };
  }
  let doc;
  try {
    doc = applyOps(state.doc, msg.ops ?? []);
  } catch {
    // A diff that does not fit our document: it cannot be trusted any more; the
    // socket layer fetches a fresh snapshot.
    return { ...state, gap: state.v, broken: true };
  }
  return { ...state, v: msg.v, doc, gap: null, ev: msg.ev ?? [] };
}

/** What a refusal of the pending move notes when that move waited for the connection: the
 * move, so that the player is told which one was not played. */
function offlineMove(state) {
  return state.pending?.resent ? { move: state.pending.move, offline: true } : {};
}

/** The spectators a presence frame counts (`spectators`, a number or a list), else null. */
function presenceCount(msg) {
  const n = msg.spectators ?? msg.watching;
  if (Array.isArray(n)) return n.length;
  return Number.isInteger(n) && n >= 0 ? n : null;
}

/** The version a `hello`/`sync` should send: the one held, or null for a snapshot. */
export function sinceVersion(state) {
  return state.doc === null ? null : state.v;
}

/** The game view in the document (or null before the first snapshot). */
export function gameOf(state) {
  return state.doc?.game ?? null;
}

/** True when this audience may move now (its own turn, no move pending, the game on and the
 * connection not closed for good). */
export function canMove(state) {
  const game = gameOf(state);
  return Boolean(
    game && state.seat !== null && game.turn === state.seat && !state.pending &&
      Array.isArray(game.legal) && game.legal.length > 0 && !game.game_over &&
      state.doc?.table?.status !== "finished" && !state.closed,
  );
}

/** True when `move` may be played now by this audience, whatever is pending: its seat is to
 * move, the game is on and `move` is one of the `legal` moves. */
export function mayPlay(state, move) {
  const game = gameOf(state);
  if (!game || state.seat === null || game.turn !== state.seat || game.game_over ||
    state.doc?.table?.status === "finished" || state.closed) return false;
  return (game.legal ?? []).some((m) => sameMove(m, move));
}

/** Where the game stands, as a move made there sees it: the hand and how many moves it has
 * had (a tile played or drawn since changes it; a seat taken over by a bot does not). */
export function positionOf(state) {
  const game = gameOf(state);
  return game ? `${game.round}:${(game.history ?? []).length}` : null;
}

/** Two moves are the same: a play's `on` left out is the `null` of a lead. */
function sameMove(a, b) {
  return Boolean(a.draw) === Boolean(b.draw) && Boolean(a.pass) === Boolean(b.pass) &&
    (a.play ?? null) === (b.play ?? null) && (a.on ?? null) === (b.on ?? null);
}

/** Legal plays grouped by tile: {"5-3": [on, ...]} (on is null for a lead). */
export function playsByTile(game) {
  const out = {};
  for (const m of game?.legal ?? []) {
    if (typeof m.play === "string") (out[m.play] ??= []).push(m.on ?? null);
  }
  return out;
}
