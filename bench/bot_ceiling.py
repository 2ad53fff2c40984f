"""The ceiling against greedy: omniscient bots in the seeded match design of `engine match`.

    python -m bench.bot_ceiling --preset all-fives --players 2 --deals 40 --level oracle
    python -m bench.bot_ceiling --cells weak --deals 40 --level oracle1 --jobs 2
    python -m bench.bot_ceiling --cells all --deals 10 --level oracle --node-cap 5000
    python -m bench.bot_ceiling --cells weak --deals 100 --level posterior --samples 300 --jobs 2

Side A sees the true `GameState` (every hand and the boneyard's order); every other seat is
the `greedy` bot (engine.bots `choose_move("greedy", view(state, seat), ...)`, as in
`engine match`). The deals, seatings, per-hand scoring (`--unit hand`: A beats a side when it
gains more points in the hand, bonus included; ties count a half) and the Wilson interval are
engine.cli.match's own. Levels of A, from what strong knows to everything:

- `strong`: the strong bot on A's view, bound to `--samples` deals a move (no clock), so that
  it compares with the next level at equal deals.
- `posterior`: the same search on A's view, with the one thing strong may not assume: that
  the other seats are greedy. Every tile greedy would have played instead of one of a B seat's
  choices since its last draw is ruled out of that seat's hand in the sampler (every other
  constraint of the view as strong has them), and the deals are not weighed: they are the
  deals that fit the view and greedy play, drawn alike. The best any reading of the other
  seats' choices can do for strong's search against greedy.
- `infoset`: the posterior's deals, `--samples` of them, with A's own later choices searched
  instead of played by strong's playout policy (`InfosetSearch`: information-set expectimax
  over the deals, A choosing alike in the deals it cannot tell apart, the other seats greedy,
  a partner modelled as greedy too), under the match's own measure as in `oracle` (the hand's
  score, then the points difference). Against greedy seats, and without partners, this is the
  best response any bot on A's view could make, up to the sampling of the deals. Slow: every
  move through engine.game's `apply_until_hand_end`.
- `oracle1`: every legal play scored by engine.bots.search `outcome` on the true deal (the
  strong bot's evaluation and objective, `WIN` included, with perfect information instead of
  sampled deals); the best, ties to greedy's order. Strong with no hidden tiles.
- `hands`: strong's evaluation knowing every hand but not the boneyard's order: every play's
  `outcome` averaged over `--hand-deals` shuffles of the boneyard (the same shuffles for every
  play), so what it lacks against `oracle1` is what no reading of the other seats can give.
  Without a boneyard it is `oracle1`.
- `oracle`: the best response to greedy. Greedy seats are deterministic and the boneyard's
  order is known, so the rest of the hand follows from A's side's own choices (partners
  included); a depth-first search over those choices alone, every step through the engine's
  `legal_moves` and `apply_until_hand_end`, finds the line with the best per-hand match score
  against the B sides, then the best points difference (A's points less the mean of the
  other sides'). It first plays out each candidate followed by the side's cautious play
  (oracle1's lines, engine.playout `CAUTIOUS`), then searches the candidates in the order of
  those lines' results, later choices in greedy's order; of equal lines the first found is
  kept. When a search passes `--node-cap` positions it stops and the seat plays the first
  move of the best line found so far, a cautious line at worst (a `capped` decision; a
  `fallback` when that line does not win against every side, so its score is not proven the
  best); the next choice searches again, and keeps that line unless it finds a better one, so
  a hand never ends worse than the line chosen. A finished search's line is followed to the
  hand's end without searching again.

Prints one JSON line per cell: `preset`, `players`, `level`, `games`, `a_score`, `ci95`,
`a_points_per_hand`, `b_points_per_hand`, `decisions` (A's moves with a choice), `capped`,
`fallbacks`, `nodes` (positions searched, all games), `greedy_mismatches` (greedy moves the
search's model of greedy got wrong: 0 unless the model is broken), `plan_mismatches` (hands
whose result differs from what a finished search predicted: 0 likewise) and `seconds`.
`--cells weak` runs the cells where strong is weakest against greedy, `--cells all` every
preset with 2, 3 and 4 players; otherwise the one cell of `--preset` and `--players`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine import PRESETS, rules_from_spec
from engine.bots import choose_move
from engine.bots.knowledge import Knowledge
from engine.bots.sampler import sample_deal
from engine.bots.search import _objective, outcome, search_move
from engine.bots.simple import greedy_ranking
from engine.cli.match import MAX_MOVES, deal_seed, seatings, side_score, wilson
from engine.errors import EngineError
from engine.game import apply, apply_until_hand_end, legal_moves, new_game, resolve_play
from engine.kernel import play_tile
from engine.moves import Move, Play
from engine.playout import CAUTIOUS, finish_hand, greedy_key, greedy_points
from engine.state import DREW, GameState
from engine.views import view, with_hidden

LEVELS = ("oracle", "oracle1", "hands", "posterior", "infoset", "strong")
SAMPLES = 300
MATCH_FIRST = 1e6
"""The `infoset` level's weight of a hand's match score against its points difference: far
more than the points differences summed over a few hundred deals, so the score comes first."""
HAND_DEALS = 200
NODE_CAP = 20_000
WEAK_CELLS: tuple[tuple[str, int], ...] = (
    ("fives-and-threes", 2), ("fives-and-threes", 3), ("fives-and-threes", 4),
    ("block-penalty", 2), ("block-penalty", 3), ("block-penalty", 4),
    ("all-fives", 3), ("bergen", 4), ("double-bergen", 4), ("all-threes", 4),
    ("all-fives-classic", 4), ("block", 3), ("all-fives", 2),
)
"""The cells where strong is weakest against greedy, and all-fives with 2 players as a check."""

Value = tuple[float, float]
"""A hand's result for A: (match score against the B sides, points difference)."""


