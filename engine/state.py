"""Game state: immutable records, copied on every `apply` (never mutated).

`GameState` holds what changes move by move (turn, scores, hands, boneyard, layout,
the round's log); `Table` holds what changes only between rounds (rules, seats, the
round's deal, finished rounds, the game's result). Both are frozen keyword records.

The `make_*` functions build these records on the hot path. Each fills an unfrozen twin
class with the same slots by plain attribute stores, then sets the instance's `__class__`
to the record (allowed because the layouts are identical); what comes out is an ordinary
frozen record. Measured with callgrind, a `GameState` costs about 4,100 instructions this
way, 7,800 through the slots' `__set__` wrappers, and twice that through the dataclass
initialiser. `make_table` takes keywords; `make_state`, called for every move, takes
GameState's fields positionally, in field order (keywords cost it about 65 ns, some 2.5 %
of an `apply` inside a hand). Imports only engine modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


def twin(record: type) -> Any:
    """An unfrozen class with `record`'s slots: an instance filled with plain slot stores
    becomes a `record` by assigning its `__class__` (the layouts are the same). How the hot paths
build frozen slotted records (here and in the server) without the frozen `__init__`'s
`object.__setattr__` per field."""
    return type(f"_{record.__name__}Slots", (), {"__slots__": record.__dict__["__slots__"]})


_new = object.__new__
_StateSlots = twin(GameState)
_TableSlots = twin(Table)
_ResultSlots = twin(HandResult)
_RecordSlots = twin(RoundRecord)


def make_state(
    table: Table, turn: int | None, scores: tuple[int, ...], hand_masks: tuple[int, ...],
    boneyard_tiles: tuple[int, ...], nodes: Nodes, ends: Ends, log: tuple[LogEntry, ...],
) -> GameState:
    """`GameState(...)`, fast (every move): slots filled on a twin, then the class set."""
    state = _new(_StateSlots)
    state.table = table
    state.turn = turn
    state.scores = scores
    state.hand_masks = hand_masks
    state.boneyard_tiles = boneyard_tiles
    state.nodes = nodes
    state.ends = ends
    state.log = log
    state.__class__ = GameState
    made: GameState = state
    return made


def make_table(
    *, rules: Rules, seed: int, round: int, leader: int, lead_from: tuple[int, ...],
    lead_tile: int, deal_hands: tuple[tuple[int, ...], ...], deal_boneyard: tuple[int, ...],
    past: tuple[RoundRecord, ...], game_over: bool, winner: int | None,
    sides: tuple[tuple[int, ...], ...], side_of: tuple[int, ...],
) -> Table:
    """`Table(...)`, fast (once or twice a hand): slots filled on a twin, then the class set."""
    table = _new(_TableSlots)
    table.rules = rules
    table.seed = seed
    table.round = round
    table.leader = leader
    table.lead_from = lead_from
    table.lead_tile = lead_tile
    table.deal_hands = deal_hands
    table.deal_boneyard = deal_boneyard
    table.past = past
    table.game_over = game_over
    table.winner = winner
    table.sides = sides
    table.side_of = side_of
    table.__class__ = Table
    made: Table = table
    return made


def make_result(end: str, winner: int | None, bonus: int, pips: tuple[int, ...],
                hands: tuple[tuple[int, ...], ...], totals: tuple[int, ...]) -> HandResult:
    """`HandResult(...)`, fast (once a hand): slots filled on a twin, then the class set."""
    result = _new(_ResultSlots)
    result.end = end
    result.winner = winner
    result.bonus = bonus
    result.pips = pips
    result.hands = hands
    result.totals = totals
    result.__class__ = HandResult
    made: HandResult = result
    return made


def make_record(hands: tuple[tuple[int, ...], ...], boneyard: tuple[int, ...], leader: int,
                moves: tuple[LogEntry, ...], result: HandResult | None) -> RoundRecord:
    """`RoundRecord(...)`, fast (once a hand): slots filled on a twin, then the class set."""
    record = _new(_RecordSlots)
    record.hands = hands
    record.boneyard = boneyard
    record.leader = leader
    record.moves = moves
    record.result = result
    record.__class__ = RoundRecord
    made: RoundRecord = record
    return made
