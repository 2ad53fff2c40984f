/**
 * The table's two rooms around the game: the waiting room (seats to take, the player's
 * name, the invite link of a private table) and the dialogs over the felt (a finished
 * hand's summary, the game-over screen with the fair-deal check and, at a rated table, each
 * seat's rating change). Draw only; intents go to `actions`.
 */
import { currentUser } from "../account.js";
import { ratingChanges, ratingText } from "../ratings.js";
import { el, esc, fill } from "./dom.js";
import { rematchSection } from "./rematch.js";
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

/**
 * Which dialog the table shows now: "over" (the game-over screen), "between:<k>" (hand k is
 * over and the table waits for the next deal: `table.next_hand`), "round:<k>" (the summary of
 * hand k, not yet dismissed, once the next hand is dealt) or null.
 */
export function dialogKey(game, table, ui) {
  const rounds = game?.rounds ?? [];
  if (game?.game_over || (game && table?.status === "finished")) return "over";
  if (game && table?.next_hand && (game.turn === null || game.turn === undefined) && rounds.length) {
    return `between:${rounds.length - 1}`;
  }
  if (!game || ui.seenRounds === null || rounds.length <= ui.seenRounds) return null;
  return `round:${rounds.length - 1}`;
}

/**
 * Shows the game-over screen, the pause between hands (the hand's summary, the countdown to
 * the next deal, who is ready and the Ready button) or the summary of a hand not yet seen,
 * in overlay `o`. A dialog the player closed (to look at the board) leaves a button that
 * opens it again.
 */
export function drawDialog(o, { game, table, ui, state, name }) {
  const rounds = game?.rounds ?? [];
  const result = table?.result ?? null;
  const key = dialogKey(game, table, ui);
  o.classList.toggle("collapsed", Boolean(key) && ui.closedDialog === key);
  if (key && ui.closedDialog === key) {
    const words = key === "over" ? "Show the result" : "Show the hand's summary";
    o.hidden = false;
    o.innerHTML = `<button type="button" class="primary reopen" data-reopen>${words}</button>`;
    return;
  }
  const close = `<button type="button" class="ghost close-dialog" data-close="${esc(key)}">Look at the board</button>`;
  if (key === "over") {
    const w = game.game_over ? game.winner : result?.winner ?? null;
    const reason = endReason(result, name);
    const how = reason ? `<p class="reason">${esc(reason)}</p>` : "";
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
${rematchSection(table, state, name)}
${rounds.length ? roundSummary(rounds.at(-1), rounds.length - 1, game, name) : ""}
${fairDeal(ui.fair, table, ui.invite)}
<p class="dialog-actions">${close}<a class="button primary" href="#/replay/${esc(table?.id)}${
  ui.invite ? `?invite=${esc(encodeURIComponent(ui.invite))}` : ""}">Watch the replay</a>
${profileLink()}<a class="button ghost" href="#/">Lobby</a></p></div>`;
    return;
  }
  if (key === null) {
    o.hidden = true;
    o.innerHTML = "";
    return;
  }
  const k = rounds.length - 1;
  o.hidden = false;
  if (key.startsWith("between:")) {
    const next = table.next_hand;
    const ready = new Set(next.ready ?? []);
    const online = state.presence ?? [];
    const seats = (table.seats ?? []).map((s, i) => {
      const words = s?.bot ? "bot" : ready.has(i) ? "ready" : online[i] ? "not ready yet" : "away";
      return `<li data-seat="${i}" class="${ready.has(i) ? "is-ready" : ""}"><span>${esc(name(i))}</span> <em>${words}</em></li>`;
    }).join("");
    const seated = state.seat !== null && state.seat !== undefined;
    const iAmReady = seated && (ready.has(state.seat) || ui.readySent === k);
    const readyButton = !seated ? ""
      : iAmReady ? `<span class="ready-wait" role="status">Waiting for others…</span>`
        : `<button type="button" class="primary" data-ready>Ready</button>`;
    o.innerHTML = `<div class="dialog between-hands" role="dialog" aria-label="hand summary">
${roundSummary(rounds[k], k, game, name)}
<section class="next-hand"><h3>Next hand</h3>
<p class="countdown" data-deadline="${Number(next.deadline) || ""}">${countdownText(next.deadline)}</p>
<ul class="ready-list">${seats}</ul></section>
<p class="dialog-actions">${close}${readyButton}</p></div>`;
    const focus = o.querySelector("[data-ready]") ?? o.querySelector("[data-close]");
    if (!o.contains(document.activeElement)) focus?.focus();
    return;
  }
  o.innerHTML = `<div class="dialog" role="dialog" aria-label="hand summary">
${roundSummary(rounds[k], k, game, name)}
<p class="dialog-actions"><button type="button" class="primary" data-dismiss>Next hand</button></p></div>`;
  o.querySelector("[data-dismiss]")?.focus();
}

const FORFEIT_WORDS = {
  time: "ran out of time and forfeited.",
  leave: "left the game and forfeited.",
};

/**
 * How a game ended early, in words, from `table.result` (protocol.md §2): a forfeit names the
 * seat and its `cause` (its clock ran out, or the player left a rated game); an abandoned game
 * and the hand limit say so. A game played to its end (`game_end`) needs no words: null.
 */
export function endReason(result, name) {
  switch (result?.reason) {
    case "forfeit": {
      if (result.seat === null || result.seat === undefined) return "The game was forfeited.";
      return `${name(result.seat)} ${FORFEIT_WORDS[result.cause] ?? "forfeited the game."}`;
    }
    case "abandoned":
      return "Nobody was at the table any more: the game was abandoned.";
    case "hand_limit":
      return "The game reached the most hands a game may last: the side ahead wins.";
    default:
      return null;
  }
}

/** "Next hand in 0:18" until `deadline` (ms since the epoch), then "Dealing…". */
export function countdownText(deadline, now = Date.now()) {
  const left = Math.ceil(((Number(deadline) || 0) - now) / 1000);
  if (!deadline || left <= 0) return "Dealing…";
  return `Next hand in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
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
