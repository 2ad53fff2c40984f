/**
 * Community glue on every page: opens the player socket while logged in (inbox.js), draws the
 * header's Friends and Messages links with the unread badge, and turns notices into toasts: a
 * friend's invitation (one-click Accept: join the table and open it), "your turn" at a table
 * not on screen (and a system notification when allowed), a rematch made elsewhere.
 */
import { currentUser, onUserChange } from "./account.js";
import { api, saveSeat } from "./api.js";
import { errorText } from "./community_api.js";
import { onNotice, setInboxUser, unreadCount } from "./inbox.js";
import { systemNotify } from "./notify.js";
import { toast } from "./toasts.js";
import { el, fill } from "./view/dom.js";

/** The table id on screen (#/t/<id>), or null. */
export function tableOnScreen() {
  const m = /^#\/t\/([^/?]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

export const tableHref = (id, invite = null) =>
  `#/t/${encodeURIComponent(id)}${invite ? `?invite=${encodeURIComponent(invite)}` : ""}`;

let social = null;

function drawSocial() {
  if (!social) return;
  const user = currentUser();
  social.hidden = !user;
  if (!user) {
    social.replaceChildren();
    return;
  }
  const page = document.body.dataset.page ?? "";
  const n = unreadCount();
  const link = (href, text, key, extra = null) => el("a", { href, class: "nav-link", "data-nav": key,
    "aria-current": page === key ? "page" : null }, text, extra);
  fill(social,
    link("#/friends", "Friends", "friends"),
    el("span", { class: "nav-sep", "aria-hidden": "true" }, "·"),
    link("#/messages", "Messages", "messages", n > 0
      ? el("span", { class: "badge unread-badge", "aria-label": `${n} unread` }, String(n))
      : null));
}

/** Accepts an invitation: takes the first free seat (with the invite code) and opens the table. */
export async function acceptInvite(notice) {
  const user = currentUser();
  const joined = await api.join(notice.table, null, user?.username ?? "player", notice.invite ?? null);
  saveSeat(notice.table, { seat: joined.seat, token: joined.token, name: user?.username ?? "player" });
  location.hash = tableHref(notice.table, notice.invite);
}

function inviteToast(n) {
  const error = el("span", { class: "form-error toast-error" });
  let handle = null;
  const accept = el("button", { type: "button", class: "primary", "data-action": "accept-invite",
    onclick: async () => {
      accept.disabled = true;
      error.textContent = "";
      try {
        await acceptInvite(n);
        handle.close();
      } catch (e) {
        accept.disabled = false;
        error.textContent = e.code === "seat_taken" || e.code === "table_full"
          ? "The table is full." : errorText(e);
      }
    } }, "Accept");
  handle = toast({
    kind: "invite-toast", key: `invite:${n.table}`, ms: 120000,
    body: [el("p", {}, el("strong", {}, n.from), " invites you to ",
      el("a", { href: tableHref(n.table, n.invite) }, n.name || "a table")),
    el("p", { class: "toast-actions" }, accept, error)],
  });
  systemNotify(`${n.from} invites you`, n.name || "a table", tableHref(n.table, n.invite), `invite:${n.table}`);
}

function turnToast(n) {
  if (tableOnScreen() === n.table) return;
  const href = tableHref(n.table);
  toast({
    kind: "turn-toast", key: `turn:${n.table}`, ms: 30000,
    body: el("p", {}, "Your turn at ", el("a", { href, "data-table": n.table }, n.name || "a table")),
  });
  systemNotify("Your turn", n.name || "a table", href, `turn:${n.table}`);
}

function rematchToast(n) {
  if (tableOnScreen() === n.from || tableOnScreen() === n.table) return;
  toast({
    kind: "rematch-toast", key: `rematch:${n.table}`, ms: 60000,
    body: el("p", {}, "Your rematch has started: ", el("a", { href: tableHref(n.table) }, "open it")),
  });
}

function onMessageNotice(n) {
  if (location.hash.startsWith("#/messages")) return; // the messages page shows it
  toast({
    kind: "message-toast", key: `message:${n.from}`, ms: 15000,
    body: el("p", {}, el("strong", {}, n.from), ": ", n.text.length > 80 ? `${n.text.slice(0, 80)}…` : n.text,
      " ", el("a", { href: `#/messages/${encodeURIComponent(n.from)}` }, "Reply")),
  });
}

/** Starts the community features on this page (once). */
export function startCommunity() {
  const header = document.querySelector(".topbar");
  const nav = document.getElementById("nav");
  social = el("nav", { id: "social", class: "nav social-nav", "aria-label": "friends and messages", hidden: true });
  if (header && nav) header.insertBefore(social, nav);
  onUserChange((user) => {
    setInboxUser(user);
    drawSocial();
  });
  window.addEventListener("hashchange", () => {
    // the table now on screen needs no "your turn" toast any more
    const on = tableOnScreen();
    if (on) for (const t of document.querySelectorAll(".toast.turn-toast")) if (t.dataset.key === `turn:${on}`) t.remove();
    setTimeout(drawSocial, 0);
  });
  onNotice((n) => {
    if (n.t === "unread") drawSocial();
    else if (n.t === "invite") inviteToast(n);
    else if (n.t === "your_turn") turnToast(n);
    else if (n.t === "rematch") rematchToast(n);
    else if (n.t === "message") onMessageNotice(n);
  });
  if (currentUser()) setInboxUser(currentUser());
  drawSocial();
}
