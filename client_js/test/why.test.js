// Unit tests of the table's explanations (src/why.js, src/rules_panel.js, dialogs' countdown):
// why tiles are dimmed, the score's sum, the target banner, the counters shown, a hand's
// points by side, and the "how this game scores" lines from GET /api/meta.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  countersShown, handPoints, orList, scoreSum, targetReached, whyDimmed,
} from "../src/why.js";
import { gameInfo } from "../src/rules_panel.js";
import { reduce, initialState } from "../src/store.js";

const fives = { preset: "all-fives", scoring: "fives", draw: "until_playable", lead: "any",
  first_leader: "random", target: 150, game_end: "round_end", scale: 1, bonus: "opponents" };

test("only draw legal: nothing fits, draw", () => {
  const game = { hand: ["6-4", "3-1"], legal: [{ draw: true }], layout: [{ tile: "5-5" }],
    boneyard: 9, rules: fives };
  assert.equal(whyDimmed(game), "Nothing fits: draw");
});

test("only pass legal: the boneyard is empty, or there is no drawing", () => {
  const game = { hand: ["6-4"], legal: [{ pass: true }], layout: [{ tile: "5-5" }], boneyard: 0,
    rules: fives };
  assert.equal(whyDimmed(game), "Nothing fits and the boneyard is empty: pass");
  assert.equal(whyDimmed({ ...game, rules: { ...fives, draw: "none" } }),
    "Nothing fits (no drawing in this game): pass");
  assert.equal(whyDimmed({ ...game, boneyard: 2 }),
    "Nothing fits and the boneyard is down to its reserve: pass");
});

test("a restricted lead names the tiles that may lead", () => {
  const bergen = { ...fives, preset: "bergen", scoring: "matching", first_leader: "highest_double" };
  const game = { hand: ["6-6", "3-3", "5-1"], legal: [{ play: "6-6" }], layout: [], rules: bergen,
    boneyard: 10 };
  assert.equal(whyDimmed(game, { label: "Bergen" }), "Bergen: lead your highest double (6-6)");
  const doubleLead = { ...game, legal: [{ play: "6-6" }, { play: "3-3" }],
    rules: { ...bergen, lead: "double", first_leader: "random" } };
  assert.equal(whyDimmed(doubleLead, { label: "Double Bergen" }), "Double Bergen: lead a double (6-6 or 3-3)");
  const heaviest = { ...game, hand: ["6-5", "4-1"], legal: [{ play: "6-5" }] };
  assert.equal(whyDimmed(heaviest), "only 6-5 may lead");
});

test("nothing to say: not my turn, every tile playable, mid-hand dimmed tiles", () => {
  const game = { hand: ["5-1", "6-2"], legal: [{ play: "5-1", on: "5-5" }, { play: "6-2", on: "5-5" }],
    layout: [{ tile: "5-5" }], rules: fives, ends: [{ node: 0, value: 5 }] };
  assert.equal(whyDimmed(game), null);
  assert.equal(whyDimmed({ ...game, legal: [{ draw: true }] }, { mine: false }), null);
  const some = { ...game, legal: [{ play: "5-1", on: "5-5" }] };
  assert.equal(whyDimmed(some), "Dimmed tiles fit no open end (5)");
  assert.equal(orList(["a", "b", "c"]), "a, b or c");
});

test("the score's sum from the ends' counts", () => {
  const ends = [{ node: 0, side: "L", value: 5, count: 5 }, { node: 1, side: "O", value: 0, count: 0 },
    { node: 2, side: "O", value: 5, count: 10 }];
  assert.equal(scoreSum(ends, fives), "5 + 10 = 15");
  assert.equal(scoreSum([{ count: 10 }], fives), "10");
  assert.equal(scoreSum(ends, { scoring: "matching" }), null);
  assert.equal(scoreSum([], fives), null);
});

test("target reached mid-hand only with game_end round_end", () => {
  const game = { turn: 1, game_over: false, scores: [150, 20], rules: fives };
  assert.equal(targetReached(game), true);
  assert.equal(targetReached({ ...game, scores: [145, 20] }), false);
  assert.equal(targetReached({ ...game, rules: { ...fives, game_end: "exact" } }), false);
  assert.equal(targetReached({ ...game, game_over: true }), false);
  assert.equal(targetReached({ ...game, turn: null }), false);
});

