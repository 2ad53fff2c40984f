/**
 * Small DOM building blocks shared by the views: escaping text for markup and making
 * elements. No state, no knowledge of the game.
 */

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes any value for use inside markup or an attribute. */
export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESC[c]);
}

/** Creates an element: el("button", {class: "x", onclick: fn}, "text", child, ...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "html") {
      node.innerHTML = value;
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Formats milliseconds left as m:ss, or h:mm for long turn-based clocks. */
export function formatClock(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 3600) {
    const h = Math.floor(s / 3600);
    return `${h}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}`;
  }
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** Replaces a node's children, skipping null/false entries (replaceChildren would print "null"). */
export function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** A seat's display name; seats sharing a name (several bots) get their seat number. */
export function seatLabel(seats, seat) {
  const base = (s, i) => (!s ? `Seat ${i + 1}` : s.bot ? s.name || "Bot"
    : s.name || (s.taken ? `Seat ${i + 1}` : "free seat"));
  const name = base(seats[seat], seat);
  const twins = seats.filter((s, i) => base(s, i) === name).length > 1;
  return twins ? `${name} ${seat + 1}` : name;
}
