"""Which seats have a connection, over every process, and which connection of a seat is the
newest.

Owns: this process's presence fields (``<process>:<connection>`` -> ``<seat>:<expiry ms>``)
and their renewal every third of RECONNECT_WINDOW_S (with the spectator slots of server.crowd
and the seats' ``seen`` times the scheduler reads; presence and ``seen`` only while the table
exists, with its lifetime), the claim number of each local seat
socket (a newer claim of the same seat replaces an older connection, in any process), and the
presence frames sent to the sockets.
"""

from __future__ import annotations

import asyncio

import msgpack
from redis.exceptions import RedisError

from server import protocol
from server.connection import Close, Connection
from server.crowd import Crowd
from server.fanout.registry import LocalTable, LocalTables
from server.fanout.tasks import redis_error
from server.logs import now_ms
from server.metrics import Metrics
from server.rejected import Rejected
from server.settings import Settings
from server.store import Store

PRESENCE_SLICE = 25  # tables per presence-refresh pipeline


class Presence:
    def __init__(self, store: Store, tables: LocalTables, crowd: Crowd, metrics: Metrics,
                 settings: Settings, process_id: str) -> None:
        self.store = store
        self.tables = tables
        self.crowd = crowd
        self.metrics = metrics
        self.settings = settings
        self.process_id = process_id
        self.claims: dict[int, int] = {}  # connection id -> claim number

    def _field(self, conn: Connection) -> str:
        return f"{self.process_id}:{conn.id}"

    def _window_ms(self) -> int:
        return int(self.settings.reconnect_window_s * 1000)

    async def publish(self, table_id: str, message: dict[str, object]) -> None:
        """A message on the table's live channel, for every process."""
        await self.store.publish_live(table_id, msgpack.packb(message))

    # ---- a seat's socket -------------------------------------------------------------------

    async def claim(self, conn: Connection) -> None:
        """Count `conn` as its seat's newest connection: older ones are replaced, here at once
        and in the other processes through the live channel."""
        assert conn.seat is not None
        expiry = now_ms() + self._window_ms()
        number = await self.store.claim_seat(conn.table, conn.seat, self._field(conn),
                                             f"{conn.seat}:{expiry}")
        await self.store.share_lifetime(conn.table)  # a finished table's keys expire
        self.claims[conn.id] = number
        table = self.tables.get(conn.table)
        if table is not None:  # replace local connections of the seat at once
            for other in table.audiences.get(conn.audience, set()).copy():
                if other is not conn and self.claims.get(other.id, 0) < number:
                    other.close_soon(Close.REPLACED, "replaced by a newer connection")
        await self.publish(conn.table, {"k": "claim", "seat": conn.seat, "n": number})

    async def arrived(self, conn: Connection) -> None:
        """A seat's socket is attached: connected at least until the presence refresh that
        follows (scheduler: abandon)."""
        assert conn.seat is not None
        await self.store.mark_seen(conn.table, {conn.seat: now_ms() + self._window_ms()})

    def forget(self, conn: Connection) -> None:
        self.claims.pop(conn.id, None)

    async def left(self, conn: Connection) -> None:
        """A seat's socket is gone: its field, its seat's last ``seen``, a presence update for
        every process."""
        assert conn.seat is not None
        await self.store.drop_presence(conn.table, self._field(conn))
        await self.store.mark_seen(conn.table, {conn.seat: now_ms()})
        await self.publish(conn.table, {"k": "presence"})

    def claimed(self, table: LocalTable, seat: object, number: object) -> None:
        """Another process's claim of ``seat``: the local connections of the seat with an
        older claim are replaced."""
        for conn in table.audiences.get(str(seat), set()).copy():
            mine = self.claims.get(conn.id)
            if isinstance(number, int) and mine is not None and mine < number:
                conn.close_soon(Close.REPLACED, "replaced by a newer connection")

    # ---- presence frames -------------------------------------------------------------------

    async def online(self, table: LocalTable) -> list[bool]:
        online, stale = await self.store.seats_online(table.id, now_ms(), table.players)
        if stale:
            await self.store.drop_presence(table.id, *stale)
        return online

    async def send(self, table: LocalTable, conns: list[Connection]) -> None:
        frame = protocol.pack(protocol.presence(
            await self.online(table), await self.store.watcher_count(table.id, now_ms())))
        for conn in conns:
            conn.send_presence(frame)  # the latest, once the socket's queue is empty

    async def send_safely(self, table: LocalTable) -> None:
        try:
            await self.send(table, table.connections())
        except (RedisError, OSError, Rejected) as exc:
            redis_error(self.metrics, exc, table.id)

    async def refresh_loop(self) -> None:
        period = max(0.5, self.settings.reconnect_window_s / 3)
        while True:
            tables = self.tables.values()
            # PRESENCE_SLICE tables per pipeline, the slices spread evenly over the period: one
            # pipeline for every seat of every table (1,000 HSETs at 500 tables) held the event
            # loop ~30 ms while it was packed and parsed, and slices of 100 sent one after the
            # other still held it 5-12 ms at a time, every period, delaying the moves that
            # arrived meanwhile. A table keeps its place in the (insertion-ordered) registry, so
            # it is refreshed at most one period after its last refresh.
            starts = range(0, len(tables), PRESENCE_SLICE)
            gap = period / max(1, len(starts))
            for start in starts:
                await asyncio.sleep(gap)
                await self._refresh(tables[start:start + PRESENCE_SLICE])
            if not starts:
                await asyncio.sleep(period)

    async def _refresh(self, tables: list[LocalTable]) -> None:
        """Renew the presence entries of these tables' seat sockets and their spectator slots."""
        expiry = now_ms() + self._window_ms()
        seen: dict[str, dict[int, int]] = {}
        fields: dict[str, dict[str, str]] = {}
        watchers: dict[str, list[str]] = {}
        for table in tables:
            if self.tables.get(table.id) is not table:
                continue  # dropped meanwhile
            members = self.crowd.members(table.audiences.get("s", ()))
            if members:
                watchers[table.id] = members
            for conn in table.connections():
                if conn.seat is not None:
                    fields.setdefault(table.id, {})[self._field(conn)] = f"{conn.seat}:{expiry}"
                    seen.setdefault(table.id, {})[conn.seat] = expiry
        try:
            # Written only while each table exists, with its lifetime: a socket left open on a
            # table that expired (nobody joined; a finished game past RETENTION) writes nothing
            # of it again.
            await self.store.refresh_presence(fields, seen, watchers, expiry)
        except (RedisError, OSError) as exc:
            redis_error(self.metrics, exc, None)
