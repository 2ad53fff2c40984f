"""What one seat knows, read from its `view(...)` dict and nothing else.

`Knowledge.from_view` rebuilds the layout as a `Table`, lists the tiles the seat has
not seen, and turns the public history into constraints on the hidden tiles: a seat
that drew or passed held no tile fitting the ends then open (and a tile it drew and
kept did not fit either). Each hidden tile of another seat gets a *slot* with the
tiles it cannot be; the last tiles a seat drew are assumed to be the ones it still
holds, which is the loosest reading, so the real deal always satisfies the slots.
It also records each free choice of play the other seats made (`Observation`), so a
deal can be weighed by how well it explains them (`Knowledge.log_likelihood`).
Imports `engine.tiles`, `engine.moves` and `engine.bots.table` (plus `engine.rules`
when a view does not spell out a resolved option).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.bots.table import ARM, HUB, LEAD, VALUES_TILES, SimMove, SimRules, Table
from engine.moves import Draw, Move, Pass, Play, move_from_data
from engine.tiles import DOUBLES_MASK, FULL_SET, HIGH, IS_DOUBLE, LOW, PIPS, tile_index


class ModelError(Exception):
    """The view describes a layout this model cannot follow (the bot falls back)."""


Slot = tuple[int, int]
"""(seat, forbidden tiles bitmask) for one hidden tile of another seat."""


def _resolved(view: Mapping[str, Any]) -> dict[str, Any]:
    rules = dict(view.get("rules") or {})
    needed = (
        "scoring", "scale", "spinners", "spinner_opening", "lead", "draw",
        "boneyard_reserve", "bonus", "bonus_points", "bonus_rounding", "blocked_bonus",
        "blocked_tie", "target", "game_end", "first_leader",
    )
    if any(key not in rules or isinstance(rules[key], Mapping) for key in needed):
        from engine.rules import rules_from_spec

        spec = rules.get("spec", rules.get("preset", "all-fives"))
        resolved = rules_from_spec(spec if isinstance(spec, Mapping) else str(spec),
                                   int(view["players"]))
        for key in needed:
            rules[key] = getattr(resolved, key)
    return rules


def sim_rules(view: Mapping[str, Any]) -> SimRules:
    """The playout options of the view's rules."""
    r = _resolved(view)
    return SimRules(
        players=int(view["players"]),
        sides=tuple(tuple(int(s) for s in side) for side in view["sides"]),
        scoring=str(r["scoring"]),
        scale=int(r["scale"]),
        spinners=str(r["spinners"]),
        all_four_first=r["spinner_opening"] == "all_four_first",
        lead_double=r["lead"] == "double",
        draw=r["draw"] == "until_playable",
        reserve=int(r["boneyard_reserve"]),
        bonus=str(r["bonus"]),
        bonus_points=int(r["bonus_points"]),
        nearest=r["bonus_rounding"] == "nearest",
        blocked_bonus=bool(r["blocked_bonus"]),
        blocked_split=r["blocked_tie"] == "split",
        target=int(r["target"]),
        exact=r["game_end"] == "exact",
    )


def _attach(table: Table, node: Mapping[str, Any], rules: SimRules) -> None:
    tile = tile_index(node["tile"])
    parent = node.get("parent")
    spinner = bool(node.get("spinner", False))
    if parent is None:
        table.play(tile, LEAD, 0, rules, spinner)
        return
    kind, idx = locate(table, tile, int(parent))
    table.play(tile, kind, idx, rules, spinner)


def locate(table: Table, tile: int, parent: int) -> tuple[int, int]:
    """The open end of layout node `parent` that takes `tile`."""
    a, b = HIGH[tile], LOW[tile]
    for j, h in enumerate(table.hubs):
        if h[4] == parent and (h[0] == a or h[0] == b):
            return HUB, j
    for i, e in enumerate(table.ends):
        if e[3] == parent and (e[0] == a or e[0] == b):
            return ARM, i
    raise ModelError(f"no open end of layout tile {parent} takes tile {tile}")


def _heavier(tile: int, lead: int) -> bool:
    """Would `tile` have had to lead instead of `lead` under `highest_double`?"""
    if IS_DOUBLE[lead]:
        return IS_DOUBLE[tile] and tile > lead
    if IS_DOUBLE[tile]:
        return True
    return (PIPS[tile], HIGH[tile]) > (PIPS[lead], HIGH[lead])


def inference_strength(rules: SimRules) -> float:
    """How strongly players are assumed to prefer points (per point, in the softmax)."""
    if rules.scoring == "fives":
        return rules.scale / 5
    if rules.scoring == "threes":
        return rules.scale / 3
    if rules.scoring in ("fives_and_threes", "matching"):
        return 0.5
    return 0.0


@dataclass(slots=True)
class Observation:
    """Another seat's free choice of a play: how likely each tile it might have held
    would have made it choose what it chose.

    Players are modelled as preferring points: a play scoring p is chosen with weight
    exp(beta * p). `weights[t]` sums that over the ends tile t fitted; `later` holds the
    tiles the seat played afterwards (it held them then).
    """

    seat: int
    tile: int
    chosen: float
    weights: list[float]
    later: int = 0


def _observe(table: Table, seat: int, tile: int, kind: int, idx: int, rules: SimRules,
             beta: float) -> Observation:
    weights = [0.0] * 28
    fits = table.playable_tiles(rules)
    for t in range(28):
        if fits >> t & 1:
            weights[t] = sum(math.exp(beta * table.points_after(t, k, i, rules))
                             for k, i in table.targets(t, rules))
    chosen = beta * table.points_after(tile, kind, idx, rules)
    return Observation(seat, tile, chosen, weights)


