// Tests of the SVG markup: pips drawn, candidate ends marked, last tile marked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { boardSvg, boxFor } from "../src/view/board.js";
import { tileSvg, uprightTile } from "../src/view/tiles.js";

const pipCount = (svg) => (svg.match(/fill="url\(#pip\)"/g) ?? []).length;

test("a tile shows the pips of both halves", () => {
  assert.equal(pipCount(tileSvg(5, 3)), 8);
  assert.equal(pipCount(tileSvg(6, 6)), 12);
  assert.equal(pipCount(tileSvg(0, 0)), 0);
  assert.equal(pipCount(uprightTile("6-4")), 10);
  assert.match(uprightTile("6-4"), /aria-label="6-4"/);
});

const layout = [
  { tile: "5-5", parent: null, side: null, inner: null, spinner: true },
  { tile: "5-3", parent: 0, side: "R", inner: 5, spinner: false },
  { tile: "3-1", parent: 1, side: "O", inner: 3, spinner: false },
];

test("every layout tile is drawn with its pips", () => {
  const svg = boardSvg(layout, { box: boxFor(800, 500) });
  assert.equal((svg.match(/class="tile /g) ?? []).length, 3);
  assert.equal(pipCount(svg), 10 + 8 + 4);
});

test("candidate ends are focusable buttons naming the tile to play on", () => {
  const svg = boardSvg(layout, { box: boxFor(800, 500), candidates: ["5-5", "3-1"] });
  assert.match(svg, /class="tile\s+candidate[^"]*"[^>]*data-on="5-5"[^>]*tabindex="0" role="button"/);
  assert.match(svg, /data-on="3-1"/);
  assert.doesNotMatch(svg, /data-on="5-3"/);
});

test("a hint's end is marked, says so, and is no button", () => {
  const svg = boardSvg(layout, { box: boxFor(800, 500), suggested: "3-1" });
  assert.match(svg, /class="tile\s+suggested[^"]*"[^>]*data-tile="3-1" aria-label="3-1, the hint plays here"/);
  assert.equal((svg.match(/suggested/g) ?? []).length, 1);
  assert.doesNotMatch(svg, /role="button"/);
});

test("the last tile played is marked", () => {
  const svg = boardSvg(layout, { box: boxFor(800, 500), last: 2 });
  assert.match(svg, /class="tile last[^"]*"[^>]*data-tile="3-1"/);
  assert.equal((svg.match(/class="tile last/g) ?? []).length, 1);
});

test("an empty layout says so", () => {
  assert.match(boardSvg([], { box: boxFor(800, 500) }), /Waiting for the lead/);
});

test("the box follows the board's shape", () => {
  const wide = boxFor(1200, 400);
  const tall = boxFor(360, 700);
  assert.ok(wide.w > wide.h);
  assert.ok(tall.h > tall.w);
});
