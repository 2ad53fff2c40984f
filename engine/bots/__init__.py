"""Bots: choose a move from one seat's view (never the full state).

`choose_move(level, view, seed, think_ms=None, samples=None)` sees only the dict that
`engine.view(state, seat)` returns for the seat to move, plus a seed, and returns one
of the legal moves that view lists. Levels (`BOT_LEVELS`):
- `random`: uniformly random legal move;
- `greedy`: the most points now (engine.bots.simple documents the tie order);
- `strong`: determinized Monte Carlo over the hidden tiles (engine.bots.search),
  `think_ms` (default 300) and `samples` (default 2000) budgets;
- `strong-fast`: the same search with smaller budgets (60 ms, 250 samples).
What is the bots' own is what a seat knows of the hidden tiles (engine.bots.knowledge),
sampling deals of them (engine.bots.sampler), the likelihood of the other seats' choices and
the search; the positions they simulate are the engine's `GameState`s, rebuilt from the view
(engine.views) and played through the rules kernel (engine.playout). Imports only engine
modules.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from engine.bots.knowledge import Knowledge, ModelError
from engine.bots.search import search_move
from engine.bots.simple import greedy_ranking, random_move
from engine.moves import Move

BOT_LEVELS: tuple[str, ...] = ("random", "greedy", "strong", "strong-fast")

BUDGETS: dict[str, tuple[int, int]] = {"strong": (300, 2000), "strong-fast": (60, 250)}
"""Default (think_ms, samples) per searching level."""


def choose_move(
    level: str,
    view: Mapping[str, Any],
    seed: int,
    think_ms: int | None = None,
    samples: int | None = None,
) -> Move:
    """A legal move for the seat whose `view` this is (it must be that seat's turn)."""
    started = time.perf_counter()
    if level not in BOT_LEVELS:
        raise ValueError(f"unknown bot level {level!r}; choose one of {', '.join(BOT_LEVELS)}")
    legal = view.get("legal") or []
    if not legal:
        raise ValueError("the view has no legal move (not this seat's turn)")
    rng = random.Random(seed)
    if level == "random" or len(legal) == 1:
        return random_move(view, rng)
    try:
        knowledge = Knowledge.from_view(view, infer=level != "greedy")
        ranking = greedy_ranking(knowledge)
    except ModelError:
        return random_move(view, rng)
    if level == "greedy":
        return ranking[0]
    default_ms, default_samples = BUDGETS[level]
    budget_ms = default_ms if think_ms is None else think_ms
    budget_samples = default_samples if samples is None else samples
    try:
        return search_move(knowledge, seed, started, budget_ms, budget_samples, ranking)
    except ModelError:
        return ranking[0]


__all__ = ["BOT_LEVELS", "BUDGETS", "choose_move"]
