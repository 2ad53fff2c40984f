// The game-over dialog's replay link keeps a private table's invite.
import { test } from "node:test";
import assert from "node:assert/strict";
import { drawDialog, endReason } from "../src/view/dialogs.js";

function overlay() {
  return { hidden: true, innerHTML: "", classList: { toggle() {} } };
}

function finished(invite) {
  const o = overlay();
  const game = { game_over: true, winner: 0, sides: [[0], [1]], scores: [150, 20], rounds: [] };
  const table = { id: "k3f9x2ab", status: "finished", result: { winner: 0, reason: "game_end" },
    seats: [], rematch: null, ratings: null };
  drawDialog(o, { game, table, ui: { invite, closedDialog: null, seenRounds: 0, fair: null },
    state: { seat: null }, name: (s) => `seat ${s}` });
  return o.innerHTML;
}

test("the replay link of a private table carries its invite", () => {
  assert.match(finished("a b&c"), /href="#\/replay\/k3f9x2ab\?invite=a%20b%26c"/);
  assert.match(finished(null), /href="#\/replay\/k3f9x2ab"/);
});

test("a game ended by the hand limit says so and names the side ahead", () => {
  const o = overlay();
  const game = { game_over: false, winner: null, sides: [[0], [1]], scores: [40, 25], rounds: [] };
  const table = { id: "k3f9x2ab", status: "finished", result: { winner: 0, reason: "hand_limit", seat: null },
    seats: [], rematch: null, ratings: null };
  drawDialog(o, { game, table, ui: { invite: null, closedDialog: null, seenRounds: 0, fair: null },
    state: { seat: null }, name: (s) => `seat ${s}` });
  assert.match(o.innerHTML, /most hands a game may last/);
  assert.match(o.innerHTML, /seat 0/);
});

test("a forfeit says why: the seat's clock ran out, or it left", () => {
  const name = (s) => ["ann", "bob"][s];
  const result = (cause) => ({ winner: 1, reason: "forfeit", seat: 0, cause });
  assert.equal(endReason(result("time"), name), "ann ran out of time and forfeited.");
  assert.equal(endReason(result("leave"), name), "ann left the game and forfeited.");
  assert.equal(endReason(result(undefined), name), "ann forfeited the game."); // an older server
  assert.match(endReason({ winner: null, reason: "abandoned", seat: null }, name), /abandoned/);
  assert.equal(endReason({ winner: 0, reason: "game_end", seat: null }, name), null);
});
