"""Rounds: dealing, who leads (rules.md §4-5), settling a finished hand and the game's end (§6).

`settle` is the one place a finished hand is paid (bonuses, penalties, split shares, an exact
target's voiding, the game's end): `apply` records its `Settlement` with `close_round`, and
playouts that stop at the hand's end (engine.playout `finish_hand`) report it as it is.
Randomness comes only from `random.Random` instances seeded with (game seed, round).
Imports only engine modules and the standard library (`random`, `math`, `operator`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from math import floor
from operator import add
from typing import NamedTuple

from engine.errors import InvalidNotation, InvalidTranscript
from engine.rules import Rules
from engine.scoring import rounded_half, rounded_pips
from engine.state import (
    PLAYED,
    GameState,
    LogEntry,
    RoundRecord,
    Table,
    make_record,
    make_result,
    make_state,
    make_table,
)
from engine.tiles import (
    HIGH,
    IS_DOUBLE,
    NAMES,
    PIPS,
    Tile,
    hand_mask,
    mask_pips,
    mask_tile_tuple,
)

Event = dict[str, object]


def round_rng(seed: int, rnd: int) -> random.Random:
    """The random source of round `rnd` of the game seeded `seed` (deal, then leader)."""
    return random.Random(f"dominoes/{seed}/{rnd}")


Sides = tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]
_SIDES: dict[int, Sides] = {
    players: (tuple((s,) for s in range(players)), tuple(range(players))) for players in (2, 3, 4)
}
_PARTNERS: Sides = (((0, 2), (1, 3)), (0, 1, 0, 1))


def seat_sides(rules: Rules) -> Sides:
    """(sides, side_of): partnerships pair seats 0+2 and 1+3, else each seat is a side."""
    return _PARTNERS if rules.partnerships else _SIDES[rules.players]


_SWAPS = tuple((i, i + 1) for i in range(27, 0, -1))
"""Fisher-Yates steps: (position, how many tiles are still to choose from)."""


def deal(rules: Rules, rng: random.Random) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """Shuffle the set and deal `hand_size` tiles to each seat; the rest is the boneyard."""
    tiles = list(range(28))
    rand = rng.random
    for i, size in _SWAPS:  # Fisher-Yates on random() (as random.shuffle once did)
        j = floor(rand() * size)  # = int() here (never negative), and cheaper
        tiles[i], tiles[j] = tiles[j], tiles[i]
    n = rules.hand_size
    hands = tuple([tuple(tiles[i * n:(i + 1) * n]) for i in range(rules.players)])
    return hands, tuple(tiles[rules.players * n:])


def check_deal(
    rules: Rules, hands: Sequence[Sequence[object]], boneyard: Sequence[object]
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """Validate an explicit deal (tiles as `Tile` or text like "6-4"); raises `bad_deal`."""
    def index(tile: object) -> int:
        if isinstance(tile, Tile):
            return tile.index
        return Tile.parse(tile).index

    try:
        if len(hands) != rules.players:
            raise InvalidTranscript("bad_deal", f"expected {rules.players} hands, got {len(hands)}")
        dealt = tuple(tuple(index(t) for t in hand) for hand in hands)
        rest = tuple(index(t) for t in boneyard)
    except TypeError as exc:
        raise InvalidTranscript("bad_deal", "hands and boneyard are lists of tiles") from exc
    except InvalidNotation as exc:
        raise InvalidTranscript("bad_deal", f"bad tile in the deal: {exc.message}") from exc
    for seat, hand in enumerate(dealt):
        if len(hand) != rules.hand_size:
            raise InvalidTranscript(
                "bad_deal", f"seat {seat} holds {len(hand)} tiles; the rules deal {rules.hand_size}"
            )
    everything = [t for hand in dealt for t in hand] + list(rest)
    if len(everything) != 28 or len(set(everything)) != 28:
        raise InvalidTranscript("bad_deal", "hands and boneyard must hold the 28 tiles, each once")
    return dealt, rest


_LEAD_ORDER = sorted(range(28), key=lambda t: (IS_DOUBLE[t], PIPS[t], HIGH[t], t), reverse=True)
"""Tiles from the one that leads first under `highest_double` (highest double, then heaviest)."""


def _heaviest_lead(masks: tuple[int, ...]) -> tuple[int, int]:
    """(seat, tile): the holder of the highest double, else of the heaviest tile."""
    for tile in _LEAD_ORDER:
        for seat, mask in enumerate(masks):
            if mask >> tile & 1:
                return seat, tile
    raise ValueError("nobody holds a tile")


def _double_leader(named: int, hands: tuple[tuple[int, ...], ...]) -> int:
    n = len(hands)
    for k in range(n):
        seat = (named + k) % n
        if any(IS_DOUBLE[t] for t in hands[seat]):
            return seat
    return named


def allowed_leaders(
    rules: Rules, rnd: int, lead_from: tuple[int, ...], hands: tuple[tuple[int, ...], ...]
) -> dict[int, int]:
    """Every seat that may lead this deal, with the tile it must lead (-1: any allowed)."""
    if rules.first_leader == "highest_double" and rnd == 0:
        seat, tile = _heaviest_lead(tuple(map(hand_mask, hands)))
        return {seat: tile}
    if rules.lead == "double":
        return {_double_leader(s, hands): -1 for s in lead_from}
    return {s: -1 for s in lead_from}


def start_round(
    *,
    rules: Rules,
    seed: int,
    rnd: int,
    lead_from: tuple[int, ...],
    past: tuple[RoundRecord, ...],
    scores: tuple[int, ...],
    deal_hands: tuple[tuple[int, ...], ...],
    deal_boneyard: tuple[int, ...],
    leader: int | None,
    rng: random.Random | None = None,
) -> GameState:
    """A fresh round; `leader` None picks one the way chance and the rules say."""
    masks = tuple(map(hand_mask, deal_hands))
    lead_tile = -1
    if leader is not None:
        options = allowed_leaders(rules, rnd, lead_from, deal_hands)
        if leader not in options:
            allowed = ", ".join(str(s) for s in sorted(options))
            raise InvalidTranscript(
                "bad_leader", f"seat {leader} may not lead; the rules allow {allowed}"
            )
        lead_tile = options[leader]
    elif rules.first_leader == "highest_double" and rnd == 0:
        leader, lead_tile = _heaviest_lead(masks)
    else:
        leader = lead_from[0]
        if len(lead_from) > 1:
            leader = (rng or round_rng(seed, rnd)).choice(lead_from)
        if rules.lead == "double":
            leader = _double_leader(leader, deal_hands)
    sides, side_of = seat_sides(rules)
    table = make_table(rules=rules, seed=seed, round=rnd, leader=leader, lead_from=lead_from,
                       lead_tile=lead_tile, deal_hands=deal_hands, deal_boneyard=deal_boneyard,
                       past=past, game_over=False, winner=None, sides=sides, side_of=side_of)
    return make_state(table, leader, scores, masks, deal_boneyard, (), (), ())


def heaviest_tile(mask: int) -> int:
    """The tile of `mask` that leads first under `highest_double` (its highest double, else
    its heaviest tile), or -1 for an empty mask."""
    for tile in _LEAD_ORDER:
        if mask >> tile & 1:
            return tile
    return -1


class Settlement(NamedTuple):
    """A finished hand, settled: what `apply` records and what a playout reports.

    `end` is "domino", "blocked" or "target"; `seat` made the hand's last move and `points` is
    what its last play keeps (0 for a draw, or when an exact target voids it); `totals` are
    every side's scores after the hand; `winner` is the hand's winning side (None: tied, or a
    hand ended at the target); `bonus` the bonus reported; `pips` each seat's pips; `tied` the
    sides tied lowest in a blocked hand; `game_winner` the side that won the game, if it ended.
    """

    end: str
    seat: int
    points: int
    totals: tuple[int, ...]
    winner: int | None
    bonus: int
    pips: tuple[int, ...]
    tied: tuple[int, ...]
    game_winner: int | None


def settle(table: Table, scores: tuple[int, ...] | list[int], hands: Sequence[int], end: str,
           seat: int, points: int) -> Settlement:
    """Settle a hand that `seat`'s last move ended by `end` ("domino", "blocked", "target").

    `scores` are the totals before that move's `points` (as `play_tile` gave them: a domino's
    as scored, which an exact target voids together with the bonus (decision 10); a blocked
    hand's bonus or split shares are voided side by side); `hands` hold the tiles left.
    """
    rules = table.rules
    sides, side_of = table.sides, table.side_of
    side = side_of[seat]
    pips = tuple(map(mask_pips, hands))
    before = list(scores)
    if end == "target":
        before[side] += points
        return Settlement(end, seat, points, tuple(before), None, 0, pips, (), side)
    players = rules.players
    side_pips = list(pips) if len(sides) == players else [pips[a] + pips[b] for a, b in sides]
    unit, scale, rounding = rules.unit, rules.scale, rules.bonus_rounding
    gains = [0] * len(sides)
    winner: int | None
    if end == "domino":
        winner = side
        tied = [winner]
    else:
        low = min(side_pips)
        tied = [i for i, p in enumerate(side_pips) if p == low]
        winner = tied[0] if len(tied) == 1 else None
    bonus = 0
    if rules.bonus == "penalty":
        gains = [-rounded_pips(p, rounding, unit, scale) for p in side_pips]
    elif end == "domino" or rules.blocked_bonus:
        total = sum(side_pips)
        if winner is not None:
            own = side_pips[winner]
            bonus = _bonus(rules, total - own, own, total)
            gains[winner] = bonus
        elif rules.blocked_tie == "split" and players == 3 and len(tied) == 2:
            third = next(s for s in range(3) if s not in tied)
            own = side_pips[tied[0]]
            if rules.bonus == "fixed":
                share = (rules.bonus_points + 1) // 2
            else:
                pot = {"opponents": side_pips[third],
                       "opponents_minus_own": max(0, side_pips[third] - own),
                       "all_hands": total}[rules.bonus]
                share = rounded_half(pot, rounding, unit, scale)
            for s in tied:
                gains[s] = share
    if end == "domino":
        if rules.exact and before[side] + points + gains[side] > rules.target:
            points = gains[side] = bonus = 0
        before[side] += points
    else:  # the blocking play's points stand (play_tile voided them if they overshot)
        before[side] += points
        if rules.exact:
            for i, gain in enumerate(gains):
                if before[i] + gain > rules.target:
                    gains[i] = 0
                    if i == winner:
                        bonus = 0
    totals = tuple(map(add, before, gains))
    # Positional, in field order: keywords cost a NamedTuple about 4,000 instructions, and
    # every bot playout settles a hand.
    return Settlement(end, seat, points, totals, winner, bonus, pips, tuple(tied),
                      game_result(rules, totals))


def _bonus(rules: Rules, opponents: int, own: int, total: int) -> int:
    unit, scale, rounding = rules.unit, rules.scale, rules.bonus_rounding
    if rules.bonus == "opponents":
        return rounded_pips(opponents, rounding, unit, scale)
    if rules.bonus == "opponents_minus_own":
        return rounded_pips(max(0, opponents - own), rounding, unit, scale)
    if rules.bonus == "all_hands":
        return rounded_pips(total, rounding, unit, scale)
    return rules.bonus_points


def next_leaders(table: Table, settled: Settlement, log: tuple[LogEntry, ...]) -> tuple[int, ...]:
    """The seats that may lead the next round after the hand `settled` (decision 11)."""
    rules = table.rules
    players = rules.players
    end = settled.end
    rule = rules.next_leader if end == "domino" else rules.blocked_next_leader
    if rule == "left":
        return ((table.leader + 1) % players,)
    if rule == "random":
        return tuple(range(players))
    if rule == "last_player":
        return (next(e[0] for e in reversed(log) if e[1] == PLAYED),)
    if end == "domino":
        return (settled.seat,)
    sides, pips = table.sides, settled.pips
    if settled.winner is not None:
        seats = sides[settled.winner]
        low = min(pips[s] for s in seats)
        return tuple(s for s in seats if pips[s] == low)
    return tuple(sorted(s for side in settled.tied for s in sides[side]))


def game_result(rules: Rules, scores: tuple[int, ...]) -> int | None:
    """The winning side when a hand has ended with these totals, or None (play on)."""
    if rules.game_end == "exact":
        hits = [i for i, s in enumerate(scores) if s == rules.target]
        return hits[0] if hits else None
    if rules.bonus == "penalty":
        over = any(s <= -rules.target or s >= rules.target for s in scores)
    else:
        over = any(s >= rules.target for s in scores)
    if not over:
        return None
    best = max(scores)
    leaders = [i for i, s in enumerate(scores) if s == best]
    return leaders[0] if len(leaders) == 1 else None


def deal_round(table: Table, rnd: int, lead_from: tuple[int, ...], past: tuple[RoundRecord, ...],
               scores: tuple[int, ...] | list[int], events: list[Event]) -> GameState:
    """Round ``rnd`` of ``table``'s game, dealt from its seed, and its ``deal`` event."""
    rng = round_rng(table.seed, rnd)
    hands, boneyard = deal(table.rules, rng)
    new = start_round(rules=table.rules, seed=table.seed, rnd=rnd, lead_from=lead_from,
                      past=past, scores=tuple(scores), deal_hands=hands, deal_boneyard=boneyard,
                      leader=None, rng=rng)
    events.append({"type": "deal", "round": rnd, "leader": new.table.leader})
    return new


