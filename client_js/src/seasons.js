/**
 * Season boards (#/seasons/<family>[?season=YYYY-MM], docs/players.md "Seasons"): the
 * leaderboards page's "Season" tab. The season's top players by points (GET
 * /api/seasons/{family}), the logged-in player's own standing, and a past season by name.
 * Also the tabs that switch between the rating board and the season board.
 */
import { currentUser, loadUser } from "./account.js";
import { errorText, social } from "./community_api.js";
import { loadMeta } from "./lobby.js";
import { families, familyLabel } from "./meta.js";
import { el, fill } from "./view/dom.js";

/** The "Ratings | Season" tabs of the leaderboards pages. */
export function boardKindTabs(family, current) {
  const f = encodeURIComponent(family);
  const tab = (href, text, key) => el("a", { href, class: `kind-tab${key === current ? " current" : ""}`,
    "aria-current": key === current ? "page" : null, "data-board": key }, text);
  return el("nav", { class: "board-kinds", "aria-label": "board" },
    tab(`#/leaderboards/${f}`, "Ratings", "ratings"), tab(`#/seasons/${f}`, "Season", "season"));
}

export function showSeason(root, family = null, season = null) {
  const chosen = family || "fives";
  const title = el("h1", {}, "Season");
  const tabs = el("nav", { class: "tabs", "aria-label": "game families" });
  const mine = el("p", { class: "my-rank", "aria-live": "polite", hidden: true });
  const board = el("div", { class: "board-box", "aria-live": "polite" }, "Loading…");
  const pick = el("input", { type: "month", name: "season", value: season ?? "", "aria-label": "season" });
  const pickForm = el("form", { class: "season-pick" }, el("label", { class: "field inline" },
    el("span", {}, "Another season"), pick), el("button", { type: "submit", class: "ghost" }, "Show"));
  pickForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = pick.value ? `?season=${encodeURIComponent(pick.value)}` : "";
    location.hash = `#/seasons/${encodeURIComponent(chosen)}${q}`;
  });
  fill(root, el("section", { class: "panel page-panel leaderboard-page season-page", "data-family": chosen },
    title, boardKindTabs(chosen, "season"), tabs, mine, board, pickForm));
  let stopped = false;
  const drawTabs = (meta) => fill(tabs, ...families(meta).map((f) => el("a", {
    href: `#/seasons/${encodeURIComponent(f.name)}${season ? `?season=${encodeURIComponent(season)}` : ""}`,
    class: `tab${f.name === chosen ? " current" : ""}`,
    "aria-current": f.name === chosen ? "page" : null, "data-family": f.name }, f.label)));
  drawTabs(null);
  loadMeta().then((meta) => {
    if (!stopped) drawTabs(meta);
  }, () => {});
  Promise.all([social.season(chosen, season), loadUser()]).then(([data]) => {
    if (stopped) return;
    title.textContent = `Season ${data.season}: ${data.label ?? familyLabel(null, chosen)}`;
    if (!pick.value) pick.value = data.season ?? "";
    const me = currentUser();
    if (data.me && Number.isInteger(data.me.rank)) {
      mine.hidden = false;
      fill(mine, "Your rank: ", el("strong", { class: "rank" }, String(data.me.rank)),
        ` · ${data.me.points} points · ${data.me.wins} win${data.me.wins === 1 ? "" : "s"} in ${data.me.games} game${data.me.games === 1 ? "" : "s"}`,
        data.me.streak >= 2 ? ` · a streak of ${data.me.streak}: wins score 3` : "");
    } else if (me) {
      mine.hidden = false;
      fill(mine, el("span", { class: "muted" }, "You have no rated game of this family in this season yet. A win scores 2 points, 3 after two wins in a row; a draw 1."));
    }
    const players = data.players ?? [];
    if (players.length === 0) {
      fill(board, el("p", { class: "muted empty" }, "Nobody has played a rated game of this family this season yet."));
      return;
    }
    const isMe = (p) => me && p.name.toLowerCase() === me.username.toLowerCase();
    fill(board, el("table", { class: "leaderboard season-board" },
      el("thead", {}, el("tr", {}, el("th", { scope: "col", class: "num" }, "#"),
        el("th", { scope: "col" }, "Player"), el("th", { scope: "col", class: "num" }, "Points"),
        el("th", { scope: "col", class: "num" }, "Wins"), el("th", { scope: "col", class: "num" }, "Games"))),
      el("tbody", {}, players.map((p) => el("tr", { class: isMe(p) ? "is-me" : null, "data-player": p.name },
        el("td", { class: "num" }, String(p.rank)),
        el("td", { class: "player" }, el("a", { href: `#/players/${encodeURIComponent(p.name)}` }, p.name)),
        el("td", { class: "num" }, String(p.points)),
        el("td", { class: "num" }, String(p.wins)),
        el("td", { class: "num" }, String(p.games)))))));
  }, (e) => {
    if (stopped) return;
    fill(board, el("p", { class: "form-error" }, e.code === "unknown_family" ? `There is no game family "${chosen}".`
      : e.code === "bad_season" ? "That is not the first month of a season." : errorText(e)));
  });
  return () => {
    stopped = true;
  };
}

/** A profile's past seasons' finishes ("2026-11 · All Fives family · 3rd · 41 points"). */
export function seasonFinishes(seasons, meta) {
  if (!seasons?.length) return null;
  const nth = (n) => {
    const s = ["th", "st", "nd", "rd"];
    const v = n % 100;
    return `${n}${s[(v - 20) % 10] || s[v] || s[0]}`;
  };
  return el("section", { class: "panel season-finishes" }, el("h2", {}, "Seasons"),
    el("ul", {}, seasons.map((s) => el("li", { "data-season": s.season, "data-family": s.family },
      el("a", { href: `#/seasons/${encodeURIComponent(s.family)}?season=${encodeURIComponent(s.season)}` }, s.season),
      ` · ${familyLabel(meta, s.family)} · `, el("strong", {}, nth(s.rank)), ` · ${s.points} point${s.points === 1 ? "" : "s"}`))));
}
