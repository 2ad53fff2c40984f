"""Turn clocks: pure arithmetic over a `ClockConfig` and per-seat banks. Imports no I/O.

- realtime: a seat to move has ``move_ms`` plus its reserve bank; time beyond ``move_ms`` is
  taken from the bank.
- turn (one move per day, BGA style): at the start of each of its turns a seat's bank grows by
  ``move_ms``, capped at ``max_ms``; the time it takes comes off the bank.
The deadline is when the seat to move runs out; only seats played by people have one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from server.table_config import ClockConfig


@dataclass(frozen=True, slots=True)
class ClockState:
    banks: tuple[int, ...]
    seat: int | None = None  # the seat whose time is running
    started_ms: int | None = None  # when that seat's turn began
    deadline_ms: int | None = None

    @classmethod
    def initial(cls, config: ClockConfig, players: int) -> ClockState:
        bank = config.reserve_ms if config.kind == "realtime" else 0
        return cls(banks=(bank,) * players)

    def to_data(self) -> list[Any]:
        return [list(self.banks), self.seat, self.started_ms, self.deadline_ms]

    @classmethod
    def from_data(cls, data: list[Any]) -> ClockState:
        return cls(tuple(data[0]), data[1], data[2], data[3])


def stop(config: ClockConfig, clock: ClockState, now_ms: int) -> ClockState:
    """The running seat has moved (or the game ended) at ``now_ms``: charge its time."""
    if clock.seat is None or clock.started_ms is None:
        return replace(clock, seat=None, started_ms=None, deadline_ms=None)
    used = max(0, now_ms - clock.started_ms)
    bank = clock.banks[clock.seat]
    if config.kind == "realtime":
        bank -= max(0, used - config.move_ms)
    else:
        bank -= used
    banks = list(clock.banks)
    banks[clock.seat] = max(0, bank)
    return ClockState(tuple(banks))


def start(config: ClockConfig, clock: ClockState, seat: int, now_ms: int) -> ClockState:
    """Start ``seat``'s turn at ``now_ms`` (after `stop` of the previous one)."""
    banks = list(clock.banks)
    if config.kind == "realtime":
        allowance = config.move_ms + banks[seat]
    else:
        banks[seat] = min(banks[seat] + config.move_ms, config.max_ms)
        allowance = banks[seat]
    return ClockState(tuple(banks), seat, now_ms, now_ms + allowance)


def document(config: ClockConfig | None, clock: ClockState | None) -> dict[str, Any]:
    """The ``table.clock`` part of the document."""
    if config is None or clock is None:
        return {"kind": None, "deadline": None, "reserve": None}
    reserve = list(clock.banks) if config.kind == "realtime" else None
    return {"kind": config.kind, "deadline": clock.deadline_ms, "reserve": reserve}
