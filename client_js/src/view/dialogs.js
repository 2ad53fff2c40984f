/**
 * The table's two rooms around the game: the waiting room (seats to take, the player's
 * name, the invite link of a private table) and the dialogs over the felt (a finished
 * hand's summary, the game-over screen with the fair-deal check and, at a rated table, each
 * seat's rating change). Draw only; intents go to `actions`.
 */
import { currentUser } from "../account.js";
import { ratingChanges, ratingText } from "../ratings.js";
import { el, esc, fill } from "./dom.js";
import { roundSummary } from "./summary.js";

/** Fills the waiting room `w`; hidden unless the table waits for players. */
export function drawWaitingRoom(w, { table, game, state, ui, actions, name }) {
  w.hidden = !(table && table.status === "waiting" && !game);
  if (w.hidden) return;
  const seats = table.seats ?? [];
  const canJoin = state.seat === null;
  const user = currentUser();
  const rated = Boolean(table.rated);
  const rating = (s) => (s?.player ? el("span", { class: "seat-rating" }, ` ${ratingText(s.player)}`) : null);
  const invite = ui.invite
    ? `${location.origin}${location.pathname}#/t/${table.id}?invite=${encodeURIComponent(ui.invite)}`
    : null;
  fill(w,
    el("h2", {}, table.name || "Table", rated ? el("span", { class: "tag rated" }, "rated") : null),
    el("p", {}, "Waiting for players…"),
    rated && canJoin && !user ? el("p", { class: "rated-note" },
      "This table is rated: only players with an account may sit. ",
      el("a", { href: "#/login" }, "Log in"), " or ", el("a", { href: "#/register" }, "register"),
      ".") : null,
    el("ul", { class: "waiting-seats" }, seats.map((s, i) => el("li", {},
      el("span", {}, `Seat ${i + 1}: `, s.taken ? name(i) : "free", s.taken ? rating(s) : null),
      !s.taken && canJoin
        ? el("button", { type: "button", class: "primary", "data-seat": i,
          onclick: () => actions.join(i, w.querySelector("input[name=player]")?.value) },
        "Sit here")
        : null))),
    canJoin ? el("label", { class: "field" }, el("span", {}, "Your name"),
      el("input", { name: "player", maxlength: 24, value: user ? user.username : ui.name ?? "",
        readonly: Boolean(user), title: user ? "You sit under your account's name" : null,
        oninput: (e) => actions.setName(e.target.value) })) : null,
    ui.joinError ? el("p", { class: "form-error" }, ui.joinError) : null,
    invite ? el("p", { class: "invite" }, "Invite link (the table is private): ",
      el("span", { class: "invite-row" },
        el("input", { readonly: true, value: invite, class: "invite-link", "aria-label": "invite link",
          onfocus: (e) => e.target.select() }),
        el("button", { type: "button", class: "ghost", onclick: (e) => copyText(invite, e.target) },
          "Copy"))) : null,
    state.seat !== null
      ? el("p", { class: "muted" },
        `You sit at seat ${state.seat + 1}. The game starts when every seat is taken. `,
        el("button", { type: "button", class: "ghost", "data-action": "leave",
          onclick: () => actions.leave() }, "Leave the seat"))
      : null);
}

/** Shows the game-over screen, or the summary of a hand not yet seen, in overlay `o`. */
export function drawDialog(o, { game, table, ui, state, name }) {
  const rounds = game?.rounds ?? [];
  const result = table?.result ?? null;
  if (game?.game_over || (game && table?.status === "finished")) {
    const w = game.game_over ? game.winner : result?.winner ?? null;
    const how = result?.reason === "forfeit" && result.seat !== undefined
      ? `<p class="reason">${esc(name(result.seat))} ran out of time and forfeited.</p>`
      : result?.reason === "abandoned"
        ? `<p class="reason">Nobody was at the table any more: the game was abandoned.</p>` : "";
    const winners = w === null || w === undefined ? null : (game.sides[w] ?? []).map(name).join(" & ");
    const mine = state.seat !== null && Boolean(game.sides[w]?.includes(state.seat));
    const scores = game.sides.map((side, k) =>
      `<li><span>${esc(side.map(name).join(" & "))}</span><strong>${game.scores[k]}</strong></li>`).join("");
    o.hidden = false;
    o.innerHTML = `<div class="dialog game-over" role="dialog" aria-label="game over">
<h2>${mine ? "You win!" : "Game over"}</h2>${how}
<p class="winner">${winners === null ? "No winner" : `${esc(winners)} won`}</p>
<ul class="final final-scores">${scores}</ul>
${ratingSection(table, name)}
${rounds.length ? roundSummary(rounds.at(-1), rounds.length - 1, game, name) : ""}
${fairDeal(ui.fair, table, ui.invite)}
<p class="dialog-actions"><a class="button primary" href="#/replay/${esc(table?.id)}">Watch the replay</a>
${profileLink()}<a class="button ghost" href="#/">Lobby</a></p></div>`;
    return;
  }
  if (ui.seenRounds === null || rounds.length <= ui.seenRounds) {
    o.hidden = true;
    o.innerHTML = "";
    return;
  }
  const k = rounds.length - 1;
  o.hidden = false;
  o.innerHTML = `<div class="dialog" role="dialog" aria-label="hand summary">
${roundSummary(rounds[k], k, game, name)}
<p class="dialog-actions"><button type="button" class="primary" data-dismiss>Next hand</button></p></div>`;
  o.querySelector("[data-dismiss]")?.focus();
}

