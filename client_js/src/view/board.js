/**
 * The layout on the felt: an SVG of real dominoes placed by geometry.js, the last tile
 * played marked, and, while the player chooses where to put a tile, the candidate ends
 * highlighted and clickable. Draws from the game view only; never decides legality.
 */
import { placeLayout } from "./geometry.js";
import { tileSvg } from "./tiles.js";

/** The largest a unit (half a tile's length, a tile's width) is drawn, in CSS px. */
export const MAX_UNIT = 44;

/**
 * The box arms must stay inside, in tile units, from the board's size in pixels: a unit
 * (half a tile) of 20 to 40 px, as many units as the board holds. The lead sits at its
 * centre and arms turn at the box's edges. The board's size rides along (`px`) so that
 * boardSvg can show the layout as large as it fits.
 */
export function boxFor(width, height) {
  const unit = Math.max(20, Math.min(40, width / 22));
  return {
    w: Math.max(10, Math.floor(width / unit)), h: Math.max(12, Math.floor(height / unit)),
    px: { w: width, h: height },
  };
}

/**
 * The part of the plane to show, in tile units: the layout's bounds with room for one more
 * tile at every end, grown to the board's shape, but never so small that a unit would be
 * drawn larger than MAX_UNIT px. Without the board's size: the whole box (as before).
 */
export function viewFor(bounds, box) {
  const pad = 2.3;
  let x0 = bounds.x - pad;
  let y0 = bounds.y - pad;
  let w = bounds.w + 2 * pad;
  let h = bounds.h + 2 * pad;
  if (!box.px || !(box.px.w > 0) || !(box.px.h > 0)) {
    x0 = Math.min(-box.w / 2, bounds.x - 0.5);
    y0 = Math.min(-box.h / 2, bounds.y - 0.5);
    return { x: x0, y: y0, w: Math.max(box.w / 2, bounds.x + bounds.w + 0.5) - x0,
      h: Math.max(box.h / 2, bounds.y + bounds.h + 0.5) - y0 };
  }
  const aspect = box.px.w / box.px.h;
  const minW = box.px.w / MAX_UNIT;
  const fw = Math.max(w, h * aspect, minW);
  const fh = fw / aspect;
  x0 -= (fw - w) / 2;
  y0 -= (fh - h) / 2;
  return { x: x0, y: y0, w: fw, h: fh };
}

/**
 * SVG markup for a layout. `candidates`: tile strings that may take the selected tile
 * (drawn highlighted, focusable, with data-on); `last`: index of the tile to mark;
 * `suggested`: the tile a hint plays on (marked, not focusable).
 */
export function boardSvg(layout, {
  box, candidates = [], last = null, fresh = false, empty = "Waiting for the lead",
  suggested = null,
} = {}) {
  if (!layout || layout.length === 0) {
    return `<p class="board-empty">${empty}</p>`;
  }
  const { nodes, bounds } = placeLayout(layout, box);
  // as large as the board allows: the layout and room for the next tiles, fitted to the board
  const v = viewFor(bounds, box);
  const view = [v.x, v.y, v.w, v.h].map((n) => n.toFixed(2)).join(" ");
  const tiles = nodes.map((n) => {
    const isCandidate = candidates.includes(n.tile);
    const isSuggested = !isCandidate && suggested === n.tile;
    const cls = [n.index === last ? "last" : "", n.index === last && fresh ? "fresh" : "",
      isCandidate ? "candidate" : "", isSuggested ? "suggested" : "",
      n.spinner ? "spinner" : ""].join(" ");
    const attrs = isCandidate
      ? `data-tile="${n.tile}" data-on="${n.tile}" tabindex="0" role="button" aria-label="play on ${n.tile}"`
      : `data-tile="${n.tile}" aria-label="${n.tile}${isSuggested ? ", the hint plays here" : ""}"`;
    return tileSvg(n.near, n.far, { cx: n.rect.cx, cy: n.rect.cy, angle: n.angle, cls, attrs });
  });
  return `<svg class="board-svg" viewBox="${view}" data-view="${view}" preserveAspectRatio="xMidYMid meet"
 role="group" aria-label="layout of ${nodes.length} tiles">${tiles.join("")}</svg>`;
}

/**
 * Zoom on the board: pinch (two fingers), double-tap or double-click to zoom in on a spot
 * and back out, and drag with one finger or the mouse to look around while zoomed. Works
 * on the SVG's viewBox (the base view is kept in data-view by boardSvg), so a redraw keeps
 * the zoom: call `apply()` after each one. A drag or pinch does not click what it ends on.
 */
