"""The `random` and `greedy` bots.

`random` picks uniformly among the legal moves. `greedy` takes the most points now;
ties go to the heaviest tile, then doubles, then the higher tile (6-2 before 5-3),
then the end on the layout tile placed earliest. Draws and passes are only ever
forced, so they need no choosing. Imports only `engine.moves` and `engine.bots`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from engine.bots.knowledge import Knowledge
from engine.bots.table import ARM, HUB
from engine.moves import Move, Play, move_from_data
from engine.tiles import IS_DOUBLE, PIPS


def random_move(view: Mapping[str, Any], rng: random.Random) -> Move:
    """A uniformly random legal move."""
    legal = view.get("legal") or []
    if not legal:
        raise ValueError("the view has no legal move (not this seat's turn)")
    return move_from_data(legal[rng.randrange(len(legal))])


def play_points(knowledge: Knowledge, move: Move) -> int:
    """Points `move` scores now (0 for draws, passes and points void at an exact target).

    Under an exact target a domino's points are void when they and the bonus together
    overshoot; the bonus is counted when it is a fixed number, else taken as nothing
    (the other hands are hidden).
    """
    sim = knowledge.sim_move(move)
    if sim is None:
        return 0
    rules = knowledge.rules
    pts = knowledge.table.points_after(*sim, rules)
    side = rules.side_of()[knowledge.seat]
    bonus = 0
    if knowledge.hand == 1 << sim[0] and rules.bonus == "fixed":
        bonus = rules.bonus_points
    if rules.exact and knowledge.scores[side] + pts + bonus > rules.target:
        return 0
    return pts


def greedy_ranking(knowledge: Knowledge) -> list[Move]:
    """The legal moves, the greedy bot's favourite first."""

    def key(move: Move) -> tuple[int, int, int, int, int]:
        sim = knowledge.sim_move(move)
        if sim is None or not isinstance(move, Play):
            return (0, 0, 0, 0, 0)
        tile, kind, idx = sim
        table = knowledge.table
        node = table.hubs[idx][4] if kind == HUB else table.ends[idx][3] if kind == ARM else 0
        pts = play_points(knowledge, move)
        return (pts, PIPS[tile], 1 if IS_DOUBLE[tile] else 0, tile, -node)

    return sorted(knowledge.legal, key=key, reverse=True)
