/**
 * Layout geometry: places the view's layout nodes (parent/side/inner/spinner) on a plane
 * as rectangles, in tile units (a tile is 2 long and 1 wide). Doubles lie crosswise; the
 * spinner grows four arms; an arm that would leave the box, or run into another arm,
 * turns a corner and comes back (a snake), so the layout stays compact however long it
 * grows. Pure: no DOM; the SVG view draws what this returns.
 */

const DIRS = {
  E: [1, 0], W: [-1, 0], S: [0, 1], N: [0, -1],
};
const CW = { E: "S", S: "W", W: "N", N: "E" };
const CCW = { E: "N", N: "W", W: "S", S: "E" };
const BACK = { E: "W", W: "E", N: "S", S: "N" };
const GAP = 0.06;

function pips(tile) {
  const [a, b] = tile.split("-").map(Number);
  return { a, b, double: a === b };
}

function rectFor(anchorX, anchorY, dir, along, across) {
  const [dx, dy] = DIRS[dir];
  const cx = anchorX + dx * (along / 2 + GAP);
  const cy = anchorY + dy * (along / 2 + GAP);
  const w = dx !== 0 ? along : across;
  const h = dx !== 0 ? across : along;
  return { x: cx - w / 2, y: cy - h / 2, w, h, cx, cy };
}

function overlaps(r, s) {
  const e = 0.02;
  return r.x < s.x + s.w - e && s.x < r.x + r.w - e && r.y < s.y + s.h - e && s.y < r.y + r.h - e;
}

function insideBox(r, dir, box) {
  if (dir === "E" || dir === "W") return r.x >= -box.w / 2 && r.x + r.w <= box.w / 2;
  return r.y >= -box.h / 2 && r.y + r.h <= box.h / 2;
}

/**
 * Where a child starts: the point on the parent's edge facing `dir`, and the line the
 * child is centred on. Straight on: the parent's centre line; turning a corner from an
 * ordinary tile: its outer half; a spinner's vertical arm: the spinner's centre.
 */
function anchorOf(parent, dir) {
  const r = parent.rect;
  const [dx, dy] = DIRS[dir];
  let ax = dx > 0 ? r.x + r.w : dx < 0 ? r.x : r.cx;
  let ay = dy > 0 ? r.y + r.h : dy < 0 ? r.y : r.cy;
  const turning = parent.dir !== dir && BACK[parent.dir] !== dir;
  if (turning && !parent.double) {
    const [px, py] = DIRS[parent.dir];
    if (px !== 0) ax = r.cx + px * 0.5;
    if (py !== 0) ay = r.cy + py * 0.5;
  }
  return [ax, ay];
}

/**
 * Places every node. `box` = {w, h} in tile units: the straight run of an arm stays
 * inside it along its own axis. Returns {nodes: [{index, tile, rect, dir, angle,
 * near, far, double}], bounds: {x, y, w, h}}.
 */
export function placeLayout(layout, box = { w: 16, h: 12 }) {
  // an arm boxed in (say, a spinner played on an arm that had already turned back) would
  // have to overlap: lay it all out again in a roomier box; the board then scales down
  let result = placeIn(layout, box);
  for (let k = 1; k <= 4 && !noOverlaps(result.nodes); k++) {
    const next = placeIn(layout, { w: box.w + 4 * k, h: box.h + 4 * k });
    if (noOverlaps(next.nodes) || k === 4) result = next;
  }
  return result;
}

function placeIn(layout, box) {
  const placed = [];
  const obstacles = []; // {rect, owner}: owner = node index whose arm may use it
  const children = new Map();
  layout.forEach((n, i) => {
    if (n.parent !== null && n.parent !== undefined) {
      if (!children.has(n.parent)) children.set(n.parent, []);
      children.get(n.parent).push(i);
    }
  });

  const free = (rect, reservedFor) =>
    placed.every((p) => p === undefined || !overlaps(rect, p.rect)) &&
    obstacles.every((o) => o.owner === reservedFor || !overlaps(rect, o.rect));

  layout.forEach((node, i) => {
    const t = pips(node.tile);
    if (node.parent === null || node.parent === undefined || !placed[node.parent]) {
      const rect = t.double ? rectFor(-0.5, 0, "E", 1, 2) : rectFor(-1, 0, "E", 2, 1);
      placed[i] = {
        index: i, tile: node.tile, double: t.double, spinner: Boolean(node.spinner),
        rect, dir: "E", leg: "E", fold: "S", root: true, ...rootHalves(layout, i, children, t),
      };
      reserveSpinnerArms(placed[i], obstacles, box, i, true);
      return;
    }
    const parent = placed[node.parent];
    const arm = armOf(parent, node.side);
    const along = t.double ? 1 : 2;
    const across = t.double ? 2 : 1;
    const at = (dir) => {
      const [ax, ay] = anchorOf(parent, dir);
      return { dir, rect: rectFor(ax, ay, dir, along, across) };
    };
    const straight = (c) => c.dir === arm.leg || c.dir === BACK[arm.leg];
    const fits = (c, withinBox, reservedOk) =>
      (!withinBox || !straight(c) || insideBox(c.rect, c.dir, box)) &&
      (reservedOk ? placed.every((p) => !overlaps(c.rect, p.rect)) : free(c.rect, arm.owner));
    // straight on inside the box, else turn the arm's way, else the other way; failing
    // that, past the box, across a reserved corridor, and only then onto another tile
    const preferred = [arm.dir, arm.fold, BACK[arm.fold]].map(at);
    const anyWay = [arm.dir, arm.fold, BACK[arm.fold], BACK[parent.dir]]
      .filter((d) => d !== BACK[parent.dir] || parent.root || parent.spinner).map(at);
    const choice = preferred.find((c) => fits(c, true, false))
      ?? anyWay.find((c) => fits(c, false, false))
      ?? anyWay.find((c) => fits(c, false, true))
      ?? at(arm.dir);
    const turned = choice.dir !== arm.leg;
    const inner = node.inner ?? t.a;
    const outer = inner === t.a ? t.b : t.a;
    placed[i] = {
      index: i, tile: node.tile, double: t.double, spinner: Boolean(node.spinner),
      rect: choice.rect, dir: choice.dir,
      // after a corner the arm runs back the other way, folding the same way again
      leg: turned ? BACK[arm.leg] : arm.leg,
      turned,
      fold: arm.fold, owner: arm.owner, near: inner, far: outer,
    };
    if (placed[i].spinner) reserveSpinnerArms(placed[i], obstacles, box, i, false);
  });

  const nodes = placed.filter(Boolean).map((p) => ({ ...p, angle: angleOf(p) }));
  return { nodes, bounds: boundsOf(nodes) };
}