export class BoardZoom {
  constructor(board, { max = 4, tapZoom = 2 } = {}) {
    this.board = board;
    this.max = max;
    this.tapZoom = tapZoom;
    this.k = 1;
    this.fx = 0.5; // the centre of the zoomed view, as a fraction of the base view
    this.fy = 0.5;
    this.pointers = new Map();
    this.lastTap = null;
    this.moved = false;
    const on = (type, fn, opts) => {
      board.addEventListener(type, fn, opts);
      return () => board.removeEventListener(type, fn, opts);
    };
    this.off = [
      on("pointerdown", (e) => this.down(e)),
      on("pointermove", (e) => this.move(e)),
      on("pointerup", (e) => this.up(e)),
      on("pointercancel", (e) => this.pointers.delete(e.pointerId)),
      on("dblclick", (e) => {
        if (e.pointerType === "touch" || this.touchTapAt > Date.now() - 600) return;
        this.toggleAt(e.clientX, e.clientY);
      }),
      on("wheel", (e) => {
        if (!e.ctrlKey) return; // a trackpad pinch arrives as ctrl + wheel
        e.preventDefault();
        this.zoomAt(e.clientX, e.clientY, this.k * Math.exp(-e.deltaY / 200));
      }, { passive: false }),
      // after a drag or a pinch, the click that follows is not a move
      on("click", (e) => {
        if (this.moved) {
          e.stopPropagation();
          e.preventDefault();
          this.moved = false;
        }
      }, true),
    ];
  }

  destroy() {
    this.off.forEach((f) => f());
  }

  reset() {
    this.k = 1;
    this.fx = 0.5;
    this.fy = 0.5;
  }

  svg() {
    return this.board.querySelector("svg.board-svg[data-view]");
  }

  /** Puts the current zoom on the SVG drawn last. */
  apply() {
    const svg = this.svg();
    this.board.dataset.zoom = this.k.toFixed(2);
    this.board.classList.toggle("zoomed", this.k > 1.01);
    if (!svg) return;
    const [x, y, w, h] = svg.dataset.view.split(" ").map(Number);
    const zw = w / this.k;
    const zh = h / this.k;
    // keep the zoomed view inside the base view
    const cx = Math.min(Math.max(x + this.fx * w, x + zw / 2), x + w - zw / 2);
    const cy = Math.min(Math.max(y + this.fy * h, y + zh / 2), y + h - zh / 2);
    this.fx = (cx - x) / w;
    this.fy = (cy - y) / h;
    svg.setAttribute("viewBox", [cx - zw / 2, cy - zh / 2, zw, zh].map((n) => n.toFixed(3)).join(" "));
  }

  /** Zooms to `k`, keeping the plane's point under (clientX, clientY) where it is. */
  zoomAt(clientX, clientY, k) {
    const svg = this.svg();
    const next = Math.min(this.max, Math.max(1, k));
    if (!svg) return;
    const r = svg.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    // the spot as a fraction of the (square-fitted) drawing: meet keeps the aspect
    const px = (clientX - r.left) / r.width - 0.5;
    const py = (clientY - r.top) / r.height - 0.5;
    const fx = this.fx + px / this.k;
    const fy = this.fy + py / this.k;
    this.k = next;
    this.fx = fx - px / next;
    this.fy = fy - py / next;
    this.apply();
  }

  toggleAt(clientX, clientY) {
    if (this.k > 1.01) {
      this.reset();
      this.apply();
    } else {
      this.zoomAt(clientX, clientY, this.tapZoom);
    }
  }

  down(e) {
    this.pointers.set(e.pointerId, { x: e.clientX, y: e.clientY, x0: e.clientX, y0: e.clientY });
    if (this.pointers.size === 1) this.moved = false;
    if (this.pointers.size === 2) this.pinch = { d: this.spread(), k: this.k };
  }

  move(e) {
    const p = this.pointers.get(e.pointerId);
    if (!p) return;
    const dx = e.clientX - p.x;
    const dy = e.clientY - p.y;
    p.x = e.clientX;
    p.y = e.clientY;
    if (Math.hypot(p.x - p.x0, p.y - p.y0) > 8) this.moved = this.moved || this.k > 1.01 || this.pointers.size > 1;
    if (this.pointers.size === 2 && this.pinch) {
      const [a, b] = [...this.pointers.values()];
      const d = this.spread();
      if (this.pinch.d > 0) this.zoomAt((a.x + b.x) / 2, (a.y + b.y) / 2, this.pinch.k * (d / this.pinch.d));
      this.moved = true;
      return;
    }
    if (this.pointers.size === 1 && this.k > 1.01 && (e.buttons || e.pointerType === "touch")) {
      const svg = this.svg();
      const r = svg?.getBoundingClientRect();
      if (!r || r.width === 0) return;
      this.fx -= dx / r.width / this.k;
      this.fy -= dy / r.height / this.k;
      this.apply();
    }
  }

  up(e) {
    const p = this.pointers.get(e.pointerId);
    this.pointers.delete(e.pointerId);
    if (this.pointers.size < 2) this.pinch = null;
    if (!p || e.pointerType !== "touch") return;
    if (Math.hypot(e.clientX - p.x0, e.clientY - p.y0) > 12 || this.pointers.size) return;
    // a double tap: two taps close together in time and place
    const now = Date.now();
    const last = this.lastTap;
    if (last && now - last.t < 350 && Math.hypot(e.clientX - last.x, e.clientY - last.y) < 40) {
      this.lastTap = null;
      this.touchTapAt = now;
      this.toggleAt(e.clientX, e.clientY);
    } else {
      this.lastTap = { t: now, x: e.clientX, y: e.clientY };
    }
  }

  spread() {
    const [a, b] = [...this.pointers.values()];
    return a && b ? Math.hypot(a.x - b.x, a.y - b.y) : 0;
  }
}
