"""Game state: immutable records, copied on every `apply` (never mutated).

`GameState` holds what changes move by move (turn, scores, hands, boneyard, layout,
the round's log); `Table` holds what changes only between rounds (rules, seats, the
round's deal, finished rounds, the game's result). The `make_*` functions build these
frozen records on the hot path by setting their slots directly (the dataclass initialiser
costs about twice as much). Imports only engine modules.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.layout import Ends, Nodes
from engine.rules import Rules
from engine.tiles import TILES, Tile, mask_tiles

LogEntry = tuple[int, int, int, int, int, int]
"""`(seat, kind, tile, on, points, end_total)`; kind PLAYED/DREW/PASSED; -1 for none."""
PLAYED, DREW, PASSED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class HandResult:
    """How a round ended: `end` is "domino", "blocked" or "target"; `winner` a side or None."""

    end: str
    winner: int | None
    bonus: int
    pips: tuple[int, ...]
    hands: tuple[tuple[int, ...], ...]
    totals: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """A round as played: its deal, leader, moves and result (None while it goes on)."""

    hands: tuple[tuple[int, ...], ...]
    boneyard: tuple[int, ...]
    leader: int
    moves: tuple[LogEntry, ...]
    result: HandResult | None


@dataclass(frozen=True, slots=True)
class Table:
    """What stays fixed during a round."""

    rules: Rules
    seed: int
    round: int
    leader: int
    lead_from: tuple[int, ...]
    """Seats the rules (or chance) could name to lead this round, before `lead` rules."""
    lead_tile: int
    """Tile the leader must lead (highest_double, round 1), else -1."""
    deal_hands: tuple[tuple[int, ...], ...]
    deal_boneyard: tuple[int, ...]
    past: tuple[RoundRecord, ...]
    game_over: bool
    winner: int | None
    sides: tuple[tuple[int, ...], ...]
    side_of: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GameState:
    """A position. Hands are bitmasks over tile indexes; see engine.layout for the layout."""

    table: Table
    turn: int | None
    scores: tuple[int, ...]
    hand_masks: tuple[int, ...]
    boneyard_tiles: tuple[int, ...]
    nodes: Nodes
    ends: Ends
    log: tuple[LogEntry, ...]

    @property
    def rules(self) -> Rules:
        return self.table.rules

    @property
    def players(self) -> int:
        return self.table.rules.players

    @property
    def round(self) -> int:
        return self.table.round

    @property
    def leader(self) -> int:
        return self.table.leader

    @property
    def game_over(self) -> bool:
        return self.table.game_over

    @property
    def winner(self) -> int | None:
        return self.table.winner

    @property
    def sides(self) -> tuple[tuple[int, ...], ...]:
        return self.table.sides

    @property
    def boneyard_size(self) -> int:
        return len(self.boneyard_tiles)

    def hand(self, seat: int) -> tuple[Tile, ...]:
        """Seat's tiles, highest first (not for showing to other seats)."""
        return tuple(TILES[i] for i in mask_tiles(self.hand_masks[seat]))

    @property
    def layout_tiles(self) -> tuple[Tile, ...]:
        """The tiles on the table in play order."""
        return tuple(TILES[n[0]] for n in self.nodes)

    @property
    def results(self) -> tuple[HandResult, ...]:
        """Results of the finished rounds, in order."""
        return tuple(r.result for r in self.table.past if r.result is not None)


_new = object.__new__
_set_table = GameState.__dict__["table"].__set__
_set_turn = GameState.__dict__["turn"].__set__
_set_scores = GameState.__dict__["scores"].__set__
_set_hands = GameState.__dict__["hand_masks"].__set__
_set_boneyard = GameState.__dict__["boneyard_tiles"].__set__
_set_nodes = GameState.__dict__["nodes"].__set__
_set_ends = GameState.__dict__["ends"].__set__
_set_log = GameState.__dict__["log"].__set__
(_r_end, _r_winner, _r_bonus, _r_pips, _r_hands, _r_totals) = (
    HandResult.__dict__[name].__set__ for name in HandResult.__slots__)
(_rr_hands, _rr_boneyard, _rr_leader, _rr_moves, _rr_result) = (
    RoundRecord.__dict__[name].__set__ for name in RoundRecord.__slots__)
(_t_rules, _t_seed, _t_round, _t_leader, _t_lead_from, _t_lead_tile, _t_deal_hands,
 _t_deal_boneyard, _t_past, _t_game_over, _t_winner, _t_sides, _t_side_of) = (
    Table.__dict__[name].__set__ for name in Table.__slots__)


def make_state(
    table: Table, turn: int | None, scores: tuple[int, ...], hand_masks: tuple[int, ...],
    boneyard_tiles: tuple[int, ...], nodes: Nodes, ends: Ends, log: tuple[LogEntry, ...],
) -> GameState:
    """`GameState(...)` without the dataclass initialiser's per-field lookups (hot path)."""
    state: GameState = _new(GameState)
    _set_table(state, table)
    _set_turn(state, turn)
    _set_scores(state, scores)
    _set_hands(state, hand_masks)
    _set_boneyard(state, boneyard_tiles)
    _set_nodes(state, nodes)
    _set_ends(state, ends)
    _set_log(state, log)
    return state


def make_table(
    rules: Rules, seed: int, round: int, leader: int, lead_from: tuple[int, ...],
    lead_tile: int, deal_hands: tuple[tuple[int, ...], ...], deal_boneyard: tuple[int, ...],
    past: tuple[RoundRecord, ...], game_over: bool, winner: int | None,
    sides: tuple[tuple[int, ...], ...], side_of: tuple[int, ...],
) -> Table:
    """`Table(...)` without the dataclass initialiser's per-field lookups (once or twice a hand)."""
    table: Table = _new(Table)
    _t_rules(table, rules)
    _t_seed(table, seed)
    _t_round(table, round)
    _t_leader(table, leader)
    _t_lead_from(table, lead_from)
    _t_lead_tile(table, lead_tile)
    _t_deal_hands(table, deal_hands)
    _t_deal_boneyard(table, deal_boneyard)
    _t_past(table, past)
    _t_game_over(table, game_over)
    _t_winner(table, winner)
    _t_sides(table, sides)
    _t_side_of(table, side_of)
    return table


def make_result(end: str, winner: int | None, bonus: int, pips: tuple[int, ...],
                hands: tuple[tuple[int, ...], ...], totals: tuple[int, ...]) -> HandResult:
    """`HandResult(...)` without the dataclass initialiser's per-field lookups (once a hand)."""
    result: HandResult = _new(HandResult)
    _r_end(result, end)
    _r_winner(result, winner)
    _r_bonus(result, bonus)
    _r_pips(result, pips)
    _r_hands(result, hands)
    _r_totals(result, totals)
    return result


def make_record(hands: tuple[tuple[int, ...], ...], boneyard: tuple[int, ...], leader: int,
                moves: tuple[LogEntry, ...], result: HandResult | None) -> RoundRecord:
    """`RoundRecord(...)` without the dataclass initialiser's per-field lookups (once a hand)."""
    record: RoundRecord = _new(RoundRecord)
    _rr_hands(record, hands)
    _rr_boneyard(record, boneyard)
    _rr_leader(record, leader)
    _rr_moves(record, moves)
    _rr_result(record, result)
    return record
