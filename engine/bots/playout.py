"""Greedy choices and whole-hand playouts over a `Table` (the strong bot's inner loop).

`best_play` is the greedy policy (most points now; ties: heaviest tile, doubles
first, higher tile, then the end whose layout tile was placed first). `playout`
plays a hand to its end with every seat greedy and returns each side's points.
Imports only `engine.tiles` and `engine.bots.table`.
"""

from __future__ import annotations

from engine.bots.table import (
    ARM,
    HUB,
    VALUES_TILES,
    SimRules,
    Table,
    hand_end_gains,
    points_for_total,
)
from engine.tiles import IS_DOUBLE, PIPS

Choice = tuple[int, int, int, int]
"""(tile, target kind, target index, points)."""


TILE_RANK: tuple[int, ...] = tuple(
    PIPS[t] * 1000 + (100 if IS_DOUBLE[t] else 0) + t for t in range(28)
)
"""Greedy's tie order between tiles: heaviest, then doubles, then the higher tile."""


def best_play(
    table: Table, playable: int, rules: SimRules, score: int = 0
) -> Choice:
    """The greedy choice among the tiles in `playable` (a non-empty bitmask)."""
    by_total = rules.scoring not in ("matching", "none")
    base = table.total() if by_total else 0
    exact = rules.exact
    target = rules.target
    best_pts = -1
    best_rank = -1
    best_node = 0
    best: Choice | None = None
    m = playable
    while m:
        bit = m & -m
        m ^= bit
        tile = bit.bit_length() - 1
        rank = TILE_RANK[tile]
        for kind, idx in table.targets(tile, rules):
            if by_total:
                pts = points_for_total(rules, table.total_after(tile, kind, idx, base))
            else:
                pts = table.points_after(tile, kind, idx, rules)
            if exact and score + pts > target:
                pts = 0
            if pts < best_pts or (pts == best_pts and rank < best_rank):
                continue
            node = (
                table.hubs[idx][4] if kind == HUB else table.ends[idx][3] if kind == ARM else 0
            )
            if pts == best_pts and rank == best_rank and node >= best_node:
                continue
            best_pts, best_rank, best_node = pts, rank, node
            best = (tile, kind, idx, pts)
    assert best is not None, "best_play needs a playable tile"
    return best


def playout(
    table: Table,
    hands: list[int],
    boneyard: list[int],
    turn: int,
    scores: list[int],
    rules: SimRules,
    side_of: tuple[int, ...],
) -> list[int]:
    """Play the hand out greedily from `turn`; return each side's points gained.

    Mutates `table`, `hands` and `scores`; `boneyard` is read from its front. A game won
    during the hand adds `rules.target` to the winner's side (and ends the playout).
    """
    n = rules.players
    start = scores[:]
    pos = 0
    limit = len(boneyard) - rules.reserve if rules.draw else 0
    while True:
        hand = hands[turn]
        playable = hand & VALUES_TILES[table.playable_values(rules)]
        if playable:
            side = side_of[turn]
            tile, kind, idx, pts = best_play(table, playable, rules, scores[side])
            hand ^= 1 << tile
            hands[turn] = hand
            if not hand:
                raw = table.points_after(tile, kind, idx, rules)
                return finish_hand(hands, scores, start, rules, side_of, turn, raw)
            table.play(tile, kind, idx, rules)
            scores[side] += pts
            if rules.exact and pts and scores[side] == rules.target:
                return _finish(scores, start, side)
            turn = (turn + 1) % n
        elif pos < limit:
            hands[turn] = hand | 1 << boneyard[pos]
            pos += 1
        else:
            tiles = VALUES_TILES[table.playable_values(rules)]
            if not any(h & tiles for h in hands):
                return finish_hand(hands, scores, start, rules, side_of, None)
            turn = (turn + 1) % n


def _finish(scores: list[int], start: list[int], winner: int | None) -> list[int]:
    gains = [s - b for s, b in zip(scores, start, strict=True)]
    if winner is not None:
        gains[winner] += 1000
    return gains


def finish_hand(
    hands: list[int],
    scores: list[int],
    start: list[int],
    rules: SimRules,
    side_of: tuple[int, ...],
    domino_seat: int | None,
    domino_points: int = 0,
) -> list[int]:
    """Settle a hand that just ended: a domino by `domino_seat` (whose last play scored
    `domino_points`, not yet in `scores`), or blocked when `domino_seat` is None.

    Under an exact target, the domino play's points and the bonus are void together
    when their sum would overshoot; a blocked hand's gains are void side by side.
    """
    extra = hand_end_gains(rules, side_of, hands, domino_seat)
    if domino_seat is not None:
        side = side_of[domino_seat]
        if rules.exact and scores[side] + domino_points + extra[side] > rules.target:
            extra[side] = domino_points = 0
        scores[side] += domino_points
    for k, g in enumerate(extra):
        if rules.exact and scores[k] + g > rules.target:
            continue
        scores[k] += g
    gains = [s - b for s, b in zip(scores, start, strict=True)]
    top = max(scores)
    if rules.exact:
        winners = [k for k, s in enumerate(scores) if s == rules.target]
    elif rules.bonus == "penalty":
        winners = (
            [k for k, s in enumerate(scores) if s == top]
            if min(scores) <= -rules.target
            else []
        )
    else:
        winners = [k for k, s in enumerate(scores) if s == top] if top >= rules.target else []
    if len(winners) == 1:
        gains[winners[0]] += 1000
    return gains
