"""Bot against bot: `python -m engine match ...` plays seeded deals in every seating.

Every deal is played once per seating: A takes the seats of one side and B every
other seat, for each side in turn (2 players: seats swapped; 4 players in
partnerships: partnerships swapped; 3 players: A takes each seat in turn). A game's score for A is
its result against each B side in turn, averaged: with `unit="hand"` each game is one
hand and A beats a side when it gains more points in the hand, bonus included; with
`unit="game"` whole games are played to the target, the winner ranks above everyone
and the others by their totals. Equal counts one half. With two sides this is simply
win, lose or tie. Bots see only `view(state, seat)`. Runs in worker processes with
`jobs` > 1. Imports engine modules and the standard library only.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.bots import BOT_LEVELS, choose_move
from engine.game import apply, new_game
from engine.rules import rules_from_spec
from engine.views import view

Spec = str | Mapping[str, object]
MAX_MOVES = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    spec: Spec
    players: int
    deal_seed: int
    a_seats: tuple[int, ...]
    a: str
    b: str
    think_ms: int | None
    samples: int | None
    unit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchGame:
    """One game of the match, from A's side."""

    score: float
    a_points: float
    b_points: float
    hands: int
    a_think_max_ms: float
    a_think_total_ms: float
    a_moves: int
    b_think_max_ms: float


def deal_seed(seed: int, deal: int) -> int:
    """The engine seed of deal number `deal` of a match seeded `seed`."""
    return (seed * 1_000_003 + deal * 7919) % (1 << 62)


def seatings(spec: Spec, players: int) -> list[tuple[int, ...]]:
    """A's seats in each seating: one per side of the table."""
    rules = rules_from_spec(spec, players)
    state = new_game(rules.spec, players, 0)
    return [tuple(side) for side in state.sides]


def play(task: Task) -> MatchGame:
    """Play one game (a hand, or a whole game) of the match."""
    state = new_game(task.spec, task.players, task.deal_seed)
    sides = state.sides
    a_side = next(k for k, side in enumerate(sides) if tuple(side) == task.a_seats)
    b_sides = [k for k in range(len(sides)) if k != a_side]
    start = list(state.scores)
    hands = 0
    moves = 0
    a_max = a_total = b_max = 0.0
    a_moves = 0
    while not state.game_over and moves < MAX_MOVES:
        seat = state.turn
        assert seat is not None
        level = task.a if seat in task.a_seats else task.b
        seen = view(state, seat)
        t0 = time.perf_counter()
        move = choose_move(level, seen, task.deal_seed * 4099 + moves, task.think_ms,
                           task.samples)
        spent = (time.perf_counter() - t0) * 1000.0
        if seat in task.a_seats:
            a_max = max(a_max, spent)
            a_total += spent
            a_moves += 1
        else:
            b_max = max(b_max, spent)
        state, events = apply(state, seat, move)
        moves += 1
        if any(e["type"] == "hand_end" for e in events):
            hands += 1
            if task.unit == "hand":
                break
    gains = [s - b for s, b in zip(state.scores, start, strict=True)]
    a_points = float(gains[a_side])
    b_points = sum(gains[k] for k in b_sides) / len(b_sides)
    if task.unit == "hand":
        rank = [float(g) for g in gains]
    else:
        rank = [float(s) + (1e9 if k == state.winner else 0.0)
                for k, s in enumerate(state.scores)]
    score = side_score(rank, a_side)
    return MatchGame(score=score, a_points=a_points, b_points=b_points, hands=max(hands, 1),
                     a_think_max_ms=a_max, a_think_total_ms=a_total, a_moves=a_moves,
                     b_think_max_ms=b_max)


def side_score(rank: list[float], a_side: int) -> float:
    """A's result against each other side (1 above, 1/2 level, 0 below), averaged."""
    others = [r for k, r in enumerate(rank) if k != a_side]
    mine = rank[a_side]
    return sum(1.0 if mine > r else 0.5 if mine == r else 0.0 for r in others) / len(others)


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (ties count as half a success)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def elo(p: float, limit: float = 800.0) -> float:
    """The Elo difference a score rate implies, clamped to ±limit."""
    if p <= 0.0:
        return -limit
    if p >= 1.0:
        return limit
    return max(-limit, min(limit, -400.0 * math.log10(1.0 / p - 1.0)))


