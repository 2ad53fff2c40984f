/**
 * The layout on the felt: an SVG of real dominoes placed by geometry.js, the last tile
 * played marked, and, while the player chooses where to put a tile, the candidate ends
 * highlighted and clickable. Draws from the game view only; never decides legality.
 */
import { placeLayout } from "./geometry.js";
import { tileSvg } from "./tiles.js";

/**
 * The box arms must stay inside, in tile units, from the board's size in pixels: a unit
 * (half a tile) of 20 to 40 px, as many units as the board holds. The lead sits at its
 * centre, so the board shows the box and arms turn at its edges.
 */
export function boxFor(width, height) {
  const unit = Math.max(20, Math.min(40, width / 22));
  return { w: Math.max(10, Math.floor(width / unit)), h: Math.max(12, Math.floor(height / unit)) };
}

/**
 * SVG markup for a layout. `candidates`: tile strings that may take the selected tile
 * (drawn highlighted, focusable, with data-on); `last`: index of the tile to mark.
 */
export function boardSvg(layout, {
  box, candidates = [], last = null, fresh = false, empty = "Waiting for the lead",
} = {}) {
  if (!layout || layout.length === 0) {
    return `<p class="board-empty">${empty}</p>`;
  }
  const { nodes, bounds } = placeLayout(layout, box);
  // show the whole box (the lead in the middle), grown to whatever went past it
  const pad = 0.5;
  const x0 = Math.min(-box.w / 2, bounds.x - pad);
  const y0 = Math.min(-box.h / 2, bounds.y - pad);
  const x1 = Math.max(box.w / 2, bounds.x + bounds.w + pad);
  const y1 = Math.max(box.h / 2, bounds.y + bounds.h + pad);
  const view = [x0, y0, x1 - x0, y1 - y0].map((n) => n.toFixed(2)).join(" ");
  const tiles = nodes.map((n) => {
    const isCandidate = candidates.includes(n.tile);
    const cls = [n.index === last ? "last" : "", n.index === last && fresh ? "fresh" : "",
      isCandidate ? "candidate" : "",
      n.spinner ? "spinner" : ""].join(" ");
    const attrs = isCandidate
      ? `data-tile="${n.tile}" data-on="${n.tile}" tabindex="0" role="button" aria-label="play on ${n.tile}"`
      : `data-tile="${n.tile}" aria-label="${n.tile}"`;
    return tileSvg(n.near, n.far, { cx: n.rect.cx, cy: n.rect.cy, angle: n.angle, cls, attrs });
  });
  return `<svg class="board-svg" viewBox="${view}" preserveAspectRatio="xMidYMid meet"
 role="group" aria-label="layout of ${nodes.length} tiles">${tiles.join("")}</svg>`;
}
