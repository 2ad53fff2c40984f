/**
 * Words for what is going on at the table, derived from the game view alone (its `legal`
 * list, `boneyard`, `ends`, `scores` and the resolved `rules`): why the hand's tiles are
 * dimmed, the sum behind a score, whether a side has passed the target mid-hand, which
 * counters mean something under the rules, and a finished hand's points by side. Pure: no
 * DOM, and it never decides what is legal — it only explains the server's `legal` list.
 */

/** The tiles of the hand the `legal` list lets play, in hand order. */
function playableTiles(game) {
  const plays = new Set((game?.legal ?? []).filter((m) => typeof m.play === "string").map((m) => m.play));
  return (game?.hand ?? []).filter((t) => plays.has(t));
}

const isDouble = (tile) => {
  const [a, b] = String(tile).split("-");
  return a === b;
};

/** "6-6", "6-6 or 3-3", "6-6, 4-4 or 1-1". */
export function orList(items) {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

/**
 * Why some or all of the player's tiles are dimmed, or null when there is nothing to say
 * (not the player's turn, every tile playable). `label` names the game ("Bergen").
 */
export function whyDimmed(game, { label = null, mine = true } = {}) {
  if (!game || !mine || game.game_over) return null;
  const legal = game.legal ?? [];
  if (legal.length === 0) return null;
  const plays = legal.filter((m) => typeof m.play === "string");
  const rules = game.rules ?? {};
  if (plays.length === 0) {
    if (legal.some((m) => m.draw)) return "Nothing fits: draw";
    if (legal.some((m) => m.pass)) {
      if (rules.draw === "none") return "Nothing fits (no drawing in this game): pass";
      if ((game.boneyard ?? 0) > 0) return "Nothing fits and the boneyard is down to its reserve: pass";
      return "Nothing fits and the boneyard is empty: pass";
    }
    return null;
  }
  const hand = game.hand ?? [];
  const playable = playableTiles(game);
  if (playable.length >= hand.length) return null;
  const leading = (game.layout ?? []).length === 0;
  const prefix = label ? `${label}: ` : "";
  if (leading) {
    const named = orList(playable);
    if (rules.lead === "double" && playable.every(isDouble)) {
      return `${prefix}lead a double (${named})`;
    }
    if (rules.first_leader === "highest_double" && playable.length === 1 && isDouble(playable[0])) {
      return `${prefix}lead your highest double (${named})`;
    }
    return `${prefix}only ${named} may lead`;
  }
  const ends = [...new Set((game.ends ?? []).map((e) => e.value))].sort((a, b) => b - a);
  return `Dimmed tiles fit no open end${ends.length ? ` (${orList(ends.map(String))})` : ""}`;
}

/** The scorings whose play points come from the ends' total. */
const TOTAL_SCORINGS = new Set(["fives", "threes", "fives_and_threes"]);

/**
 * The sum behind a score, from the view's `ends` after the play: "5 + 10 = 15" (the counts of
 * the ends that made the total). Null when the rules do not score the total, or nothing counts.
 */
export function scoreSum(ends, rules = {}) {
  if (rules?.scoring && !TOTAL_SCORINGS.has(rules.scoring)) return null;
  const counts = (ends ?? []).map((e) => e.count ?? 0).filter((c) => c > 0);
  if (counts.length === 0) return null;
  const total = counts.reduce((a, b) => a + b, 0);
  return counts.length === 1 ? `${total}` : `${counts.join(" + ")} = ${total}`;
}

/** True when a side has reached the target mid-hand and the game ends with this hand. */
export function targetReached(game) {
  const rules = game?.rules ?? {};
  if (!game || game.game_over || game.turn === null || game.turn === undefined) return false;
  if (rules.game_end !== "round_end" || !rules.target) return false;
  return (game.scores ?? []).some((s) => s >= rules.target);
}

/** Which counters of the info bar mean something under `rules`. */
export function countersShown(rules = {}) {
  return {
    ends: !(rules.scoring === "none" || rules.scoring === "matching"),
    boneyard: rules.draw !== "none",
  };
}

/**
 * A finished hand's points by side: `{plays, bonus, total}` for each side, the total being what
 * the side's score grew by. `plays` sums the hand's history (the layout's plays) when the view
 * still shows that hand, else it is what the total holds beyond the bonus.
 */
export function handPoints(game, k = (game?.rounds?.length ?? 0) - 1) {
  const rounds = game?.rounds ?? [];
  const round = rounds[k];
  if (!round) return [];
  const sides = game.sides ?? [];
  const before = k > 0 ? rounds[k - 1].totals ?? [] : [];
  const sideOf = new Map();
  sides.forEach((side, s) => side.forEach((seat) => sideOf.set(seat, s)));
  // the history still holds the finished hand while the table waits for the next one
  const sameHand = (game.turn === null || game.turn === undefined) && (game.round ?? k) === k
    && (game.history?.length ?? 0) > 0;
  const fromHistory = sides.map(() => 0);
  for (const m of sameHand ? game.history ?? [] : []) {
    if (m.points > 0 && sideOf.has(m.seat)) fromHistory[sideOf.get(m.seat)] += m.points;
  }
  // a penalty hand's bonus is 0 but every side pays its pips: only the history tells the plays
  if (!sameHand && game.rules?.bonus === "penalty") return [];
  return sides.map((_, s) => {
    const total = (round.totals?.[s] ?? 0) - (before[s] ?? 0);
    if (sameHand) return { plays: fromHistory[s], bonus: total - fromHistory[s], total };
    const bonus = round.winner === s ? round.bonus ?? 0 : 0;
    return { plays: total - bonus, bonus, total };
  });
}
