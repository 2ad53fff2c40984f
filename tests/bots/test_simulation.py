"""The bots simulate the engine's own positions: what a seat knows rebuilds the real
position, the greedy bot's points are the engine's, and greedy playouts make its moves."""

from __future__ import annotations

import random

import pytest

from engine import (
    GREEDY,
    GameState,
    Play,
    apply,
    determinize,
    finish_hand,
    legal_moves,
    play_out_hand,
    state_to_data,
    view,
)
from engine.bots import choose_move
from engine.bots.knowledge import Knowledge
from engine.bots.simple import move_points
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES, positions


def _greedy_until_hand_end(state: GameState) -> tuple[GameState, dict[str, object]]:
    """The greedy bot playing every seat through `apply` until the hand ends."""
    while True:
        seat = state.turn
        assert seat is not None
        state, events = apply(state, seat, choose_move("greedy", view(state, seat), 0))
        end = next((e for e in events if e["type"] == "hand_end"), None)
        if end is not None:
            return state, end


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_knowledge_rebuilds_the_engines_position(preset: str, players: int) -> None:
    checked = 0
    for seed in range(2):
        for state in positions(preset, players, seed):
            seat = state.turn
            assert seat is not None
            seen = view(state, seat)
            knowledge = Knowledge.from_view(seen)
            public = knowledge.position
            assert (public.nodes, public.ends, public.scores) == (
                state.nodes, state.ends, state.scores)
            real = knowledge.deal(state.hand_masks, state.boneyard_tiles)
            assert real == determinize(seen, state.hand_masks, state.boneyard_tiles)
            assert legal_moves(real) == legal_moves(state)
            assert view(real, seat)["legal"] == seen["legal"]
            for move in legal_moves(state):
                _, events = apply(state, seat, move)
                _, simulated = apply(real, seat, move)
                if isinstance(move, Play):
                    play = next(e for e in events if e["type"] == "play")
                    assert move_points(knowledge, move) == play["points"], move
                    checked += 1
                ends = [e for e in events if e["type"] in ("play", "hand_end", "game_end")]
                assert ends == [e for e in simulated
                                if e["type"] in ("play", "hand_end", "game_end")]
    assert checked > 20


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_greedy_playouts_make_the_greedy_bots_moves(preset: str, players: int) -> None:
    compared = 0
    for n, state in enumerate(positions(preset, players, seed=5)):
        if n % 7:
            continue
        finished, end = _greedy_until_hand_end(state)
        # the state apply reaches: the hand recorded, and the next round dealt
        fast = play_out_hand(state, random.Random(0), GREEDY)
        assert state_to_data(fast) == state_to_data(finished)
        settled = finish_hand(state, GREEDY)
        assert list(settled.totals) == end["totals"]
        assert (settled.end, settled.winner, settled.bonus, list(settled.pips)) == (
            end["end"], end["winner"], end["bonus"], end["pips"])
        assert settled.game_winner == (finished.winner if finished.game_over else None)
        compared += 1
    assert compared >= 3


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_searched_candidate_is_played_out_on_the_true_deal_as_apply_plays_it(
        preset: str, players: int) -> None:
    compared = 0
    for n, state in enumerate(positions(preset, players, seed=5)):
        if n % 7 or not state.nodes:
            continue
        seat = state.turn
        assert seat is not None
        knowledge = Knowledge.from_view(view(state, seat))
        real = knowledge.deal(state.hand_masks, state.boneyard_tiles)
        for move in legal_moves(state):
            if not isinstance(move, Play):
                continue
            settled = finish_hand(real, GREEDY, first=move)
            game, events = apply(state, seat, move)
            end = next((e for e in events if e["type"] == "hand_end"), None)
            if end is None:
                game, end = _greedy_until_hand_end(game)
            assert list(settled.totals) == end["totals"], move
            compared += 1
    assert compared >= 3
