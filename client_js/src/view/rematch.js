/**
 * The game-over dialog's rematch section: a "Rematch" button for a seated player, who accepted
 * so far (`table.rematch.accepted`), and once the rematch table is made, "Starting the
 * rematch…" (src/rematch.js moves the player) or, for a spectator, a link to watch it. Markup
 * only; the click is src/rematch.js's.
 */
import { esc } from "./dom.js";

/** The game-over dialog's rematch section (markup), or "" where there is none. */
export function rematchSection(table, state, name) {
  if (!table || table.status !== "finished") return "";
  const r = table.rematch ?? null;
  const seated = state?.seat !== null && state?.seat !== undefined;
  const accepted = r?.accepted ?? [];
  if (!seated && !r) return "";
  const who = accepted.length
    ? `<p class="rematch-accepted" data-accepted="${esc(accepted.join(","))}">Rematch accepted by ${accepted.map((s) => esc(name(s))).join(", ")}</p>`
    : "";
  let action = "";
  if (r?.table) {
    action = seated
      ? `<p class="rematch-moving" role="status">Starting the rematch…</p>`
      : `<a class="button primary" href="#/t/${esc(encodeURIComponent(r.table))}">Watch the rematch</a>`;
  } else if (seated && accepted.includes(state.seat)) {
    action = `<p class="rematch-wait" role="status">Waiting for the others to accept…</p>`;
  } else if (seated) {
    action = `<button type="button" class="primary" data-rematch="${esc(table.id)}">Rematch</button>`;
  }
  return `<section class="rematch" aria-live="polite">${who}${action}<p class="form-error rematch-error" role="alert"></p></section>`;
}

