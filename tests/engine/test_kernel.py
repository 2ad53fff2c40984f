"""The rules kernel, playouts and rebuilt positions: one set of rules for `apply` and every
simulation."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random

import pytest
from hypothesis import given, settings

from engine import (
    GREEDY,
    RANDOM,
    GameState,
    IllegalMove,
    InvalidTranscript,
    Play,
    Tile,
    apply,
    determinize,
    finish_hand,
    legal_moves,
    new_game,
    play_out_hand,
    view,
)
from engine.kernel import open_ends, play_score, play_tile
from engine.layout import end_total, find_end
from engine.moves import PLAYS
from engine.state import make_state
from engine.tiles import VALUE_MASK
from tests.engine.scenario import deal
from tests.strategies import games, seeds

SMALL = {"preset": "all-fives", "hand_size": 2, "draw": "none"}
HANDS = [["6-4", "5-0"], ["4-1", "3-3"]]


def test_a_greedy_hand_settled_by_hand() -> None:
    # Seat 0 leads 6-4 (ends 6 + 4 = 10: 10 points) rather than 5-0 (5 points). Seat 1's
    # only fit is 4-1 on the 4 (6 + 1 = 7: nothing), and then neither 5-0 nor 3-3 fits and
    # nobody may draw: blocked. Pips 5 against 6: seat 0 wins 6 rounded to 5.
    settled = finish_hand(deal(SMALL, HANDS), GREEDY)
    assert settled.end == "blocked"
    assert settled.seat == 1
    assert settled.totals == (15, 0)
    assert (settled.winner, settled.bonus, settled.pips) == (0, 5, (5, 6))
    assert settled.game_winner is None


def test_a_first_move_is_played_before_the_policy() -> None:
    # Leading 5-0 instead (5 points) blocks at once: 6-4, 4-1 and 3-3 fit neither 5 nor 0.
    # Pips 10 against 11: seat 0 wins 11 rounded to 10.
    settled = finish_hand(deal(SMALL, HANDS), GREEDY, first=Play(Tile.parse("5-0")))
    assert (settled.end, settled.seat, settled.totals) == ("blocked", 0, (15, 0))
    assert (settled.bonus, settled.pips) == (10, (10, 11))


def test_finish_hand_refuses_what_apply_refuses() -> None:
    state = deal(SMALL, HANDS)
    with pytest.raises(IllegalMove) as info:
        finish_hand(state, GREEDY, first=Play(Tile.parse("4-1")))
    assert info.value.code == "not_in_hand"
    with pytest.raises(ValueError):
        finish_hand(state, "clever")
    with pytest.raises(ValueError):
        play_out_hand(state, random.Random(0), "clever")
    with pytest.raises(ValueError):
        finish_hand(state, RANDOM)  # the random policy needs an rng


@settings(max_examples=40, deadline=None)
@given(games(), seeds)
def test_random_finish_hand_settles_as_apply_does(state: GameState, seed: int) -> None:
    settled = finish_hand(state, RANDOM, random.Random(seed))
    rng = random.Random(seed)
    slow = state
    while True:
        moves = legal_moves(slow)
        assert slow.turn is not None
        slow, events = apply(slow, slow.turn, moves[int(rng.random() * len(moves))])
        end = next((e for e in events if e["type"] == "hand_end"), None)
        if end is not None:
            break
    assert list(settled.totals) == end["totals"]
    assert (settled.end, settled.winner, settled.bonus, list(settled.pips)) == (
        end["end"], end["winner"], end["bonus"], end["pips"])
    assert settled.game_winner == (slow.winner if slow.game_over else None)


def _plays_through_open_ends(state: GameState) -> list[object]:
    """legal_moves' plays, listed the general way: per open end, tiles ascending."""
    seat = state.turn
    assert seat is not None
    hand = state.hand_masks[seat]
    out: list[object] = []
    for index in open_ends(state.ends, state.rules.all_four_first):
        _node, _side, value, _halves, on = state.ends[index]
        fits = hand & VALUE_MASK[value]
        out += [PLAYS[t][on] for t in range(28) if fits >> t & 1]
    return out