def greedy_order(state: GameState) -> list[Move]:
    """The legal moves of the seat to move, the greedy bot's favourite first (the order of
    engine.bots.simple `greedy_ranking`, computed on the state itself)."""
    seat = state.turn
    assert seat is not None
    legal = legal_moves(state)
    if len(legal) == 1:
        return legal
    rules = state.table.rules
    hand = state.hand_masks[seat]
    score = state.scores[state.table.side_of[seat]]
    ends = state.ends

    def key(move: Move) -> int:
        if not isinstance(move, Play):
            return -1
        index = resolve_play(state, seat, move)[0]
        tile = move.tile.index
        node = ends[index][0] if index >= 0 else 0
        points = play_tile(rules, state.nodes, ends, index, tile)[3]
        return greedy_key(greedy_points(rules, points, hand == 1 << tile, score), tile, node)

    return sorted(legal, key=key, reverse=True)


def hand_value(scores: Sequence[int], base: Sequence[int], a_side: int) -> Value:
    """A's result for a hand that took the side totals from `base` to `scores`."""
    gains = [s - b for s, b in zip(scores, base, strict=True)]
    others = [g for k, g in enumerate(gains) if k != a_side]
    diff = gains[a_side] - sum(others) / len(others)
    return side_score([float(g) for g in gains], a_side), diff


def hands_move(state: GameState, seed: int, deals: int) -> Move:
    """Strong's evaluation knowing every hand but not the boneyard's order: every play's
    `outcome` on the same `deals` shuffles of the boneyard (the true hands dealt into each,
    engine.views `with_hidden`), the best mean under the search's objective, ties to greedy's
    order. Without a boneyard it is `oracle1_move`."""
    boneyard = sorted(state.boneyard_tiles)  # its order is what this level may not know
    if not boneyard:
        return oracle1_move(state)
    order = greedy_order(state)
    plays = [m for m in order if isinstance(m, Play)]
    if len(plays) <= 1:
        return order[0]
    side = state.table.side_of[state.turn or 0]
    rng = random.Random(seed)
    totals = [0.0] * len(plays)
    for _ in range(deals):
        rng.shuffle(boneyard)
        dealt = with_hidden(state, state.hand_masks, boneyard)
        for i, move in enumerate(plays):
            totals[i] += _objective(outcome(move, dealt), side)
    best = max(range(len(plays)), key=lambda i: (totals[i], -i))
    return plays[best]