def run_match(
    spec: Spec, players: int, a: str, b: str, deals: int, seed: int,
    think_ms: int | None = None, jobs: int = 1, unit: str = "hand",
    samples: int | None = None,
) -> dict[str, Any]:
    """Play the match and return its figures (plain data, one JSON line in the CLI)."""
    for level in (a, b):
        if level not in BOT_LEVELS:
            raise ValueError(f"unknown bot {level!r}; choose one of {', '.join(BOT_LEVELS)}")
    if unit not in ("hand", "game"):
        raise ValueError(f"unit is hand or game, not {unit!r}")
    tasks = [
        Task(spec=spec, players=players, deal_seed=deal_seed(seed, d), a_seats=seats, a=a, b=b,
             think_ms=think_ms, samples=samples, unit=unit)
        for d in range(deals)
        for seats in seatings(spec, players)
    ]
    started = time.perf_counter()
    if jobs > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            outcomes = pool.map(play, tasks, chunksize=1)
    else:
        outcomes = [play(t) for t in tasks]
    n = len(outcomes)
    wins = sum(o.score for o in outcomes)
    hands = sum(o.hands for o in outcomes)
    rate = wins / n if n else 0.0
    low, high = wilson(wins, n)
    a_moves = sum(o.a_moves for o in outcomes)
    return {
        "games": n,
        "unit": unit,
        "players": players,
        "rules": spec,
        "a": a,
        "b": b,
        "a_wins": sum(1 for o in outcomes if o.score > 0.5),
        "b_wins": sum(1 for o in outcomes if o.score < 0.5),
        "ties": sum(1 for o in outcomes if o.score == 0.5),
        "a_win_rate": round(rate, 4),
        "ci95": [round(low, 4), round(high, 4)],
        "a_points_per_hand": round(sum(o.a_points for o in outcomes) / max(hands, 1), 3),
        "b_points_per_hand": round(sum(o.b_points for o in outcomes) / max(hands, 1), 3),
        "elo_diff": round(elo(rate), 1),
        "hands": hands,
        "a_think_ms_mean": round(sum(o.a_think_total_ms for o in outcomes) / max(a_moves, 1), 2),
        "a_think_ms_max": round(max((o.a_think_max_ms for o in outcomes), default=0.0), 2),
        "b_think_ms_max": round(max((o.b_think_max_ms for o in outcomes), default=0.0), 2),
        "seconds": round(time.perf_counter() - started, 2),
    }


def _emit(obj: object) -> None:
    import json
    import sys

    sys.stdout.write(json.dumps(obj, separators=(", ", ": ")) + "\n")


def run_match_command(args: Any) -> int:
    """`python -m engine match`: print one JSON line of figures (or an error line, exit 1)."""
    import json

    from engine.errors import EngineError

    spec: Any = args.preset or "all-fives"
    if args.rules is not None:
        try:
            spec = json.loads(args.rules)
        except ValueError as exc:
            _emit({"error": {"code": "bad_format", "message": f"--rules is not JSON: {exc}"}})
            return 1
    if args.deals < 1 or args.jobs < 1:
        _emit({"error": {"code": "bad_option", "message": "--deals and --jobs must be at least 1"}})
        return 1
    try:
        rules_from_spec(spec, args.players)
        result = run_match(spec, args.players, args.a, args.b, args.deals, args.seed,
                           args.think_ms, args.jobs, args.unit, args.samples)
    except EngineError as exc:
        _emit({"error": {"code": exc.code, "message": exc.message}})
        return 1
    _emit(result)
    return 0


def add_rules_arguments(parser: Any) -> None:
    """``--preset NAME`` or ``--rules JSON``, one of them required (match and selfplay)."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--preset", help="preset name, e.g. all-fives")
    which.add_argument("--rules", help='rules spec as JSON, e.g. {"preset":"block"}')


def register_match(sub: Any) -> None:
    """Add the `match` subcommand to the engine's command line."""
    p = sub.add_parser("match", help="play bot against bot on seeded deals; print figures")
    add_rules_arguments(p)
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--a", required=True, choices=BOT_LEVELS, help="bot A")
    p.add_argument("--b", required=True, choices=BOT_LEVELS, help="bot B")
    p.add_argument("--deals", type=int, default=100, help="seeded deals (each played per seating)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--think-ms", type=int, default=None, help="time budget per strong move")
    p.add_argument("--samples", type=int, default=None, help="sample budget per strong move")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--unit", choices=("hand", "game"), default="hand")
    p.set_defaults(run=run_match_command)
