/**
 * Rematch (docs/players.md "Rematch", protocol.md §9): the click on the game-over dialog's
 * "Rematch" button (view/rematch.js draws it): the request with the seat token, and, once `table.rematch.table` appears, claiming the new
 * seat (POST /api/tables/{old}/rematch/seat) and moving to the new table.
 */
import { savedSeat, saveSeat } from "./api.js";
import { errorText, social } from "./community_api.js";

const claiming = new Set();

/** Claims this browser's seat at the rematch of table `oldId` and opens it (once). */
export async function claimRematch(oldId) {
  const mine = savedSeat(oldId);
  if (!mine || claiming.has(oldId)) return;
  claiming.add(oldId);
  try {
    const r = await social.rematchSeat(oldId, mine.token);
    saveSeat(r.table, { seat: r.seat, token: r.token, name: mine.name });
    location.hash = `#/t/${encodeURIComponent(r.table)}${r.invite ? `?invite=${encodeURIComponent(r.invite)}` : ""}`;
  } catch (e) {
    claiming.delete(oldId);
    const box = document.querySelector(".overlay .rematch-error");
    if (box) box.textContent = errorText(e);
  }
}

if (typeof document !== "undefined") {
  document.addEventListener("click", async (e) => {
    const button = e.target.closest?.("[data-rematch]");
    if (!button) return;
    const id = button.dataset.rematch;
    const mine = savedSeat(id);
    const error = button.closest(".rematch")?.querySelector(".rematch-error");
    if (!mine) return;
    button.disabled = true;
    try {
      const r = await social.rematch(id, mine.token);
      if (r?.rematch?.table) claimRematch(id);
      else button.textContent = "Waiting for the others…";
    } catch (err) {
      button.disabled = false;
      if (err.code === "rematch_taken") claimRematch(id);
      else if (error) error.textContent = errorText(err);
    }
  });
}
