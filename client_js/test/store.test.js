// Unit tests of the pure store, driven by the message examples of docs/protocol.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  applyOps, canMove, currentHint, initialState, mayPlay, playsByTile, positionOf, reduce, sinceVersion,
} from "../src/store.js";
import { hintWords, notPlayedWords } from "../src/view/table.js";

const fx = JSON.parse(readFileSync(new URL("./fixtures/protocol-examples.json", import.meta.url)));
const clone = (x) => structuredClone(x);

function seatedAtV12() {
  let s = initialState("k3f9x2");
  s = reduce(s, { t: "welcome", proto: 1, table: "k3f9x2", seat: 0, v: 12 });
  return reduce(s, { t: "snapshot", v: 12, doc: clone(fx.document_v12) });
}

test("snapshot replaces the document and sets the version", () => {
  const s = seatedAtV12();
  assert.equal(s.v, 12);
  assert.equal(s.seat, 0);
  assert.equal(s.doc.table.name, "Friday fives");
  const other = { v: 40, game: null, table: { id: "k3f9x2", status: "waiting" } };
  const s2 = reduce(s, { t: "snapshot", v: 40, doc: other });
  assert.equal(s2.v, 40);
  assert.deepEqual(s2.doc, other);
});

test("the protocol's diff example plays 5-0 on the spinner", () => {
  const before = seatedAtV12();
  const frozen = JSON.stringify(before.doc);
  const s = reduce(before, clone(fx.diff_v13));
  assert.equal(s.v, 13);
  assert.equal(s.doc.v, 13);
  assert.equal(s.doc.game.turn, 0);
  assert.deepEqual(s.doc.game.scores, [10, 15]);
  assert.deepEqual(s.doc.game.hand_counts, [6, 6]);
  assert.equal(s.doc.game.layout.length, 2);
  assert.deepEqual(s.doc.game.layout[1],
    { tile: "5-0", parent: 0, side: "R", inner: 5, spinner: false });
  assert.equal(s.doc.game.end_total, 5);
  assert.equal(s.doc.game.history.at(-1).points, 15);
  assert.deepEqual(s.doc.game.legal, [{ play: "0-0", on: "5-0" }]);
  assert.equal(s.ev[0].type, "play");
  // the previous document is untouched (copy-on-write) and unchanged parts are shared
  assert.equal(JSON.stringify(before.doc), frozen);
  assert.equal(s.doc.table, before.doc.table);
  assert.equal(s.doc.game.hand, before.doc.game.hand);
});

test("each op kind: set, append, delete, truncate, whole-document set", () => {
  const doc = { a: { b: [1, 2, 3], c: "x" }, l: [{ k: 1 }, { k: 2 }] };
  assert.deepEqual(applyOps(doc, [["=", ["a", "c"], "y"]]).a.c, "y");
  assert.deepEqual(applyOps(doc, [["=", ["a", "new"], 7]]).a.new, 7);
  assert.deepEqual(applyOps(doc, [["+", ["a", "b"], [4, 5]]]).a.b, [1, 2, 3, 4, 5]);
  assert.deepEqual(applyOps(doc, [["-", ["a", "c"]]]).a, { b: [1, 2, 3] });
  assert.deepEqual(applyOps(doc, [["~", ["a", "b"], 1]]).a.b, [1]);
  assert.deepEqual(applyOps(doc, [["=", ["l", 1, "k"], 9]]).l, [{ k: 1 }, { k: 9 }]);
  assert.deepEqual(applyOps(doc, [["=", [], { z: 1 }]]), { z: 1 });
  // ops apply in order: truncate then append
  assert.deepEqual(applyOps(doc, [["~", ["a", "b"], 0], ["+", ["a", "b"], [8]]]).a.b, [8]);
  assert.deepEqual(doc.a.b, [1, 2, 3], "input not mutated");
});

test("an op on a missing path is an error, not a silent change", () => {
  const doc = { a: { b: [1] } };
  assert.throws(() => applyOps(doc, [["+", ["a", "zz"], [1]]]));
  assert.throws(() => applyOps(doc, [["=", ["nope", "x"], 1]]));
  assert.throws(() => applyOps(doc, [["?", ["a"], 1]]));
});

