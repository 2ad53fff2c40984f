/**
 * HTTP calls of the community features (docs/players.md "Friends, messages and invitations",
 * "Quick play", "Rematch", "Seasons"). Every change is a cookie-authenticated JSON request
 * (Content-Type: application/json even without a body); the browser sends the Origin.
 */
import { ApiError } from "./api.js";

async function call(method, path, body) {
  const init = { method, credentials: "same-origin",
    headers: { Accept: "application/json" } };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, "network", "The server cannot be reached.");
  }
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const err = data?.error ?? {};
    const e = new ApiError(res.status, err.code ?? `http_${res.status}`, err.message ?? res.statusText);
    e.retryAfter = Number(res.headers.get("Retry-After")) || null;
    throw e;
  }
  return data;
}

const enc = encodeURIComponent;

export const social = {
  follows: () => call("GET", "/api/me/follows"),
  follow: (name) => call("PUT", `/api/me/follows/${enc(name)}`),
  unfollow: (name) => call("DELETE", `/api/me/follows/${enc(name)}`),
  blocks: () => call("GET", "/api/me/blocks"),
  block: (name) => call("PUT", `/api/me/blocks/${enc(name)}`),
  unblock: (name) => call("DELETE", `/api/me/blocks/${enc(name)}`),
  conversations: () => call("GET", "/api/messages"),
  conversation: (name, { before = null, limit = 20 } = {}) =>
    call("GET", `/api/messages/${enc(name)}?limit=${limit}${before !== null ? `&before=${enc(before)}` : ""}`),
  send: (name, text) => call("POST", `/api/messages/${enc(name)}`, { text }),
  markRead: (name) => call("POST", `/api/messages/${enc(name)}/read`),
  invite: (table, name, invite) => call("POST", `/api/tables/${enc(table)}/invite`,
    { name, invite: invite ?? null }),
  quickplayJoin: (body) => call("POST", "/api/quickplay", body),
  quickplayPoll: () => call("GET", "/api/quickplay"),
  quickplayLeave: () => call("DELETE", "/api/quickplay"),
  rematch: (table, token) => call("POST", `/api/tables/${enc(table)}/rematch`, { token }),
  rematchSeat: (table, token) => call("POST", `/api/tables/${enc(table)}/rematch/seat`, { token }),
  season: (family, season = null) =>
    call("GET", `/api/seasons/${enc(family)}${season ? `?season=${enc(season)}` : ""}`),
};

/** Words for an error of these calls, for the page. */
export function errorText(e) {
  switch (e?.code) {
    case "bad_text": return "That message cannot be sent: 1 to 200 characters, no control or invisible-only text.";
    case "rate_limited": return `Too many at once: wait ${e.retryAfter ? `${e.retryAfter} s` : "a moment"} and try again.`;
    case "not_allowed": return "Not allowed (you blocked this player, or you are not friends).";
    case "unknown_player": return "There is no player of that name.";
    case "too_many_follows": return "You follow too many players already.";
    case "not_logged_in": case "session_expired": return "Log in first.";
    case "busy_elsewhere": return "You are playing a real-time game already.";
    case "account_required": return "Rated play needs an account: log in.";
    case "too_many_tables": return "You sit at too many tables already.";
    default: return e?.message || "That did not work.";
  }
}
