"""Scoring: points for a play (rules.md §3) and pip bonuses with integer rounding (§5).

Pure integer arithmetic, never `round()`. Imports only `engine.layout`.
"""

from __future__ import annotations

from engine.layout import Ends


def play_points(scoring: str, scale: int, total: int, ends: Ends) -> int:
    """Points the player scores when the layout shows `ends` (end total `total`)."""
    if scoring == "fives":
        return total // scale if total and total % 5 == 0 else 0
    if scoring == "threes":
        return total // scale if total and total % 3 == 0 else 0
    if scoring == "fives_and_threes":
        points = 0
        if total and total % 5 == 0:
            points += total // 5
        if total and total % 3 == 0:
            points += total // 3
        return points
    if scoring == "matching":
        return matching_points(ends)
    return 0


def matching_points(ends: Ends) -> int:
    """Bergen: for each value shown on two or more ends, the halves showing it."""
    seen: dict[int, list[int]] = {}
    for e in ends:
        if e[3]:
            entry = seen.setdefault(e[2], [0, 0])
            entry[0] += 1
            entry[1] += e[3]
    return sum(halves for count, halves in seen.values() if count >= 2)


def rounded_pips(pips: int, rounding: str, unit: int, scale: int) -> int:
    """A pip count as bonus points: nearest multiple of `unit` (halves up) / `scale`, or raw."""
    if rounding == "none":
        return pips
    return unit * ((2 * pips + unit) // (2 * unit)) // scale


def rounded_half(pips: int, rounding: str, unit: int, scale: int) -> int:
    """Half of a pip count as bonus points (a split share): halves up either way."""
    if rounding == "none":
        return (pips + 1) // 2
    return unit * ((pips + unit) // (2 * unit)) // scale