test("duplicate versions are dropped", () => {
  const s13 = reduce(seatedAtV12(), clone(fx.diff_v13));
  const again = reduce(s13, clone(fx.diff_v13));
  assert.equal(again.v, 13);
  assert.equal(again.doc, s13.doc);
  assert.equal(again.doc.game.layout.length, 2, "5-0 not appended twice");
  assert.equal(again.duplicates, 1);
  const old = reduce(s13, { t: "diff", v: 5, ops: [["=", ["game", "turn"], 1]], ev: [] });
  assert.equal(old.doc.game.turn, 0);
});

test("a gap is detected, the diff is not applied, and the gap clears when filled", () => {
  const s12 = seatedAtV12();
  const gapped = reduce(s12, { t: "diff", v: 14, ops: [["=", ["v"], 14]], ev: [] });
  assert.equal(gapped.v, 12);
  assert.equal(gapped.gap, 12, "asks for everything after 12");
  assert.equal(sinceVersion(gapped), 12);
  const filled = reduce(gapped, clone(fx.diff_v13));
  assert.equal(filled.v, 13);
  assert.equal(filled.gap, null);
  const next = reduce(filled, { t: "diff", v: 14, ops: [["=", ["v"], 14]], ev: [] });
  assert.equal(next.v, 14);
});

test("a diff that does not fit the document is treated as a gap", () => {
  const s12 = seatedAtV12();
  const bad = reduce(s12, { t: "diff", v: 13, ops: [["+", ["game", "missing"], [1]]], ev: [] });
  assert.equal(bad.v, 12);
  assert.equal(bad.gap, 12);
  assert.equal(bad.broken, true);
  assert.equal(bad.doc, s12.doc);
  const reset = reduce(bad, { t: "local/reset" });
  assert.equal(sinceVersion(reset), null, "the next hello asks for a snapshot");
  const fresh = reduce(reset, { t: "snapshot", v: 13, doc: { v: 13, game: null, table: {} } });
  assert.equal(fresh.broken, false);
  assert.equal(fresh.v, 13);
});

test("a diff before any snapshot is ignored", () => {
  const s = reduce(initialState("k3f9x2"), clone(fx.diff_v13));
  assert.equal(s.doc, null);
  assert.equal(sinceVersion(s), null);
});

test("accepted clears the pending move", () => {
  let s = seatedAtV12();
  s = reduce(s, { t: "local/move", id: "m17", v: 12, move: fx.move_play.move });
  assert.equal(s.pending.id, "m17");
  assert.equal(canMove(s), false, "no second move while one is pending");
  s = reduce(s, clone(fx.diff_v13));
  s = reduce(s, clone(fx.accepted));
  assert.equal(s.pending, null);
  assert.equal(s.rejected, null);
});

test("rejected clears the pending move and keeps the code and message", () => {
  let s = seatedAtV12();
  s = reduce(s, { t: "local/move", id: "m17", v: 12, move: fx.move_play.move });
  s = reduce(s, clone(fx.rejected));
  assert.equal(s.pending, null);
  assert.deepEqual(s.rejected,
    { id: "m17", code: "not_playable", message: "6-2 does not match any open end" });
  assert.equal(s.v, 12, "a rejection changes no document");
  s = reduce(s, { t: "local/dismiss" });
  assert.equal(s.rejected, null);
});

test("an answer to another move id leaves the pending move alone", () => {
  let s = seatedAtV12();
  s = reduce(s, { t: "local/move", id: "m18", v: 12, move: { draw: true } });
  assert.equal(reduce(s, clone(fx.accepted)).pending.id, "m18");
  assert.equal(reduce(s, clone(fx.rejected)).pending.id, "m18");
});

test("error, chat and presence frames", () => {
  let s = seatedAtV12();
  s = reduce(s, clone(fx.error));
  assert.equal(s.error.code, "bad_message");
  s = reduce(s, clone(fx.chat));
  assert.deepEqual(s.chat, [{ seat: 0, name: "ann", text: "gg", ts: 1764470000123 }]);
  s = reduce(s, clone(fx.presence));
  assert.deepEqual(s.presence, [true, false]);
  for (let i = 0; i < 150; i++) s = reduce(s, { ...fx.chat, text: `m${i}` });
  assert.equal(s.chat.length, 100);
  assert.equal(s.chat.at(-1).text, "m149");
});

