"""What one seat knows, read from its `view(...)` dict and nothing else.

`Knowledge.from_view` rebuilds the position the view shows as the engine's own `GameState`
(engine.views `public_state`: the layout played through the rules kernel, the seat's hand,
nothing hidden dealt yet), lists the tiles the seat has not seen, and turns the public history
into constraints on the hidden tiles: a seat that drew or passed held no tile fitting the ends
then open (and a tile it drew and kept did not fit either). Each hidden tile of another seat
gets a *slot* with the tiles it cannot be; the last tiles a seat drew are assumed to be the
ones it still holds, which is the loosest reading, so the real deal always satisfies the
slots. It also records each free choice of play the other seats made (`Observation`), scored
by the kernel at the layout of the time and counted as greedy counts points, so a deal can be
weighed by how well it explains them (`Knowledge.log_likelihood`: players are taken to play
greedy's move with chance `GREEDY_MIX`, else to prefer points softly). `Knowledge.deal` turns
one sampled deal into the full `GameState` the search plays out. Imports only engine modules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import EngineError
from engine.game import resolve_play
from engine.kernel import open_ends, play_tile
from engine.layout import Ends, Nodes, end_index, open_mask
from engine.moves import Move, Play, move_from_data
from engine.playout import greedy_key, greedy_points
from engine.rules import Rules
from engine.state import GameState
from engine.tiles import DOUBLES_MASK, FULL_SET, HIGH, IS_DOUBLE, PIPS, VALUE_MASK, tile_index
from engine.views import layout_steps, public_state, view_rules, with_hidden


class ModelError(Exception):
    """The view describes a position this model cannot follow (the bot falls back)."""


Slot = tuple[int, int]
"""(seat, forbidden tiles bitmask) for one hidden tile of another seat."""


def _heavier(tile: int, lead: int) -> bool:
    """Would `tile` have had to lead instead of `lead` under `highest_double`?"""
    if IS_DOUBLE[lead]:
        return IS_DOUBLE[tile] and tile > lead
    if IS_DOUBLE[tile]:
        return True
    return (PIPS[tile], HIGH[tile]) > (PIPS[lead], HIGH[lead])


def inference_strength(rules: Rules) -> float:
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

    Players are modelled as a mixture: with chance `GREEDY_MIX` they make greedy's play,
    otherwise they prefer points, a play scoring p chosen with weight exp(beta * p).
    `weights[t]` sums that over the ends tile t fitted; `later` holds the tiles the seat
    played afterwards (it held them then); `better` the tiles greedy would have played
    instead (0 when the seat has drawn since: which tiles it held then is not known).
    """

    seat: int
    tile: int
    chosen: float
    weights: list[float]
    later: int = 0
    better: int = 0


GREEDY_MIX = 0.5
"""The chance a player is taken to make greedy's play (engine.playout `greedy_key`: the most
points, then the heaviest tile); the rest of the time it prefers points softly."""


def _observe(rules: Rules, nodes: Nodes, ends: Ends, seat: int, tile: int, index: int,
             beta: float, score: int, last: bool) -> Observation:
    """The choice of `tile` on `ends[index]`, each play scored by the kernel as it stood and
    counted as greedy counts it (engine.playout `greedy_points`: nothing for points that would
    pass an exact target) for a side at `score`, `last` when it was the seat's last tile."""
    weights = [0.0] * 28
    placed = 0
    for node in nodes:
        placed |= 1 << node[0]
    exp = math.exp
    keys = [-1] * 28
    for i in open_ends(ends, rules.all_four_first):
        fits = VALUE_MASK[ends[i][2]] & ~placed
        while fits:
            bit = fits & -fits
            fits ^= bit
            t = bit.bit_length() - 1
            points = greedy_points(rules, play_tile(rules, nodes, ends, i, t)[3], last, score)
            weights[t] += exp(beta * points)
            keys[t] = max(keys[t], greedy_key(points, t, ends[i][0]))
    points = greedy_points(rules, play_tile(rules, nodes, ends, index, tile)[3], last, score)
    chosen = beta * points
    mine = greedy_key(points, tile, ends[index][0] if index >= 0 else 0)
    better = sum(1 << t for t in range(28) if keys[t] > mine)
    return Observation(seat, tile, chosen, weights, 0, better)


def _before_each(history: Sequence[Mapping[str, Any]], side_of: Sequence[int],
                 scores: Sequence[int], counts: Sequence[int]) -> list[tuple[int, int]]:
    """For each entry of the hand's history, its seat's side's score and the seat's number of
    tiles just before it, worked back from the scores and hand sizes now (a play's `points`
    are what it added to its side's score)."""
    score = list(scores)
    count = list(counts)
    out = [(0, 0)] * len(history)
    for i in range(len(history) - 1, -1, -1):
        entry = history[i]
        s = int(entry["seat"])
        if "play" in entry:
            score[side_of[s]] -= int(entry.get("points", 0))
            count[s] += 1
        elif "draw" in entry:
            count[s] -= 1
        out[i] = (score[side_of[s]], count[s])
    return out


