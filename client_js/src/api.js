/**
 * HTTP calls (JSON under /api/: the lobby, docs/protocol.md §9; accounts and players,
 * docs/players.md) and the seat tokens kept in localStorage per table, so a reload resumes
 * the seat. No DOM beyond localStorage.
 */

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, body, { json = false } = {}) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  // A cookie-authenticated change must say application/json even without a body (players.md).
  if (json) init.headers["Content-Type"] = "application/json";
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, "network", "The server cannot be reached.");
  }
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const err = data?.error ?? {};
    throw new ApiError(res.status, err.code ?? `http_${res.status}`, err.message ?? res.statusText);
  }
  return data;
}

const q = (invite) => (invite ? `?invite=${encodeURIComponent(invite)}` : "");
const enc = encodeURIComponent;

export const api = {
  meta: () => call("GET", "/api/meta"),
  createTable: (spec) => call("POST", "/api/tables", spec),
  listTables: () => call("GET", "/api/tables"),
  getTable: (id, invite) => call("GET", `/api/tables/${enc(id)}${q(invite)}`),
  join: (id, seat, name, invite) =>
    call("POST", `/api/tables/${enc(id)}/join`, { seat, name, invite: invite ?? null }),
  leave: (id, token) => call("POST", `/api/tables/${enc(id)}/leave`, { token }),
  replay: (id, invite) => call("GET", `/api/tables/${enc(id)}/replay${q(invite)}`),
  analysis: (id, invite) => call("GET", `/api/games/${enc(id)}/analysis${q(invite)}`),
  transcript: (id, invite) => call("GET", `/api/tables/${enc(id)}/transcript${q(invite)}`),
  // accounts and players (docs/players.md)
  me: () => call("GET", "/api/me"),
  register: (username, password) => call("POST", "/api/accounts", { username, password }),
  login: (username, password) => call("POST", "/api/session", { username, password }),
  logout: () => call("DELETE", "/api/session", undefined, { json: true }),
  myTables: () => call("GET", "/api/me/tables"),
  resume: (id) => call("POST", `/api/tables/${enc(id)}/resume`, {}),
  player: (name) => call("GET", `/api/players/${enc(name)}`),
  playerGames: (name, { limit = 20, cursor = null } = {}) =>
    call("GET", `/api/players/${enc(name)}/games?limit=${limit}${
      cursor ? `&cursor=${enc(cursor)}` : ""}`),
  leaderboard: (family) => call("GET", `/api/leaderboards/${enc(family)}`),
};

const SEAT_KEY = (id) => `allfives.seat.${id}`;

/** The seat held at table `id` by this browser: {seat, token, name} or null. */
export function savedSeat(id) {
  try {
    const raw = localStorage.getItem(SEAT_KEY(id));
    const seat = raw ? JSON.parse(raw) : null;
    return seat && typeof seat.token === "string" ? seat : null;
  } catch {
    return null;
  }
}

export function saveSeat(id, seat) {
  localStorage.setItem(SEAT_KEY(id), JSON.stringify(seat));
}

export function forgetSeat(id) {
  localStorage.removeItem(SEAT_KEY(id));
}

export function playerName() {
  return localStorage.getItem("allfives.name") || "";
}

export function setPlayerName(name) {
  localStorage.setItem("allfives.name", name);
}
