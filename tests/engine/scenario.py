"""Building positions for tests: explicit deals and moves written briefly.

A move is "6-4" (lead, or the only place it fits), "5-3>5-5" (5-3 on the 5-5),
"draw" or "pass"; `play` applies moves for whichever seat is to move.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine import Draw, GameState, Move, Pass, Play, Tile, apply, game_from_deal

ALL = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1)]


def deal(
    spec: str | Mapping[str, Any],
    hands: Sequence[Sequence[str]],
    leader: int = 0,
    boneyard: Sequence[str] = (),
) -> GameState:
    """A game from these hands; the boneyard starts with `boneyard`, then the rest in order."""
    used = {str(Tile.parse(t)) for hand in hands for t in hand}
    first = [str(Tile.parse(t)) for t in boneyard]
    rest = [t for t in ALL if t not in used and t not in first]
    return game_from_deal(spec, len(hands), hands, first + rest, leader)


def move(text: str) -> Move:
    if text == "draw":
        return Draw()
    if text == "pass":
        return Pass()
    tile, _, on = text.partition(">")
    return Play(Tile.parse(tile), Tile.parse(on) if on else None)


def play(state: GameState, moves: Iterable[str]) -> tuple[GameState, list[dict[str, Any]]]:
    """Apply the moves in turn; returns the final state and every event."""
    events: list[dict[str, Any]] = []
    for text in moves:
        assert state.turn is not None, f"game over before {text}"
        state, new = apply(state, state.turn, move(text))
        events.extend(new)
    return state, events


def points(events: Iterable[dict[str, Any]]) -> list[int]:
    """Points of each play event, in order."""
    return [int(e["points"]) for e in events if e["type"] == "play"]
