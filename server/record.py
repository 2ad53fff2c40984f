"""`TableRecord`: everything stored about one table, and the documents each audience sees.

Pure data and functions (no I/O): the state blob codec, the per-audience document of the wire
protocol, the lobby summary, and when the table next needs the scheduler. Imports `engine`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import msgpack

import engine
from server import clock as clocks
from server.table_config import TableConfig

SPECTATORS = "s"
WAITING, PLAYING, FINISHED = "waiting", "playing", "finished"
STANDIN_BOT = "greedy"  # plays for a seat whose player left a game in progress


@dataclass(frozen=True, slots=True)
class Seat:
    name: str | None = None
    bot: str | None = None
    taken: bool = False

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "bot": self.bot, "taken": self.taken}


def audience_viewer(audience: str, players: int) -> int | None:
    """The engine viewer of an audience key ("s" or a seat number); ValueError if invalid."""
    if audience == SPECTATORS:
        return None
    if audience.isdigit() and len(audience) == 1 and int(audience) < players:
        return int(audience)
    raise ValueError(f"no audience {audience!r} at a {players}-player table")


def audiences(players: int) -> list[str]:
    return [str(seat) for seat in range(players)] + [SPECTATORS]


@dataclass(frozen=True, slots=True)
class TableRecord:
    id: str
    config: TableConfig
    created_ms: int
    seed: int
    status: str
    seats: tuple[Seat, ...]
    game: Any  # engine.GameState
    clock: clocks.ClockState | None = None
    result: dict[str, Any] | None = None
    invite_hash: str | None = None

    @classmethod
    def new(cls, table_id: str, config: TableConfig, created_ms: int, seed: int,
            invite_hash: str | None) -> TableRecord:
        seats = tuple(
            Seat(name="Bot", bot=config.bots[s], taken=True) if s in config.bots else Seat()
            for s in range(config.players)
        )
        game = engine.new_game(config.rules, config.players, seed)
        clock = clocks.ClockState.initial(config.clock, config.players) if config.clock else None
        return cls(table_id, config, created_ms, seed, WAITING, seats, game, clock,
                   None, invite_hash)

    # -- codec -----------------------------------------------------------------------------
    def to_blob(self) -> bytes:
        data = {
            "id": self.id, "config": self.config.to_data(), "created": self.created_ms,
            "seed": self.seed, "status": self.status,
            "seats": [seat.to_data() for seat in self.seats],
            "game": engine.state_to_data(self.game),
            "clock": self.clock.to_data() if self.clock else None,
            "result": self.result, "invite": self.invite_hash,
        }
        return bytes(msgpack.packb(data))

    @classmethod
    def from_blob(cls, blob: bytes) -> TableRecord:
        data = msgpack.unpackb(blob)
        return cls(
            id=data["id"], config=TableConfig.from_data(data["config"]),
            created_ms=data["created"], seed=data["seed"], status=data["status"],
            seats=tuple(Seat(**seat) for seat in data["seats"]),
            game=engine.state_from_data(data["game"]),
            clock=clocks.ClockState.from_data(data["clock"]) if data["clock"] else None,
            result=data["result"], invite_hash=data["invite"],
        )

    # -- what people see -------------------------------------------------------------------
    def table_document(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.config.name, "status": self.status,
            "seats": [seat.to_data() for seat in self.seats],
            "clock": clocks.document(self.config.clock, self.clock),
            "private": self.config.private, "result": self.result,
        }

    def document(self, audience: str, version: int,
                 table: dict[str, Any] | None = None) -> dict[str, Any]:
        """The protocol document of ``audience`` at ``version`` (game is None while waiting)."""
        viewer = audience_viewer(audience, self.config.players)
        game = None if self.status == WAITING else engine.view(self.game, viewer)
        return {"v": version, "game": game, "table": table or self.table_document()}

    def documents(self, version: int) -> dict[str, dict[str, Any]]:
        table = self.table_document()
        return {aud: self.document(aud, version, table) for aud in audiences(self.config.players)}

    def summary(self, version: int) -> dict[str, Any]:
        clock = self.config.clock
        return {
            "id": self.id, "name": self.config.name, "players": self.config.players,
            "rules": self.config.rules, "status": self.status,
            "seats": [seat.to_data() for seat in self.seats], "private": self.config.private,
            "v": version, "clock": clock.to_request() if clock else None,
            "on_timeout": self.config.on_timeout, "created": self.created_ms,
        }

    # -- turns and time --------------------------------------------------------------------
    @property
    def seat_to_move(self) -> int | None:
        if self.status != PLAYING:
            return None
        turn: int | None = self.game.turn
        return turn

    def bot_level(self, seat: int) -> str | None:
        return self.seats[seat].bot

    def due_ms(self, now_ms: int, bot_delay_ms: int) -> int | None:
        """When the scheduler must act next: a bot's move, or the clock of the seat to move."""
        seat = self.seat_to_move
        if seat is None:
            return None
        if self.seats[seat].bot is not None:
            return now_ms + bot_delay_ms
        if self.clock is not None:
            return self.clock.deadline_ms
        return None

    def with_turn_clock(self, previous_turn: int | None, previous_round: int,
                        now_ms: int) -> TableRecord:
        """Charge the time of the seat that just moved and start the next seat's clock.
        A seat that moves again in the same round (after drawing) keeps its turn running."""
        config = self.config.clock
        if config is None or self.clock is None:
            return self
        seat = self.seat_to_move
        if seat is not None and seat == previous_turn and self.game.round == previous_round \
                and self.clock.seat == seat:
            return self
        clock = clocks.stop(config, self.clock, now_ms)
        if seat is not None and self.seats[seat].bot is None:
            clock = clocks.start(config, clock, seat, now_ms)
        return replace(self, clock=clock)


def game_result(record: TableRecord) -> dict[str, Any]:
    """The ``table.result`` of a game the engine finished."""
    return {"winner": record.game.winner, "reason": "game_end", "seat": None}