def ruled_out_by_greedy(knowledge: Knowledge, a_seats: frozenset[int]) -> list[int]:
    """Per seat, the tiles it cannot hold if it plays greedily: each tile greedy would have
    played instead of one of its choices made since its last draw (none for `a_seats`)."""
    ruled = [0] * knowledge.rules.players
    for ob in knowledge.observations:
        if ob.seat not in a_seats:
            ruled[ob.seat] |= ob.better
    return ruled


def posterior_knowledge(state: GameState, a_seats: frozenset[int]) -> Knowledge:
    """What the seat to move knows, with the tiles `ruled_out_by_greedy` ruled out of the
    other seats' slots."""
    seat = state.turn
    assert seat is not None
    knowledge = Knowledge.from_view(view(state, seat))
    ruled = ruled_out_by_greedy(knowledge, a_seats)
    knowledge.slots = [(s, forbid | ruled[s]) for s, forbid in knowledge.slots]
    return knowledge


def to_choice(state: GameState, seats: frozenset[int],
              counted: Callable[[], None] | None = None) -> GameState:
    """Play on until one of `seats` has a choice or the hand is over: the other seats make
    greedy's move, `seats` their forced moves as the engine lists them; `counted` is called
    after every move."""
    while state.turn is not None and not state.table.game_over:
        seat = state.turn
        if seat in seats:
            legal = legal_moves(state)
            if len(legal) > 1:
                return state
            move = legal[0]
        else:
            move = greedy_order(state)[0]
        state = apply_until_hand_end(state, seat, move)[0]
        if counted is not None:
            counted()
    return state


Seen = tuple[tuple[int, int, int, int], ...]
"""The round's log as one seat saw it: (seat, kind, tile, on), other seats' draws hidden."""


@dataclass(slots=True)
class InfosetSearch:
    """The best plan of `seat` over a set of deals, each a `GameState` with `seat` to move
    (information-set expectimax): after a move the other seats make greedy's move, the seat's
    forced moves are made, and at each of its later choices the deals are grouped by what the
    seat has seen since (the round's log, other seats' drawn tiles hidden) and each group takes
    the play with the best sum over its deals; so no later choice of the seat depends on a tile
    it could not see then, except through which deals were sampled. `value(state)` scores a
    state at the hand's end (or the game's) from `seat`'s side."""

    seat: int
    value: Callable[[GameState], float]

    def seen(self, state: GameState) -> Seen:
        return tuple((s, kind, tile if kind != DREW or s == self.seat else -1, on)
                     for s, kind, tile, on, _, _ in state.log)

    def total(self, deals: Sequence[GameState], move: Move) -> float:
        """The sum over `deals` (states alike to the seat, the seat to move) of what `move` and
        the best later choices reach."""
        total = 0.0
        groups: dict[Seen, list[GameState]] = {}
        for state in deals:
            after = to_choice(apply_until_hand_end(state, self.seat, move)[0],
                              frozenset((self.seat,)))
            if after.turn is None or after.table.game_over:
                total += self.value(after)
            else:
                groups.setdefault(self.seen(after), []).append(after)
        for group in groups.values():
            total += max(self.total(group, m) for m in legal_moves(group[0]))
        return total


