/**
 * The lobby page (#/): create a table (preset, players, bot seats, clock, privacy),
 * list open and live tables, join a seat or watch. Talks to the server only through
 * api.js; the game itself happens on the table page. The presets, options and bot levels
 * offered are the server's (GET /api/meta, meta.js). A logged-in player sits under the
 * account's name and may make the table rated (account seats only, no bots); a casual table
 * with a bot may have hints (practice).
 */
import { currentUser, loadUser } from "./account.js";
import { api, playerName, saveSeat, savedSeat, setPlayerName } from "./api.js";
import {
  botLevels, clockChoices, clockFields, defaultLevel, defaultPreset, nameLimits, playerCounts,
  presetChoices, presetLabel, timeoutChoices,
} from "./meta.js";
import { quickPlayPanel } from "./quickplay.js";
import { el, esc, fill } from "./view/dom.js";
import { uprightTile } from "./view/tiles.js";

let metaLoad = null;

/** The server's presets, create options and bot levels, fetched once per page (again after a
 * failure). */
export function loadMeta() {
  metaLoad ??= api.meta().catch((e) => {
    metaLoad = null;
    throw e;
  });
  return metaLoad;
}

/** Renders the lobby into `root`; returns a function that stops its refresh timer. */
export function showLobby(root) {
  const listBox = el("div", { class: "table-list", "aria-live": "polite" }, "Loading tables…");
  const formBox = el("div", { class: "create-box" }, "Loading…");
  let meta = null;
  // the list's filters and order, kept across refreshes (lobbyTables)
  const filters = { preset: "", players: "", open: false, sort: "newest" };
  const filterBox = el("form", { class: "lobby-filters", "aria-label": "filter the tables" });
  const redraw = () => {
    if (lastTables && !stopped) renderList(listBox, lobbyTables(lastTables, filters), meta, lastTables.length);
  };
  const drawFilters = () => {
    const presets = presetChoices(meta);
    const counts = playerCounts(meta).counts;
    fill(filterBox,
      field("Game", el("select", { name: "filter-preset", onchange: (e) => { filters.preset = e.target.value; redraw(); } },
        el("option", { value: "" }, "Any game"),
        presets.map(([v, label]) => el("option", { value: v, selected: v === filters.preset }, label)))),
      field("Players", el("select", { name: "filter-players", onchange: (e) => { filters.players = e.target.value; redraw(); } },
        el("option", { value: "" }, "Any"),
        counts.map((n) => el("option", { value: n, selected: String(n) === filters.players }, `${n} players`)))),
      field("Sort by", el("select", { name: "sort", onchange: (e) => { filters.sort = e.target.value; redraw(); } },
        el("option", { value: "newest", selected: filters.sort === "newest" }, "Newest first"),
        el("option", { value: "players", selected: filters.sort === "players" }, "Most players"))),
      el("label", { class: "check" }, el("input", { type: "checkbox", name: "filter-open", checked: filters.open,
        onchange: (e) => { filters.open = e.target.checked; redraw(); } }), " Open only"));
  };
  drawFilters();
  const hero = el("header", { class: "hero" },
    el("div", { class: "hero-tiles", "aria-hidden": "true",
      html: ["5-5", "5-0", "6-4", "3-2"].map((t) => uprightTile(t)).join("") }),
    el("div", {},
      el("h1", {}, "All Fives and friends"),
      el("p", { class: "muted" },
        "Muggins, Five Up, Fives and Threes, Bergen, Block, Draw: play live with friends or bots, or watch a table.")));
  const quick = quickPlayPanel();
  fill(root, hero, el("div", { class: "lobby" },
    el("section", { class: "panel create" }, el("h1", {}, "New table"), formBox),
    quick.node,
    el("section", { class: "panel tables" },
      el("h2", {}, "Tables"), filterBox, listBox,
      el("button", { type: "button", class: "ghost", onclick: () => refresh() }, "Refresh"))));
  let stopped = false;
  let lastTables = null;
  Promise.all([loadMeta(), loadUser()]).then(([loaded]) => {
    if (stopped) return;
    meta = loaded;
    fill(formBox, createForm(meta, currentUser()));
    drawFilters();
    redraw();
  }, (e) => {
    if (!stopped) formBox.textContent = `Could not load the table options: ${e.message}`;
  });
  async function refresh() {
    try {
      const { tables } = await api.listTables();
      lastTables = tables ?? [];
      redraw();
    } catch (e) {
      if (!stopped) listBox.textContent = `Could not load tables: ${e.message}`;
    }
  }
  refresh();
  const timer = setInterval(refresh, 4000);
  return () => {
    stopped = true;
    clearInterval(timer);
    quick.stop();
  };
}

