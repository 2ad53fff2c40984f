/**
 * "How this game scores": the table's game named by its preset's label (GET /api/meta), its
 * target and its key rules, as short lines. The options come from the meta's preset and the
 * view's resolved `rules` (which win: a table may override the preset, e.g. its target); only
 * the words for each option value live here. Pure: `gameInfo` returns data, `rulesPanel`
 * builds the panel's element.
 */
import { el } from "./view/dom.js";

/** A per-count option ({"2": 7, "3": 5}) for `players`, or the value itself. */
function forCount(value, players) {
  if (value && typeof value === "object" && !Array.isArray(value)) return value[String(players)];
  return value;
}

const SCORING = {
  fives: "A play scores the open ends' total when it is a multiple of 5.",
  threes: "A play scores the open ends' total when it is a multiple of 3.",
  fives_and_threes: "A play scores the open ends' total for each multiple of 5 and of 3 it makes.",
  matching: "A play scores when the open ends match (a double-header, three or four alike).",
  none: "Plays score nothing: only the end of a hand does.",
};
const BONUS = {
  opponents: (r) => `A hand's winner scores the pips left in the opponents' hands${rounding(r)}.`,
  opponents_minus_own: (r) => `A hand's winner scores the opponents' pips minus its own${rounding(r)}.`,
  all_hands: (r) => `A hand's winner scores every pip left in all hands${rounding(r)}.`,
  fixed: (r) => `A hand's winner scores ${r.bonus_points ?? 1}.`,
  penalty: () => "Each side loses the pips left in its own hand at every hand's end.",
};
const DRAW = {
  until_playable: "Nothing fits: draw from the boneyard until a tile does.",
  none: "No drawing: when nothing fits, pass.",
};
const SPINNERS = {
  first_double: "The first double is a spinner: it opens four ends.",
  all_doubles: "Every double is a spinner.",
  none: null,
};

function rounding(r) {
  return r.scale > 1 && r.bonus_rounding === "nearest" ? `, rounded to the nearest ${r.scale}` : "";
}

/**
 * {label, family, target, lines} of a game view's rules with the meta's presets.
 */
export function gameInfo(meta, rules, players = 2) {
  const name = rules?.preset ?? (typeof rules?.spec === "string" ? rules.spec : rules?.spec?.preset);
  const preset = (meta?.presets ?? []).find((p) => p.name === name) ?? null;
  const r = {};
  for (const [k, v] of Object.entries(preset?.rules ?? {})) r[k] = forCount(v, players);
  for (const [k, v] of Object.entries(rules ?? {})) {
    if (k !== "spec" && k !== "preset") r[k] = forCount(v, players);
  }
  const target = r.target ?? forCount(preset?.targets, players) ?? null;
  const lines = [];
  if (SCORING[r.scoring]) lines.push(SCORING[r.scoring]);
  if (r.scale > 1) lines.push(`Points are counted in units of ${r.scale}: ${r.scale} pips make 1 point.`);
  if (BONUS[r.bonus]) lines.push(BONUS[r.bonus](r));
  if (DRAW[r.draw]) lines.push(DRAW[r.draw]);
  if (SPINNERS[r.spinners]) lines.push(SPINNERS[r.spinners]);
  if (r.lead === "double") lines.push("Every hand is led with a double.");
  else if (r.first_leader === "highest_double") lines.push("The highest double leads the first hand.");
  if (r.partnerships && players === 4) lines.push("Partners sit across: a side's points are shared.");
  if (target) {
    lines.push(r.bonus === "penalty"
      ? `The game ends when a side is down to −${target}.`
      : r.game_end === "exact"
        ? `The first side to reach exactly ${target} wins; points that would overshoot are void.`
        : `The first side to reach ${target} wins, at the end of that hand.`);
  }
  return { label: preset?.label ?? name ?? "All Fives", family: preset?.family ?? null, target, lines };
}

/** The panel element (a <details> open on wide screens), or null without rules. */
export function rulesPanel(meta, rules, players) {
  if (!rules) return null;
  const info = gameInfo(meta, rules, players);
  return el("details", { class: "panel rules-panel", open: window.innerWidth > 820 },
    el("summary", {}, el("span", { class: "game-label" }, info.label),
      info.target ? el("small", { class: "game-target" }, ` · to ${info.target}`) : null),
    el("h3", {}, "How this game scores"),
    el("ul", { class: "rules-lines" }, info.lines.map((l) => el("li", {}, l))));
}
