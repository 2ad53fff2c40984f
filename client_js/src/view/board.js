/**
 * The layout on the felt: an SVG of real dominoes placed by geometry.js, the last tile
 * played marked, and, while the player chooses where to put a tile, the candidate ends
 * highlighted and clickable. Draws from the game view only; never decides legality.
 */
import { placeLayout } from "./geometry.js";
import { tileSvg } from "./tiles.js";

/** The box arms must stay inside, in tile units, from the space the board has. */
export function boxFor(width, height) {
  const aspect = Math.max(0.5, Math.min(2.4, width / Math.max(1, height)));
  const w = Math.max(10, Math.min(28, Math.round(16 * Math.sqrt(aspect))));
  return { w, h: Math.max(12, Math.round(w / aspect)) };
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
  // never zoom in past the box's scale, so a short layout keeps tiles a sensible size
  const w = Math.max(bounds.w + 1.2, box.w * 0.8);
  const h = Math.max(bounds.h + 1.2, box.h * 0.8);
  const view = [bounds.x + bounds.w / 2 - w / 2, bounds.y + bounds.h / 2 - h / 2, w, h]
    .map((n) => n.toFixed(2)).join(" ");
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