@dataclass(slots=True)
class Knowledge:
    """A seat's knowledge of the current hand."""

    rules: SimRules
    seat: int
    hand: int
    table: Table
    node_tiles: list[int]
    hand_counts: list[int]
    boneyard: int
    scores: list[int]
    unseen: int
    slots: list[Slot]
    legal: list[Move]
    observations: list[Observation] = field(default_factory=list)

    def log_likelihood(self, hands: Sequence[int]) -> float:
        """How well a deal explains the other seats' choices (log, up to a constant)."""
        total = 0.0
        for ob in self.observations:
            m = hands[ob.seat] | ob.later | 1 << ob.tile
            z = 0.0
            weights = ob.weights
            while m:
                bit = m & -m
                m ^= bit
                z += weights[bit.bit_length() - 1]
            total += ob.chosen - math.log(z)
        return total

    @classmethod
    def from_view(cls, view: Mapping[str, Any]) -> Knowledge:
        rules = sim_rules(view)
        seat = view["seat"]
        if seat is None or view.get("hand") is None:
            raise ModelError("a spectator view has no hand to play")
        hand = 0
        for name in view["hand"]:
            hand |= 1 << tile_index(name)
        layout: Sequence[Mapping[str, Any]] = view.get("layout") or []
        history: Sequence[Mapping[str, Any]] = view.get("history") or []
        table = Table()
        events: dict[int, list[tuple[int, int]]] = {}
        kept: dict[int, list[int]] = {}
        played = 0
        lead_draws = False
        first_lead = -1
        beta = inference_strength(rules)
        observations: list[Observation] = []
        plays: list[tuple[int, int]] = []
        for i, entry in enumerate(history):
            s = int(entry["seat"])
            if "play" in entry:
                if played >= len(layout):
                    raise ModelError("history has more plays than the layout")
                tile = tile_index(entry["play"])
                plays.append((s, tile))
                if played == 0:
                    first_lead = tile
                else:
                    prev = history[i - 1] if i else None
                    drawn = prev is not None and "draw" in prev and int(prev["seat"]) == s
                    if beta and s != seat and not drawn:
                        parent = layout[played].get("parent")
                        if parent is not None:
                            kind, idx = locate(table, tile, int(parent))
                            observations.append(_observe(table, s, tile, kind, idx, rules, beta))
                            observations[-1].later = len(plays)
                _attach(table, layout[played], rules)
                played += 1
                continue
            if table.empty:
                forbid = DOUBLES_MASK if rules.lead_double else 0
                lead_draws = lead_draws or "draw" in entry
            else:
                forbid = VALUES_TILES[table.playable_values(rules)]
            events.setdefault(s, []).append((i, forbid))
            if "draw" in entry:
                nxt = history[i + 1] if i + 1 < len(history) else None
                if not (nxt is not None and "play" in nxt and int(nxt["seat"]) == s):
                    kept.setdefault(s, []).append(i)
        if played != len(layout):
            for node in layout[played:]:
                _attach(table, node, rules)
        node_tiles = [tile_index(n["tile"]) for n in layout]
        on_table = 0
        for t in node_tiles:
            on_table |= 1 << t
        initial_forbid = DOUBLES_MASK if lead_draws else 0
        if (
            int(view.get("round", 0)) == 0
            and _resolved(view)["first_leader"] == "highest_double"
            and not rules.lead_double
            and first_lead >= 0
            and history
            and "play" in history[0]
        ):
            for t in range(28):
                if _heavier(t, first_lead):
                    initial_forbid |= 1 << t
        counts = [int(c) for c in view["hand_counts"]]
        slots: list[Slot] = []
        for s in range(rules.players):
            if s == seat:
                continue
            ev = events.get(s, [])
            late = sorted(kept.get(s, []), reverse=True)[: counts[s]]
            for when in late:
                f = 0
                for t, forbid in ev:
                    if t >= when:
                        f |= forbid
                slots.append((s, f))
            f_all = initial_forbid
            for _, forbid in ev:
                f_all |= forbid
            slots.extend((s, f_all) for _ in range(counts[s] - len(late)))
        for ob in observations:
            start = ob.later
            ob.later = 0
            for s2, t in plays[start:]:
                if s2 == ob.seat:
                    ob.later |= 1 << t
        legal = [move_from_data(d) for d in view.get("legal") or []]
        return cls(
            rules=rules,
            seat=int(seat),
            hand=hand,
            table=table,
            node_tiles=node_tiles,
            hand_counts=counts,
            boneyard=int(view["boneyard"]),
            scores=[int(x) for x in view["scores"]],
            unseen=FULL_SET & ~hand & ~on_table,
            slots=slots,
            legal=legal,
            observations=observations,
        )

    def sim_move(self, move: Move) -> SimMove | None:
        """The table form of a legal `Play` (None for draws and passes)."""
        if isinstance(move, Draw | Pass):
            return None
        assert isinstance(move, Play)
        tile = move.tile.index
        if move.on is None:
            if self.table.empty:
                return (tile, LEAD, 0)
            targets = self.table.targets(tile, self.rules)
            if not targets:
                raise ModelError(f"tile {tile} fits no end")
            return (tile, *targets[0])
        try:
            parent = self.node_tiles.index(move.on.index)
        except ValueError:
            raise ModelError(f"tile {move.on} is not on the layout") from None
        kind, idx = locate(self.table, tile, parent)
        return (tile, kind, idx)
