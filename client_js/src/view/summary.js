/**
 * End-of-hand summary markup from one entry of the view's `rounds`: how the hand
 * ended, who won, the bonus, every hand revealed with its pips, and the totals.
 */
import { esc } from "./dom.js";
import { uprightTile } from "./tiles.js";

const ENDS = { domino: "Domino", blocked: "Blocked", target: "Target reached" };

/** `name(seat)` gives a seat's display name. */
export function roundSummary(round, index, game, name) {
  const sides = game.sides ?? [];
  const sideName = (k) => (sides[k] ?? []).map(name).join(" & ");
  const winner = round.winner === null || round.winner === undefined
    ? "No winner" : `${esc(sideName(round.winner))} won the hand`;
  const hands = (round.hands ?? []).map((tiles, seat) => `<li class="reveal" data-seat="${seat}">
<span class="who">${esc(name(seat))}</span>
<span class="mini-hand">${tiles.length ? tiles.map((t) => uprightTile(t, { cls: "mini" })).join("") : "<em>out</em>"}</span>
<span class="pips">${round.pips?.[seat] ?? 0} pips</span></li>`).join("");
  const totals = (round.totals ?? []).map((t, k) =>
    `<li><span>${esc(sideName(k))}</span><strong>${t}</strong></li>`).join("");
  return `<section class="round-summary">
<h2>Hand ${index + 1}: ${ENDS[round.end] ?? esc(round.end)}</h2>
<p class="winner">${winner}${round.bonus ? ` · bonus <strong>+${round.bonus}</strong>` : ""}</p>
<ul class="reveals">${hands}</ul>
<h3>Totals</h3><ul class="final">${totals}</ul></section>`;
}
