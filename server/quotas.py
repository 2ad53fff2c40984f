"""Quotas per client address, shared by every server process (counters in Redis): tables created
per minute, tables waiting for players at once, seats taken per minute.

Owns the policy; the store owns the keys. Each check answers None (go ahead) or the seconds the
client should wait (HTTP 429 ``rate_limited`` with ``Retry-After``). Must not import the engine.
"""

from __future__ import annotations

import msgpack

from server.settings import Settings
from server.store import Store

WINDOW_S = 60


class Quotas:
    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    async def create(self, address: str, *, waits: bool = True) -> int | None:
        """May ``address`` create a table now? Counts the attempt. A table that will not wait
        for players (``waits`` false: a rematch table starts at once) is not held to
        MAX_WAITING_TABLES."""
        count, left = await self.store.hit(f"create:{address}", WINDOW_S)
        if count > self.settings.create_rate:
            return left
        if not waits:
            return None
        waiting = await self._still_waiting(address)
        if len(waiting) >= self.settings.max_waiting_tables:
            return WINDOW_S  # until one of them starts or expires
        return None

    async def created(self, address: str, table_id: str) -> None:
        await self.store.add_waiting(address, table_id, round(self.settings.waiting_ttl_s) + 1)

    async def join(self, address: str) -> int | None:
        """May ``address`` take a seat now? Counts the attempt."""
        count, left = await self.store.hit(f"join:{address}", WINDOW_S)
        return left if count > self.settings.join_rate else None

    async def _still_waiting(self, address: str) -> list[str]:
        """The address's tables that still wait for players (the others are forgotten)."""
        ids = await self.store.waiting_tables(address)
        metas = await self.store.metas(ids)
        gone = [t for t, meta in zip(ids, metas, strict=True)
                if meta is None or msgpack.unpackb(meta)["status"] != "waiting"]
        await self.store.drop_waiting(address, gone)
        return [t for t in ids if t not in gone]
