"""The `random` and `greedy` bots.

`random` picks uniformly among the legal moves. `greedy` takes the most points now;
ties go to the heaviest tile, then doubles, then the higher tile (6-2 before 5-3),
then the end on the layout tile placed earliest. That order is the engine's own
(engine.playout `greedy_key`), so the greedy bot and a `GREEDY` playout make the same
moves; every play is scored by the rules kernel. Draws and passes are only ever
forced, so they need no choosing. Imports only engine modules.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from engine.bots.knowledge import Knowledge
from engine.kernel import play_tile
from engine.moves import Move, Play, move_from_data
from engine.playout import greedy_key, greedy_points


def random_move(view: Mapping[str, Any], rng: random.Random) -> Move:
    """A uniformly random legal move."""
    legal = view.get("legal") or []
    if not legal:
        raise ValueError("the view has no legal move (not this seat's turn)")
    return move_from_data(legal[rng.randrange(len(legal))])


def move_points(knowledge: Knowledge, move: Move) -> int:
    """Points `move` scores now, as greedy counts them (0 for draws and passes, and for
    points an exact target voids).

    Under an exact target a domino's points are void when they and the bonus together
    overshoot; the bonus is counted when it is a fixed number, else taken as nothing
    (the other hands are hidden).
    """
    if not isinstance(move, Play):
        return 0
    return _points(knowledge, move, knowledge.play_index(move))


def _points(knowledge: Knowledge, move: Play, index: int) -> int:
    position = knowledge.position
    rules = position.table.rules
    tile = move.tile.index
    score = position.scores[position.table.side_of[knowledge.seat]]
    points = play_tile(rules, position.nodes, position.ends, index, tile)[3]
    return greedy_points(rules, points, knowledge.hand == 1 << tile, score)


def greedy_ranking(knowledge: Knowledge) -> list[Move]:
    """The legal moves, the greedy bot's favourite first."""
    ends = knowledge.position.ends

    def key(move: Move) -> int:
        if not isinstance(move, Play):
            return -1
        index = knowledge.play_index(move)
        node = ends[index][0] if index >= 0 else 0
        return greedy_key(_points(knowledge, move, index), move.tile.index, node)

    return sorted(knowledge.legal, key=key, reverse=True)
