/**
 * What a table may be, as the server says (GET /api/meta, docs/protocol.md §9): the presets,
 * the create options with their bounds and defaults, and the bot levels. Pure functions over
 * that answer; nothing here is hard-coded but the words shown for a choice.
 */

/** The words shown for an `on_timeout` choice (the choice itself when it has none). */
const TIMEOUT_WORDS = { bot: "a bot plays the turn", forfeit: "the game is forfeited" };
/** The words shown for a clock kind (`null`: no clock). */
const CLOCK_WORDS = { none: "No clock", realtime: "Real time", turn: "Turn based (days)" };
/** The labels of the clock fields. */
const FIELD_WORDS = {
  move_s: "Seconds per move", reserve_s: "Reserve (seconds)",
  move_h: "Hours per move", max_h: "Most hours banked",
};

/** [name, label] of every preset, the server's default first among equals (in server order). */
export function presetChoices(meta) {
  return (meta?.presets ?? []).map((p) => [p.name, p.label || p.name]);
}

/** The preset a new table starts with. */
export function defaultPreset(meta) {
  return meta?.create?.rules?.default ?? meta?.presets?.find((p) => p.default)?.name
    ?? meta?.presets?.[0]?.name;
}

/** The label of a table's rules (a preset name or {"preset": name, ...}). */
export function presetLabel(meta, rules) {
  const name = typeof rules === "string" ? rules : rules?.preset ?? defaultPreset(meta);
  return meta?.presets?.find((p) => p.name === name)?.label ?? name;
}

/** The player counts a table may have, smallest first, and the default one. */
export function playerCounts(meta) {
  const { min = 2, max = 4, default: first = min } = meta?.create?.players ?? {};
  const counts = [];
  for (let n = min; n <= max; n++) counts.push(n);
  return { counts, first };
}

/** The bot levels a seat may be given. */
export function botLevels(meta) {
  return meta?.create?.bots?.levels ?? meta?.bot_levels ?? [];
}

/** The level offered first for a bot seat: "greedy" when the server has it, else the first. */
export function defaultLevel(meta) {
  const levels = botLevels(meta);
  return levels.includes("greedy") ? "greedy" : levels[0];
}

/** [value, words] of every clock choice; `null` (no clock) has the value "none". */
export function clockChoices(meta) {
  const kinds = meta?.create?.clock?.kinds ?? [null];
  return kinds.map((kind) => {
    const value = kind ?? "none";
    return [value, CLOCK_WORDS[value] ?? value];
  });
}

/** The number fields of a clock kind: {name, label, min, max, value}. */
export function clockFields(meta, kind) {
  const fields = meta?.create?.clock?.[kind] ?? {};
  return Object.entries(fields).map(([name, bound]) => ({
    name, label: FIELD_WORDS[name] ?? name, min: bound.min, max: bound.max,
    value: bound.default ?? bound.min,
  }));
}

/** [value, words] of every `on_timeout` choice. */
export function timeoutChoices(meta) {
  return (meta?.create?.on_timeout?.choices ?? []).map((c) => [c, TIMEOUT_WORDS[c] ?? c]);
}

/** The longest table name and player name the server takes. */
export function nameLimits(meta) {
  return {
    table: meta?.create?.name?.max_length ?? 60,
    player: meta?.create?.player_name?.max_length ?? 32,
  };
}

/** The rating families, as the server names them when its meta has none (docs: GET /api/meta). */
const FAMILY_WORDS = {
  fives: "Fives", threes: "Threes", "fives-and-threes": "Fives and Threes", bergen: "Bergen",
  block: "Block",
};

/** [{name, label, presets}] of every rating family, in the server's order. */
export function families(meta) {
  const listed = meta?.families;
  if (Array.isArray(listed) && listed.length) {
    return listed.map((f) => ({ name: f.name, label: f.label || FAMILY_WORDS[f.name] || f.name,
      presets: f.presets ?? [] }));
  }
  // an older server: the families its presets name, else the known ones
  const named = [...new Set((meta?.presets ?? []).map((p) => p.family).filter(Boolean))];
  const names = named.length ? named : Object.keys(FAMILY_WORDS);
  return names.map((name) => ({
    name, label: FAMILY_WORDS[name] ?? name,
    presets: (meta?.presets ?? []).filter((p) => p.family === name).map((p) => p.name),
  }));
}

/** The label of family `name`. */
export function familyLabel(meta, name) {
  return families(meta).find((f) => f.name === name)?.label ?? FAMILY_WORDS[name] ?? name;
}

/** The rating settings: games before a rating stops being provisional, and the first rating. */
export function ratingSettings(meta) {
  return { provisional_games: meta?.ratings?.provisional_games ?? 10,
    initial: meta?.ratings?.initial ?? 1500 };
}