/** Which halves of a root tile face L (west) and R (east), from what is attached to it. */
function rootHalves(layout, i, children, t) {
  if (t.double) return { near: t.a, far: t.b };
  let west = t.a;
  for (const c of children.get(i) ?? []) {
    const n = layout[c];
    if (n.side === "L" && n.inner !== null && n.inner !== undefined) west = n.inner;
    if (n.side === "R" && n.inner !== null && n.inner !== undefined) {
      west = n.inner === t.a ? t.b : t.a;
    }
  }
  return { near: west, far: west === t.a ? t.b : t.a };
}

/** The direction a child on `side` of `parent` grows, and how its arm folds. */
function armOf(parent, side) {
  if (parent.root) {
    const dir = { L: "W", R: "E", U: "N", D: "S" }[side] ?? "E";
    return { dir, leg: dir, fold: CW[dir], owner: `${parent.index}${dir}` };
  }
  if (parent.spinner && (side === "U" || side === "D")) {
    const dir = side === "U" ? CCW[parent.leg] : CW[parent.leg];
    return { dir, leg: dir, fold: CW[dir], owner: `${parent.index}${dir}` };
  }
  // an ordinary tile (or a spinner's free horizontal side) continues its arm; after a
  // corner, parent.leg already points back the other way
  return { dir: parent.leg, leg: parent.leg, fold: parent.fold, owner: parent.owner };
}

/** Keeps the corridors of a spinner's future arms clear of other arms. */
function reserveSpinnerArms(spinner, obstacles, box, index, root) {
  const dirs = root
    ? (spinner.spinner ? ["N", "S", "E", "W"] : ["E", "W"])
    : [CCW[spinner.leg], CW[spinner.leg]];
  for (const dir of dirs) {
    const r = spinner.rect;
    const [dx, dy] = DIRS[dir];
    // a spinner inside an arm keeps room for one tile each way, so that arm can still snake
    const reach = root ? (dx !== 0 ? box.w / 2 : box.h / 2) : 3.2;
    const len = Math.max(0, reach - (dx !== 0 ? r.w / 2 : r.h / 2));
    const ax = dx > 0 ? r.x + r.w : dx < 0 ? r.x : r.cx;
    const ay = dy > 0 ? r.y + r.h : dy < 0 ? r.y : r.cy;
    obstacles.push({ rect: rectFor(ax, ay, dir, len, 1), owner: `${index}${dir}` });
  }
}

/** Rotation (degrees) that turns a tile drawn west→east (near half west) into place. */
function angleOf(p) {
  if (p.double) return p.dir === "E" || p.dir === "W" ? 90 : 0;
  return { E: 0, S: 90, W: 180, N: 270 }[p.dir];
}

function boundsOf(nodes) {
  if (nodes.length === 0) return { x: -2, y: -1.5, w: 4, h: 3 };
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const n of nodes) {
    x0 = Math.min(x0, n.rect.x);
    y0 = Math.min(y0, n.rect.y);
    x1 = Math.max(x1, n.rect.x + n.rect.w);
    y1 = Math.max(y1, n.rect.y + n.rect.h);
  }
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** True when no two placed tiles overlap (used by tests and as a sanity check). */
export function noOverlaps(nodes) {
  for (let i = 0; i < nodes.length; i++) {
    for (let j = i + 1; j < nodes.length; j++) {
      if (overlaps(nodes[i].rect, nodes[j].rect)) return false;
    }
  }
  return true;
}
