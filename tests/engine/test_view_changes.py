"""`engine.view_changes`: after a move that keeps its hand going, the fields it lists, applied
to each viewer's view before the move, give that viewer's view after it; every other field is
the same in both; any other move (a hand's last, a deal) gives None."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
from engine.views import view_changes, views


def applied(before: dict[str, Any], fields: list[tuple[Any, ...]]) -> dict[str, Any]:
    after = dict(before)
    for field in fields:
        kind, key = field[0], field[1]
        if kind == "=":
            assert before[key] == field[2], key  # the value the view had
            after[key] = field[3]
        elif kind == "+":
            after[key] = [*before[key], *field[2]]
        else:
            assert kind == "emptied" and before[key], field
            after[key] = []
    return after


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", ["all-fives", "draw", "fives-and-threes", "block-penalty"])
def test_the_listed_changes_turn_each_view_into_the_next(preset: str, players: int) -> None:
    rng = random.Random(players * 31 + len(preset))
    state = engine.new_game(preset, players, rng.randrange(2**62))
    viewers: list[int | None] = [None, *range(players)]
    listed = ended = 0
    while not state.game_over:
        move = rng.choice(engine.legal_moves(state))
        after, _ = engine.apply(state, state.turn, move)
        changes = view_changes(state, after, viewers)
        if changes is None:
            ended += 1
            assert after.table is not state.table or after.turn is None
        else:
            listed += 1
            for old, new, fields in zip(views(state, viewers), views(after, viewers), changes,
                                        strict=True):
                assert applied(old, fields) == new
        state = after
    assert listed > 5 * ended > 0
