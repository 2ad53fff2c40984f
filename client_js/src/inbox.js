/**
 * The player socket: one WebSocket to /ws/me (docs/protocol.md §11) while logged in, on every
 * page. msgpack frames; `hello_me` first (the unread count), then the player's notices
 * (message, read, invite, your_turn, matched, rematch, ...), handed to whoever listens
 * (`onNotice`). Heartbeat `ping`, reconnect with exponential backoff and jitter; a close that
 * retrying cannot fix (1008, 1009, 4008) stops it. No DOM.
 */
import { decode, encode } from "@msgpack/msgpack";
import { backoffDelay } from "./socket.js";

const PING_EVERY_MS = 20000;
const DEAD_AFTER_MS = 50000;
const FINAL = new Set([1008, 1009, 4008]);
/** Closes after which a longer pause is due (server going away, unavailable, rate limit). */
const SLOW = new Set([1001, 1011, 4004, 4007]);

const listeners = new Set();
let sock = null;
let unread = 0;
let who = null;

/** Calls `fn(notice)` for every notice (and `{t: "unread", unread}` on changes); returns the unsubscribe. */
export function onNotice(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function unreadCount() {
  return unread;
}

/** Whether the player socket is open now. */
export function inboxOnline() {
  return Boolean(sock?.online);
}

/** Sets the unread total as an HTTP answer knows it (e.g. after reading a conversation). */
export function setUnread(n) {
  if (!Number.isInteger(n) || n === unread) return;
  unread = n;
  emit({ t: "unread", unread });
}

function emit(msg) {
  for (const fn of [...listeners]) {
    try {
      fn(msg);
    } catch (e) {
      setTimeout(() => { throw e; });
    }
  }
}

function wsUrl() {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}/ws/me`;
}

class PlayerSocket {
  constructor() {
    this.ws = null;
    this.closed = false;
    this.online = false;
    this.attempt = 0;
    this.pingN = 0;
    this.lastHeard = 0;
    this.ping = null;
    this.retry = null;
    this.onOnline = () => this.now();
    window.addEventListener("online", this.onOnline);
    this.open();
  }

  open() {
    if (this.closed) return;
    let ws;
    try {
      ws = new WebSocket(wsUrl());
    } catch {
      this.again(false);
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => {
      this.lastHeard = Date.now();
      clearInterval(this.ping);
      this.ping = setInterval(() => this.beat(), PING_EVERY_MS);
    };
    ws.onmessage = (e) => {
      if (ws !== this.ws || this.closed) return;
      this.lastHeard = Date.now();
      let msg;
      try {
        msg = decode(new Uint8Array(e.data));
      } catch {
        return;
      }
      if (!msg || typeof msg !== "object" || typeof msg.t !== "string") return;
      this.receive(msg);
    };
    ws.onerror = () => {};
    ws.onclose = (e) => {
      if (ws !== this.ws) return;
      this.ws = null;
      this.online = false;
      clearInterval(this.ping);
      emit({ t: "local/offline" });
      if (this.closed) return;
      if (FINAL.has(e.code)) {
        this.closed = true;
        return;
      }
      this.again(SLOW.has(e.code));
    };
  }

  receive(msg) {
    if (msg.t === "pong") return;
    if (msg.t === "hello_me") {
      this.attempt = 0;
      this.online = true;
      who = msg.name ?? who;
    }
    if (Number.isInteger(msg.unread) && (msg.t === "hello_me" || msg.t === "message" || msg.t === "read")) {
      unread = msg.unread;
    }
    emit(msg);
    if (msg.t === "hello_me" || msg.t === "message" || msg.t === "read") emit({ t: "unread", unread });
  }

  beat() {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    if (Date.now() - this.lastHeard > DEAD_AFTER_MS) {
      ws.close(4999);
      return;
    }
    this.pingN += 1;
    ws.send(encode({ t: "ping", n: this.pingN }));
  }

  again(slow) {
    clearTimeout(this.retry);
    const delay = backoffDelay(this.attempt) + (slow ? 2000 : 0);
    this.attempt = Math.min(this.attempt + 1, 10);
    this.retry = setTimeout(() => this.open(), delay);
  }

  now() {
    if (this.closed || this.ws) return;
    clearTimeout(this.retry);
    this.attempt = 0;
    this.open();
  }

  close() {
    this.closed = true;
    this.online = false;
    clearInterval(this.ping);
    clearTimeout(this.retry);
    window.removeEventListener("online", this.onOnline);
    if (this.ws) {
      this.ws.onmessage = null;
      this.ws.close(1000);
    }
    this.ws = null;
  }
}

/** Opens the player socket for `user` (an account), or closes it when `user` is null. */
export function setInboxUser(user) {
  const name = user?.username ?? null;
  if (name && sock && !sock.closed && who && who.toLowerCase() === name.toLowerCase()) return;
  sock?.close();
  sock = null;
  who = name;
  if (unread !== 0) {
    unread = 0;
    emit({ t: "unread", unread });
  }
  if (name) sock = new PlayerSocket();
}
