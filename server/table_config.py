"""Validation of a create-table request into a `TableConfig` (settings fixed at creation).

Owns the request shape of ``POST /api/tables``; imports `engine` for rules and bot levels only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import engine
from engine.bots import BOT_LEVELS
from server import text
from server.protocol import PROTO
from server.rejected import Rejected

MAX_NAME = text.MAX_TABLE_NAME
MAX_PLAYER_NAME = text.MAX_PLAYER_NAME
REQUEST_FIELDS = frozenset({"rules", "players", "bots", "clock", "on_timeout", "private", "name",
                            "spectator_chat", "rated", "hints"})
ON_TIMEOUT = ("bot", "forfeit")
REALTIME_MOVE_S = (1, 3600)
REALTIME_RESERVE_S = (0, 24 * 3600)
TURN_MOVE_H = (1, 7 * 24)
TURN_MAX_H = (1, 30 * 24)
PLAYERS = (2, 4)
TARGET = (1, 1000)
"""The range of the rules' `target` (rules.md "Options"; engine.rules_from_spec checks it)."""
REALTIME_DEFAULTS = {"move_s": 30, "reserve_s": 120}
TURN_DEFAULTS = {"move_h": 24, "max_h": 72}
"""What a client offers first for each clock (the request itself has no default clock)."""

PRESET_LABELS: dict[str, str] = {
    "all-fives": "All Fives",
    "all-fives-bga": "All Fives (BGA scoring)",
    "all-fives-classic": "All Fives (classic)",
    "all-fives-pagat": "All Fives (pagat)",
    "dominoesstars": "All Fives (DominoesStars)",
    "muggins": "Muggins",
    "five-up": "Five Up",
    "all-threes": "All Threes",
    "fives-and-threes": "Fives and Threes",
    "bergen": "Bergen",
    "double-bergen": "Double Bergen",
    "block": "Block",
    "draw": "Draw",
    "block-penalty": "Block (penalty)",
}
"""The name a person reads for each preset (a preset missing here shows its own name)."""
FAMILIES: dict[str, str] = {
    "fives": "fives", "threes": "threes", "fives_and_threes": "fives-and-threes",
    "matching": "bergen", "none": "block",
}
"""A preset's family, by how its plays score (its `scoring` option)."""
KEY_RULES = ("hand_size", "partnerships", "scoring", "scale", "spinners", "draw", "bonus",
             "target", "game_end")
"""The options `create_meta` shows for each preset."""


def bot_levels() -> tuple[str, ...]:
    """The bot levels the engine offers."""
    return tuple(BOT_LEVELS)


@dataclass(frozen=True, slots=True)
class ClockConfig:
    """realtime: ``move_ms`` per move plus a ``reserve_ms`` bank per seat.
    turn: every turn adds ``move_ms`` to the seat's bank, capped at ``max_ms`` (BGA style)."""

    kind: str
    move_ms: int
    reserve_ms: int = 0
    max_ms: int = 0

    def to_request(self) -> dict[str, Any]:
        """The clock as the create request writes it."""
        if self.kind == "realtime":
            return {"kind": "realtime", "move_s": _plain(self.move_ms / 1000),
                    "reserve_s": _plain(self.reserve_ms / 1000)}
        return {"kind": "turn", "move_h": _plain(self.move_ms / 3_600_000),
                "max_h": _plain(self.max_ms / 3_600_000)}


def _plain(number: float) -> int | float:
    return int(number) if number.is_integer() else number


@dataclass(frozen=True, slots=True)
class TableConfig:
    name: str
    players: int
    rules: Any  # the rules spec as plain data (preset name or {"preset": ..., ...})
    bots: Mapping[int, str] = field(default_factory=dict)
    clock: ClockConfig | None = None
    on_timeout: str = "bot"
    private: bool = False
    # True / False: spectators may / may not chat; None: only while the table is not crowded
    # (at most SPECTATOR_CHAT_MAX spectators).
    spectator_chat: bool | None = None
    rated: bool = False  # every seat a registered player; ratings change at the end
    hints: bool = False  # a practice table: its players may ask for the strong bot's move
    family: str = "fives"  # the rating family of its rules (FAMILIES)

    def to_data(self) -> dict[str, Any]:
        clock = None
        if self.clock is not None:
            clock = [self.clock.kind, self.clock.move_ms, self.clock.reserve_ms, self.clock.max_ms]
        return {"name": self.name, "players": self.players, "rules": self.rules,
                "bots": {str(s): lvl for s, lvl in self.bots.items()}, "clock": clock,
                "on_timeout": self.on_timeout, "private": self.private,
                "spectator_chat": self.spectator_chat, "rated": self.rated,
                "hints": self.hints, "family": self.family}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> TableConfig:
        clock = data["clock"]
        return cls(
            name=data["name"], players=data["players"], rules=data["rules"],
            bots={int(s): lvl for s, lvl in data["bots"].items()},
            clock=ClockConfig(clock[0], clock[1], clock[2], clock[3]) if clock else None,
            on_timeout=data["on_timeout"], private=data["private"],
            spectator_chat=data.get("spectator_chat"), rated=bool(data.get("rated", False)),
            hints=bool(data.get("hints", False)),
            family=data.get("family") or family_of(data["rules"], data["players"]),
        )


