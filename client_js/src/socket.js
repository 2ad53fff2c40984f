/**
 * Table socket: one WebSocket to /ws speaking msgpack frames (docs/protocol.md).
 * Owns connecting, the hello (seat token + last version held), the heartbeat ping,
 * reconnecting with exponential backoff and jitter, resuming from the last version,
 * dropping duplicate versions, detecting gaps (and sending sync), and the connection
 * state shown to the player: "connecting", "online", "reconnecting", "offline".
 *
 * Knows nothing of the game: messages go to `onMessage`; the version held comes from
 * `version()` (the store's). Must not import the store or any view.
 */
import { decode, encode } from "@msgpack/msgpack";

export const PROTO = 1;
const PING_EVERY_MS = 5000;
const DEAD_AFTER_MS = 12000;
const CONNECT_TIMEOUT_MS = 10000;
const BACKOFF_BASE_MS = 300;
const BACKOFF_MAX_MS = 8000;
/** Close codes after which reconnecting cannot help. */
const FINAL_CLOSES = new Map([
  [1008, "refused by the server"],
  [1009, "message too big"],
  [4000, "opened in another tab"],
  [4001, "unknown table"],
  [4002, "bad seat token"],
  [4005, "this seat was left"],
]);

/** Delay before reconnect attempt `n` (0-based): exponential with full jitter. */
export function backoffDelay(n, random = Math.random) {
  const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** n);
  return Math.round(cap / 2 + random() * (cap / 2));
}

export class TableSocket {
  /**
   * @param {object} o
   * @param {string} o.url         ws:// or wss:// address of /ws
   * @param {string} o.table       table id
   * @param {() => string|null} o.token   seat token (null = spectator)
   * @param {() => string|null} [o.invite] invite code of a private table (null = none)
   * @param {() => number|null} o.version last version held (null = needs a snapshot)
   * @param {(msg: object) => void} o.onMessage
   * @param {(status: string, detail?: string, closeCode?: number) => void} o.onStatus
   */
  constructor(o) {
    Object.assign(this, { url: o.url, table: o.table, token: o.token, version: o.version });
    this.invite = o.invite ?? (() => null);
    this.onMessage = o.onMessage;
    this.onStatus = o.onStatus;
    this.ws = null;
    this.attempt = 0;
    this.closed = false;
    this.status = "connecting";
    this.syncAsked = null;
    this.pingN = 0;
    this.lastHeard = 0;
    this.timers = { ping: null, retry: null, connect: null };
    this.onOnline = () => this.reconnectNow();
    this.onOffline = () => this.ws?.close();
    if (typeof window !== "undefined") {
      window.addEventListener("online", this.onOnline);
      window.addEventListener("offline", this.onOffline);
    }
    this.open();
  }

  setStatus(status, detail, code) {
    this.status = status;
    this.onStatus(status, detail, code);
  }

  open() {
    if (this.closed) return;
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.scheduleRetry();
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.syncAsked = null;
    ws.onopen = () => {
      this.lastHeard = Date.now();
      this.sendRaw({
        t: "hello", proto: PROTO, table: this.table, token: this.token(), since: this.version(),
        invite: this.invite(),
      });
      clearInterval(this.timers.ping);
      this.timers.ping = setInterval(() => this.heartbeat(), PING_EVERY_MS);
    };
    // frames still queued on a socket we have let go of must not reach the store
    ws.onmessage = (e) => {
      if (ws === this.ws && !this.closed) this.receive(e.data);
    };
    ws.onclose = (e) => this.closedBy(ws, e.code);
    ws.onerror = () => {};
    // a connection attempt that hangs is given up and retried
    clearTimeout(this.timers.connect);
    this.timers.connect = setTimeout(() => {
      if (ws === this.ws && ws.readyState !== WebSocket.OPEN) {
        ws.onmessage = null;
        ws.close();
        this.closedBy(ws, 4999);
      }
    }, CONNECT_TIMEOUT_MS);
  }

  heartbeat() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (Date.now() - this.lastHeard > DEAD_AFTER_MS) {
      this.ws.close(4999);
      this.closedBy(this.ws, 4999);
      return;
    }
    this.pingN += 1;
    this.sendRaw({ t: "ping", n: this.pingN });
  }

  receive(data) {
    this.lastHeard = Date.now();
    let msg;
    try {
      msg = decode(new Uint8Array(data));
    } catch {
      return;
    }
    if (!msg || typeof msg !== "object" || typeof msg.t !== "string") return;
    if (msg.t === "welcome") {
      this.attempt = 0;
      this.setStatus("online");
    }
    if (msg.t === "diff") {
      const held = this.version();
      if (held === null) return; // a snapshot is on its way
      if (msg.v <= held) return; // duplicate
      if (msg.v > held + 1) {
        this.askSync(held);
        return;
      }
    }
    this.onMessage(msg);
    if (msg.t === "snapshot" || msg.t === "diff") this.syncAsked = null;
  }

  /** Asks for everything after `since` (once per gap). */
  askSync(since) {
    if (this.syncAsked === since) return;
    this.syncAsked = since;
    this.sendRaw({ t: "sync", since });
  }

  closedBy(ws, code) {
    if (ws !== this.ws) return;
    clearInterval(this.timers.ping);
    this.ws = null;
    if (this.closed) return;
    const final = FINAL_CLOSES.get(code);
    if (final) {
      this.closed = true;
      this.setStatus("offline", final, code);
      return;
    }
    this.scheduleRetry();
  }

  scheduleRetry() {
    const offline = typeof navigator !== "undefined" && navigator.onLine === false;
    this.setStatus(offline ? "offline" : "reconnecting");
    clearTimeout(this.timers.retry);
    this.timers.retry = setTimeout(() => this.open(), backoffDelay(this.attempt));
    this.attempt = Math.min(this.attempt + 1, 10);
  }

  /** Drops the connection and connects again at once (a fresh hello). */
  reopen() {
    const ws = this.ws;
    if (!ws) return;
    ws.onmessage = null;
    ws.close(1000);
    this.closedBy(ws, 1000);
    this.reconnectNow();
  }

  reconnectNow() {
    if (this.closed || this.ws) return;
    clearTimeout(this.timers.retry);
    this.attempt = 0;
    this.open();
  }

  sendRaw(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(encode(msg));
    return true;
  }

  /** Sends a frame if online; returns whether it went out. */
  send(msg) {
    return this.status === "online" && this.sendRaw(msg);
  }

  close() {
    this.closed = true;
    clearInterval(this.timers.ping);
    clearTimeout(this.timers.retry);
    clearTimeout(this.timers.connect);
    if (typeof window !== "undefined") {
      window.removeEventListener("online", this.onOnline);
      window.removeEventListener("offline", this.onOffline);
    }
    if (this.ws) {
      this.ws.onmessage = null;
      this.ws.close(1000);
    }
    this.ws = null;
  }
}
