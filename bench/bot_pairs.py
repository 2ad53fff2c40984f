"""A variant of the strong bot against the code as it is, on the same games: paired figures.

    python -m bench.bot_pairs --set engine.bots.knowledge.GREEDY_MIX=0.9 --cells weak --jobs 2
    python -m bench.bot_pairs --set engine.bots.search.CAREFUL=False --preset block --players 3

Both versions play strong against greedy in the seeded match design of `engine match` (its deal
seeds, seatings, per-hand scoring and Wilson interval, imported from engine.cli.match), strong
bound to `--samples` deals a move instead of the clock, so that a game depends on the code and
its seed alone: a game the variant does not change ends the same both ways, and the difference
between the two versions is measured game by game instead of between two noisy totals. The
variant is one or more `--set MODULE.NAME=VALUE` (VALUE a Python literal), set in every worker
process before it plays; the code as it is plays in workers without them.

Prints one JSON line per cell: `preset`, `players`, `games`, each version's score (`base_score`,
`variant_score`, with their 95 % intervals), `same` (games with the same result both ways), and
`margin_diff` with `margin_ci95`: the variant's mean gain, game by game, in A's margin per hand
(A's points less the mean of the other sides') and the half-width of its 95 % interval.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bot_ceiling import cells_named
from engine.cli.match import MatchGame, Task, deal_seed, play, seatings, wilson

Setting = tuple[str, str, object]
"""(module, attribute, value) of one `--set`."""


def parse_setting(text: str) -> Setting:
    """`MODULE.NAME=VALUE` as (module, name, value); the attribute must exist."""
    target, sep, literal = text.partition("=")
    module, dot, name = target.strip().rpartition(".")
    if not sep or not dot or not module or not name:
        raise ValueError(f"{text!r} is not MODULE.NAME=VALUE")
    value = ast.literal_eval(literal.strip())
    if not hasattr(importlib.import_module(module), name):
        raise ValueError(f"{module} has no attribute {name}")
    return module, name, value


def apply_settings(settings: Sequence[Setting]) -> None:
    for module, name, value in settings:
        setattr(importlib.import_module(module), name, value)


def tasks_for(preset: str, players: int, deals: int, seed: int, samples: int) -> list[Task]:
    spec = {"preset": preset}
    return [
        Task(spec=spec, players=players, deal_seed=deal_seed(seed, d), a_seats=seats,
             a="strong", b="greedy", think_ms=None, samples=samples, unit="hand")
        for d in range(deals)
        for seats in seatings(spec, players)
    ]


def compare(preset: str, players: int, base: Sequence[MatchGame],
            variant: Sequence[MatchGame], seconds: float) -> dict[str, Any]:
    """The paired figures of one cell (both lists in the order of `tasks_for`)."""
    n = len(base)
    gains = [(v.a_points - v.b_points) - (b.a_points - b.b_points)
             for b, v in zip(base, variant, strict=True)]
    mean = sum(gains) / n
    spread = math.sqrt(sum((g - mean) ** 2 for g in gains) / (n - 1)) if n > 1 else 0.0
    figures: dict[str, Any] = {"preset": preset, "players": players, "games": n}
    for label, games in (("base", base), ("variant", variant)):
        won = sum(g.score for g in games)
        low, high = wilson(won, n)
        figures[f"{label}_score"] = round(won / n, 4)
        figures[f"{label}_ci95"] = [round(low, 4), round(high, 4)]
    figures["same"] = sum(1 for b, v in zip(base, variant, strict=True) if b.score == v.score)
    figures["margin_diff"] = round(mean, 3)
    figures["margin_ci95"] = round(1.96 * spread / math.sqrt(n), 3)
    figures["seconds"] = round(seconds, 1)
    return figures


def run(tasks: Sequence[Task], settings: Sequence[Setting], jobs: int) -> list[MatchGame]:
    """Every task's game with `settings` set: in `jobs` worker processes, or in this one (the
    settings undone after)."""
    if jobs > 1:
        context = multiprocessing.get_context("spawn")
        with context.Pool(jobs, initializer=apply_settings, initargs=(list(settings),)) as pool:
            return pool.map(play, tasks, chunksize=1)
    originals = [(m, n, getattr(importlib.import_module(m), n)) for m, n, _ in settings]
    apply_settings(settings)
    try:
        return [play(t) for t in tasks]
    finally:
        apply_settings(originals)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="settings", action="append", required=True,
                        metavar="MODULE.NAME=VALUE", help="the variant (repeat for several)")
    parser.add_argument("--preset", default="all-fives")
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--cells", choices=("weak", "all"), default=None,
                        help="run a list of cells instead of --preset/--players")
    parser.add_argument("--deals", type=int, default=100, help="seeded deals per cell")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--samples", type=int, default=150, help="strong's deals per move")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    args = parser.parse_args(argv)
    try:
        settings = [parse_setting(s) for s in args.settings]
    except (ValueError, SyntaxError, ImportError) as exc:
        parser.error(str(exc))
    for preset, players in cells_named(args.cells, args.preset, args.players):
        tasks = tasks_for(preset, players, args.deals, args.seed, args.samples)
        started = time.perf_counter()
        base = run(tasks, (), args.jobs)
        variant = run(tasks, settings, args.jobs)
        print(json.dumps(compare(preset, players, base, variant,
                                 time.perf_counter() - started)), flush=True)


if __name__ == "__main__":
    main()
