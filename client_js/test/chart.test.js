// Unit tests of chart.js's pure part: the scales, path and ticks of a rating history chart.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chartGeometry, keyStep, niceStep } from "../src/chart.js";

test("niceStep picks 1, 2 or 5 times a power of ten", () => {
  assert.equal(niceStep(40, 4), 10);
  assert.equal(niceStep(70, 4), 20);
  assert.equal(niceStep(180, 4), 50);
  assert.equal(niceStep(3, 4), 1);
  assert.equal(niceStep(0), 1);
});

test("an empty history has no points", () => {
  const g = chartGeometry([], { width: 300, height: 100 });
  assert.deepEqual(g.points, []);
  assert.equal(g.path, "");
  assert.equal(g.min, null);
});

test("points span the plot in the order played, higher ratings higher up", () => {
  const g = chartGeometry([
    { at: 9000, rating: 1540 }, { at: 1000, rating: 1500 }, { at: 2000, rating: 1480 },
  ], { width: 300, height: 100, pad: { left: 30, right: 10, top: 10, bottom: 10 } });
  assert.deepEqual(g.points.map((p) => p.rating), [1500, 1480, 1540]);
  assert.equal(g.points[0].x, 30);
  assert.equal(g.points[2].x, 290);
  assert.equal(g.points[1].x, 160);
  // y grows downwards: the best rating is the highest point, the worst the lowest
  const ys = g.points.map((p) => p.y);
  assert.ok(ys[2] < ys[0] && ys[0] < ys[1], ys);
  assert.ok(g.min <= 1480 && g.max >= 1540);
  for (const p of g.points) assert.ok(p.y >= 10 && p.y <= 90, p);
  assert.match(g.path, /^M30 [\d.]+ L160 [\d.]+ L290 [\d.]+$/);
});

test("ticks are nice round values covering the range, top to bottom in order", () => {
  const g = chartGeometry([{ at: 1, rating: 1463 }, { at: 2, rating: 1611 }], { width: 200, height: 100 });
  assert.ok(g.ticks.length >= 3);
  assert.equal(g.ticks[0].value, g.min);
  assert.equal(g.ticks.at(-1).value, g.max);
  const step = g.ticks[1].value - g.ticks[0].value;
  assert.ok([10, 20, 25, 50, 100].includes(step), step);
  for (let i = 1; i < g.ticks.length; i++) assert.ok(g.ticks[i].y < g.ticks[i - 1].y);
});

test("one point sits in the middle; a flat line gets a range around it", () => {
  const one = chartGeometry([{ at: 5, rating: 1500 }], { width: 200, height: 100, pad: { left: 0, right: 0 } });
  assert.equal(one.points[0].x, 100);
  assert.ok(one.min < 1500 && one.max > 1500);
  const flat = chartGeometry([{ at: 1, rating: 1500 }, { at: 9, rating: 1500 }], { width: 200, height: 100 });
  assert.equal(flat.points[0].y, flat.points[1].y);
  assert.ok(flat.max - flat.min >= 40);
});

test("points of one moment are spread by order; bad entries are skipped", () => {
  const g = chartGeometry([{ at: 7, rating: 1500 }, { at: 7, rating: 1510 }, { at: 7, rating: NaN }, null],
    { width: 100, height: 50, pad: { left: 0, right: 0 } });
  assert.deepEqual(g.points.map((p) => p.x), [0, 100]);
});

test("a start point is kept first and marked", () => {
  const g = chartGeometry([{ at: 5, rating: 1500, start: true }, { at: 5, rating: 1523 }], { width: 100, height: 50 });
  assert.deepEqual(g.points.map((p) => [p.rating, p.start]), [[1500, true], [1523, false]]);
  assert.match(g.path, /^M[\d.]+ [\d.]+ L[\d.]+ [\d.]+$/);
});

test("the arrows step through a chart's moves and stop at its ends; Home and End jump", () => {
  assert.equal(keyStep("ArrowRight", 2, 5), 3);
  assert.equal(keyStep("ArrowLeft", 2, 5), 1);
  assert.equal(keyStep("ArrowRight", 4, 5), 4);
  assert.equal(keyStep("ArrowLeft", 0, 5), 0);
  assert.equal(keyStep("Home", 3, 5), 0);
  assert.equal(keyStep("End", 0, 5), 4);
  // nothing marked yet: the first step forward, the last one back
  assert.equal(keyStep("ArrowRight", null, 5), 0);
  assert.equal(keyStep("ArrowLeft", null, 5), 4);
  assert.equal(keyStep("Enter", 2, 5), null);
  assert.equal(keyStep("ArrowRight", null, 0), null);
});
