"""Rule options, the named presets of rules.md §7 and their validation (§9).

`rules_from_spec(spec, players)` resolves a preset name or `{"preset": name, **overrides}`
into a frozen `Rules` for one player count. Imports only `engine.errors` and `engine.scoring`
(for the points table the kernel reads).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engine.errors import InvalidRules, shown
from engine.scoring import play_points

DEFAULT_PRESET = "all-fives"

_CHOICES: dict[str, tuple[str, ...]] = {
    "first_leader": ("random", "highest_double"),
    "lead": ("any", "double"),
    "spinners": ("none", "first_double", "all_doubles"),
    "spinner_opening": ("sides_first", "all_four_first"),
    "scoring": ("fives", "threes", "fives_and_threes", "matching", "none"),
    "bonus": ("opponents", "opponents_minus_own", "all_hands", "fixed", "penalty"),
    "bonus_rounding": ("nearest", "none"),
    "blocked_tie": ("none", "split"),
    "next_leader": ("winner", "left"),
    "blocked_next_leader": ("winner", "random", "last_player", "left"),
    "draw": ("until_playable", "none"),
    "game_end": ("round_end", "exact"),
}
_BOOLS = ("partnerships", "blocked_bonus")
_PER_COUNT: dict[str, tuple[int, int]] = {
    "hand_size": (1, 14), "bonus_points": (0, 1000), "boneyard_reserve": (0, 28),
    "target": (1, 1000),
}
"""Per-count integer options and their (minimum, maximum), rules.md "Options"."""
_INTS: dict[str, tuple[int, int]] = {"scale": (1, 5)}
OPTION_KEYS: tuple[str, ...] = (
    "hand_size", "partnerships", "first_leader", "lead", "spinners", "spinner_opening",
    "scoring", "scale", "bonus", "bonus_points", "bonus_rounding", "blocked_bonus",
    "blocked_tie", "next_leader", "blocked_next_leader", "draw", "boneyard_reserve",
    "target", "game_end",
)

_BASE: dict[str, Any] = {
    "hand_size": {"2": 7, "3": 5, "4": 5},
    "partnerships": True,
    "first_leader": "random",
    "lead": "any",
    "spinners": "first_double",
    "spinner_opening": "sides_first",
    "scoring": "fives",
    "scale": 1,
    "bonus": "opponents",
    "bonus_points": 1,
    "bonus_rounding": "nearest",
    "blocked_bonus": True,
    "blocked_tie": "none",
    "next_leader": "winner",
    "blocked_next_leader": "winner",
    "draw": "until_playable",
    "boneyard_reserve": 0,
    "target": 150,
    "game_end": "round_end",
}

_BLOCK_FAMILY: dict[str, Any] = {
    "first_leader": "highest_double", "spinners": "none", "scoring": "none",
    "bonus": "opponents_minus_own", "bonus_rounding": "none", "target": 50,
}
_BERGEN_FAMILY: dict[str, Any] = {
    "hand_size": {"2": 6, "3": 6, "4": 5}, "partnerships": False, "scoring": "matching",
    "bonus": "fixed", "bonus_points": 1, "next_leader": "left",
    "blocked_next_leader": "left", "target": 15,
}

_PRESET_OVERRIDES: dict[str, dict[str, Any]] = {
    "all-fives": {},
    "all-fives-bga": {
        "partnerships": False, "scale": 5, "bonus": "opponents_minus_own", "target": 30,
    },
    "all-fives-classic": {"bonus": "all_hands", "target": 100},
    "all-fives-pagat": {
        "hand_size": {"2": 9, "3": 7, "4": 5}, "blocked_tie": "split",
        "blocked_next_leader": "random", "target": {"2": 250, "3": 200, "4": 200},
    },
    "dominoesstars": {
        "bonus_rounding": "none", "blocked_next_leader": "last_player",
        "target": {"2": 250, "3": 200, "4": 200},
    },
    "muggins": {"spinners": "none", "target": {"2": 200, "3": 150, "4": 150}},
    "five-up": {
        "hand_size": {"2": 5, "3": 5, "4": 5}, "spinners": "all_doubles", "scale": 5,
        "target": 61,
    },
    "all-threes": {"scoring": "threes", "scale": 3, "target": 50},
    "fives-and-threes": {
        "partnerships": False, "spinners": "none", "scoring": "fives_and_threes",
        "bonus": "fixed", "bonus_points": 1, "blocked_bonus": False, "draw": "none",
        "next_leader": "left", "blocked_next_leader": "left", "target": 61,
        "game_end": "exact",
    },
    "bergen": {**_BERGEN_FAMILY, "first_leader": "highest_double", "spinners": "none"},
    "double-bergen": {
        **_BERGEN_FAMILY, "lead": "double", "spinners": "first_double",
        "spinner_opening": "all_four_first",
    },
    "block": {**_BLOCK_FAMILY, "draw": "none"},
    "draw": {**_BLOCK_FAMILY},
    "block-penalty": {**_BLOCK_FAMILY, "bonus": "penalty", "draw": "none", "target": 25},
}

PRESETS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {name: MappingProxyType({**_BASE, **over}) for name, over in _PRESET_OVERRIDES.items()}
)
"""Every preset of rules.md §7 by name: its full option set (per-count options keyed "2".."4")."""


MAX_END_TOTAL = 28 * 12
"""No layout shows more: 28 tiles, none adding more than 12 to the end total."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """Rules fully resolved for one player count (per-count options are plain ints)."""

    spec: str | dict[str, Any]
    preset: str
    players: int
    hand_size: int
    partnerships: bool
    first_leader: str
    lead: str
    spinners: str
    spinner_opening: str
    scoring: str
    scale: int
    bonus: str
    bonus_points: int
    bonus_rounding: str
    blocked_bonus: bool
    blocked_tie: str
    next_leader: str
    blocked_next_leader: str
    draw: str
    boneyard_reserve: int
    target: int
    game_end: str
    # Derived flags read on every move (not options; excluded from comparison).
    all_four_first: bool = field(init=False, repr=False, compare=False)
    exact: bool = field(init=False, repr=False, compare=False)
    drawing: bool = field(init=False, repr=False, compare=False)
    unit: int = field(init=False, repr=False, compare=False)
    """The scoring unit pip counts are rounded to: 3 under `threes`, else 5."""
    points_by_total: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """points_by_total[t]: what a play scores when the ends count t; empty under `matching`,
    whose points depend on the ends themselves (engine.kernel reads it on every play)."""

    def __post_init__(self) -> None:
        scoring, scale = self.scoring, self.scale
        derived = {
            "all_four_first": self.spinner_opening == "all_four_first",
            "exact": self.game_end == "exact",
            "drawing": self.draw == "until_playable",
            "unit": 3 if scoring == "threes" else 5,
            "points_by_total": () if scoring == "matching" else tuple(
                play_points(scoring, scale, total, ()) for total in range(MAX_END_TOTAL + 1)),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def spec_data(self) -> str | dict[str, Any]:
        """A fresh plain-data copy of `spec` (safe to hand out and to change)."""
        return _plain_spec(self.spec)

    def options(self) -> dict[str, Any]:
        """Every resolved option by name (plain data)."""
        return {key: getattr(self, key) for key in OPTION_KEYS}


def _bad(option: str, message: str) -> InvalidRules:
    return InvalidRules("invalid_option", message, option)


def _per_count(option: str, value: object, players: int, fallback: object) -> int:
    minimum, maximum = _PER_COUNT[option]
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key not in ("2", "3", "4"):
                raise _bad(option, f"{option}: per-count keys are \"2\", \"3\", \"4\", "
                                   f"not {shown(key)}")
            if type(item) is not int or not minimum <= item <= maximum:
                raise _bad(option, f"{option}[{key}] must be an integer from {minimum} to "
                           f"{maximum}")
        if str(players) in value:
            value = value[str(players)]
        elif isinstance(fallback, Mapping):
            value = fallback[str(players)]
        else:
            value = fallback
    if type(value) is not int or not minimum <= value <= maximum:
        raise _bad(option, f"{option} must be an integer from {minimum} to {maximum} or an "
                   "object keyed by player count")
    return value


def _plain_spec(spec: object) -> str | dict[str, Any]:
    if isinstance(spec, str):
        return spec
    assert isinstance(spec, Mapping)
    return {
        str(k): (dict(v) if isinstance(v, Mapping) else v) for k, v in spec.items()
    }


_RESOLVED: dict[tuple[str, int], Rules] = {}
"""Specs already resolved, keyed by their canonical JSON and the player count."""


def rules_from_spec(spec: str | Mapping[str, object], players: int) -> Rules:
    """Resolve and validate a rules spec for `players` seats (raises `InvalidRules`).

    Equal specs resolve to the same (immutable) `Rules` object.
    """
    try:
        key = (spec if isinstance(spec, str) else "{" + json.dumps(spec, sort_keys=True), players)
        cached = _RESOLVED.get(key)
    except (TypeError, ValueError):  # not JSON data: resolve (and refuse) it uncached
        return _resolve(spec, players)
    if cached is None:
        cached = _resolve(spec, players)
        if len(_RESOLVED) < 1024:
            _RESOLVED[key] = cached
    return cached


def _resolve(spec: str | Mapping[str, object], players: int) -> Rules:
    if type(players) is not int or not 2 <= players <= 4:
        raise _bad("players", f"players must be 2, 3 or 4, not {shown(players)}")
    name: object
    if isinstance(spec, str):
        name, overrides = spec, {}
    elif isinstance(spec, Mapping):
        name = spec.get("preset", DEFAULT_PRESET)
        overrides = {k: v for k, v in spec.items() if k != "preset"}
        if not isinstance(name, str):
            raise InvalidRules("unknown_preset", f"preset must be a name, not {shown(name)}",
                               "preset")
    else:
        raise _bad("rules", "rules are a preset name or an object {\"preset\": name, ...}")
    if name not in PRESETS:
        raise InvalidRules(
            "unknown_preset", f"unknown preset {shown(name)}; presets: {', '.join(PRESETS)}",
            "preset",
        )
    base = PRESETS[name]
    values: dict[str, Any] = {}
    for key in overrides:
        if not isinstance(key, str) or key not in OPTION_KEYS:
            raise _bad(str(key), f"unknown option {shown(key)}")
    for key in OPTION_KEYS:
        value = overrides.get(key, base[key])
        if key in _PER_COUNT:
            values[key] = _per_count(key, value, players, base[key])
        elif key in _BOOLS:
            if type(value) is not bool:
                raise _bad(key, f"{key} must be true or false, not {shown(value)}")
            values[key] = value
        elif key in _INTS:
            low, high = _INTS[key]
            if type(value) is not int or not low <= value <= high:
                raise _bad(key, f"{key} must be an integer from {low} to {high}, not "
                           f"{str(value)[:20]}")
            values[key] = value
        else:
            if value not in _CHOICES[key]:
                raise _bad(key, f"{key} must be one of {', '.join(_CHOICES[key])}, "
                                f"not {shown(value)}")
            values[key] = value
    _check_combinations(values, players)
    values["partnerships"] = values["partnerships"] and players == 4
    return Rules(spec=_plain_spec(spec), preset=name, players=players, **values)


def _check_combinations(v: dict[str, Any], players: int) -> None:
    if v["hand_size"] * players > 28:
        raise _bad("hand_size", f"hand_size {v['hand_size']} x {players} players exceeds 28 tiles")
    allowed_scale = {"fives": (1, 5), "threes": (1, 3)}.get(v["scoring"], (1,))
    if v["scale"] not in allowed_scale:
        raise _bad("scale", f"scale must be {' or '.join(map(str, allowed_scale))} with "
                   f"scoring {v['scoring']}")
    if v["spinner_opening"] == "all_four_first" and (
        v["lead"] != "double" or v["spinners"] != "first_double"
    ):
        raise _bad("spinner_opening",
                   "all_four_first needs lead: double and spinners: first_double")
    if v["lead"] == "double" and v["first_leader"] == "highest_double":
        raise _bad("lead", "lead: double chooses its own leader; use first_leader: random")
    if v["bonus"] == "penalty" and v["game_end"] == "exact":
        raise _bad("game_end", "penalty games end at -target after a hand, not at an exact target")
    if v["scoring"] == "none" and v["bonus"] == "fixed" and v["bonus_points"] == 0:
        raise _bad("bonus_points", "with no scoring and a fixed bonus of 0 nobody could ever score")
    if v["game_end"] == "exact":
        step = _point_step(v, players)
        if v["target"] % step:
            raise _bad("target", f"points here come in steps of {step}, so an exact target of "
                       f"{v['target']} could never be reached")


def _point_step(v: dict[str, Any], players: int) -> int:
    """The greatest common divisor of every amount a side can gain (exact-target games)."""
    unit = 3 if v["scoring"] == "threes" else 5
    steps = {"fives": 5 // v["scale"], "threes": 3 // v["scale"], "fives_and_threes": 1,
             "matching": 1, "none": 0}[v["scoring"]]
    if v["bonus"] == "fixed":
        steps = math.gcd(steps, v["bonus_points"])
        if v["blocked_tie"] == "split" and players == 3:
            steps = math.gcd(steps, (v["bonus_points"] + 1) // 2)
    else:
        steps = math.gcd(steps, unit // v["scale"] if v["bonus_rounding"] == "nearest" else 1)
    return steps or 1