def family_of(spec: object, players: int) -> str:
    """The rating family of a rules spec (FAMILIES, by its scoring)."""
    scoring = str(engine.rules_from_spec(spec, players).scoring)  # type: ignore[arg-type]
    return FAMILIES.get(scoring, scoring)


def _per_count(value: object) -> dict[str, object]:
    """A preset's option for each player count ("2".."4"), whether it is given per count or
    once for all."""
    if isinstance(value, Mapping):
        return {count: value[count] for count in ("2", "3", "4")}
    return dict.fromkeys(("2", "3", "4"), value)


def _bounds(bounds: tuple[int, int], default: object = None) -> dict[str, object]:
    low, high = bounds
    found: dict[str, object] = {"min": low, "max": high}
    if default is not None:
        found["default"] = default
    return found


@functools.cache
def create_meta() -> dict[str, Any]:
    """What `GET /api/meta` answers (docs/protocol.md §9): the presets, the options of a create
    request with their bounds and defaults, and the bot levels. Built from what
    `parse_create_request` accepts and the engine's presets, once."""
    levels = list(bot_levels())
    presets = []
    for name, options in engine.PRESETS.items():
        rules = {key: (_per_count(options[key]) if isinstance(options[key], Mapping)
                       else options[key]) for key in KEY_RULES}
        presets.append({
            "name": name, "label": PRESET_LABELS.get(name, name),
            "family": FAMILIES.get(str(options["scoring"]), str(options["scoring"])),
            "default": name == engine.DEFAULT_PRESET,
            "targets": _per_count(options["target"]), "rules": rules,
        })
    return {
        "proto": PROTO,
        "presets": presets,
        "bot_levels": levels,
        "create": {
            "fields": sorted(REQUEST_FIELDS),
            "rules": {"default": engine.DEFAULT_PRESET, "target": _bounds(TARGET)},
            "players": _bounds(PLAYERS, 2),
            "bots": {"levels": levels, "free_seats": 1},
            "clock": {
                "kinds": [None, "realtime", "turn"], "default": None,
                "realtime": {
                    "move_s": _bounds(REALTIME_MOVE_S, REALTIME_DEFAULTS["move_s"]),
                    "reserve_s": _bounds(REALTIME_RESERVE_S, REALTIME_DEFAULTS["reserve_s"]),
                },
                "turn": {
                    "move_h": _bounds(TURN_MOVE_H, TURN_DEFAULTS["move_h"]),
                    "max_h": _bounds(TURN_MAX_H, TURN_DEFAULTS["max_h"]),
                },
            },
            "on_timeout": {"choices": list(ON_TIMEOUT), "default": "bot"},
            "private": {"default": False},
            "rated": {"default": False},
            "hints": {"default": False, "needs_bots": True},
            "spectator_chat": {"choices": [True, False, None], "default": None},
            "name": {"max_length": MAX_NAME},
            "player_name": {"max_length": MAX_PLAYER_NAME},
        },
    }


def _bad(message: str) -> Rejected:
    return Rejected("bad_request", message, status=400)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object, what: str, bounds: tuple[int, int]) -> float:
    low, high = bounds
    if not (_is_int(value) or isinstance(value, float)) or isinstance(value, bool):
        raise _bad(f"{what} must be a number")
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or not low <= number <= high:
        raise _bad(f"{what} must be between {low} and {high}")
    return number


def clean_name(value: object, what: str, limit: int) -> str:
    """A display name of 1..limit characters under the text rules of server.text, outer
    spaces removed."""
    try:
        return text.check(value, what, limit)
    except ValueError as exc:
        raise _bad(str(exc)) from None


def clean_player_name(value: object) -> str:
    """A person's name at a table: `clean_name`, and not a bot's label."""
    try:
        return text.player_name(value, MAX_PLAYER_NAME)
    except ValueError as exc:
        raise _bad(str(exc)) from None


