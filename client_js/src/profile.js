/**
 * A player's profile (#/players/<name>, GET /api/players/{name}): the name, when they joined,
 * per game family the rating (a "?" while provisional) with a chart of its history and the
 * family's statistics, and the recent games with replay links, paged with "More" (GET
 * /api/players/{name}/games).
 */
import { loadUser, currentUser } from "./account.js";
import { api } from "./api.js";
import { lineChart } from "./chart.js";
import { loadMeta } from "./lobby.js";
import { familyLabel, families, presetLabel, ratingSettings } from "./meta.js";
import {
  dateText, outcomeText, ratingText, scoreLine, signed, statRows, withStart,
} from "./ratings.js";
import { followControl } from "./profile_social.js";
import { seasonFinishes } from "./seasons.js";
import { el, fill } from "./view/dom.js";

const PAGE = 20;

export function showProfile(root, name) {
  const box = el("div", { class: "profile", "aria-live": "polite" }, "Loading…");
  fill(root, el("section", { class: "page-panel profile-page", "data-player": name }, box));
  let stopped = false;
  Promise.all([api.player(name), loadMeta().catch(() => null), loadUser()]).then(([p, meta]) => {
    if (!stopped) draw(box, p, meta, () => stopped);
  }, (e) => {
    if (stopped) return;
    fill(box, el("h1", {}, name), el("p", { class: "form-error" }, e.code === "unknown_player"
      ? "There is no player of that name." : `Could not load the profile: ${e.message}`));
  });
  return () => {
    stopped = true;
  };
}

function draw(box, p, meta, stopped) {
  const me = currentUser();
  const self = me && me.username.toLowerCase() === String(p.name).toLowerCase();
  const order = families(meta).map((f) => f.name);
  const known = new Set([...Object.keys(p.ratings ?? {}), ...Object.keys(p.stats ?? {})]);
  const shown = [...order.filter((f) => known.has(f)), ...[...known].filter((f) => !order.includes(f))];
  const cards = shown.map((family) => familyCard(family, p.ratings?.[family], p.stats?.[family], meta));
  const games = el("ol", { class: "game-list" });
  const more = el("button", { type: "button", class: "ghost more", "data-action": "more" }, "More");
  const moreError = el("p", { class: "form-error", role: "alert" });
  fill(box,
    el("header", { class: "panel profile-head" },
      el("h1", { class: "player-name" }, p.name, self ? el("span", { class: "tag" }, "you") : null),
      el("p", { class: "muted joined" }, `Joined ${dateText(p.joined)}`),
      self ? null : followControl(p.name),
      el("ul", { class: "rating-summary" }, shown.filter((f) => p.ratings?.[f]).map((f) =>
        el("li", { "data-family": f }, el("span", {}, familyLabel(meta, f)), " ",
          el("strong", { class: "rating" }, ratingText(p.ratings[f])))))),
    cards.length
      ? el("div", { class: "family-cards" }, cards)
      : el("p", { class: "panel muted" }, "No finished games yet."),
    seasonFinishes(p.seasons, meta),
    el("section", { class: "panel recent" }, el("h2", {}, "Recent games"), games, moreError, more));

  const seen = new Set();
  const add = (list) => {
    for (const g of list) {
      if (seen.has(g.id)) continue;
      seen.add(g.id);
      games.append(gameItem(g, meta));
    }
  };
  add(p.recent ?? []);
  if (seen.size === 0) games.replaceWith(el("p", { class: "muted empty" }, "No games yet."));
  // the profile's recent games are the first of the list: "More" pages on from the start and
  // skips those already shown
  const total = Object.values(p.stats ?? {}).reduce((n, s) => n + (s?.games ?? 0), 0);
  let cursor = null;
  let done = seen.size === 0 || (total > 0 && total <= seen.size);
  more.hidden = done;
  more.addEventListener("click", async () => {
    more.disabled = true;
    moreError.textContent = "";
    try {
      // keep asking while a page holds only games already shown
      for (let tries = 0; tries < 5; tries++) {
        const before = seen.size;
        const page = await api.playerGames(p.name, { limit: PAGE, cursor });
        if (stopped()) return;
        add(page.games ?? []);
        cursor = page.next ?? null;
        done = !cursor;
        if (done || seen.size > before) break;
      }
      more.hidden = done;
    } catch (e) {
      moreError.textContent = `Could not load more games: ${e.message}`;
    } finally {
      more.disabled = false;
    }
  });
}

function familyCard(family, rating, stats, meta) {
  const label = familyLabel(meta, family);
  const rows = statRows(stats, (preset) => presetLabel(meta, preset));
  return el("section", { class: "panel family-card", "data-family": family },
    el("h2", {}, label),
    rating
      ? el("p", { class: "family-rating" }, "Rating ", el("strong", { class: "rating" }, ratingText(rating)),
        el("span", { class: "muted" }, ` · ${rating.games ?? 0} rated game${rating.games === 1 ? "" : "s"}${
          rating.provisional ? " · provisional" : ""}`))
      : el("p", { class: "muted family-rating" }, "No rated games"),
    rating?.history?.length
      ? lineChart(withStart(rating, ratingSettings(meta).initial), { label: `${label} rating history` }) : null,
    rows.length
      ? el("table", { class: "stats" }, el("tbody", {}, rows.map(([k, v]) =>
        el("tr", {}, el("th", { scope: "row" }, k), el("td", {}, v)))))
      : null);
}

function gameItem(g, meta) {
  const mine = g.seats?.find((s) => s.seat === g.seat);
  const names = (side) => (g.seats ?? []).filter((s) => s.side === side)
    .map((s) => (s.bot ? `Bot (${s.bot})` : s.name)).join(" & ");
  const sides = [...new Set((g.seats ?? []).map((s) => s.side))];
  const against = sides.filter((k) => k !== mine?.side).map(names).join(", ");
  const partners = (g.seats ?? []).filter((s) => s.side === mine?.side && s.seat !== g.seat)
    .map((s) => (s.bot ? `Bot (${s.bot})` : s.name));
  const change = g.rating && typeof g.rating.before === "number" && typeof g.rating.after === "number"
    ? el("span", { class: `rating-change ${g.rating.after >= g.rating.before ? "up" : "down"}` },
      `${g.rating.before} \u2192 ${g.rating.after} (${signed(g.rating.after - g.rating.before)})`) : null;
  const how = { forfeit: " (forfeit)", abandoned: " (abandoned)", hand_limit: " (hand limit)" }[g.result?.reason] ?? "";
  return el("li", { class: `game-item ${g.outcome ?? ""}`, "data-game": g.id },
    el("div", { class: "game-main" },
      el("span", { class: `outcome tag ${g.outcome ?? ""}` }, `${outcomeText(g.outcome)}${how}`), " ",
      el("strong", {}, g.name || g.id), " ",
      el("span", { class: "tag" }, presetLabel(meta, g.preset) || familyLabel(meta, g.family)),
      g.rated ? el("span", { class: "tag rated" }, "rated") : null),
    el("div", { class: "muted game-detail" },
      partners.length ? `with ${partners.join(" & ")} ` : "",
      against ? `vs ${against} · ` : "", el("span", { class: "score" }, scoreLine(g)),
      ` · ${dateText(g.ended)}`, change ? " · " : "", change),
    el("a", { class: "button ghost replay-link", href: `#/replay/${encodeURIComponent(g.id)}` }, "Replay"));
}
