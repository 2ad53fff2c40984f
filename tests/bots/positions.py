"""Positions for bot tests: seeded games of random legal moves, every preset and count."""

from __future__ import annotations

import random
from collections.abc import Iterator

from engine import PRESETS, GameState, apply, legal_moves, new_game

PRESET_NAMES = tuple(PRESETS)
PLAYER_COUNTS = (2, 3, 4)


def positions(preset: str, players: int, seed: int, max_moves: int = 400) -> Iterator[GameState]:
    """Every position of one game (random legal moves), the seat to move known."""
    state = new_game(preset, players, seed)
    rng = random.Random(seed)
    for _ in range(max_moves):
        if state.game_over:
            return
        yield state
        moves = legal_moves(state)
        turn = state.turn
        assert turn is not None
        state, _ = apply(state, turn, moves[rng.randrange(len(moves))])
