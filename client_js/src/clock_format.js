/**
 * Clock arithmetic and text for the seat chips, from the document's `table.clock`
 * (docs/protocol.md §2: `kind`, `deadline`, `reserve`). Pure: the caller passes the time.
 *
 * A real-time seat to move has its move time plus its reserve: the deadline is the turn's
 * start + move time + reserve, and the reserve only shrinks once the move time is used up.
 * So with `left = deadline - now`, the move time left is `left - reserve` (at least 0) and
 * the reserve left is `min(reserve, left)`. A turn-based clock has one bank: `left`.
 */

/** Under this much time left in all (real-time tables) a seat's clock shows as low. */
export const LOW_MS = 10_000;
/** Turn-based tables (hours per move): low under an hour. */
export const LOW_TURN_MS = 3_600_000;

/** Milliseconds as m:ss, or 1h05 for an hour or more (rounded up to the second). */
export function formatClock(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 3600) {
    const h = Math.floor(s / 3600);
    return `${h}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}`;
  }
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/**
 * What a seat's clock shows at `now`: `null` when it has none (no clock, or a bot seat),
 * else `{running, move, reserve, left, low}` in milliseconds (`move`/`reserve` null when
 * they do not apply).
 */
export function seatClock(clock, seat, { turn = null, bot = false, over = false, now = Date.now() } = {}) {
  if (!clock?.kind || bot) return null;
  const reserve = clock.reserve?.[seat] ?? null;
  const running = Boolean(clock.deadline) && seat === turn && !over;
  if (!running) {
    return { running: false, move: null, reserve, left: reserve, low: false };
  }
  const left = Math.max(0, clock.deadline - now);
  const low = left < (clock.kind === "turn" ? LOW_TURN_MS : LOW_MS);
  if (clock.kind === "realtime" && reserve !== null) {
    return { running: true, move: Math.max(0, left - reserve), reserve: Math.min(reserve, left), left, low };
  }
  return { running: true, move: left, reserve: null, left, low };
}

/** The text of a seat's clock: "0:05 + 1:55" (move time + reserve) for the real-time seat to
 * move, "1:55" (the reserve) for one waiting, the bank left on a turn-based clock. */
export function clockText(c) {
  if (!c) return "";
  if (c.running) {
    return c.reserve !== null ? `${formatClock(c.move)} + ${formatClock(c.reserve)}` : formatClock(c.move);
  }
  return c.reserve !== null ? formatClock(c.reserve) : "";
}

/** A spoken / tooltip version: "5 s to move, then 1:55 reserve". */
export function clockTitle(c) {
  if (!c) return "";
  if (c.running && c.reserve !== null) {
    return `move time ${formatClock(c.move)}, then reserve ${formatClock(c.reserve)}`;
  }
  if (c.running) return `time left ${formatClock(c.move)}`;
  return c.reserve !== null ? `reserve ${formatClock(c.reserve)}` : "";
}