@dataclass(slots=True, kw_only=True)
class Knowledge:
    """A seat's knowledge of the current hand."""

    position: GameState
    """The position the view shows: the seat's hand, the other hands and the boneyard empty."""
    seat: int
    hand: int
    hand_counts: list[int]
    boneyard: int
    unseen: int
    slots: list[Slot]
    legal: list[Move]
    observations: list[Observation] = field(default_factory=list)

    @property
    def rules(self) -> Rules:
        return self.position.table.rules

    @property
    def scores(self) -> tuple[int, ...]:
        return self.position.scores

    def deal(self, hands: Sequence[int], boneyard: Sequence[int]) -> GameState:
        """The full position for one deal of the hidden tiles (every seat's hand as a
        bitmask, the boneyard in drawing order)."""
        return with_hidden(self.position, hands, boneyard)

    def play_index(self, move: Play) -> int:
        """The end a legal play takes (-1 for the lead), as `apply` resolves it."""
        try:
            return resolve_play(self.position, self.seat, move)[0]
        except EngineError as exc:
            raise ModelError(f"{move} is not a play here: {exc.message}") from None

    def log_likelihood(self, hands: Sequence[int]) -> float:
        """How well a deal explains the other seats' choices (log, up to a constant)."""
        total = 0.0
        mix = GREEDY_MIX
        for ob in self.observations:
            held = m = hands[ob.seat] | ob.later | 1 << ob.tile
            z = 0.0
            weights = ob.weights
            while m:
                bit = m & -m
                m ^= bit
                z += weights[bit.bit_length() - 1]
            if mix:
                greedy = 0.0 if held & ob.better else 1.0
                total += math.log(mix * greedy + (1 - mix) * math.exp(ob.chosen) / z)
            else:
                total += ob.chosen - math.log(z)
        return total

    @classmethod
    def from_view(cls, view: Mapping[str, Any], infer: bool = True) -> Knowledge:
        """What the seat whose `view` this is knows; without `infer`, no `observations`."""
        seat = view["seat"]
        if seat is None or view.get("hand") is None:
            raise ModelError("a spectator view has no hand to play")
        layout: Sequence[Mapping[str, Any]] = view.get("layout") or []
        history: Sequence[Mapping[str, Any]] = view.get("history") or []
        try:
            rules = view_rules(view)
            steps = layout_steps(rules, layout)
            position = public_state(view, steps)
        except EngineError as exc:
            raise ModelError(exc.message) from None
        seat = int(seat)
        hand = position.hand_masks[seat]
        lead_double = rules.lead == "double"
        four_first = rules.all_four_first
        events: dict[int, list[tuple[int, int]]] = {}
        kept: dict[int, list[int]] = {}
        played = 0
        lead_draws = False
        first_lead = -1
        beta = inference_strength(rules) if infer else 0.0
        mix = GREEDY_MIX if infer else 0.0
        observations: list[Observation] = []
        plays: list[tuple[int, int]] = []
        observed_at: list[int] = []  # each observation's place in the history
        counts = [int(c) for c in view["hand_counts"]]
        before = _before_each(history, position.table.side_of, position.scores, counts)
        for i, entry in enumerate(history):
            s = int(entry["seat"])
            nodes, ends = steps[min(played, len(layout))]
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
                    if (beta or mix) and s != seat and not drawn:
                        node = layout[played]
                        index = end_index(ends, int(node["parent"]), str(node["side"]))
                        score, count = before[i]
                        observations.append(_observe(rules, nodes, ends, s, tile, index, beta,
                                                     score, count == 1))
                        observations[-1].later = len(plays)
                        observed_at.append(i)
                played += 1
                continue
            if not nodes:
                forbid = DOUBLES_MASK if lead_double else 0
                lead_draws = lead_draws or "draw" in entry
            else:
                forbid = open_mask(ends, four_first)
            events.setdefault(s, []).append((i, forbid))
            if "draw" in entry:
                nxt = history[i + 1] if i + 1 < len(history) else None
                if not (nxt is not None and "play" in nxt and int(nxt["seat"]) == s):
                    kept.setdefault(s, []).append(i)
        on_table = 0
        for node_entry in position.nodes:
            on_table |= 1 << node_entry[0]
        initial_forbid = DOUBLES_MASK if lead_draws else 0
        if (
            position.table.round == 0
            and rules.first_leader == "highest_double"
            and not lead_double
            and first_lead >= 0
            and history
            and "play" in history[0]
        ):
            for t in range(28):
                if _heavier(t, first_lead):
                    initial_forbid |= 1 << t
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
        for ob, at in zip(observations, observed_at, strict=True):
            start = ob.later
            ob.later = 0
            for s2, t in plays[start:]:
                if s2 == ob.seat:
                    ob.later |= 1 << t
            if any("draw" in e and int(e["seat"]) == ob.seat for e in history[at + 1:]):
                ob.better = 0  # which tiles it held then is not known: no greedy test
        legal = [move_from_data(d) for d in view.get("legal") or []]
        return cls(
            position=position,
            seat=seat,
            hand=hand,
            hand_counts=counts,
            boneyard=int(view["boneyard"]),
            unseen=FULL_SET & ~hand & ~on_table,
            slots=slots,
            legal=legal,
            observations=observations,
        )
