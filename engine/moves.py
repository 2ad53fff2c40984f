"""Moves (`Play`, `Draw`, `Pass`) and their plain-data form from notation.md.

Imports only `engine.tiles` and `engine.errors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.errors import InvalidNotation, shown
from engine.tiles import NAMES, TILES, Tile


@dataclass(frozen=True, slots=True)
class Play:
    """Play `tile` against the layout tile `on` (`None` for the lead or when unambiguous)."""

    tile: Tile
    on: Tile | None = None


@dataclass(frozen=True, slots=True)
class Draw:
    """Draw the next boneyard tile."""


@dataclass(frozen=True, slots=True)
class Pass:
    """Pass (knock): only when the player can neither play nor draw."""


Move = Play | Draw | Pass

DRAW = Draw()
PASS = Pass()
LEADS: tuple[Play, ...] = tuple(Play(t, None) for t in TILES)
"""LEADS[i]: the `Play` leading tile i."""
PLAYS: tuple[tuple[Play, ...], ...] = tuple(tuple(Play(t, on) for on in TILES) for t in TILES)
"""PLAYS[i][j]: the `Play` of tile i against layout tile j (shared instances)."""


def move_to_data(move: Move) -> dict[str, object]:
    """The notation.md shape of a move, without `seat`."""
    if isinstance(move, Play):
        data: dict[str, object] = {"play": NAMES[move.tile.index]}
        if move.on is not None:
            data["on"] = NAMES[move.on.index]
        return data
    if isinstance(move, Draw):
        return {"draw": True}
    if isinstance(move, Pass):
        return {"pass": True}
    raise InvalidNotation("bad_move", f"{shown(move)} is not a move")


def _object(data: Mapping[object, object]) -> str:
    """A move object as a message shows it: its first few keys and values (`shown`)."""
    items = [f"{shown(key)}: {shown(value)}" for key, value in list(data.items())[:4]]
    return "{" + ", ".join(items) + (", ...}" if len(data) > 4 else "}")


def move_from_data(data: object) -> Move:
    """Read `{"play": T[, "on": U]}`, `{"draw": true}` or `{"pass": true}`."""
    if not isinstance(data, Mapping):
        raise InvalidNotation(
            "bad_move", "a move is an object like {\"play\": \"5-3\", \"on\": \"5-5\"}"
        )
    keys = set(data)
    if "play" in data and keys <= {"play", "on"}:
        tile = Tile.parse(data["play"])
        on = data.get("on")
        if on is None:
            return LEADS[tile.index]
        return PLAYS[tile.index][Tile.parse(on).index]
    if keys == {"draw"} and data["draw"] is True:
        return DRAW
    if keys == {"pass"} and data["pass"] is True:
        return PASS
    raise InvalidNotation(
        "bad_move",
        f"{_object(data)} is not a move: use {{\"play\": T, \"on\": U}}, {{\"draw\": true}} "
        "or {\"pass\": true}",
    )