def infoset_move(state: GameState, a_seats: frozenset[int], seed: int, samples: int) -> Move:
    """The posterior's deals (`posterior_knowledge`), `samples` of them, searched by
    `InfosetSearch` to the hand's end under the match's own measure (the hand's score against
    the other sides, then the points difference: `hand_value`); ties to greedy's order."""
    seat = state.turn
    assert seat is not None
    order = greedy_order(state)
    plays = [m for m in order if isinstance(m, Play)]
    if len(plays) <= 1:
        return order[0]
    knowledge = posterior_knowledge(state, a_seats)
    rng = random.Random(seed)
    deals = []
    for _ in range(samples):
        deal = sample_deal(knowledge, rng)
        deals.append(knowledge.deal(deal.hands, deal.boneyard))
    side = state.table.side_of[seat]
    base = state.scores

    def value(end: GameState) -> float:
        score, diff = hand_value(end.scores, base, side)
        return score * MATCH_FIRST + diff

    search = InfosetSearch(seat, value)
    values = [search.total(deals, m) for m in plays]
    return plays[max(range(len(plays)), key=lambda i: (values[i], -i))]


def posterior_move(state: GameState, a_seats: frozenset[int], seed: int, samples: int) -> Move:
    """Strong's search on the seat's view, its sampler told that the seats outside `a_seats`
    play greedily (`posterior_knowledge`), and no deal weighed."""
    knowledge = posterior_knowledge(state, a_seats)
    return search_move(knowledge, seed, time.perf_counter(), 10**9, samples,
                       greedy_ranking(knowledge), infer=False)


def oracle1_move(state: GameState) -> Move:
    """The strong bot's choice with the true deal as its only deal: every play's `outcome`
    (the side cautious, the others greedy) under the search's objective; ties to greedy's
    order, as `search_move` breaks them."""
    order = greedy_order(state)
    plays = [m for m in order if isinstance(m, Play)]
    if len(plays) <= 1:
        return order[0]
    side = state.table.side_of[state.turn or 0]
    values = [_objective(outcome(m, state), side) for m in plays]
    best = max(range(len(plays)), key=lambda i: (values[i], -i))
    return plays[best]


class Capped(Exception):
    """The search passed its node cap."""


@dataclass(slots=True)
class Solver:
    """The best response of A's side to greedy, by depth-first search over A's choices."""

    a_seats: frozenset[int]
    a_side: int
    base: tuple[int, ...]
    cap: int = NODE_CAP
    nodes: int = 0
    best: Value | None = None
    line: list[Move] = field(default_factory=list)
    partial: bool = False
    """Whether `line` holds only the first move of a cautious line (its value is known)."""

    def count(self) -> None:
        """One more position searched."""
        self.nodes += 1
        if self.nodes > self.cap:
            raise Capped

    def consider(self, value: Value, line: list[Move]) -> None:
        """A leaf reached by `line`: the best so far if strictly better (ties go to the line
        found first), or as good as a cautious line known only by its first move."""
        if self.best is None or value > self.best or (value == self.best and self.partial):
            self.best = value
            self.line = list(line)
            self.partial = False

    def dfs(self, state: GameState, path: list[Move]) -> None:
        state = to_choice(state, self.a_seats, self.count)
        if state.turn is None or state.table.game_over:
            self.consider(hand_value(state.scores, self.base, self.a_side), path)
            return
        seat = state.turn
        for move in greedy_order(state):
            path.append(move)
            self.nodes += 1
            self.dfs(apply_until_hand_end(state, seat, move)[0], path)
            path.pop()

    def cautious_line(self, state: GameState, first: Play) -> Value:
        """The result of `first` followed by the side's cautious play (oracle1's line)."""
        rules = state.table.rules
        mask = 0
        for s in self.a_seats:
            mask |= 1 << s
        if rules.scoring == "none":
            mask = 0  # outcome plays greedily where nothing scores during the hand
        settled = finish_hand(state, CAUTIOUS, first=first, careful=mask)
        return hand_value(settled.totals, self.base, self.a_side)

    def solve(self, state: GameState, plan: list[Move], plan_value: Value | None
              ) -> tuple[list[Move], Value, bool]:
        """The best line of A's choices from `state` (A to move, with a choice), its value
        and whether the search finished. `plan` (worth `plan_value`) is the best line known
        from an earlier, unfinished search; it stands unless a strictly better one is found."""
        self.nodes = 0
        self.best = None
        self.line = []
        self.partial = False
        if plan and plan_value is not None:
            self.consider(plan_value, plan)
        order = greedy_order(state)
        seeded = [(self.cautious_line(state, m), i) for i, m in enumerate(order)
                  if isinstance(m, Play)]
        seeded.sort(key=lambda v: (v[0], -v[1]), reverse=True)
        # A cautious line is a real line, but its later moves are not recorded: it orders
        # the search and stands for its first move when the search is cut short. A finished
        # search meets it again as a leaf and records it whole.
        fallback_value, first = seeded[0]
        if self.best is None or fallback_value > self.best:
            self.best = fallback_value
            self.line = [order[first]]
            self.partial = True
        seat = state.turn
        assert seat is not None
        done = True
        try:
            for _, i in seeded:
                move = order[i]
                self.nodes += 1
                self.dfs(apply_until_hand_end(state, seat, move)[0], [move])
        except Capped:
            done = False
        assert self.best is not None and not (done and self.partial)
        return self.line, self.best, done


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    spec: str
    players: int
    deal_seed: int
    a_seats: tuple[int, ...]
    level: str
    cap: int
    deals: int = HAND_DEALS
    samples: int = SAMPLES


