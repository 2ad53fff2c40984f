// Tests of the socket layer against a scripted WebSocket stand-in (frames are real msgpack).
import { afterEach, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { decode, encode } from "@msgpack/msgpack";
import { TableSocket, backoffDelay } from "../src/socket.js";

class ScriptedWebSocket {
  static OPEN = 1;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    ScriptedWebSocket.made.push(this);
  }
  send(bytes) { this.sent.push(decode(bytes)); }
  close(code = 1000) { this.readyState = 3; this.closedWith = code; }
  // driven by the test
  accept() { this.readyState = 1; this.onopen(); }
  deliver(msg) { this.onmessage({ data: encode(msg).slice().buffer }); }
  drop(code) { this.readyState = 3; this.onclose({ code }); }
}

let held;
let got;
let statuses;
let sock;

function start(token = "tok", invite = undefined) {
  sock = new TableSocket({
    url: "ws://test/ws",
    table: "k3f9x2",
    token: () => token,
    invite: invite === undefined ? undefined : () => invite,
    version: () => held,
    onMessage: (m) => {
      got.push(m);
      if (m.t === "snapshot" || m.t === "diff") held = m.v;
    },
    onStatus: (s, detail, code) => statuses.push([s, code]),
  });
  return ScriptedWebSocket.made.at(-1);
}

beforeEach(() => {
  globalThis.WebSocket = ScriptedWebSocket;
  ScriptedWebSocket.made = [];
  held = null;
  got = [];
  statuses = [];
});
afterEach(() => sock?.close());

test("hello carries the seat token and the version held", () => {
  held = 12;
  const ws = start("seat-token");
  ws.accept();
  assert.deepEqual(ws.sent[0],
    { t: "hello", proto: 1, table: "k3f9x2", token: "seat-token", since: 12, invite: null });
});

test("hello carries a private table's invite code", () => {
  const ws = start(null, "k9Qx");
  ws.accept();
  assert.equal(ws.sent[0].invite, "k9Qx");
  assert.equal(ws.sent[0].token, null);
});

test("a seat that was left is final: no reconnect with its token", () => {
  const ws = start();
  ws.accept();
  ws.drop(4005);
  assert.deepEqual(statuses.at(-1), ["offline", 4005]);
  assert.equal(ScriptedWebSocket.made.length, 1);
});

test("welcome makes the connection online", () => {
  const ws = start();
  ws.accept();
  ws.deliver({ t: "welcome", proto: 1, table: "k3f9x2", seat: 0, v: 3 });
  assert.deepEqual(statuses.at(-1), ["online", undefined]);
  assert.equal(got[0].t, "welcome");
});

test("duplicate versions are dropped before the store", () => {
  const ws = start();
  ws.accept();
  ws.deliver({ t: "snapshot", v: 5, doc: { v: 5 } });
  ws.deliver({ t: "diff", v: 6, ops: [], ev: [] });
  ws.deliver({ t: "diff", v: 6, ops: [], ev: [] });
  ws.deliver({ t: "diff", v: 4, ops: [], ev: [] });
  assert.deepEqual(got.map((m) => m.v), [5, 6]);
});

test("a gap sends one sync from the version held, then the filled diffs apply", () => {
  const ws = start();
  ws.accept();
  ws.deliver({ t: "snapshot", v: 5, doc: { v: 5 } });
  ws.deliver({ t: "diff", v: 8, ops: [], ev: [] });
  ws.deliver({ t: "diff", v: 9, ops: [], ev: [] });
  const syncs = ws.sent.filter((m) => m.t === "sync");
  assert.deepEqual(syncs, [{ t: "sync", since: 5 }]);
  assert.deepEqual(got.map((m) => m.v), [5]);
  for (const v of [6, 7, 8, 9]) ws.deliver({ t: "diff", v, ops: [], ev: [] });
  assert.deepEqual(got.map((m) => m.v), [5, 6, 7, 8, 9]);
});

test("a dropped connection reconnects and resumes from the last version", async () => {
  const first = start();
  first.accept();
  first.deliver({ t: "welcome", proto: 1, table: "k3f9x2", seat: 0, v: 5 });
  first.deliver({ t: "snapshot", v: 5, doc: { v: 5 } });
  first.drop(1001);
  assert.equal(statuses.at(-1)[0], "reconnecting");
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(ScriptedWebSocket.made.length, 2, "a new connection was opened");
  const second = ScriptedWebSocket.made[1];
  second.accept();
  assert.equal(second.sent[0].since, 5);
});

test("replaced or refused connections do not reconnect", async () => {
  for (const code of [4000, 4001, 4002]) {
    ScriptedWebSocket.made = [];
    const ws = start();
    ws.accept();
    ws.drop(code);
    assert.deepEqual(statuses.at(-1), ["offline", code]);
    await new Promise((r) => setTimeout(r, 350));
    assert.equal(ScriptedWebSocket.made.length, 1);
    sock.close();
  }
});

test("backoff grows exponentially with jitter and is capped", () => {
  assert.equal(backoffDelay(0, () => 0), 150);
  assert.equal(backoffDelay(0, () => 1), 300);
  assert.equal(backoffDelay(3, () => 0), 1200);
  assert.equal(backoffDelay(3, () => 1), 2400);
  assert.equal(backoffDelay(20, () => 1), 8000);
  assert.equal(backoffDelay(20, () => 0), 4000);
});

test("reopen drops the connection and says hello again at once", () => {
  held = 7;
  const first = start();
  first.accept();
  held = null; // the store threw its document away
  sock.reopen();
  assert.equal(first.closedWith, 1000);
  assert.equal(ScriptedWebSocket.made.length, 2);
  const second = ScriptedWebSocket.made[1];
  second.accept();
  assert.equal(second.sent[0].t, "hello");
  assert.equal(second.sent[0].since, null);
});

test("frames still arriving on a closed socket are ignored", () => {
  const ws = start();
  ws.accept();
  ws.deliver({ t: "welcome", proto: 1, table: "k3f9x2", seat: null, v: 3 });
  const onmessage = ws.onmessage;
  sock.close();
  // a late snapshot for the old audience must not reach the store
  (onmessage ?? (() => {}))({ data: encode({ t: "snapshot", v: 3, doc: { v: 3 } }).slice().buffer });
  assert.deepEqual(got.map((m) => m.t), ["welcome"]);
});

test("a connection attempt that never opens is retried", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  start();
  assert.equal(ScriptedWebSocket.made.length, 1);
  t.mock.timers.tick(10000); // the attempt is given up...
  assert.equal(statuses.at(-1)[0], "reconnecting");
  t.mock.timers.tick(8000); // ...and a new one made after the backoff
  assert.equal(ScriptedWebSocket.made.length, 2);
});
