"""`engine.view_changes`: after a move that keeps its hand going, the fields it lists, applied
to each viewer's view before the move, give that viewer's view after it; every other field is
the same in both; any other move (a hand's last, a deal) gives None."""

from __future__ import annotations

import random
from typing import Any

import pytest

import engine
from engine.views import game_change_blocks, view_changes, views


def applied(before: dict[str, Any], fields: list[tuple[Any, ...]]) -> dict[str, Any]:
    after = dict(before)
    for field in fields:
        kind, key = field[0], field[1]
        if kind == "=":
            assert before[key] == field[2], key  # the value the view had
            after[key] = field[3]
        elif kind == "+":
            after[key] = [*before[key], *field[2]]
        elif kind == "cut":
            kept, length, shown = field[2], field[3], field[4]
            assert len(kept) == len(shown) < length == len(before[key]), key
            assert before[key][:len(kept)] == kept, key  # the items the list keeps
            after[key] = shown
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


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", ["all-fives", "draw", "fives-and-threes", "block-penalty"])
@pytest.mark.parametrize("pause", [False, True])
def test_every_change_of_a_game_is_listed_in_blocks(preset: str, players: int,
                                                    pause: bool) -> None:
    """`game_change_blocks`: after any move or deal (hands' last moves, the game's end, with
    or without a pause between hands), the listed fields turn each view into the next; the
    blocks viewers share are the very same lists."""
    rng = random.Random(players * 17 + len(preset) + pause)
    state = engine.new_game(preset, players, rng.randrange(2**62))
    viewers: list[int | None] = [None, *range(players)]
    while not state.game_over:
        if state.turn is None:
            after, _ = engine.deal_next(state)
        else:
            move = rng.choice(engine.legal_moves(state))
            apply = engine.apply_until_hand_end if pause else engine.apply
            after, _ = apply(state, state.turn, move)
        blocks = game_change_blocks(state, after, viewers)
        assert blocks is not None
        for old, new, found in zip(views(state, viewers), views(after, viewers), blocks,
                                   strict=True):
            assert applied(old, [field for block in found for field in block]) == new
        assert blocks[0][0] is blocks[1][0]  # what every viewer sees alike: one list
        state = after
