/**
 * Quick play (docs/players.md "Quick play"): a small lobby form (preset, players, rated —
 * rated only when logged in) that asks the server for a seat (POST /api/quickplay), then polls
 * GET /api/quickplay about every 2 s ("Looking for players… (window ±N)", Cancel = DELETE).
 * The wait goes on while the player browses other pages; once matched, the seat token is kept
 * as every seat token is (api.js saveSeat) and the table opens. A `matched` notice on the
 * player socket makes it poll at once.
 */
import { currentUser, loadUser } from "./account.js";
import { playerName, saveSeat, setPlayerName } from "./api.js";
import { errorText, social } from "./community_api.js";
import { onNotice } from "./inbox.js";
import { loadMeta } from "./lobby.js";
import { defaultPreset, playerCounts, presetChoices } from "./meta.js";
import { el, fill } from "./view/dom.js";

const POLL_MS = 2000;
const state = { status: "idle", window: null, error: null, name: null };
const views = new Set();
let timer = null;
let polling = false;

const redraw = () => views.forEach((fn) => fn());

function schedule(ms = POLL_MS) {
  clearTimeout(timer);
  timer = setTimeout(poll, ms);
}

async function poll() {
  clearTimeout(timer);
  if (polling) return;
  polling = true;
  try {
    const waiting = state.status !== "idle";
    const r = await social.quickplayPoll();
    handle(r, waiting);
  } catch (e) {
    state.error = errorText(e);
    if (state.status !== "idle") schedule(POLL_MS * 2);
  } finally {
    polling = false;
  }
  redraw();
}

function handle(r, waiting) {
  state.error = null;
  if (r?.status === "queued") {
    state.status = "queued";
    state.window = r.window ?? state.window;
    schedule();
  } else if (r?.status === "matching") {
    state.status = "matching";
    schedule(500);
  } else if (r?.status === "matched" && waiting) {
    state.status = "idle";
    state.window = null;
    saveSeat(r.table, { seat: r.seat, token: r.token, name: currentUser()?.username ?? state.name ?? playerName() });
    location.hash = `#/t/${encodeURIComponent(r.table)}`;
  } else {
    state.status = "idle";
    state.window = null;
  }
}

async function join(body) {
  state.error = null;
  state.name = body.name ?? null;
  try {
    const r = await social.quickplayJoin(body);
    state.status = "queued";
    state.window = r?.window ?? null;
    schedule();
  } catch (e) {
    state.error = errorText(e);
  }
  redraw();
}

async function cancel() {
  clearTimeout(timer);
  try {
    await social.quickplayLeave();
    state.status = "idle";
    state.window = null;
    state.error = null;
  } catch (e) {
    state.error = errorText(e);
  }
  redraw();
  // a cancel that crossed a match leaves the player seated: the poll says so
  poll();
}

onNotice((n) => {
  if (n.t === "matched" && state.status !== "idle") poll();
});

/** The lobby's quick-play panel; returns {node, stop}. */
export function quickPlayPanel() {
  const box = el("div", { class: "quickplay-box" }, "Loading…");
  const node = el("section", { class: "panel quickplay" }, el("h2", {}, "Quick play"), box);
  let form = null;
  const status = el("div", { class: "quickplay-status", role: "status", "aria-live": "polite" });
  const drawStatus = () => {
    const waiting = state.status !== "idle";
    if (form) for (const c of form.elements) c.disabled = waiting || (c.name === "rated" && !currentUser());
    fill(status,
      waiting ? el("p", { class: "looking" }, state.status === "matching" ? "Found players: setting up the table…"
        : `Looking for players…${state.window ? ` (window ±${state.window})` : ""}`, " ",
      el("button", { type: "button", class: "ghost", "data-action": "cancel-quickplay", onclick: cancel }, "Cancel"))
        : null,
      state.error ? el("p", { class: "form-error" }, state.error) : null);
  };
  views.add(drawStatus);
  Promise.all([loadMeta(), loadUser()]).then(([meta]) => {
    if (!views.has(drawStatus)) return;
    const user = currentUser();
    const first = defaultPreset(meta);
    form = el("form", { class: "quickplay-form", "aria-label": "quick play" },
      el("label", { class: "field" }, el("span", {}, "Game"), el("select", { name: "qp-preset" },
        presetChoices(meta).map(([v, label]) => el("option", { value: v, selected: v === first }, label)))),
      el("label", { class: "field" }, el("span", {}, "Players"), el("select", { name: "qp-players" },
        playerCounts(meta).counts.map((n) => el("option", { value: n }, `${n} players`)))),
      el("label", { class: `check${user ? "" : " disabled"}` },
        el("input", { type: "checkbox", name: "rated", disabled: !user }), " Rated"),
      el("button", { type: "submit", class: "primary" }, "Find a game"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const body = { preset: form["qp-preset"].value, players: Number(form["qp-players"].value),
        rated: Boolean(user) && form.rated.checked };
      if (!user) {
        const name = (document.querySelector("form.create-form input[name=player]")?.value ?? playerName()).trim();
        if (name) {
          body.name = name;
          setPlayerName(name);
        }
      }
      join(body);
    });
    fill(box, form, status);
    drawStatus();
  }, (e) => {
    fill(box, el("p", { class: "form-error" }, `Could not load the games: ${e.message}`));
  });
  // a reload while queued: pick the wait up again
  if (state.status === "idle" && !polling) poll();
  return { node, stop: () => views.delete(drawStatus) };
}