def _clock(value: object) -> ClockConfig | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _bad("clock must be null or an object")
    kind = value.get("kind")
    if kind == "realtime":
        if set(value) != {"kind", "move_s", "reserve_s"}:
            raise _bad("a realtime clock has exactly kind, move_s and reserve_s")
        move = _number(value["move_s"], "clock.move_s", REALTIME_MOVE_S)
        reserve = _number(value["reserve_s"], "clock.reserve_s", REALTIME_RESERVE_S)
        return ClockConfig("realtime", round(move * 1000), reserve_ms=round(reserve * 1000))
    if kind == "turn":
        if set(value) != {"kind", "move_h", "max_h"}:
            raise _bad("a turn clock has exactly kind, move_h and max_h")
        move = _number(value["move_h"], "clock.move_h", TURN_MOVE_H)
        most = _number(value["max_h"], "clock.max_h", TURN_MAX_H)
        if most < move:
            raise _bad("clock.max_h must be at least clock.move_h")
        return ClockConfig("turn", round(move * 3_600_000), max_ms=round(most * 3_600_000))
    raise _bad('clock.kind must be "realtime" or "turn"')


def _bots(value: object, players: int) -> dict[int, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad("bots must be an object mapping seats to bot levels")
    levels = bot_levels()
    bots: dict[int, str] = {}
    for key, level in value.items():
        written = str(key) if _is_int(key) else key
        if not isinstance(written, str) or not text.digits(written) \
                or not 0 <= int(written) < players:
            raise _bad(f"bots: {key!r} is not a seat of a {players}-player table")
        if level not in levels:
            raise _bad(f"bots: level must be one of {', '.join(levels)}")
        seat = int(written)
        if seat in bots:
            raise _bad(f"bots: seat {seat} given twice")
        bots[seat] = str(level)
    if len(bots) >= players:
        raise _bad("at least one seat must be left for a person")
    return bots


def parse_create_request(request: object) -> TableConfig:
    """Validate the body of a create request; raises Rejected (status 400) naming the problem."""
    if not isinstance(request, Mapping):
        raise _bad("the request must be a JSON object")
    unknown = sorted(str(k) for k in request if k not in REQUEST_FIELDS)
    if unknown:
        raise _bad(f"unknown field {unknown[0]!r}")
    players = request.get("players", 2)
    if not _is_int(players) or not PLAYERS[0] <= players <= PLAYERS[1]:
        raise _bad("players must be 2, 3 or 4")
    spec = request.get("rules", engine.DEFAULT_PRESET)
    if not isinstance(spec, str | Mapping):
        raise Rejected("invalid_option", "rules must be a preset name or an object", status=400)
    try:
        rules = engine.rules_from_spec(spec, players)
    except engine.EngineError as exc:
        raise Rejected(exc.code, exc.message, status=400) from exc
    on_timeout = request.get("on_timeout", "bot")
    if on_timeout not in ON_TIMEOUT:
        raise _bad('on_timeout must be "bot" or "forfeit"')
    private = request.get("private", False)
    if not isinstance(private, bool):
        raise _bad("private must be true or false")
    spectator_chat = request.get("spectator_chat")
    if spectator_chat is not None and not isinstance(spectator_chat, bool):
        raise _bad("spectator_chat must be true, false or null")
    rated = request.get("rated", False)
    if not isinstance(rated, bool):
        raise _bad("rated must be true or false")
    bots = _bots(request.get("bots"), players)
    if rated and bots:
        raise Rejected("rated_bots", "a rated table has no bot seats", status=400)
    hints = request.get("hints", False)
    if not isinstance(hints, bool):
        raise _bad("hints must be true or false")
    if hints and (rated or not bots):
        raise Rejected("hints_practice_only",
                       "hints are for casual tables with at least one bot seat", status=400)
    clock = _clock(request.get("clock"))
    if rated and clock is None:  # a rated game must end: a stalled turn is played for
        clock = _clock({"kind": "realtime", **REALTIME_DEFAULTS})
    name = request.get("name")
    preset = spec if isinstance(spec, str) else str(spec.get("preset", "dominoes"))
    name = f"{preset} table" if name is None else clean_name(name, "name", MAX_NAME)
    return TableConfig(
        name=name[:MAX_NAME], players=players, rules=rules.spec,
        bots=bots, clock=clock,
        on_timeout=str(on_timeout), private=private, spectator_chat=spectator_chat,
        rated=rated, hints=hints, family=family_of(spec, players),
    )
