"""Table chat: posting a line (within the table's budget and, for a seat, only while its token
holds the seat), the recent lines a socket gets on attach, and the relay of the lines every
process publishes to the local sockets.

Owns: the spectator chat mode each local table was read with. The budget and the crowd rules
are server.crowd's; the atomic post is `Store.post_chat`.
"""

from __future__ import annotations

import msgpack

from server import protocol
from server.connection import Connection
from server.crowd import CHAT_MODES, Crowd
from server.fanout.registry import LocalTable, LocalTables
from server.fanout.tokens import seat_left
from server.logs import now_ms
from server.metrics import Metrics
from server.rejected import Rejected
from server.seams import TableFeed
from server.settings import Settings


class Chat:
    def __init__(self, service: TableFeed, tables: LocalTables, crowd: Crowd, metrics: Metrics,
                 settings: Settings) -> None:
        self.service = service
        self.tables = tables
        self.crowd = crowd
        self.metrics = metrics
        self.settings = settings

    async def post(self, conn: Connection, name: str, text: str) -> bool:
        """Post a chat line; a seat's line only while its token still holds the seat (checked
        in the same atomic step). False when it did not: the connection is closed 4005."""
        await self._take_budget(conn)
        frame = protocol.pack(protocol.chat(conn.seat, name, text, now_ms()))
        posted: bool = await self.service.store.post_chat(
            conn.table, frame, msgpack.packb({"k": "chat", "f": frame}),
            keep=self.settings.recent_chat,
            seat=None if conn.seat is None else (conn.seat, conn.token_hash))
        if not posted:
            seat_left(conn)
        return posted

    async def _take_budget(self, conn: Connection) -> None:
        """One line of the table's budget (players' and spectators' lines apart, over every
        process); Rejected `rate_limited` when it is spent, `chat_off` for a spectator when
        spectator chat is off (by the table's choice, or because it is crowded)."""
        mode = ""
        if conn.seat is None:
            table = self.tables.get(conn.table)
            mode = table.chat_mode if table is not None else ""
            if not mode:
                mode = CHAT_MODES[await self.service.spectator_chat(conn.table)]
                if table is not None:
                    table.chat_mode = mode
        verdict = await self.crowd.take_chat(conn.table, mode)
        if verdict == "off":
            self.metrics.chat_refused.labels(reason="chat_off").inc()
            raise Rejected("chat_off", "spectator chat is off at this table")
        if verdict != "ok":
            self.metrics.chat_refused.labels(reason="table_budget").inc()
            raise Rejected("rate_limited", "too many chat messages at this table")

    async def send_recent(self, conn: Connection) -> None:
        for frame in await self.service.store.recent_chat(conn.table):
            conn.send_chat(frame, always=True)  # at most RECENT_CHAT lines

    def relay(self, table: LocalTable, frame: bytes) -> None:
        """A line posted in any process, to every local socket of the table."""
        for conn in table.connections():
            conn.send_chat(frame)  # dropped (counted) for a socket whose queue fills