def close_round(after: GameState, settled: Settlement, events: list[Event],
                next_deal: bool = False) -> GameState:
    """Record the finished round: the game's final state, or one between rounds (turn None),
    or with `next_deal` the next round, dealt from the game's seed (and its `deal` event).

    `after` is the position the hand's last move left (its hands, boneyard, layout and log,
    that move included, with the round's table; its scores are replaced by the settled
    totals), and the events of the round's end are appended to `events`.
    """
    table = after.table
    totals = settled.totals
    held = tuple(map(mask_tile_tuple, after.hand_masks))
    result = make_result(settled.end, settled.winner, settled.bonus, settled.pips, held, totals)
    log = after.log
    record = make_record(table.deal_hands, table.deal_boneyard, table.leader, log, result)
    past = (*table.past, record)
    events.append({
        "type": "hand_end", "round": table.round, "end": settled.end, "winner": settled.winner,
        "bonus": settled.bonus, "pips": list(settled.pips),
        "hands": [list(map(NAMES.__getitem__, h)) for h in held], "totals": list(totals),
    })
    game_winner = settled.game_winner
    if game_winner is not None:
        events.append({"type": "game_end", "winner": game_winner, "totals": list(totals)})
        final = replace(table, past=past, game_over=True, winner=game_winner)
        return make_state(final, None, totals, after.hand_masks, after.boneyard_tiles,
                          after.nodes, after.ends, log)
    lead_from = next_leaders(table, settled, log)
    if next_deal:  # straight to the next round: the state between rounds is never seen
        return deal_round(table, table.round + 1, lead_from, past, totals, events)
    between = make_table(
        rules=table.rules, seed=table.seed, round=table.round, leader=table.leader,
        lead_from=lead_from, lead_tile=table.lead_tile, deal_hands=table.deal_hands,
        deal_boneyard=table.deal_boneyard, past=past, game_over=False, winner=None,
        sides=table.sides, side_of=table.side_of)
    return make_state(between, None, totals, after.hand_masks, after.boneyard_tiles, after.nodes,
                      after.ends, log)
