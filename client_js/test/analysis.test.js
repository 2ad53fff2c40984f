// Unit tests of analysis.js's pure part: which replay view each analysed move starts from,
// the words for a move and its loss, the expected-points series of a hand, the ghost of the
// better play; and chart.js's seriesGeometry.
import { test } from "node:test";
import assert from "node:assert/strict";
import { entriesByView, ghostMarkup, handSeries, lossText, moveText, points } from "../src/analysis.js";
import { seriesGeometry } from "../src/chart.js";

const entry = (round, move, extra = {}) => ({
  round, move, seat: move % 2, side: move % 2, chosen: 0, loss: 0, blunder: false,
  options: [{ move: { play: "5-3", on: "5-5" }, points: 4, stderr: 1, wins: 0.5 }],
  expected: [10 + move, 5 - move], ...extra,
});

test("the k-th view of a round is the position before that round's move k", () => {
  // round 0: start + 3 moves; round 1: start + 2 moves
  const views = [0, 0, 0, 0, 1, 1, 1].map((round) => ({ round }));
  const a = entry(0, 1);
  const b = entry(1, 0);
  const c = entry(1, 1);
  const byView = entriesByView(views, { moves: [a, b, c] });
  assert.deepEqual(byView, [null, a, null, null, b, c, null]);
  assert.deepEqual(entriesByView(views, null), [null, null, null, null, null, null, null]);
});

test("moves and losses are worded", () => {
  assert.equal(moveText({ play: "6-4", on: "4-4" }), "6-4 on 4-4");
  assert.equal(moveText({ play: "6-6" }), "6-6");
  assert.equal(moveText({ draw: true }), "draw");
  assert.equal(moveText({ pass: true }), "pass");
  assert.equal(lossText(entry(0, 0)), "best move");
  assert.equal(lossText(entry(0, 0, { chosen: 1, loss: 12.46, blunder: true })), "−12.5 points, blunder");
  assert.equal(lossText(entry(0, 0, { chosen: 2, loss: 3 })), "−3 points");
  assert.equal(points(-2.25), "−2.3");
  assert.equal(points(4.567, 2), "4.57");
  assert.equal(points(0), "0");
});

test("a hand's series has one line of expected points per side", () => {
  const analysis = { moves: [entry(0, 0), entry(0, 2), entry(1, 0)] };
  const { entries, lines } = handSeries(analysis, 0, 2);
  assert.equal(entries.length, 2);
  assert.deepEqual(lines, [[10, 12], [5, 3]]);
  assert.deepEqual(handSeries(analysis, 3, 2).lines, [[], []]);
});

test("the better play's ghost: beside the layout, or the lead drawn alone", () => {
  const box = { w: 20, h: 14, px: { w: 600, h: 400 } };
  const view = { layout: [{ tile: "5-5", parent: null, side: null, inner: null, spinner: false }],
    ends: [{ node: 0, side: "L", value: 5, count: 5 }, { node: 0, side: "R", value: 5, count: 5 }] };
  const spot = ghostMarkup(view, { play: "5-3", on: "5-5" }, box, "best: 5-3 on 5-5");
  assert.ok(spot.add.includes('data-ghost="5-3"') && spot.add.includes('class="ghost-tile'));
  assert.ok(!spot.add.includes('class="tile'));
  const lead = ghostMarkup({ layout: [], ends: [] }, { play: "6-6" }, box, "best: 6-6");
  assert.ok(lead.board.startsWith("<svg"));
  assert.equal((lead.board.match(/class="tile /g) ?? []).length, 0);
  assert.equal((lead.board.match(/class="ghost-tile/g) ?? []).length, 1);
  assert.equal(ghostMarkup(view, { draw: true }, box, "draw"), null);
});

test("seriesGeometry spreads steps evenly and includes zero", () => {
  const g = seriesGeometry([[10, 20, 30], [5, -5, 0]], { width: 200, height: 100,
    pad: { left: 0, right: 0, top: 0, bottom: 0 } });
  assert.deepEqual(g.xs, [0, 100, 200]);
  assert.equal(g.lines.length, 2);
  assert.ok(g.min <= -5 && g.max >= 30);
  assert.ok(g.lines[0].path.startsWith("M0 "));
  assert.equal(g.lines[1].points.length, 3);
  const empty = seriesGeometry([[], []]);
  assert.deepEqual(empty.xs, []);
  assert.equal(empty.min, null);
});
