// Unit tests of ratings.js: how ratings, rating changes and stats read on the page.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  percent, ratingChangeText, ratingChanges, ratingText, scoreLine, signed, statNumber, statRows,
} from "../src/ratings.js";
import { families, familyLabel, ratingSettings } from "../src/meta.js";

test("a rating shows a ? while provisional", () => {
  assert.equal(ratingText({ name: "ann", rating: 1500, provisional: true }), "1500?");
  assert.equal(ratingText({ name: "ann", rating: 1532.4, provisional: false }), "1532");
  assert.equal(ratingText(null), "");
  assert.equal(ratingText({ rating: null }), "");
});

test("rating changes read before → after (difference)", () => {
  assert.equal(signed(23), "+23");
  assert.equal(signed(-7), "-7");
  assert.equal(signed(0), "\u00b10");
  assert.equal(ratingChangeText({ before: 1500, after: 1523, provisional: false }), "1500 \u2192 1523 (+23)");
  assert.equal(ratingChangeText({ before: 1500, after: 1480, provisional: true }), "1500 \u2192 1480? (-20)");
  assert.deepEqual(ratingChanges(null), []);
  assert.deepEqual(ratingChanges([
    { seat: 0, before: 1500, after: 1523, provisional: false },
    { seat: 1, before: 1500, after: 1477, provisional: false },
  ]), [
    { seat: 0, text: "1500 \u2192 1523 (+23)", diff: 23 },
    { seat: 1, text: "1500 \u2192 1477 (-23)", diff: -23 },
  ]);
});

test("stats read as numbers, rates as percentages, in a fixed order", () => {
  assert.equal(percent(0.625), "63%");
  assert.equal(percent(undefined), "\u2013");
  assert.equal(statNumber(7), "7");
  assert.equal(statNumber(12.345), "12.3");
  const rows = statRows({ wins: 3, games: 5, win_rate: 0.6, top_preset: "all-fives", points_per_hand: 11.25,
    extra_thing: 4 }, (p) => (p === "all-fives" ? "All Fives" : p));
  assert.deepEqual(rows, [["Games", "5"], ["Wins", "3"], ["Win rate", "60%"],
    ["Points per hand", "11.3"], ["Most played", "All Fives"], ["extra thing", "4"]]);
  assert.deepEqual(statRows(null), []);
});

test("a game's score line puts this player's side first", () => {
  const g = { seat: 1, scores: [150, 85], seats: [{ seat: 0, side: 0 }, { seat: 1, side: 1 }] };
  assert.equal(scoreLine(g), "85 \u2013 150");
  assert.equal(scoreLine({ ...g, seat: 0 }), "150 \u2013 85");
  assert.equal(scoreLine({ scores: [1, 2, 3] }), "1 \u2013 2 \u2013 3");
});

test("families come from the meta, else from the presets, else the known five", () => {
  const meta = { families: [{ name: "fives", label: "Fives games", presets: ["all-fives"] },
    { name: "block", label: "", presets: [] }], ratings: { provisional_games: 8, initial: 1400 } };
  assert.deepEqual(families(meta).map((f) => [f.name, f.label]), [["fives", "Fives games"], ["block", "Block"]]);
  assert.equal(familyLabel(meta, "fives"), "Fives games");
  assert.deepEqual(ratingSettings(meta), { provisional_games: 8, initial: 1400 });
  assert.deepEqual(ratingSettings(null), { provisional_games: 10, initial: 1500 });
  const old = { presets: [{ name: "all-fives", family: "fives" }, { name: "bergen", family: "bergen" }] };
  assert.deepEqual(families(old).map((f) => f.name), ["fives", "bergen"]);
  assert.deepEqual(families(old)[0].presets, ["all-fives"]);
  assert.equal(families(null).length, 5);
  assert.equal(familyLabel(null, "fives-and-threes"), "Fives and Threes");
});

test("dates read day, month, year and do not break across lines", async () => {
  const { dateText } = await import("../src/ratings.js");
  const text = dateText(new Date(2026, 11, 1, 12).getTime());
  assert.equal(text, "1\u00a0Dec\u00a02026");
  assert.equal(dateText(undefined), "");
});

test("a complete rating history starts from the first rating", async () => {
  const { withStart } = await import("../src/ratings.js");
  const history = [{ at: 20, rating: 1490 }, { at: 10, rating: 1523 }];
  assert.deepEqual(withStart({ games: 2, history }, 1500), [
    { at: 10, rating: 1500, start: true }, { at: 10, rating: 1523 }, { at: 20, rating: 1490 }]);
  // a history cut short (older games dropped) has no known start
  assert.deepEqual(withStart({ games: 250, history }, 1500).map((h) => h.rating), [1523, 1490]);
  assert.deepEqual(withStart({ games: 0, history: [] }), []);
});
