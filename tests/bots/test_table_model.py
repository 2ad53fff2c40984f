"""The bots' playout model agrees with the engine: what fits, end totals, points, bonuses."""

from __future__ import annotations

import pytest

from engine import Play, apply, legal_moves, view
from engine.bots.knowledge import Knowledge
from engine.bots.playout import finish_hand
from engine.bots.simple import play_points
from engine.tiles import tile_index
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES, positions


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_model_matches_engine_on_random_games(preset: str, players: int) -> None:
    checked = 0
    for seed in range(2):
        for state in positions(preset, players, seed):
            seat = state.turn
            assert seat is not None
            seen = view(state, seat)
            knowledge = Knowledge.from_view(seen)
            assert knowledge.table.total() == seen["end_total"]
            moves = legal_moves(state)
            if seen["layout"]:
                engine_tiles = {m.tile.index for m in moves if isinstance(m, Play)}
                fits = knowledge.table.playable_tiles(knowledge.rules) & knowledge.hand
                assert {t for t in range(28) if fits >> t & 1} == engine_tiles
            for move in moves:
                _, events = apply(state, seat, move)
                points = 0
                if isinstance(move, Play):
                    play = next(e for e in events if e["type"] == "play")
                    points = int(play["points"])
                    assert play_points(knowledge, move) == points, move
                    checked += 1
                end = next((e for e in events if e["type"] == "hand_end"), None)
                if end is not None and end["end"] != "target" and not knowledge.rules.exact:
                    hands = [sum(1 << tile_index(t) for t in h) for h in end["hands"]]
                    side_of = knowledge.rules.side_of()
                    before = list(state.scores)
                    before[side_of[seat]] += points
                    domino = seat if end["end"] == "domino" else None
                    gains = finish_hand(hands, before[:], before[:], knowledge.rules, side_of,
                                        domino)
                    gains = [g - 1000 if g >= 500 else g for g in gains]
                    expected = [t - b for t, b in zip(end["totals"], before, strict=True)]
                    assert gains == expected
    assert checked > 20


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_greedy_playout_on_the_true_deal_matches_the_engine(preset: str, players: int) -> None:
    from engine.bots import choose_move
    from engine.bots.playout import playout

    compared = 0
    for n, state in enumerate(positions(preset, players, seed=5)):
        if n % 7 or not state.nodes:
            # Playouts start after the searched move, never before the lead.
            continue
        seat = state.turn
        assert seat is not None
        knowledge = Knowledge.from_view(view(state, seat))
        rules = knowledge.rules
        side_of = rules.side_of()
        gains = playout(knowledge.table.copy(), list(state.hand_masks),
                        list(state.boneyard_tiles), seat, list(state.scores), rules, side_of)
        gains = [g - 1000 if g >= 500 else g for g in gains]
        game, start, turn = state, list(state.scores), seat
        while True:
            move = choose_move("greedy", view(game, turn), 0)
            game, events = apply(game, turn, move)
            if any(e["type"] in ("hand_end", "game_end") for e in events):
                break
            assert game.turn is not None
            turn = game.turn
        assert gains == [s - b for s, b in zip(game.scores, start, strict=True)]
        compared += 1
    assert compared >= 3
