/**
 * Leaderboards (#/leaderboards/<family>, fives by default): a tab per rating family (GET
 * /api/meta `families`), the family's top players (GET /api/leaderboards/{family}) and,
 * for a logged-in player on the board, their own rank.
 */
import { currentUser, loadUser } from "./account.js";
import { api } from "./api.js";
import { loadMeta } from "./lobby.js";
import { families, familyLabel, ratingSettings } from "./meta.js";
import { boardKindTabs } from "./seasons.js";
import { el, fill } from "./view/dom.js";

export const DEFAULT_FAMILY = "fives";

export function showLeaderboard(root, family = null) {
  const chosen = family || DEFAULT_FAMILY;
  const tabs = el("nav", { class: "tabs", "aria-label": "game families" });
  const title = el("h1", {}, "Leaderboard");
  const mine = el("p", { class: "my-rank", "aria-live": "polite", hidden: true });
  const board = el("div", { class: "board-box", "aria-live": "polite" }, "Loading…");
  fill(root, el("section", { class: "panel page-panel leaderboard-page", "data-family": chosen },
    title, boardKindTabs(chosen, "ratings"), tabs, mine, board));
  let stopped = false;
  const drawTabs = (meta) => fill(tabs, ...families(meta).map((f) => el("a", {
    href: `#/leaderboards/${encodeURIComponent(f.name)}`, class: `tab${f.name === chosen ? " current" : ""}`,
    "aria-current": f.name === chosen ? "page" : null, "data-family": f.name }, f.label)));
  drawTabs(null);
  loadMeta().then((meta) => {
    if (stopped) return;
    drawTabs(meta);
    title.textContent = `Leaderboard: ${familyLabel(meta, chosen)}`;
  }, () => {});
  title.textContent = `Leaderboard: ${familyLabel(null, chosen)}`;

  Promise.all([api.leaderboard(chosen), loadUser(), loadMeta().catch(() => null)]).then(([data, , meta]) => {
    if (stopped) return;
    if (data.label) title.textContent = `Leaderboard: ${data.label}`;
    const me = currentUser();
    const players = data.players ?? [];
    if (data.me && Number.isInteger(data.me.rank)) {
      mine.hidden = false;
      fill(mine, "Your rank: ", el("strong", { class: "rank" }, String(data.me.rank)),
        ` · rating ${data.me.rating} · ${data.me.games} rated game${data.me.games === 1 ? "" : "s"}`);
    } else if (me) {
      mine.hidden = false;
      fill(mine, el("span", { class: "muted" },
        `You are not on this board yet: players appear after ${ratingSettings(meta).provisional_games} rated games of this family, while they keep playing (the board is updated every minute).`));
    }
    if (players.length === 0) {
      fill(board, el("p", { class: "muted empty" }, "Nobody has a rating in this family yet."));
      return;
    }
    const isMe = (p) => me && p.name.toLowerCase() === me.username.toLowerCase();
    fill(board, el("table", { class: "leaderboard" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col", class: "num" }, "#"),
        el("th", { scope: "col" }, "Player"), el("th", { scope: "col", class: "num" }, "Rating"),
        el("th", { scope: "col", class: "num" }, "Games"))),
      el("tbody", {}, players.map((p) => el("tr", { class: isMe(p) ? "is-me" : null, "data-player": p.name },
        el("td", { class: "num" }, String(p.rank)),
        el("td", { class: "player" }, el("a", { href: `#/players/${encodeURIComponent(p.name)}` }, p.name)),
        el("td", { class: "num" }, String(p.rating)),
        el("td", { class: "num" }, String(p.games)))))));
  }, (e) => {
    if (!stopped) {
      fill(board, el("p", { class: "form-error" }, e.code === "unknown_family"
        ? `There is no game family "${chosen}".` : `Could not load the leaderboard: ${e.message}`));
    }
  });
  return () => {
    stopped = true;
  };
}
