"""Random self-play: plays whole games with uniformly random legal moves and counts them.

Used by `python -m engine selfplay` and the benchmarks. No I/O; imports engine modules,
`random` and `time` only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.game import apply, legal_moves, new_game
from engine.transcript import to_transcript


@dataclass(slots=True)
class SelfplayReport:
    """Totals of a self-play run; `transcripts` holds one per game when asked for."""

    games: int = 0
    hands: int = 0
    moves: int = 0
    seconds: float = 0.0
    transcripts: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        seconds = self.seconds or 1e-9
        return {
            "games": self.games,
            "hands": self.hands,
            "moves": self.moves,
            "seconds": round(self.seconds, 4),
            "games_per_second": round(self.games / seconds, 1),
            "hands_per_second": round(self.hands / seconds, 1),
            "moves_per_second": round(self.moves / seconds, 1),
        }


def selfplay(
    spec: str | Mapping[str, object], players: int, games: int, seed: int,
    keep_transcripts: bool = False, max_hands: int = 10_000,
) -> SelfplayReport:
    """Play `games` random games; game g uses seed `seed + g` for deals and move choices."""
    report = SelfplayReport()
    started = time.perf_counter()
    for g in range(games):
        state = new_game(spec, players, seed + g)
        rng = random.Random(seed + g)
        choice = rng.choice
        hands = 0
        while not state.game_over and hands < max_hands:
            turn = state.turn
            assert turn is not None
            state, events = apply(state, turn, choice(legal_moves(state)))
            report.moves += 1
            for event in events:
                if event["type"] == "hand_end":
                    hands += 1
        report.hands += hands
        report.games += 1
        if keep_transcripts:
            report.transcripts.append(to_transcript(state))
    report.seconds = time.perf_counter() - started
    return report
