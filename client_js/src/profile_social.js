/**
 * The profile's "Follow" button (logged in, someone else's profile): Follow / Unfollow, and a
 * "Message" link once you are friends.
 */
import { currentUser } from "./account.js";
import { errorText, social } from "./community_api.js";
import { el, fill } from "./view/dom.js";

export function followControl(name) {
  const box = el("p", { class: "follow-control" });
  if (!currentUser()) return null;
  const lower = String(name).toLowerCase();
  const error = el("span", { class: "form-error" });
  const draw = (f) => {
    const following = (f.following ?? []).some((n) => n.toLowerCase() === lower);
    const friend = (f.friends ?? []).some((x) => x.name.toLowerCase() === lower);
    const button = el("button", { type: "button", class: following ? "ghost" : "primary",
      "data-action": following ? "unfollow" : "follow", onclick: async () => {
        button.disabled = true;
        error.textContent = "";
        try {
          await (following ? social.unfollow(name) : social.follow(name));
        } catch (e) {
          error.textContent = errorText(e);
        }
        load();
      } }, following ? "Unfollow" : "Follow");
    fill(box, button, friend ? el("span", { class: "tag friend-tag" }, "friend") : null,
      friend ? el("a", { class: "button ghost", href: `#/messages/${encodeURIComponent(name)}` }, "Message") : null,
      error);
  };
  const load = () => social.follows().then(draw, (e) => { error.textContent = errorText(e); fill(box, error); });
  load();
  return box;
}