@dataclass(frozen=True, slots=True, kw_only=True)
class Game:
    """One hand of the match, from A's side."""

    score: float
    a_points: float
    b_points: float
    decisions: int
    capped: int
    fallbacks: int
    nodes: int
    greedy_mismatches: int
    plan_mismatch: bool


_LEVEL_MOVES: dict[str, Callable[[GameState, frozenset[int], int, Task], Move]] = {
    "oracle1": lambda state, a_seats, seed, task: oracle1_move(state),
    "hands": lambda state, a_seats, seed, task: hands_move(state, seed, task.deals),
    "posterior": lambda state, a_seats, seed, task: posterior_move(state, a_seats, seed,
                                                                   task.samples),
    "infoset": lambda state, a_seats, seed, task: infoset_move(state, a_seats, seed,
                                                               task.samples),
    "strong": lambda state, a_seats, seed, task: choose_move(
        "strong", view(state, state.turn), seed, think_ms=10**9, samples=task.samples),
}
"""The levels other than `oracle` (which keeps a plan between choices): A's move at a choice."""


def play(task: Task) -> Game:
    """Play one hand: A omniscient, B the greedy bot on its view."""
    state = new_game(task.spec, task.players, task.deal_seed)
    sides = state.sides
    a_side = next(k for k, side in enumerate(sides) if tuple(side) == task.a_seats)
    b_sides = [k for k in range(len(sides)) if k != a_side]
    start = tuple(state.scores)
    a_seats = frozenset(task.a_seats)
    solver = Solver(a_seats, a_side, start, task.cap)
    plan: list[Move] = []
    plan_value: Value | None = None
    exact = False  # whether `plan` comes from a finished search
    decisions = capped = fallbacks = nodes = mismatches = 0
    moves = 0
    while not state.game_over and moves < MAX_MOVES:
        seat = state.turn
        assert seat is not None
        seed = task.deal_seed * 4099 + moves
        if seat in a_seats:
            legal = legal_moves(state)
            if len(legal) == 1:
                move = legal[0]
            elif task.level == "oracle":
                decisions += 1
                if not (exact and plan and plan[0] in legal):
                    exact = False
                    plan, plan_value, exact = solver.solve(state, plan, plan_value)
                    nodes += solver.nodes
                    if not exact:
                        capped += 1
                        if plan_value[0] < 1.0:
                            fallbacks += 1
                move = plan[0]
                plan = plan[1:]
            else:
                decisions += 1
                move = _LEVEL_MOVES[task.level](state, a_seats, seed, task)
        else:
            move = choose_move("greedy", view(state, seat), seed)
            if move != greedy_order(state)[0]:
                mismatches += 1
        state, events = apply(state, seat, move)
        moves += 1
        if any(e["type"] == "hand_end" for e in events):
            break
    gains = [s - b for s, b in zip(state.scores, start, strict=True)]
    score = side_score([float(g) for g in gains], a_side)
    result = hand_value(state.scores, start, a_side)
    return Game(score=score, a_points=float(gains[a_side]),
                b_points=sum(gains[k] for k in b_sides) / len(b_sides),
                decisions=decisions, capped=capped, fallbacks=fallbacks, nodes=nodes,
                greedy_mismatches=mismatches,
                plan_mismatch=exact and plan_value is not None and result != plan_value)


