/**
 * How ratings, rating changes and player statistics read on the page: pure functions over
 * the server's answers (the table document's `seats[i].player` and `ratings`, GET
 * /api/players/{name}). No DOM.
 */

/** "1532", or "1500?" while provisional; "" without a rating. */
export function ratingText(player) {
  if (!player || typeof player.rating !== "number") return "";
  return `${Math.round(player.rating)}${player.provisional ? "?" : ""}`;
}

/** A signed difference: "+23", "-7", "±0". */
export function signed(n) {
  const d = Math.round(n);
  return d > 0 ? `+${d}` : d < 0 ? `-${-d}` : "\u00b10";
}

/** "1500 → 1523 (+23)" for one seat's {before, after} (the provisional mark on `after`). */
export function ratingChangeText(change) {
  if (!change || typeof change.before !== "number" || typeof change.after !== "number") return "";
  const mark = change.provisional ? "?" : "";
  return `${Math.round(change.before)} \u2192 ${Math.round(change.after)}${mark} (${
    signed(change.after - change.before)})`;
}

/** The rating changes of a finished rated game by seat: [{seat, text, diff}] (none when null). */
export function ratingChanges(ratings) {
  if (!Array.isArray(ratings)) return [];
  return ratings.filter(Boolean).map((c, i) => ({
    seat: Number.isInteger(c.seat) ? c.seat : i,
    text: ratingChangeText(c),
    diff: Math.round((c.after ?? 0) - (c.before ?? 0)),
  })).filter((c) => c.text);
}

/** A 0..1 rate as a percentage: "62%" ("–" when unknown). */
export function percent(rate) {
  return typeof rate === "number" && Number.isFinite(rate) ? `${Math.round(rate * 100)}%` : "\u2013";
}

/** A number for a stats cell: integers as they are, fractions with one decimal. */
export function statNumber(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return value ?? "\u2013";
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

/** A date (ms since the epoch) as "1 Dec 2026" (local time, unbreakable spaces). */
export function dateText(ms) {
  if (typeof ms !== "number") return "";
  const d = new Date(ms);
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  return `${d.getDate()}\u00a0${months[d.getMonth()]}\u00a0${d.getFullYear()}`;
}

/** The rows of a family's stats table: [label, text] in a fixed order (unknown keys after). */
export const STAT_ROWS = [
  ["games", "Games"], ["wins", "Wins"], ["losses", "Losses"], ["draws", "Draws"],
  ["win_rate", "Win rate"], ["hands", "Hands"], ["hands_won", "Hands won"],
  ["won_domino", "Hands won by domino"], ["won_block", "Hands won when blocked"],
  ["play_points", "Points from plays"], ["bonus_points", "Bonus points"],
  ["points_per_hand", "Points per hand"], ["best_play", "Best play"],
  ["big_plays", "Plays of 30+"], ["longest_streak", "Longest win streak"],
  ["current_streak", "Current streak"], ["top_preset", "Most played"],
];

export function statRows(stats, presetLabel = (p) => p) {
  if (!stats) return [];
  const known = new Set(STAT_ROWS.map(([k]) => k));
  const rows = STAT_ROWS.filter(([k]) => k in stats).map(([k, label]) => [label,
    k === "win_rate" ? percent(stats[k])
      : k === "top_preset" ? (stats[k] ? presetLabel(stats[k]) : "\u2013")
        : statNumber(stats[k])]);
  for (const [k, v] of Object.entries(stats)) {
    if (!known.has(k) && (typeof v === "number" || typeof v === "string")) {
      rows.push([k.replace(/_/g, " "), statNumber(v)]);
    }
  }
  return rows;
}

/** The words of a game summary's outcome for its player. */
export function outcomeText(outcome) {
  return { win: "Won", loss: "Lost", draw: "Draw" }[outcome] ?? outcome ?? "";
}

/** A game summary's scores as "150 – 85", this player's side first when known. */
export function scoreLine(game) {
  const scores = game?.scores ?? [];
  const mine = game?.seats?.find((s) => s.seat === game.seat)?.side;
  if (!Number.isInteger(mine) || scores.length !== 2) return scores.join(" \u2013 ");
  return [scores[mine], ...scores.filter((_, i) => i !== mine)].join(" \u2013 ");
}

/** A rating's history for its chart, from the first rating (`initial`) on when the history
 * holds every rated game of the family (the server keeps the newest 200). */
export function withStart(rating, initial = 1500) {
  const history = (rating?.history ?? []).slice().sort((a, b) => a.at - b.at);
  if (history.length === 0 || rating.games !== history.length) return history;
  return [{ at: history[0].at, rating: initial, start: true }, ...history];
}
