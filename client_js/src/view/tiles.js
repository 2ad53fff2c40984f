/**
 * Domino tiles as SVG markup: ivory faces with real pip patterns. A tile is drawn in
 * tile units, lying west→east (2 × 1) centred on the origin, near half west; callers
 * rotate and move it. Pure string building, no DOM.
 */

const D = 0.25;
const PIPS = {
  0: [],
  1: [[0, 0]],
  2: [[-D, -D], [D, D]],
  3: [[-D, -D], [0, 0], [D, D]],
  4: [[-D, -D], [D, -D], [-D, D], [D, D]],
  5: [[-D, -D], [D, -D], [0, 0], [-D, D], [D, D]],
  6: [[-D, -D], [0, -D], [D, -D], [-D, D], [0, D], [D, D]],
};

/** Shared gradients, put once in the page (a hidden <svg>) and used by every tile. */
export function tileDefs() {
  return `<svg class="tile-defs" width="0" height="0" aria-hidden="true"><defs>
<linearGradient id="ivory" x1="0" y1="0" x2="0.35" y2="1">
<stop offset="0" stop-color="#fffdf4"/><stop offset="0.6" stop-color="#f3ecd9"/>
<stop offset="1" stop-color="#e2d7bc"/></linearGradient>
<radialGradient id="pip" cx="0.35" cy="0.35" r="0.7">
<stop offset="0" stop-color="#3a3a3a"/><stop offset="1" stop-color="#070707"/></radialGradient>
</defs></svg>`;
}

function half(value, cx) {
  return (PIPS[value] ?? [])
    .map(([x, y]) => `<circle cx="${(cx + x).toFixed(3)}" cy="${y}" r="0.095" fill="url(#pip)"/>`)
    .join("");
}

/**
 * One tile: `near` on the west half, `far` on the east half, turned by `angle` degrees
 * and centred at (cx, cy). `cls` adds classes (e.g. "last", "candidate"), `attrs` any
 * extra attributes for the group.
 */
export function tileSvg(near, far, { cx = 0, cy = 0, angle = 0, cls = "", attrs = "" } = {}) {
  return `<g class="tile ${cls}" transform="translate(${cx.toFixed(3)} ${cy.toFixed(3)}) rotate(${angle})" ${attrs}>
<rect class="shadow" x="-0.97" y="-0.44" width="2" height="1" rx="0.13" fill="rgba(0,0,0,0.35)"/>
<rect class="face" x="-1" y="-0.5" width="2" height="1" rx="0.13" fill="url(#ivory)" stroke="#9c8f6e" stroke-width="0.03"/>
<line x1="0" y1="-0.36" x2="0" y2="0.36" stroke="#8d8163" stroke-width="0.035"/>
<circle cx="0" cy="0" r="0.045" fill="#b59a4b"/>
${half(near, -0.5)}${half(far, 0.5)}
<rect class="ring" x="-1.06" y="-0.56" width="2.12" height="1.12" rx="0.17" fill="none"/>
</g>`;
}

/** A standalone upright tile (high half on top) for hands and summaries. */
export function uprightTile(tile, { cls = "", title = "" } = {}) {
  const [a, b] = tile.split("-").map(Number);
  const label = title || `${a}-${b}`;
  return `<svg class="tile-svg ${cls}" viewBox="-0.6 -1.1 1.2 2.2" role="img" aria-label="${label}">
${tileSvg(a, b, { angle: 90 })}</svg>`;
}

/** A face-down tile (for opponents' hand sizes). */
export function tileBack() {
  return `<svg class="tile-back" viewBox="-0.6 -1.1 1.2 2.2" aria-hidden="true">
<rect x="-0.5" y="-1" width="1" height="2" rx="0.13" fill="#7a2c1e" stroke="#3b140c" stroke-width="0.04"/>
<rect x="-0.36" y="-0.86" width="0.72" height="1.72" rx="0.08" fill="none" stroke="#c99a5a" stroke-width="0.04"/></svg>`;
}
