"""bench.bot_ceiling's best response to greedy: at seeded positions, no line of A's side does
better than the search's, and the search's line, played through `apply` against the greedy
bot, ends the hand with the result the search predicted. Its `hands` level does not read the
boneyard's order."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from bench.bot_ceiling import (
    InfosetSearch,
    Solver,
    Value,
    hand_value,
    hands_move,
    oracle1_move,
    ruled_out_by_greedy,
)
from engine import GameState, apply, legal_moves, new_game, view
from engine.bots import choose_move
from engine.bots.knowledge import Knowledge
from engine.moves import Move
from engine.views import with_hidden
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES

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


def _ruled_overlaps(preset: str, players: int, seed: int, others: str) -> tuple[int, int]:
    """Play a game of `others` (greedy or random) for every seat but 0, which plays greedily;
    at each of seat 0's turns, the tiles `ruled_out_by_greedy` rules out of the other hands:
    how many in all, and how many of them the seats really held."""
    state = new_game(preset, players, seed)
    rng = random.Random(seed)
    ruled_total = overlaps = 0
    for n in range(300):
        if state.game_over:
            break
        seat = state.turn
        assert seat is not None
        seen = view(state, seat)
        if seat == 0:
            ruled = ruled_out_by_greedy(Knowledge.from_view(seen), frozenset({0}))
            for s in range(1, players):
                ruled_total += ruled[s].bit_count()
                overlaps += (ruled[s] & state.hand_masks[s]).bit_count()
            move = choose_move("greedy", seen, n)
        elif others == "greedy":
            move = choose_move("greedy", seen, n)
        else:
            legal = legal_moves(state)
            move = legal[rng.randrange(len(legal))]
        state, _ = apply(state, seat, move)
    return ruled_total, overlaps


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_the_greedy_posterior_never_rules_out_a_tile_a_greedy_seat_holds(
        preset: str, players: int) -> None:
    ruled = overlaps = 0
    for seed in range(3):  # whole games, so exact targets are reached
        r, o = _ruled_overlaps(preset, players, seed, "greedy")
        ruled, overlaps = ruled + r, overlaps + o
    assert ruled > 0  # the reading rules tiles out...
    assert overlaps == 0  # ...and never one a greedy seat holds


def test_the_greedy_posterior_misreads_seats_that_are_not_greedy() -> None:
    # The same reading of seats playing at random rules out tiles they hold: the check above
    # can fail, and `posterior` is a bound against greedy only.
    overlaps = sum(_ruled_overlaps("fives-and-threes", 4, seed, "random")[1]
                   for seed in range(3))
    assert overlaps > 0


def _best_line(state: GameState, seat: int, value: Callable[[GameState], float]) -> float:
    """The best `value` any line of `seat`'s choices reaches, every other seat the greedy bot,
    by walking every line through `apply` (`state`: `seat` to move)."""
    best = None
    for move in legal_moves(state):
        after, events = apply(state, seat, move)
        n = 0
        while not any(e["type"] == "hand_end" for e in events):
            turn = after.turn
            assert turn is not None
            if turn == seat and len(legal_moves(after)) > 1:
                break
            reply = (legal_moves(after)[0] if turn == seat
                     else choose_move("greedy", view(after, turn), n))
            after, events = apply(after, turn, reply)
            n += 1
        done = any(e["type"] == "hand_end" for e in events)
        result = value(after) if done else _best_line(after, seat, value)
        best = result if best is None else max(best, result)
    assert best is not None
    return best


@pytest.mark.parametrize(("preset", "seed", "plies"), [
    ("all-fives", 3, 2), ("block-penalty", 5, 1), ("block", 7, 1), ("all-threes", 13, 4)])
def test_the_infoset_search_on_one_deal_finds_the_best_line(preset: str, seed: int,
                                                            plies: int) -> None:
    # With the true deal as its only deal, nothing is hidden from the search: its value is
    # that of the best line of the seat's own choices against greedy.
    state = _position(preset, 2, seed, plies)
    seat = state.turn
    assert seat is not None
    side = state.table.side_of[seat]

    def value(end: GameState) -> float:
        gains = [a - b for a, b in zip(end.scores, state.scores, strict=True)]
        return gains[side] - gains[1 - side]

    search = InfosetSearch(seat, value)
    found = max(search.total([state], m) for m in legal_moves(state))
    assert found == _best_line(state, seat, value)