function createForm(meta, user) {
  const seatsBox = el("div", { class: "seat-choices" });
  const clockExtra = el("div", { class: "clock-extra" });
  const limits = nameLimits(meta);
  const firstPreset = defaultPreset(meta);
  const players = playerCounts(meta);
  const form = el("form", { class: "create-form", "aria-label": "create a table" },
    field("Your name", el("input", { name: "player", required: true, maxlength: limits.player,
      value: user ? user.username : playerName(), autocomplete: "nickname", readonly: Boolean(user),
      title: user ? "You sit under your account's name" : null })),
    field("Table name", el("input", { name: "name", maxlength: limits.table,
      placeholder: "Friday fives" })),
    field("Game", el("select", { name: "preset" },
      presetChoices(meta).map(([v, label]) => el("option", { value: v, selected: v === firstPreset },
        label)))),
    field("Players", el("select", { name: "players", onchange: () => drawSeats() },
      players.counts.map((n) => el("option", { value: n, selected: n === players.first },
        `${n} players`)))),
    seatsBox,
    field("Clock", el("select", { name: "clock", onchange: () => drawClock() },
      clockChoices(meta).map(([v, words]) => el("option", { value: v }, words)))),
    clockExtra,
    el("div", { class: "checks" },
      el("label", { class: "check", title: "Not listed: players join through its invite link" },
        el("input", { type: "checkbox", name: "private" }), " Private (invite only)"),
      el("label", { class: `check rated-check${user ? "" : " disabled"}`,
        title: "Ratings change at the end; players with an account only, no bots" },
      el("input", { type: "checkbox", name: "rated", disabled: !user,
        onchange: () => drawSeats() }),
      " Rated (no bots)"),
      el("label", { class: "check hints-check",
        title: "Practice against bots: ask what the strong bot would play" },
      el("input", { type: "checkbox", name: "hints" }), " Hints (practice)")),
    user ? null : el("p", { class: "muted rated-hint" }, el("a", { href: "#/login" }, "Log in"),
      " to play rated games."),
    el("p", { class: "form-error", role: "alert" }),
    el("button", { type: "submit", class: "primary" }, "Create and sit down"));

  const levels = botLevels(meta);
  const firstLevel = defaultLevel(meta);
  const chosen = [];
  function drawSeats() {
    const n = Number(form.players.value);
    const rated = Boolean(form.rated?.checked);
    // what was chosen stays chosen when the count changes or the table stops being rated
    fill(seatsBox, ...Array.from({ length: n - 1 }, (_, i) => {
      const was = chosen[i] ?? (i === 0 ? firstLevel : "human");
      return field(`Seat ${i + 2}`,
        el("select", { name: `seat${i + 1}`, class: "seat-kind", disabled: rated,
          title: rated ? "A rated table has no bots" : null,
          onchange: (e) => { chosen[i] = e.target.value; syncHints(); } },
        el("option", { value: "human", selected: rated || was === "human" }, "Open for a player"),
        levels.map((l) => el("option", { value: l, disabled: rated, selected: !rated && l === was },
          `Bot (${l})`))));
    }));
    syncHints();
  }
  /** Hints are for casual tables with a bot: the box is off otherwise. */
  function syncHints() {
    const n = Number(form.players.value);
    const rated = Boolean(form.rated?.checked);
    const bot = Array.from({ length: n - 1 }, (_, i) => form[`seat${i + 1}`]?.value)
      .some((v) => v && v !== "human");
    const box = form.hints;
    box.disabled = rated || !bot;
    if (box.disabled) box.checked = false;
    box.closest("label").classList.toggle("disabled", box.disabled);
  }
  function drawClock() {
    const kind = form.clock.value;
    const fields = clockFields(meta, kind);
    const timeout = field("When time runs out", el("select", { name: "on_timeout" },
      timeoutChoices(meta).map(([v, words]) => el("option", { value: v }, words))));
    fill(clockExtra, ...(fields.length === 0 ? [] : [
      ...fields.map((f) => field(f.label, el("input", {
        name: f.name, type: "number", min: f.min, max: f.max, value: f.value, step: "any",
        inputmode: "decimal",
      }))),
      timeout,
    ]));
  }
  drawSeats();
  drawClock();
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const error = form.querySelector(".form-error");
    error.textContent = "";
    const players = Number(form.players.value);
    const rated = Boolean(form.rated?.checked) && Boolean(user);
    const bots = {};
    for (let i = 1; i < players && !rated; i++) {
      const kind = form[`seat${i}`].value;
      if (kind !== "human") bots[String(i)] = kind;
    }
    const kind = form.clock.value;
    const fields = clockFields(meta, kind);
    const clock = fields.length === 0 ? null : { kind };
    for (const f of fields) clock[f.name] = Number(form[f.name].value);
    const name = form.player.value.trim();
    setPlayerName(name);
    const spec = {
      rules: form.preset.value, players, bots, clock, private: form.private.checked,
      name: form.name.value.trim() || `${name}'s table`,
    };
    if (clock) spec.on_timeout = form.on_timeout.value;
    if (rated) spec.rated = true;
    if (form.hints.checked && !form.hints.disabled) spec.hints = true;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const { id, invite } = await api.createTable(spec);
      const joined = await api.join(id, 0, name, invite);
      saveSeat(id, { seat: joined.seat, token: joined.token, name });
      location.hash = `#/t/${id}${invite ? `?invite=${encodeURIComponent(invite)}` : ""}`;
    } catch (err) {
      error.textContent = err.message || "Could not create the table.";
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

function field(label, input) {
  return el("label", { class: "field" }, el("span", {}, label), input);
}

/** The preset name of a table summary's rules (a name or {"preset": name, ...}). */
function presetOf(t) {
  return typeof t.rules === "string" ? t.rules : t.rules?.preset ?? "";
}

/**
 * The tables the lobby lists: filtered by game (preset), player count and open only, sorted
 * newest first or by most players (then newest). Open tables stay ahead of live ones.
 */
export function lobbyTables(tables, { preset = "", players = "", open = false, sort = "newest" } = {}) {
  const kept = tables.filter((t) => (!preset || presetOf(t) === preset)
    && (!players || String(t.players ?? t.seats?.length) === String(players))
    && (!open || t.status === "waiting"));
  const newest = (a, b) => (b.created ?? 0) - (a.created ?? 0);
  const count = (t) => t.players ?? t.seats?.length ?? 0;
  return kept.slice().sort(sort === "players" ? (a, b) => count(b) - count(a) || newest(a, b) : newest);
}

function renderList(box, tables, meta, all = tables.length) {
  if (tables.length === 0) {
    fill(box, el("p", { class: "muted" }, all ? "No table matches these filters." : "No open tables. Create one!"));
    return;
  }
  const open = tables.filter((t) => t.status === "waiting");
  const live = tables.filter((t) => t.status !== "waiting");
  const row = (t) => {
    const seats = t.seats ?? [];
    const names = seats.map((s) => (s.taken ? esc(s.bot ? `Bot (${s.bot})` : s.name) : "<i>free</i>"));
    const mine = savedSeat(t.id);
    const actions = [];
    if (mine) actions.push(el("a", { class: "button primary", href: `#/t/${t.id}` }, "Resume"));
    else if (t.status === "waiting") {
      actions.push(el("a", { class: "button primary", href: `#/t/${t.id}` }, "Join"));
    }
    actions.push(el("a", { class: "button ghost", href: `#/t/${t.id}` }, "Watch"));
    if (t.status === "finished") {
      actions.push(el("a", { class: "button ghost", href: `#/replay/${t.id}` }, "Replay"));
    }
    return el("li", { class: `table-row ${t.status}`, "data-table": t.id, "data-preset": presetOf(t),
      "data-players": t.players ?? seats.length, "data-created": t.created ?? "" },
      el("div", { class: "table-info" },
        el("strong", {}, t.name || t.id), " ",
        el("span", { class: "tag" }, presetLabel(meta, t.rules)), " ",
        el("span", { class: `tag status-${t.status}` }, t.status),
        t.rated ? el("span", { class: "tag rated" }, "rated") : null,
        el("div", { class: "muted seats-line", html: names.join(" · ") })),
      el("div", { class: "table-actions" }, actions));
  };
  fill(box,
    el("h3", {}, "Open"), open.length ? el("ul", {}, open.map(row)) : el("p", { class: "muted" }, "None"),
    el("h3", {}, "Live and finished"),
    live.length ? el("ul", {}, live.map(row)) : el("p", { class: "muted" }, "None"));
}
