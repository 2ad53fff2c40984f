/**
 * The friends page (#/friends): follow a player by name; whom you follow, who follows you and
 * your friends (mutual follows) with their presence (online, at which public table, with a
 * link to watch it); unfollow, block and unblock. Presence is read again every few seconds.
 */
import { currentUser, loadUser } from "./account.js";
import { api } from "./api.js";
import { errorText, social } from "./community_api.js";
import { notificationControl } from "./notify.js";
import { el, fill } from "./view/dom.js";

const REFRESH_MS = 5000;
const tableNames = new Map(); // table id -> its name (a promise while asked)

/** A link to watch a friend's table, named once GET /api/tables/{id} answers. */
function tableLink(id) {
  const link = el("a", { href: `#/t/${encodeURIComponent(id)}`, class: "watch-link", "data-table": id },
    typeof tableNames.get(id) === "string" ? tableNames.get(id) : "a table");
  if (!tableNames.has(id)) {
    tableNames.set(id, api.getTable(id).then((t) => {
      tableNames.set(id, t.name || id);
      return t.name || id;
    }, () => {
      tableNames.delete(id);
      return null;
    }));
  }
  const known = tableNames.get(id);
  if (known && typeof known.then === "function") known.then((n) => { if (n) link.textContent = n; });
  return link;
}

const profile = (name) => el("a", { href: `#/players/${encodeURIComponent(name)}`, class: "player-link" }, name);

export function showFriends(root) {
  const error = el("p", { class: "form-error", role: "alert" });
  const input = el("input", { name: "follow", maxlength: 20, placeholder: "username", autocomplete: "off",
    autocapitalize: "none", spellcheck: "false", "aria-label": "username to follow" });
  const form = el("form", { class: "follow-form", "aria-label": "follow a player" },
    input, el("button", { type: "submit", class: "primary" }, "Follow"));
  const lists = el("div", { class: "friend-lists", "aria-live": "polite" }, "Loading…");
  fill(root, el("section", { class: "panel page-panel friends-page" },
    el("h1", {}, "Friends"),
    el("p", { class: "muted" }, "Follow players by name; those who follow you back are your friends: you see when they are online, message them and invite them to your tables."),
    form, error, lists, notificationControl()));
  let stopped = false;
  let timer = null;

  const act = async (fn, ...args) => {
    error.textContent = "";
    try {
      await fn(...args);
    } catch (e) {
      error.textContent = errorText(e);
    }
    await load();
  };

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = input.value.trim();
    if (!name) return;
    error.textContent = "";
    try {
      await social.follow(name);
      input.value = "";
    } catch (err) {
      error.textContent = errorText(err);
    }
    load();
  });

  async function load() {
    clearTimeout(timer);
    if (stopped) return;
    try {
      const [f, b] = await Promise.all([social.follows(), social.blocks()]);
      if (stopped) return;
      draw(f, b.blocked ?? []);
    } catch (e) {
      if (!stopped) fill(lists, el("p", { class: "form-error" }, errorText(e)));
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  }

  function draw(f, blocked) {
    const friends = f.friends ?? [];
    const friendNames = new Set(friends.map((x) => x.name.toLowerCase()));
    const button = (text, action, fn, name, cls = "ghost") => el("button", { type: "button", class: cls,
      "data-action": action, "data-name": name, onclick: () => act(fn, name) }, text);
    const friendItem = (x) => el("li", { class: `friend ${x.online ? "online" : "offline"}`, "data-name": x.name },
      el("span", { class: "presence-dot", "aria-hidden": "true" }), profile(x.name), " ",
      el("span", { class: "presence" }, x.online ? "online" : "offline"),
      x.table ? el("span", { class: "at-table" }, " · at ", tableLink(x.table), " (watch)") : null,
      el("span", { class: "row-actions" },
        el("a", { class: "button ghost", href: `#/messages/${encodeURIComponent(x.name)}`, "data-action": "message" }, "Message"),
        button("Unfollow", "unfollow", social.unfollow, x.name),
        button("Block", "block", social.block, x.name)));
    const plainItem = (name, actions) => el("li", { "data-name": name }, profile(name),
      el("span", { class: "row-actions" }, actions));
    const section = (title, cls, items, empty) => el("section", { class: `friend-list ${cls}` },
      el("h2", {}, title, " ", el("span", { class: "count muted" }, `(${items.length})`)),
      items.length ? el("ul", {}, items) : el("p", { class: "muted" }, empty));
    const following = (f.following ?? []).filter((n) => !friendNames.has(n.toLowerCase()));
    const followers = (f.followers ?? []).filter((n) => !friendNames.has(n.toLowerCase()));
    fill(lists,
      section("Friends", "friends", friends.map(friendItem), "No friends yet: follow someone who follows you."),
      section("Following", "following", following.map((n) => plainItem(n, [
        button("Unfollow", "unfollow", social.unfollow, n), button("Block", "block", social.block, n)])),
      "Nobody else."),
      section("Followers", "followers", followers.map((n) => plainItem(n, [
        button("Follow back", "follow", social.follow, n, "primary"), button("Block", "block", social.block, n)])),
      "Nobody else."),
      section("Blocked", "blocked", blocked.map((n) => plainItem(n, [
        button("Unblock", "unblock", social.unblock, n)])), "Nobody."));
  }

  loadUser().then(() => {
    if (stopped) return;
    if (!currentUser()) {
      fill(lists, el("p", {}, el("a", { href: "#/login" }, "Log in"), " to follow players."));
      form.hidden = true;
      return;
    }
    load();
  });
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
