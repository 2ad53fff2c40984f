/**
 * The browser's Notification API, only once the player allowed it from a button (never asked
 * on load).
 */
import { el } from "./view/dom.js";

export function notificationsSupported() {
  return typeof window !== "undefined" && "Notification" in window;
}

/** Shows a system notification when allowed and the page is not in view; clicking opens `href`. */
export function systemNotify(title, body, href, tag) {
  if (!notificationsSupported() || Notification.permission !== "granted") return;
  if (document.visibilityState === "visible" && document.hasFocus()) return;
  try {
    const n = new Notification(title, { body, tag });
    n.onclick = () => {
      window.focus();
      if (href) location.hash = href;
      n.close();
    };
  } catch {
    // some browsers allow notifications only from a service worker: the toast is enough
  }
}

/** A small control: "Turn on notifications" (asks permission on click) or the current state. */
export function notificationControl() {
  const box = el("p", { class: "notify-control muted" });
  const draw = () => {
    box.replaceChildren();
    if (!notificationsSupported()) {
      box.append("This browser cannot show notifications; your turns show on the page.");
    } else if (Notification.permission === "granted") {
      box.append("Notifications are on: you are told of your turn when this page is not in view.");
    } else if (Notification.permission === "denied") {
      box.append("Notifications are blocked for this site (the browser's site settings can allow them).");
    } else {
      box.append(el("button", { type: "button", class: "ghost", "data-action": "notify",
        onclick: () => Notification.requestPermission().then(draw, draw) },
      "Turn on notifications"), " to hear of your turn when this page is not in view.");
    }
  };
  draw();
  return box;
}
