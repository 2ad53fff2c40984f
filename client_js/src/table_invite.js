/**
 * "Invite a friend" at a table the player sits at (logged in): choose among friends (online
 * ones first) and send POST /api/tables/{id}/invite, with the private table's invite code the
 * page has (the #/t/<id>?invite= of the creator's or an invitee's link). Mounted in the table
 * page's side panel; shown only while this browser holds a seat there.
 */
import { currentUser } from "./account.js";
import { savedSeat } from "./api.js";
import { errorText, social } from "./community_api.js";
import { el, fill } from "./view/dom.js";

export function mountTableInvite(root, id, invite = null) {
  const select = el("select", { name: "friend", "aria-label": "friend to invite" });
  const send = el("button", { type: "button", class: "primary", "data-action": "send-invite" }, "Invite");
  const status = el("p", { class: "invite-status muted", role: "status" });
  const body = el("div", { class: "invite-body" }, el("p", { class: "muted" }, "Loading your friends…"));
  const box = el("details", { class: "panel invite-friend", hidden: true },
    el("summary", {}, "Invite a friend"), body, status);
  let stopped = false;
  let placed = false;

  async function loadFriends() {
    fill(body, el("p", { class: "muted" }, "Loading your friends…"));
    try {
      const { friends = [] } = await social.follows();
      if (stopped) return;
      if (friends.length === 0) {
        fill(body, el("p", { class: "muted" }, "No friends yet: ",
          el("a", { href: "#/friends" }, "follow players"), " who follow you back."));
        return;
      }
      const sorted = friends.slice().sort((a, b) => Number(b.online) - Number(a.online));
      fill(select, sorted.map((f) => el("option", { value: f.name }, `${f.name}${f.online ? " (online)" : ""}`)));
      fill(body, el("div", { class: "invite-row" }, select, send));
    } catch (e) {
      if (!stopped) fill(body, el("p", { class: "form-error" }, errorText(e)));
    }
  }

  send.addEventListener("click", async () => {
    const name = select.value;
    if (!name) return;
    send.disabled = true;
    status.className = "invite-status muted";
    status.textContent = "";
    try {
      await social.invite(id, name, invite);
      status.textContent = `Invitation sent to ${name}.`;
    } catch (e) {
      status.className = "invite-status form-error";
      status.textContent = e.code === "not_allowed" ? `${name} is not your friend, or you do not sit here.` : errorText(e);
    } finally {
      send.disabled = false;
    }
  });
  box.addEventListener("toggle", () => {
    if (box.open) loadFriends();
  });

  const check = () => {
    if (stopped) return;
    if (!placed) {
      const side = root.querySelector(".table-page .side");
      if (side) {
        side.prepend(box);
        placed = true;
      }
    }
    box.hidden = !(currentUser() && savedSeat(id));
  };
  check();
  const timer = setInterval(check, 1500);
  return () => {
    stopped = true;
    clearInterval(timer);
    box.remove();
  };
}
