/**
 * My tables (#/me/tables): the tables the visitor sits at (GET /api/me/tables: an account's
 * seats, or a guest's by its `guest` cookie), whose turn it is, and Open. Open uses the seat
 * token this browser keeps for the table; without one (the seat was taken on another device)
 * it asks for a new token first (POST /api/tables/{id}/resume) and keeps it like a join's.
 */
import { currentUser, loadUser } from "./account.js";
import { loadMeta } from "./lobby.js";
import { api, playerName, saveSeat, savedSeat } from "./api.js";
import { presetLabel } from "./meta.js";
import { ratingText } from "./ratings.js";
import { el, fill } from "./view/dom.js";

const REFRESH_MS = 5000;

export function showMyTables(root) {
  const list = el("div", { class: "my-tables", "aria-live": "polite" }, "Loading your tables…");
  const note = el("p", { class: "muted" });
  fill(root, el("section", { class: "panel page-panel my-tables-page" },
    el("h1", {}, "My tables"), note, list,
    el("p", {}, el("button", { type: "button", class: "ghost", onclick: () => refresh() }, "Refresh"),
      " ", el("a", { class: "button ghost", href: "#/" }, "Lobby"))));
  let stopped = false;
  let meta = null;
  let opening = false;
  loadMeta().then((m) => {
    meta = m;
  }, () => {});
  loadUser().then((user) => {
    if (stopped) return;
    note.textContent = user ? `The tables where ${user.username} sits.`
      : "The tables this browser sits at as a guest. Log in to see your account's tables on any device.";
  });

  async function refresh() {
    if (opening) return;
    try {
      const { tables } = await api.myTables();
      if (!stopped && !opening) draw(tables ?? []);
    } catch (e) {
      if (!stopped) fill(list, el("p", { class: "form-error" }, `Could not load your tables: ${e.message}`));
    }
  }

  function draw(tables) {
    if (tables.length === 0) {
      fill(list, el("p", { class: "muted empty" }, "You are not sitting at any table. ",
        el("a", { href: "#/" }, "Find one in the lobby"), "."));
      return;
    }
    // whose turn first, then waiting tables, then the rest
    const rank = (t) => (t.turn ? 0 : t.status === "playing" ? 1 : t.status === "waiting" ? 2 : 3);
    const sorted = tables.slice().sort((a, b) => rank(a) - rank(b));
    fill(list, el("ul", { class: "table-list-rows" }, sorted.map(row)));
  }

  function row(t) {
    const error = el("span", { class: "form-error row-error", role: "alert" });
    const seats = (t.seats ?? []).map((s, i) => {
      const who = s.taken ? (s.bot ? `Bot (${s.bot})` : s.name || `Seat ${i + 1}`) : "free";
      const r = s.player ? ` ${ratingText(s.player)}` : "";
      return i === t.seat ? `${who}${r} (you)` : `${who}${r}`;
    }).join(" · ");
    const status = t.status === "waiting" ? "Waiting for players"
      : t.status === "finished" ? "Finished" : t.turn ? "Your turn" : "Their turn";
    const open = el("button", { type: "button", class: t.turn ? "primary" : "", "data-open": t.id,
      onclick: () => openTable(t, open, error) }, "Open");
    return el("li", { class: `table-row my-table ${t.status}${t.turn ? " my-turn" : ""}`,
      "data-table": t.id },
    el("div", { class: "table-info" },
      el("strong", {}, t.name || t.id), " ",
      el("span", { class: "tag" }, presetLabel(meta, t.rules)), " ",
      t.rated ? el("span", { class: "tag rated" }, "rated") : null, " ",
      el("span", { class: `tag turn-tag${t.turn ? " your-turn" : ""}` }, status),
      el("div", { class: "muted seats-line" }, seats)),
    el("div", { class: "table-actions" }, open, error));
  }

  async function openTable(t, button, error) {
    const mine = savedSeat(t.id);
    if (mine && (t.seat === undefined || mine.seat === t.seat)) {
      location.hash = `#/t/${encodeURIComponent(t.id)}`;
      return;
    }
    opening = true;
    button.disabled = true;
    error.textContent = "";
    try {
      const { seat, token } = await api.resume(t.id);
      const name = currentUser()?.username ?? t.seats?.[seat]?.name ?? playerName();
      saveSeat(t.id, { seat, token, name });
      if (!stopped) location.hash = `#/t/${encodeURIComponent(t.id)}`;
    } catch (e) {
      error.textContent = e.message || "Could not open the table.";
      button.disabled = false;
    } finally {
      opening = false;
    }
  }

  refresh();
  const timer = setInterval(refresh, REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
