"""Hypothesis strategies shared by the test suite: rules specs, player counts, seeds, games."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from engine import PRESETS, GameState, InvalidRules, new_game, rules_from_spec

presets = st.sampled_from(sorted(PRESETS))
player_counts = st.integers(min_value=2, max_value=4)
seeds = st.integers(min_value=0, max_value=2**32 - 1)

_overrides: dict[str, st.SearchStrategy[Any]] = {
    "target": st.integers(min_value=1, max_value=60),
    "boneyard_reserve": st.integers(min_value=0, max_value=4),
    "draw": st.sampled_from(["until_playable", "none"]),
    "spinners": st.sampled_from(["none", "first_double", "all_doubles"]),
    "bonus_rounding": st.sampled_from(["nearest", "none"]),
    "blocked_tie": st.sampled_from(["none", "split"]),
    "blocked_next_leader": st.sampled_from(["winner", "random", "last_player", "left"]),
    "next_leader": st.sampled_from(["winner", "left"]),
    "partnerships": st.booleans(),
    "hand_size": st.integers(min_value=1, max_value=7),
}


@st.composite
def rule_specs(draw: st.DrawFn, players: int) -> str | dict[str, Any]:
    """A preset name, or a preset with a few valid overrides for `players` seats."""
    name = draw(presets)
    keys = draw(st.lists(st.sampled_from(sorted(_overrides)), max_size=3, unique=True))
    if not keys:
        return name
    spec: dict[str, Any] = {"preset": name}
    for key in keys:
        spec[key] = draw(_overrides[key])
    try:
        rules_from_spec(spec, players)
    except InvalidRules:
        return name
    return spec


@st.composite
def games(draw: st.DrawFn) -> GameState:
    """A new game of a random preset (maybe with overrides), player count and seed."""
    players = draw(player_counts)
    return new_game(draw(rule_specs(players)), players, draw(seeds))
