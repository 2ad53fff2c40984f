"""A compact, mutable model of one hand for bot search: layout ends, scoring, playouts.

The strong bot plays thousands of hands out per move, so this module restates the
parts of rules.md that a playout needs (open ends, spinners, end totals, scoring,
drawing, blocking, the end-of-hand bonus) over small lists and tile bitmasks. It is
never the authority on legality: the moves a bot may choose always come from the
engine's view, and tests check this model against the engine. Imports only
`engine.tiles`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.tiles import DOUBLES_MASK, FULL_SET, HIGH, LOW, PIPS, VALUE_MASK

# Target kinds of a simulated play.
LEAD = 0
ARM = 1
HUB = 2

SimMove = tuple[int, int, int]
"""(tile index, target kind, target index in `Table.ends` or `Table.hubs`)."""

def _tiles_showing(vm: int) -> int:
    mask = 0
    for v in range(7):
        if vm >> v & 1:
            mask |= VALUE_MASK[v]
    return mask


VALUES_TILES: tuple[int, ...] = tuple(_tiles_showing(vm) for vm in range(128))
"""VALUES_TILES[vm]: the tiles showing any pip value whose bit is set in `vm`."""

ALL_VALUES = 127


@dataclass(frozen=True, slots=True)
class SimRules:
    """The options a playout needs, resolved for one player count."""

    players: int
    sides: tuple[tuple[int, ...], ...]
    scoring: str = "fives"
    scale: int = 1
    spinners: str = "first_double"
    all_four_first: bool = False
    lead_double: bool = False
    draw: bool = True
    reserve: int = 0
    bonus: str = "opponents"
    bonus_points: int = 1
    nearest: bool = True
    blocked_bonus: bool = True
    blocked_split: bool = False
    target: int = 150
    exact: bool = False

    def side_of(self) -> tuple[int, ...]:
        out = [0] * self.players
        for k, seats in enumerate(self.sides):
            for s in seats:
                out[s] = k
        return tuple(out)


def points_for_total(rules: SimRules, total: int) -> int:
    """Points a play earns when the end total becomes `total` (not for `matching`)."""
    if total <= 0:
        return 0
    scoring = rules.scoring
    if scoring == "fives":
        return total // rules.scale if total % 5 == 0 else 0
    if scoring == "threes":
        return total // rules.scale if total % 3 == 0 else 0
    if scoring == "fives_and_threes":
        return (total // 5 if total % 5 == 0 else 0) + (total // 3 if total % 3 == 0 else 0)
    return 0


class Table:
    """The layout of one hand as open ends.

    `ends`: open arm ends `[value, count, halves, node]` (a single tile's end counts its
    exposed half; a non-spinner double at an arm end counts both halves).
    `hubs`: doubles with sides `[value, horizontal_free, vertical_free, is_spinner, node]`
    (a spinner, or a lone first double); a hub counts both halves while a horizontal side
    is free. `node` is the index of the layout tile (the view's `layout` order).
    """

    __slots__ = ("ends", "hubs", "nodes", "spinner_seen")

    def __init__(self) -> None:
        self.ends: list[list[int]] = []
        self.hubs: list[list[int]] = []
        self.nodes = 0
        self.spinner_seen = False

    def copy(self) -> Table:
        other = Table.__new__(Table)
        other.ends = [e[:] for e in self.ends]
        other.hubs = [h[:] for h in self.hubs]
        other.nodes = self.nodes
        other.spinner_seen = self.spinner_seen
        return other

    @property
    def empty(self) -> bool:
        return self.nodes == 0

    def playable_values(self, rules: SimRules) -> int:
        """A 7-bit mask of the pip values a tile may be attached to now."""
        if self.nodes == 0:
            return ALL_VALUES
        vm = 0
        if rules.all_four_first:
            for h in self.hubs:
                if h[3] and (h[1] or h[2]):
                    vm |= 1 << h[0]
            if vm:
                return vm
        for e in self.ends:
            vm |= 1 << e[0]
        for h in self.hubs:
            if h[1] or (h[3] and h[2]):
                vm |= 1 << h[0]
        return vm

    def playable_tiles(self, rules: SimRules) -> int:
        """The bitmask of tiles that fit somewhere now (leads: every tile or the doubles)."""
        if self.nodes == 0:
            return DOUBLES_MASK if rules.lead_double else FULL_SET
        return VALUES_TILES[self.playable_values(rules)]

    def total(self) -> int:
        t = 0
        for e in self.ends:
            t += e[1]
        for h in self.hubs:
            if h[1]:
                t += 2 * h[0]
        return t

    def targets(self, tile: int, rules: SimRules) -> list[tuple[int, int]]:
        """Where `tile` may go: `(kind, index)` pairs, one per distinct open end."""
        if self.nodes == 0:
            return [(LEAD, 0)]
        a, b = HIGH[tile], LOW[tile]
        out: list[tuple[int, int]] = []
        restricted = rules.all_four_first and any(h[3] and (h[1] or h[2]) for h in self.hubs)
        if not self.hubs:
            return [(ARM, i) for i, e in enumerate(self.ends) if e[0] == a or e[0] == b]
        for j, h in enumerate(self.hubs):
            if (h[0] == a or h[0] == b) and (h[1] or (h[3] and h[2])):
                out.append((HUB, j))
        if not restricted:
            for i, e in enumerate(self.ends):
                if e[0] == a or e[0] == b:
                    out.append((ARM, i))
        return out

    def total_after(self, tile: int, kind: int, idx: int, base: int = -1) -> int:
        """The end total if `tile` were played at (kind, idx); the table is unchanged.

        `base` is the current total when the caller already has it.
        """
        if base < 0:
            base = self.total()
        a, b = HIGH[tile], LOW[tile]
        if kind == LEAD:
            return a + b
        if kind == ARM:
            e = self.ends[idx]
            gain = 2 * a if a == b else (b if a == e[0] else a)
            return base - e[1] + gain
        h = self.hubs[idx]
        other = b if a == h[0] else a
        if h[1] == 1:
            return base - 2 * h[0] + other
        return base + other

    def play(
        self, tile: int, kind: int, idx: int, rules: SimRules, spinner: bool | None = None
    ) -> None:
        """Attach `tile` at (kind, idx); the new tile becomes node `self.nodes`.

        `spinner` overrides whether a double becomes a spinner (the view says so).
        """
        a, b = HIGH[tile], LOW[tile]
        node = self.nodes
        self.nodes += 1
        double = a == b
        if spinner is None:
            spinner = double and (
                rules.spinners == "all_doubles"
                or (rules.spinners == "first_double" and not self.spinner_seen)
            )
        if spinner:
            self.spinner_seen = True
        if kind == LEAD:
            if double:
                self.hubs.append([a, 2, 2 if spinner else 0, 1 if spinner else 0, node])
            else:
                self.ends.append([a, a, 1, node])
                self.ends.append([b, b, 1, node])
            return
        if kind == ARM:
            e = self.ends[idx]
            if spinner:
                del self.ends[idx]
                self.hubs.append([a, 1, 2, 1, node])
            elif double:
                self.ends[idx] = [a, 2 * a, 2, node]
            else:
                other = b if a == e[0] else a
                self.ends[idx] = [other, other, 1, node]
            return
        h = self.hubs[idx]
        if h[1]:
            h[1] -= 1
        else:
            h[2] -= 1
        other = b if a == h[0] else a
        self.ends.append([other, other, 1, node])

    def matching_points(self) -> int:
        """Bergen scoring: halves showing a value seen on at least two different ends."""
        if not self.ends and len(self.hubs) == 1 and self.hubs[0][1] == 2:
            return 2
        halves = [0] * 7
        seen = [0] * 7
        for e in self.ends:
            halves[e[0]] += e[2]
            seen[e[0]] += 1
        for h in self.hubs:
            if h[1]:
                halves[h[0]] += 2
                seen[h[0]] += 1
        return sum(halves[v] for v in range(7) if seen[v] >= 2)

    def points_after(self, tile: int, kind: int, idx: int, rules: SimRules) -> int:
        """Points the play would score (before any exact-target voiding)."""
        if rules.scoring == "none":
            return 0
        if rules.scoring == "matching":
            probe = self.copy()
            probe.play(tile, kind, idx, rules)
            return probe.matching_points()
        return points_for_total(rules, self.total_after(tile, kind, idx))


def _convert(rules: SimRules, pips: int) -> int:
    if not rules.nearest:
        return pips
    unit = 3 if rules.scoring == "threes" else 5
    return unit * ((pips + unit // 2) // unit) // rules.scale


def _convert_half(rules: SimRules, pips: int) -> int:
    if not rules.nearest:
        return (pips + 1) // 2
    unit = 3 if rules.scoring == "threes" else 5
    return unit * ((pips + unit) // (2 * unit)) // rules.scale


def hand_end_gains(
    rules: SimRules, side_of: tuple[int, ...], hands: list[int], domino_seat: int | None
) -> list[int]:
    """Per-side points at the end of a hand (the bonus, or `penalty` losses)."""
    nsides = len(rules.sides)
    side_pips = [0] * nsides
    for seat, hand in enumerate(hands):
        m = hand
        while m:
            bit = m & -m
            side_pips[side_of[seat]] += PIPS[bit.bit_length() - 1]
            m ^= bit
    gains = [0] * nsides
    if rules.bonus == "penalty":
        return [-_convert(rules, p) for p in side_pips]
    if domino_seat is not None:
        winner = side_of[domino_seat]
    else:
        if not rules.blocked_bonus:
            return gains
        low = min(side_pips)
        tied = [k for k in range(nsides) if side_pips[k] == low]
        if len(tied) != 1:
            if rules.blocked_split and nsides == 3 and len(tied) == 2:
                third = next(k for k in range(nsides) if k not in tied)
                if rules.bonus == "fixed":
                    share = (rules.bonus_points + 1) // 2
                elif rules.bonus == "opponents_minus_own":
                    share = _convert_half(rules, max(0, side_pips[third] - low))
                elif rules.bonus == "all_hands":
                    share = _convert_half(rules, sum(side_pips))
                else:
                    share = _convert_half(rules, side_pips[third])
                for k in tied:
                    gains[k] = share
            return gains
        winner = tied[0]
    others = sum(side_pips) - side_pips[winner]
    bonus = rules.bonus
    if bonus == "fixed":
        gains[winner] = rules.bonus_points
    elif bonus == "opponents":
        gains[winner] = _convert(rules, others)
    elif bonus == "opponents_minus_own":
        gains[winner] = _convert(rules, max(0, others - side_pips[winner]))
    elif bonus == "all_hands":
        gains[winner] = _convert(rules, sum(side_pips))
    return gains

