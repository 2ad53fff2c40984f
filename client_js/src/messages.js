/**
 * Private messages: #/messages lists the conversations (newest first, with unread counts);
 * #/messages/<name> shows one, oldest at the top, with "Older" paging back through the
 * history, a form to send (the server's refusals shown: bad text, rate limited, not allowed),
 * new messages arriving live through the player socket, and marking them read while open.
 */
import { currentUser, loadUser } from "./account.js";
import { errorText, social } from "./community_api.js";
import { onNotice, setUnread } from "./inbox.js";
import { dateText } from "./ratings.js";
import { el, fill } from "./view/dom.js";

const PAGE = 20;
const same = (a, b) => String(a ?? "").toLowerCase() === String(b ?? "").toLowerCase();
const timeText = (ms) => {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? "" : `${dateText(ms)} ${d.toTimeString().slice(0, 5)}`;
};

function needLogin(root, what) {
  fill(root, el("section", { class: "panel page-panel messages-page" }, el("h1", {}, "Messages"),
    el("p", {}, el("a", { href: "#/login" }, "Log in"), ` to ${what}.`)));
}

export function showMessages(root, name = null) {
  let stop = () => {};
  let stopped = false;
  fill(root, el("p", { class: "loading" }, "Loading…"));
  loadUser().then(() => {
    if (stopped) return;
    if (!currentUser()) needLogin(root, "read your messages");
    else stop = name ? conversation(root, name) : conversations(root);
  });
  return () => {
    stopped = true;
    stop();
  };
}

function conversations(root) {
  const list = el("div", { class: "conversations", "aria-live": "polite" }, "Loading…");
  const to = el("input", { name: "to", maxlength: 20, placeholder: "username", autocapitalize: "none",
    spellcheck: "false", "aria-label": "write to" });
  const form = el("form", { class: "new-conversation", "aria-label": "write to a player" },
    to, el("button", { type: "submit", class: "primary" }, "Write"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const n = to.value.trim();
    if (n) location.hash = `#/messages/${encodeURIComponent(n)}`;
  });
  fill(root, el("section", { class: "panel page-panel messages-page" },
    el("h1", {}, "Messages"), form, list));
  let stopped = false;
  const load = async () => {
    try {
      const { conversations: convs = [] } = await social.conversations();
      if (stopped) return;
      setUnread(convs.reduce((n, c) => n + (c.unread ?? 0), 0));
      if (convs.length === 0) {
        fill(list, el("p", { class: "muted empty" }, "No messages yet."));
        return;
      }
      fill(list, el("ul", { class: "conversation-list" }, convs.map((c) => el("li", {
        class: `conversation${c.unread ? " has-unread" : ""}`, "data-name": c.name },
      el("a", { href: `#/messages/${encodeURIComponent(c.name)}`, class: "conversation-link" },
        el("strong", { class: "who" }, c.name),
        c.unread ? el("span", { class: "badge unread", "aria-label": `${c.unread} unread` }, String(c.unread)) : null,
        el("span", { class: "last muted" }, c.last ? `${same(c.last.from, c.name) ? "" : "you: "}${c.last.text}` : ""),
        el("span", { class: "when muted" }, c.last ? timeText(c.last.sent) : ""))))));
    } catch (e) {
      if (!stopped) fill(list, el("p", { class: "form-error" }, errorText(e)));
    }
  };
  load();
  const off = onNotice((n) => {
    if (n.t === "message" || n.t === "read") load();
  });
  return () => {
    stopped = true;
    off();
  };
}

function conversation(root, name) {
  const me = currentUser().username;
  const log = el("ol", { class: "message-log", "aria-live": "polite" });
  const older = el("button", { type: "button", class: "ghost older", "data-action": "older", hidden: true }, "Older");
  const status = el("p", { class: "muted" });
  const error = el("p", { class: "form-error send-error", role: "alert" });
  const text = el("input", { name: "text", maxlength: 200, placeholder: "Write a message…",
    autocomplete: "off", "aria-label": "message" });
  const form = el("form", { class: "message-form", "aria-label": "send a message" },
    text, el("button", { type: "submit", class: "primary" }, "Send"));
  fill(root, el("section", { class: "panel page-panel messages-page conversation-page", "data-name": name },
    el("p", {}, el("a", { href: "#/messages" }, "← All messages")),
    el("h1", {}, "Messages with ", el("a", { href: `#/players/${encodeURIComponent(name)}` }, name)),
    older, status, log, form, error));
  let stopped = false;
  let next = null;
  const seen = new Set();
  const item = (m) => el("li", { class: `message ${same(m.from, me) ? "mine" : "theirs"}`, "data-id": m.id },
    el("span", { class: "from" }, same(m.from, me) ? "you" : m.from), " ",
    el("span", { class: "text" }, m.text), " ",
    el("time", { class: "when muted" }, timeText(m.sent)));
  const append = (m) => {
    if (seen.has(m.id)) return;
    seen.add(m.id);
    log.append(item(m));
    log.lastElementChild.scrollIntoView({ block: "nearest" });
  };
  const markRead = () => {
    if (stopped || document.visibilityState === "hidden") return;
    social.markRead(name).catch(() => {});
  };
  const page = async (first) => {
    older.disabled = true;
    try {
      const res = await social.conversation(name, { before: first ? null : next, limit: PAGE });
      if (stopped) return;
      const msgs = (res.messages ?? []).filter((m) => !seen.has(m.id));
      msgs.forEach((m) => seen.add(m.id));
      // newest first from the server: shown oldest at the top
      log.prepend(...msgs.slice().reverse().map(item));
      next = res.next ?? null;
      older.hidden = next === null;
      if (first) {
        status.textContent = seen.size ? "" : "No messages yet: say hello.";
        log.lastElementChild?.scrollIntoView({ block: "nearest" });
        markRead();
      }
    } catch (e) {
      if (stopped) return;
      if (e.code === "unknown_player") {
        status.textContent = "There is no player of that name.";
        form.hidden = true;
      } else status.textContent = errorText(e);
    } finally {
      older.disabled = false;
    }
  };
  older.addEventListener("click", () => page(false));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const words = text.value;
    if (!words) return;
    error.textContent = "";
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const { id, sent } = await social.send(name, words);
      text.value = "";
      status.textContent = "";
      append({ id, from: me, text: words, sent });
    } catch (err) {
      error.textContent = errorText(err);
    } finally {
      button.disabled = false;
      text.focus();
    }
  });
  const off = onNotice((n) => {
    if (n.t === "message" && same(n.from, name)) {
      status.textContent = "";
      append(n);
      markRead();
    }
  });
  const onVisible = () => {
    if (document.visibilityState === "visible") markRead();
  };
  document.addEventListener("visibilitychange", onVisible);
  page(true);
  text.focus();
  return () => {
    stopped = true;
    off();
    document.removeEventListener("visibilitychange", onVisible);
  };
}
