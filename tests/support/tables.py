"""Driving a `server.tables.TableService` directly in tests (no sockets).

- ``await new_table(service, players=2, **request)`` creates a table and seats people in every
  free seat; returns (table id, {seat: token}).
- ``await play_random(service, table_id, rng, move_id)`` makes one legal move for the seat to
  move (a person's seat), chosen by ``rng`` from that seat's ``legal`` list; returns the version.
- ``frames(v)``: hand-written frames of one version, for tests of the store alone.
- ``DocumentFollower`` keeps one audience's document up to date from the stored frames, the
  way a client does, and checks it against a fresh snapshot.
"""

from __future__ import annotations

import random
from typing import Any

import msgpack

from server.diff import apply_ops
from server.tables import TableService


def frames(v: int) -> dict[str, bytes]:
    """Hand-written frames of version `v` for seats 0 and 1 and the spectators (store tests)."""
    return {"0": b"seat0-%d" % v, "1": b"seat1-%d" % v, "s": b"spec-%d" % v}


async def new_table(service: TableService, players: int = 2, owner: str | None = None,
                    **request: Any) -> tuple[str, dict[int, str]]:
    created = await service.create({"players": players, **request}, owner)
    table_id = str(created["id"])
    tokens: dict[int, str] = {}
    _, doc = await service.snapshot(table_id, "s")
    for seat, info in enumerate(doc["table"]["seats"]):
        if not info["taken"]:
            got, token = await service.join(table_id, seat, f"player{seat}", created["invite"])
            tokens[got] = token
    return table_id, tokens


async def play_random(service: TableService, table_id: str, rng: random.Random,
                      move_id: str) -> int:
    version, doc = await service.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    assert seat is not None, "the game is over"
    _, own = await service.snapshot(table_id, str(seat))
    move = rng.choice(own["game"]["legal"])
    return await service.submit(table_id, seat, move, version, move_id)


class DocumentFollower:
    """One audience's document rebuilt from frames only (starting from version 0)."""

    def __init__(self, service: TableService, table_id: str, audience: str) -> None:
        self.service = service
        self.table_id = table_id
        self.audience = audience
        self.version = 0
        self.doc: Any = None
        self.frames: list[tuple[int, bytes]] = []

    async def catch_up(self) -> list[tuple[int, bytes]]:
        """Apply every frame after the held version; returns the new (version, frame) pairs."""
        frames = await self.service.frames_since(self.table_id, self.audience, self.version)
        assert frames is not None, "history should be complete"
        for version, frame in frames:
            message = msgpack.unpackb(frame)
            assert message["t"] == "diff"
            assert message["v"] == version == self.version + 1
            self.doc = apply_ops(self.doc, message["ops"])
            self.version = version
        self.frames += frames
        return frames

    async def matches_snapshot(self) -> bool:
        version, snapshot = await self.service.snapshot(self.table_id, self.audience)
        return version == self.version and snapshot == self.doc


class ManualClock:
    """A clock for TableService(clock=...) that moves only when told: ``clock.advance(2.5)``."""

    def __init__(self, start: float = 1_764_470_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