def tasks_for(preset: str, players: int, deals: int, seed: int, level: str,
              cap: int, hand_deals: int = HAND_DEALS, samples: int = SAMPLES) -> list[Task]:
    """The match's games: every seeded deal once per seating."""
    return [Task(spec=preset, players=players, deal_seed=deal_seed(seed, d), a_seats=seats,
                 level=level, cap=cap, deals=hand_deals, samples=samples)
            for d in range(deals) for seats in seatings(preset, players)]


def summary(preset: str, players: int, level: str, games: list[Game],
            seconds: float) -> dict[str, object]:
    """One cell's figures (each game is one hand)."""
    n = len(games)
    wins = sum(g.score for g in games)
    low, high = wilson(wins, n)
    return {
        "preset": preset,
        "players": players,
        "level": level,
        "games": n,
        "a_score": round(wins / n, 4) if n else 0.0,
        "ci95": [round(low, 4), round(high, 4)],
        "a_points_per_hand": round(sum(g.a_points for g in games) / max(n, 1), 3),
        "b_points_per_hand": round(sum(g.b_points for g in games) / max(n, 1), 3),
        "decisions": sum(g.decisions for g in games),
        "capped": sum(g.capped for g in games),
        "fallbacks": sum(g.fallbacks for g in games),
        "nodes": sum(g.nodes for g in games),
        "greedy_mismatches": sum(g.greedy_mismatches for g in games),
        "plan_mismatches": sum(1 for g in games if g.plan_mismatch),
        "seconds": round(seconds, 2),
    }


def cells_named(which: str | None, preset: str, players: int) -> list[tuple[str, int]]:
    """The cells of `--cells weak|all`, or the one of `--preset` and `--players` (None)."""
    if which == "weak":
        return list(WEAK_CELLS)
    if which == "all":
        return all_cells()
    return [(preset, players)]


def all_cells() -> list[tuple[str, int]]:
    """Every preset with every player count it is played by."""
    cells = []
    for preset in sorted(PRESETS):
        for players in (2, 3, 4):
            try:
                rules_from_spec(preset, players)
            except EngineError:
                continue
            cells.append((preset, players))
    return cells


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="all-fives")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--deals", type=int, default=40, help="seeded deals per cell")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--level", choices=LEVELS, default="oracle")
    parser.add_argument("--node-cap", type=int, default=NODE_CAP,
                        help="positions an oracle search may visit per decision")
    parser.add_argument("--hand-deals", type=int, default=HAND_DEALS,
                        help="boneyard shuffles per choice of the `hands` level")
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help="deals a move of the `strong`, `posterior` and `infoset` levels")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--cells", choices=("weak", "all"), default=None,
                        help="run a list of cells instead of --preset/--players")
    args = parser.parse_args(argv)
    cells = cells_named(args.cells, args.preset, args.players)
    pool = (multiprocessing.get_context("spawn").Pool(args.jobs) if args.jobs > 1 else None)
    try:
        for preset, players in cells:
            tasks = tasks_for(preset, players, args.deals, args.seed, args.level,
                              args.node_cap, args.hand_deals, args.samples)
            started = time.perf_counter()
            if pool is not None:
                games = pool.map(play, tasks, chunksize=1)
            else:
                games = [play(t) for t in tasks]
            figures = summary(preset, players, args.level, games,
                              time.perf_counter() - started)
            print(json.dumps(figures), flush=True)
    finally:
        if pool is not None:
            pool.close()
            pool.join()


if __name__ == "__main__":
    main()