test("counters: no Ends without play points from the total, no Boneyard without drawing", () => {
  assert.deepEqual(countersShown(fives), { ends: true, boneyard: true });
  assert.deepEqual(countersShown({ scoring: "none", draw: "none" }), { ends: false, boneyard: false });
  assert.deepEqual(countersShown({ scoring: "none", draw: "until_playable" }), { ends: false, boneyard: true });
  assert.deepEqual(countersShown({ scoring: "matching", draw: "until_playable" }), { ends: false, boneyard: true });
});

test("a hand's points by side: plays from the history, the bonus apart", () => {
  const game = {
    sides: [[0], [1]], turn: null, round: 1, game_over: false, rules: fives,
    rounds: [{ totals: [20, 10], winner: 0, bonus: 5 }, { totals: [55, 25], winner: 0, bonus: 20 }],
    history: [{ seat: 0, points: 10 }, { seat: 1, points: 15 }, { seat: 0, points: 5 }, { seat: 1, draw: true }],
  };
  assert.deepEqual(handPoints(game), [{ plays: 15, bonus: 20, total: 35 }, { plays: 15, bonus: 0, total: 15 }]);
  // the next hand dealt (its history): plays are what the total holds beyond the bonus
  const dealt = { ...game, turn: 0, round: 2, history: [] };
  assert.deepEqual(handPoints(dealt, 1), [{ plays: 15, bonus: 20, total: 35 }, { plays: 15, bonus: 0, total: 15 }]);
  assert.deepEqual(handPoints(dealt, 0), [{ plays: 15, bonus: 5, total: 20 }, { plays: 10, bonus: 0, total: 10 }]);
});

test("the rules panel: label, target and key rules from the meta's preset", () => {
  const meta = { presets: [{ name: "bergen", label: "Bergen", family: "bergen",
    targets: { 2: 15, 3: 15, 4: 15 },
    rules: { hand_size: { 2: 6, 3: 6, 4: 5 }, scoring: "matching", draw: "until_playable",
      bonus: "fixed", target: 15, game_end: "round_end", spinners: "none", scale: 1 } }] };
  const info = gameInfo(meta, { preset: "bergen", first_leader: "highest_double" }, 2);
  assert.equal(info.label, "Bergen");
  assert.equal(info.target, 15);
  assert.ok(info.lines.some((l) => /ends match/.test(l)));
  assert.ok(info.lines.some((l) => /highest double leads/.test(l)));
  assert.ok(info.lines.some((l) => /reach 15/.test(l)));
  // the table's own rules win over the preset's (a target override)
  assert.equal(gameInfo(meta, { preset: "bergen", target: 31 }, 2).target, 31);
  // no meta yet: the preset's name stands in
  assert.equal(gameInfo(null, { preset: "block" }, 2).label, "block");
});

test("presence counts the spectators when the frame says", () => {
  let s = reduce(initialState("t"), { t: "presence", online: [true, false] });
  assert.equal(s.watching, null);
  s = reduce(s, { t: "presence", online: [true, true], spectators: 3 });
  assert.equal(s.watching, 3);
  assert.deepEqual(s.presence, [true, true]);
});

test("the dialog shown: the pause between hands, a hand not yet seen, the game over", async () => {
  const { countdownText, dialogKey } = await import("../src/view/dialogs.js");
  const now = 1_000_000;
  assert.equal(countdownText(now + 18_200, now), "Next hand in 0:19");
  assert.equal(countdownText(now - 5, now), "Dealing…");
  const rounds = [{ totals: [10, 0] }];
  const paused = { rounds, turn: null, game_over: false };
  assert.equal(dialogKey(paused, { next_hand: { deadline: now, ready: [] } }, { seenRounds: 0 }), "between:0");
  // no pause (an older server, or NEXT_HAND_S=0): the summary of the hand not yet seen
  assert.equal(dialogKey({ ...paused, turn: 1 }, { next_hand: null }, { seenRounds: 0 }), "round:0");
  assert.equal(dialogKey({ ...paused, turn: 1 }, {}, { seenRounds: 1 }), null);
  assert.equal(dialogKey({ ...paused, game_over: true }, { next_hand: null }, { seenRounds: 1 }), "over");
});
