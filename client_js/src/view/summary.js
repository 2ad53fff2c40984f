/**
 * End-of-hand summary markup from one entry of the view's `rounds`: how the hand
 * ended, who won, the bonus, each side's points from plays and from the bonus, every hand
 * revealed with its pips, and the totals.
 */
import { handPoints } from "../why.js";
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
  const points = handPoints(game, index);
  const signed = (n) => (n > 0 ? `+${n}` : `${n}`);
  const breakdown = points.length ? `<table class="hand-points">
<thead><tr><th scope="col">This hand</th><th scope="col">Plays</th><th scope="col">Bonus</th><th scope="col">Total</th></tr></thead>
<tbody>${points.map((p, k) => `<tr data-side="${k}"><th scope="row">${esc(sideName(k))}</th>
<td class="plays">${signed(p.plays)}</td><td class="bonus">${signed(p.bonus)}</td><td class="total">${signed(p.total)}</td></tr>`).join("")}</tbody></table>` : "";
  return `<section class="round-summary">
<h2>Hand ${index + 1}: ${ENDS[round.end] ?? esc(round.end)}</h2>
<p class="winner">${winner}${round.bonus ? ` · bonus <strong>+${round.bonus}</strong>` : ""}</p>
${breakdown}
<ul class="reveals">${hands}</ul>
<h3>Totals</h3><ul class="final">${totals}</ul></section>`;
}
