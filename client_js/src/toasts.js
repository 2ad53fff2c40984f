/**
 * Toasts: short notices over any page (bottom corner), each with its own links or buttons and
 * a close button. No knowledge of what they say.
 */
import { el } from "./view/dom.js";

let box = null;

function container() {
  if (!box || !box.isConnected) {
    box = el("div", { class: "toasts", role: "region", "aria-label": "notices", "aria-live": "polite" });
    document.body.append(box);
  }
  return box;
}

/**
 * Shows a toast: `body` (nodes or text), `kind` (a class), `key` (a toast with the same key
 * is replaced), `ms` (hides itself after; 0: stays). Returns {node, close}.
 */
export function toast({ body, kind = "", key = null, ms = 20000 }) {
  const c = container();
  if (key) for (const old of c.querySelectorAll(".toast")) if (old.dataset.key === key) old.remove();
  let timer = null;
  const close = () => {
    clearTimeout(timer);
    node.remove();
  };
  const node = el("div", { class: `toast ${kind}`.trim(), role: "status", "data-key": key },
    el("div", { class: "toast-body" }, body),
    el("button", { type: "button", class: "ghost toast-close", "aria-label": "close", onclick: close }, "×"));
  c.append(node);
  while (c.children.length > 4) c.firstElementChild.remove();
  if (ms > 0) timer = setTimeout(close, ms);
  return { node, close };
}
