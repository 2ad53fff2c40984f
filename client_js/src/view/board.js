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
  const w = Math.max(9, Math.min(26, Math.round(14 * Math.sqrt(aspect))));
  return { w, h: Math.max(8, Math.round(w / aspect)) };
}

/**
 * SVG markup for a layout. `candidates`: tile strings that may take the selected tile
 * (drawn highlighted, focusable, with data-on); `last`: index of the tile to mark.
 */
export function boardSvg(layout, { box, candidates = [], last = null } = {}) {
  if (!layout || layout.length === 0) {
    return `<svg class="board-svg" viewBox="-4 -2 8 4" role="img" aria-label="empty layout">
<text x="0" y="0.2" class="board-empty" text-anchor="middle">Waiting for the lead</text></svg>`;
  }
  const { nodes, bounds } = placeLayout(layout, box);
  const pad = 0.6;
  const view = [bounds.x - pad, bounds.y - pad, bounds.w + 2 * pad, bounds.h + 2 * pad]
    .map((n) => n.toFixed(2)).join(" ");
  const tiles = nodes.map((n) => {
    const isCandidate = candidates.includes(n.tile);
    const cls = [n.index === last ? "last" : "", isCandidate ? "candidate" : "",
      n.spinner ? "spinner" : ""].join(" ");
    const attrs = isCandidate
      ? `data-on="${n.tile}" tabindex="0" role="button" aria-label="play on ${n.tile}"`
      : `data-tile="${n.tile}" aria-label="${n.tile}"`;
    return tileSvg(n.near, n.far, { cx: n.rect.cx, cy: n.rect.cy, angle: n.angle, cls, attrs });
  });
  return `<svg class="board-svg" viewBox="${view}" preserveAspectRatio="xMidYMid meet"
 role="group" aria-label="layout of ${nodes.length} tiles">${tiles.join("")}</svg>`;
}