@settings(max_examples=40, deadline=None)
@given(games(), seeds)
def test_legal_moves_lists_the_open_ends_plays_and_play_score_is_play_tiles(
        state: GameState, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(80):
        if state.game_over:
            break
        if state.nodes:
            nodes_in_order = [e[0] for e in state.ends]
            for node in set(nodes_in_order):  # a node's ends are next to each other
                first = nodes_in_order.index(node)
                count = nodes_in_order.count(node)
                assert nodes_in_order[first:first + count] == [node] * count
            plays = [m for m in legal_moves(state) if isinstance(m, Play)]
            assert plays == _plays_through_open_ends(state)
            total = end_total(state.ends)
            for play in plays:
                assert play.on is not None
                index = find_end(state.ends, play.tile.index, play.on.index,
                                 state.rules.all_four_first)
                placed = play_tile(state.rules, state.nodes, state.ends, index, play.tile.index)
                assert placed[2] == end_total(placed[1])
                assert play_score(state.rules, state.nodes, state.ends, index,
                                  play.tile.index, total) == placed[3]
        moves = legal_moves(state)
        assert state.turn is not None
        state, _ = apply(state, state.turn, moves[rng.randrange(len(moves))])


def test_fast_records_are_ordinary_frozen_records() -> None:
    state = new_game("all-fives", 3, 5)
    rebuilt = GameState(table=state.table, turn=state.turn, scores=state.scores,
                        hand_masks=state.hand_masks, boneyard_tiles=state.boneyard_tiles,
                        nodes=state.nodes, ends=state.ends, log=state.log)
    made = make_state(state.table, state.turn, state.scores, state.hand_masks,
                      state.boneyard_tiles, state.nodes, state.ends, state.log)
    assert type(made) is GameState and type(made.table).__name__ == "Table"
    assert made == rebuilt == state and hash(made) == hash(rebuilt)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.turn = 0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(made)) == made
    assert copy.deepcopy(made) == made
    assert dataclasses.replace(made, turn=None).turn is None


def test_determinize_rebuilds_the_position_and_refuses_a_deal_that_does_not_fit() -> None:
    state = new_game("all-fives", 2, 9)
    for _ in range(6):
        assert state.turn is not None
        state, _ = apply(state, state.turn, legal_moves(state)[0])
    seat = state.turn
    assert seat is not None
    seen = view(state, seat)
    rebuilt = determinize(seen, state.hand_masks, state.boneyard_tiles)
    assert (rebuilt.nodes, rebuilt.ends, rebuilt.scores, rebuilt.turn) == (
        state.nodes, state.ends, state.scores, state.turn)
    assert legal_moves(rebuilt) == legal_moves(state)
    spectator = determinize(view(state, None), state.hand_masks, state.boneyard_tiles)
    assert spectator.hand_masks == state.hand_masks
    other = 1 - seat
    hands = list(state.hand_masks)
    swapped = [list(state.hand_masks), list(state.boneyard_tiles)]
    tile = state.boneyard_tiles[0]
    hidden = hands[other] & -hands[other]  # swap a hidden tile with the boneyard's first
    swapped[0][other] = hands[other] ^ hidden | 1 << tile
    swapped[1][0] = hidden.bit_length() - 1
    assert determinize(seen, swapped[0], swapped[1]).hand_masks[other] == swapped[0][other]
    bad_cases = [
        (hands[::-1], state.boneyard_tiles),  # the viewer's hand is not its own
        (hands, state.boneyard_tiles[1:]),  # a boneyard of the wrong size
        (hands, (state.boneyard_tiles[0],) * len(state.boneyard_tiles)),  # a tile twice
    ]
    for bad_hands, bad_boneyard in bad_cases:
        with pytest.raises(InvalidTranscript) as info:
            determinize(seen, bad_hands, bad_boneyard)
        assert info.value.code == "bad_state"
    broken = dict(seen, ends=[])
    with pytest.raises(InvalidTranscript):
        determinize(broken, state.hand_masks, state.boneyard_tiles)