/** The logged-in player's profile, from the game-over dialog (the header is under it). */
function profileLink() {
  const user = currentUser();
  return user ? `<a class="button ghost profile-link" href="#/players/${esc(encodeURIComponent(user.username))}">Your profile</a>
` : "";
}

/** A rated game's rating changes by seat ("ann 1500 → 1523 (+23)"), or the wait for them. */
export function ratingSection(table, name) {
  if (!table?.rated) return "";
  const changes = ratingChanges(table.ratings);
  if (changes.length === 0) {
    return `<section class="rating-changes" data-status="pending" aria-live="polite"><h3>Ratings</h3>
<p class="muted">Updating the ratings…</p></section>`;
  }
  const items = changes.map((c) => `<li data-seat="${c.seat}" class="${c.diff > 0 ? "up" : c.diff < 0 ? "down" : ""}">
<span>${esc(name(c.seat))}</span> <strong>${esc(c.text)}</strong></li>`).join("");
  return `<section class="rating-changes" data-status="done" aria-live="polite"><h3>Ratings</h3>
<ul>${items}</ul></section>`;
}

const FAIR_TITLES = {
  checking: "Checking the deal…",
  verified: "Deal verified",
  mismatch: "Deal NOT verified",
  unavailable: "Deal not checked",
  error: "Deal not checked",
};

/** The game-over dialog's fair-deal section: what was checked, and how to check the rest. */
export function fairDeal(fair, table, invite = null) {
  if (!fair || !table) return "";
  const id = esc(table.id);
  const query = invite ? `?invite=${esc(encodeURIComponent(invite))}` : "";
  const hashed = fair.by === "crypto.subtle" ? "computed in this browser with crypto.subtle"
    : "computed in this browser by the page's own script";
  let title = FAIR_TITLES[fair.status] ?? FAIR_TITLES.error;
  let detail = "";
  if (fair.status === "verified" && fair.against === "start") {
    detail = `SHA-256 of the seed and salt revealed now (${hashed}) equals the commitment this
browser noted while the game was on, so the deals were fixed before then and not changed.`;
  } else if (fair.status === "verified") {
    title = "Seed matches the commitment shown now";
    detail = `SHA-256 of the revealed seed and salt (${hashed}) equals the commitment the table
shows now. This browser did not see the table before the game ended: compare the commitment
below with the one you saw when the game started.`;
  } else if (fair.status === "mismatch") {
    detail = `${esc(fair.reason)}${fair.computed ? ` (${hashed})` : ""}.`;
  } else if (fair.status !== "checking") {
    detail = `${esc(fair.reason ?? "the transcript could not be read")}.`;
  }
  const commitment = fair.commitment ?? table.commitment;
  return `<section class="fair-deal" data-status="${esc(fair.status)}" aria-live="polite">
<h3>${title}</h3>${detail ? `<p>${detail}</p>` : ""}
${commitment ? `<p class="commitment">Commitment <code>${esc(commitment)}</code></p>` : ""}
<p class="muted">Only the commitment is checked here. To check every hand and the boneyard
against the seed, run <code>python -m engine verify</code> on the
<a href="/api/tables/${esc(encodeURIComponent(table.id))}/transcript${query}" download="${id}.json">transcript</a>:
<a class="fair-help" href="#/fair/${esc(encodeURIComponent(table.id))}${query}">how to check it yourself</a>.</p></section>`;
}

function copyText(text, button) {
  const done = () => {
    button.textContent = "Copied";
  };
  if (navigator.clipboard?.writeText) navigator.clipboard.writeText(text).then(done, () => {});
}
