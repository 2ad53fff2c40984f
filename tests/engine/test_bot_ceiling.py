"""bench.bot_ceiling's best response to greedy: at seeded positions, no line of A's side does
better than the search's, and the search's line, played through `apply` against the greedy
bot, ends the hand with the result the search predicted. Its `hands` level does not read the
boneyard's order."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from bench.bot_ceiling import Solver, Value, hand_value, hands_move, oracle1_move
from engine import GameState, apply, legal_moves, new_game, view
from engine.bots import choose_move
from engine.moves import Move
from engine.views import with_hidden

CASES = [("all-fives", 2, 3, 2), ("fives-and-threes", 3, 5, 2), ("block-penalty", 4, 8, 2),
         ("bergen", 4, 11, 2), ("all-threes", 2, 13, 2), ("block", 3, 18, 1),
         ("double-bergen", 4, 4, 2), ("all-fives-classic", 4, 6, 2)]
"""(preset, players, seed, plies played greedily before the position)."""

Chooser = Callable[[GameState], Move]


def _position(preset: str, players: int, seed: int, plies: int) -> GameState:
    """The first position after `plies` greedy moves where the seat to move has a choice of
    three plays or more."""
    state = new_game(preset, players, seed)
    n = 0
    while True:
        seat = state.turn
        assert seat is not None
        if n >= plies and len(legal_moves(state)) > 2:
            return state
        state, events = apply(state, seat, choose_move("greedy", view(state, seat), n))
        assert not any(e["type"] == "hand_end" for e in events), "no choice left in the hand"
        n += 1


def _finish(state: GameState, a_seats: frozenset[int], first: Move,
            choose: Chooser) -> GameState:
    """`first`, then the hand played out through `apply`: the other seats are the greedy bot,
    A's seats play `choose`'s move whenever they have a choice."""
    seat = state.turn
    assert seat is not None
    state, events = apply(state, seat, first)
    n = 0
    while not any(e["type"] == "hand_end" for e in events):
        seat = state.turn
        assert seat is not None
        legal = legal_moves(state)
        if seat not in a_seats:
            move = choose_move("greedy", view(state, seat), n)
        elif len(legal) == 1:
            move = legal[0]
        else:
            move = choose(state)
        state, events = apply(state, seat, move)
        n += 1
    return state


@pytest.mark.parametrize(("preset", "players", "seed", "plies"), CASES)
def test_the_best_response_beats_every_other_line(preset: str, players: int, seed: int,
                                                  plies: int) -> None:
    state = _position(preset, players, seed, plies)
    seat = state.turn
    assert seat is not None
    a_side = state.table.side_of[seat]
    a_seats = frozenset(state.sides[a_side])
    base = (0,) * len(state.scores)  # the totals at the hand's start (the game's first)
    line, best, done = Solver(a_seats, a_side, base, cap=400_000).solve(state, [], None)
    assert done
    assert line[0] in legal_moves(state)

    def result(end: GameState) -> Value:
        return hand_value(end.scores, base, a_side)

    rest = list(line[1:])
    assert result(_finish(state, a_seats, line[0], lambda _: rest.pop(0))) == best
    assert not rest
    rng = random.Random(seed)
    others: list[Value] = []
    for move in legal_moves(state):
        # the same opponents and boneyard; A's side from then on: at random, greedy, and
        # the strong bot's evaluation on the true deal
        for _ in range(6):
            others.append(result(_finish(state, a_seats, move,
                                         lambda s: rng.choice(legal_moves(s)))))
        others.append(result(_finish(state, a_seats, move,
                                     lambda s: choose_move("greedy", view(s, s.turn), 0))))
        others.append(result(_finish(state, a_seats, move, oracle1_move)))
    assert all(best >= other for other in others), (best, max(others))


@pytest.mark.parametrize(("preset", "players", "seed", "plies"),
                         [("all-fives", 2, 3, 2), ("all-threes", 2, 13, 2), ("draw", 2, 9, 1)])
def test_the_hands_level_does_not_know_the_boneyards_order(preset: str, players: int,
                                                           seed: int, plies: int) -> None:
    state = _position(preset, players, seed, plies)
    boneyard = list(state.boneyard_tiles)
    assert len(boneyard) > 2
    chosen = hands_move(state, 5, 40)
    assert chosen in legal_moves(state)
    for order in range(4):
        random.Random(order).shuffle(boneyard)
        assert hands_move(with_hidden(state, state.hand_masks, boneyard), 5, 40) == chosen
