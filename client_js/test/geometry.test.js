// Tests of the layout geometry: tiles never overlap, arms snake inside the box.
import { test } from "node:test";
import assert from "node:assert/strict";
import { noOverlaps, placeLayout } from "../src/view/geometry.js";

/** A chain of `n` ordinary tiles hanging off node `parent` on `side`. */
function chain(layout, parent, side, n) {
  let p = parent;
  for (let i = 0; i < n; i++) {
    layout.push({ tile: `${(i % 6) + 1}-0`, parent: p, side: i === 0 ? side : "O",
      inner: 0, spinner: false });
    p = layout.length - 1;
  }
}

test("a lone spinner lies crosswise at the centre", () => {
  const { nodes } = placeLayout([{ tile: "5-5", parent: null, side: null, inner: null, spinner: true }]);
  assert.equal(nodes.length, 1);
  assert.equal(nodes[0].rect.w, 1);
  assert.equal(nodes[0].rect.h, 2);
});

test("tiles on both sides of a lead go west and east on one line", () => {
  const layout = [{ tile: "6-4", parent: null, side: null, inner: null, spinner: false },
    { tile: "4-2", parent: 0, side: "L", inner: 4, spinner: false },
    { tile: "6-1", parent: 0, side: "R", inner: 6, spinner: false }];
  const { nodes } = placeLayout(layout);
  assert.equal(nodes[0].near, 4, "the 4 faces west where 4-2 hangs");
  assert.ok(nodes[1].rect.x < nodes[0].rect.x);
  assert.ok(nodes[2].rect.x > nodes[0].rect.x);
  assert.equal(nodes[1].rect.cy, nodes[0].rect.cy);
  assert.equal(nodes[2].rect.cy, nodes[0].rect.cy);
  assert.equal(nodes[1].near, 4);
  assert.equal(nodes[1].far, 2);
});

test("a spinner's four arms go four ways", () => {
  const layout = [{ tile: "5-5", parent: null, side: null, inner: null, spinner: true }];
  for (const side of ["L", "R", "U", "D"]) chain(layout, 0, side, 1);
  const { nodes } = placeLayout(layout);
  const [s, w, e, n, d] = nodes.map((x) => x.rect);
  assert.ok(w.cx < s.cx && e.cx > s.cx && n.cy < s.cy && d.cy > s.cy);
  assert.ok(noOverlaps(nodes));
});

test("a long arm turns and snakes back instead of running off", () => {
  const layout = [{ tile: "6-6", parent: null, side: null, inner: null, spinner: true }];
  chain(layout, 0, "R", 20);
  const box = { w: 12, h: 10 };
  const { nodes, bounds } = placeLayout(layout, box);
  assert.ok(noOverlaps(nodes));
  assert.ok(bounds.x + bounds.w <= box.w / 2 + 0.01, `right edge ${bounds.x + bounds.w}`);
  assert.ok(nodes.some((x) => x.dir === "W"), "some tiles run back west");
});

test("four long arms snake without overlapping", () => {
  const layout = [{ tile: "6-6", parent: null, side: null, inner: null, spinner: true }];
  chain(layout, 0, "L", 6);
  chain(layout, 0, "R", 6);
  chain(layout, 0, "U", 7);
  chain(layout, 0, "D", 7);
  for (const box of [{ w: 12, h: 16 }, { w: 24, h: 12 }, { w: 8, h: 8 }]) {
    const { nodes } = placeLayout(layout, box);
    assert.equal(nodes.length, 27);
    assert.ok(noOverlaps(nodes), `overlap in box ${JSON.stringify(box)}`);
  }
});

test("a spinner played inside an arm branches across it", () => {
  const layout = [{ tile: "1-4", parent: null, side: null, inner: null, spinner: false },
    { tile: "1-1", parent: 0, side: "L", inner: 1, spinner: true },
    { tile: "4-4", parent: 0, side: "R", inner: 4, spinner: false },
    { tile: "4-3", parent: 2, side: "O", inner: 4, spinner: false },
    { tile: "2-1", parent: 1, side: "L", inner: 1, spinner: false },
    { tile: "5-1", parent: 1, side: "U", inner: 1, spinner: false },
    { tile: "5-5", parent: 5, side: "O", inner: 5, spinner: false },
    { tile: "5-0", parent: 6, side: "O", inner: 5, spinner: false },
    { tile: "3-1", parent: 1, side: "D", inner: 1, spinner: false }];
  const { nodes } = placeLayout(layout);
  assert.ok(noOverlaps(nodes));
  const spin = nodes[1].rect;
  assert.ok(nodes[5].rect.cy !== spin.cy && nodes[8].rect.cy !== spin.cy);
  assert.ok(Math.sign(nodes[5].rect.cy - spin.cy) !== Math.sign(nodes[8].rect.cy - spin.cy));
  assert.ok(nodes[4].rect.cx < spin.cx, "2-1 continues west past the spinner");
});

/** A random layout as games make them: arms of ordinary tiles, one spinner, doubles across. */
function randomLayout(seed, size) {
  let s = seed;
  const random = () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
  const lead = random() < 0.5 ? "6-6" : "6-4";
  const layout = [{ tile: lead, parent: null, side: null, inner: null, spinner: lead === "6-6" }];
  const ends = [[0, "L"], [0, "R"]];
  const covered = new Map([[0, 0]]);
  let spinnerPlayed = layout[0].spinner;
  while (layout.length < size && ends.length) {
    const [parent, side] = ends.splice(Math.floor(random() * ends.length), 1)[0];
    const double = random() < 0.2;
    const spinner = double && !spinnerPlayed;
    spinnerPlayed ||= spinner;
    layout.push({ tile: double ? "3-3" : "3-1", parent, side, inner: 3, spinner });
    if (layout[parent].spinner && (side === "L" || side === "R")) {
      const n = (covered.get(parent) ?? 1) + 1; // the tile a later spinner was played on covers one
      covered.set(parent, n);
      if (n === 2) ends.push([parent, "U"], [parent, "D"]);
    }
    ends.push([layout.length - 1, spinner ? "R" : "O"]);
  }
  return layout;
}

test("random full layouts never overlap, whatever the board's shape", () => {
  for (let seed = 1; seed <= 150; seed++) {
    const layout = randomLayout(seed, 28);
    for (const box of [{ w: 16, h: 15 }, { w: 22, h: 12 }, { w: 30, h: 12 }]) {
      const { nodes } = placeLayout(layout, box);
      assert.equal(nodes.length, layout.length);
      assert.ok(noOverlaps(nodes), `seed ${seed}, box ${JSON.stringify(box)}`);
    }
  }
});