test("legal plays grouped by tile, and whose move it is", () => {
  const s13 = reduce(seatedAtV12(), clone(fx.diff_v13));
  assert.equal(canMove(s13), true);
  assert.deepEqual(playsByTile(s13.doc.game), { "0-0": ["5-0"] });
  const game = { legal: [{ play: "5-3", on: "5-5" }, { play: "5-3", on: "3-1" },
    { play: "6-6" }, { draw: true }] };
  assert.deepEqual(playsByTile(game), { "5-3": ["5-5", "3-1"], "6-6": [null] });
  const spectator = { ...s13, seat: null };
  assert.equal(canMove(spectator), false);
});

test("connection state is a local action", () => {
  let s = reduce(initialState("k3f9x2"), { t: "local/conn", status: "reconnecting" });
  assert.equal(s.conn, "reconnecting");
  s = reduce(s, { t: "local/conn", status: "online" });
  assert.equal(s.conn, "online");
});

test("a resent pending move refused as stale waits to be judged, then is refused with its move", () => {
  let s = reduce(seatedAtV12(), { t: "local/move", id: "m1", v: 12, move: { play: "5-3", on: "5-5" } });
  s = reduce(s, { t: "local/resend" });
  assert.equal(s.pending.resent, true);
  s = reduce(s, { t: "local/stale", id: "m1", v: 14 });
  assert.equal(s.pending.staleAt, 14);
  s = reduce(s, { t: "local/resend", v: 14 });
  assert.deepEqual([s.pending.v, s.pending.staleAt], [14, null]);
  s = reduce(s, { t: "local/refuse", code: "stale_version" });
  assert.equal(s.pending, null);
  assert.deepEqual(s.rejected.move, { play: "5-3", on: "5-5" });
  assert.equal(notPlayedWords(s.rejected),
    "Your move 5-3 was not played: the game moved on while you were offline.");
  const ruled = reduce(reduce(reduce(seatedAtV12(), { t: "local/move", id: "m2", v: 12, move: { draw: true } }),
    { t: "local/resend" }), { t: "rejected", id: "m2", code: "must_play", message: "a tile fits.", v: 12 });
  assert.equal(notPlayedWords(ruled.rejected), "Your draw was not played: a tile fits.");
});

test("a pending move notes where the game stood: a move played since changes it", () => {
  const s = reduce(seatedAtV12(), { t: "local/move", id: "m3", v: 12, move: { draw: true } });
  const game = fx.document_v12.game;
  assert.equal(s.pending.at, `${game.round}:${game.history.length}`);
  assert.equal(positionOf(s), s.pending.at);
  const later = reduce(s, clone(fx.diff_v13));
  assert.notEqual(positionOf(later), s.pending.at);
});

test("a move may be played only from the legal list, by the seat to move", () => {
  const s = seatedAtV12();
  const doc = clone(fx.document_v12);
  doc.game.turn = 0;
  doc.game.legal = [{ play: "6-6", on: null }, { play: "5-1", on: "5-5" }];
  const mine = reduce(s, { t: "snapshot", v: 12, doc });
  assert.equal(mayPlay(mine, { play: "6-6" }), true);
  assert.equal(mayPlay(mine, { play: "5-1", on: "5-5" }), true);
  assert.equal(mayPlay(mine, { play: "5-1", on: "6-6" }), false);
  assert.equal(mayPlay(mine, { draw: true }), false);
  doc.game.turn = 1;
  assert.equal(mayPlay(reduce(s, { t: "snapshot", v: 12, doc }), { play: "6-6" }), false);
});

test("a hint holds for its version only", () => {
  const s = seatedAtV12();
  assert.equal(currentHint(s), null);
  const hinted = reduce(s, { t: "hint", v: 12, move: { play: "6-4", on: "4-4" } });
  assert.deepEqual(currentHint(hinted), { play: "6-4", on: "4-4" });
  assert.equal(hintWords(currentHint(hinted)), "play 6-4 on 4-4");
  assert.equal(hintWords({ play: "5-5" }), "play 5-5");
  assert.equal(hintWords({ draw: true }), "draw");
  const moved = reduce(hinted, clone(fx.diff_v13));
  assert.equal(moved.v, 13);
  assert.equal(currentHint(moved), null); // the table moved on: the hint is stale
});
