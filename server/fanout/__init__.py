"""Per-process fan-out: Redis pub/sub (one connection on a single Redis, one per primary that
serves a local table on Redis Cluster) feeding every local websocket.

`Hub` composes the pieces and is what the socket layer and the lifespan call (`attach`,
`detach`, `resync`, `chat`, `pump_now`, `request_pump`, `run`, `close_all`):

- `registry`: the local tables, the sockets at each, the address limits;
- `pubsub`: the pub/sub connections (classic, or sharded per cluster primary), their
  subscriptions and renewal, the following of a table's moved slot, the readers;
- `delivery`: catch-up on attach, `sync`, replay chunks, the pump of new versions;
- `presence`: seat presence over every process, claims (the newest connection of a seat
  replaces the older), ``seen`` times;
- `chat`: chat lines, their budget, the recent lines, the relay;
- `tokens`: seat tokens checked before delivery; `tasks`: the background jobs.

For each table with local sockets the hub subscribes to TableFeed.notice_channel and the
table's live channel (shard channels of the table's slot on a cluster); on a notice it fetches,
for every audience at once, the frames since that audience's last delivered version and queues
the same bytes on every socket of that audience, in order, never twice. Must not import the
engine, and knows no game rules.
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.admission import AddressLimits
from server.connection import Close, Connection
from server.crowd import Crowd
from server.fanout.chat import Chat
from server.fanout.delivery import Delivery, Welcome
from server.fanout.presence import Presence
from server.fanout.pubsub import Subscriber
from server.fanout.registry import LocalTable, LocalTables
from server.fanout.tasks import Background, guarded
from server.fanout.tokens import SeatTokens
from server.metrics import Metrics
from server.rejected import Rejected, server_full
from server.seams import TableFeed
from server.settings import Settings
from server.store import CommitNotice

__all__ = ["Hub", "LocalTable"]


class Hub:
    def __init__(
        self,
        redis: aioredis.Redis,
        service: TableFeed,
        metrics: Metrics,
        settings: Settings,
        process_id: str,
    ) -> None:
        self.service = service
        self.metrics = metrics
        self.settings = settings
        self.process_id = process_id
        self.background = Background()
        self.registry = LocalTables(metrics, settings)
        self.crowd = Crowd(service.store, settings, metrics, process_id)
        self.tokens = SeatTokens(service)
        self.subscriber = Subscriber(redis, metrics, service.notice_channel, self,
                                     sharded=service.store.sharded,
                                     announce=service.store.announce)
        self.delivery = Delivery(service, self.registry, self.tokens, self.background,
                                 metrics, settings)
        self.presence = Presence(service.store, self.registry, self.crowd, metrics, settings,
                                 process_id)
        self.chats = Chat(service, self.registry, self.crowd, metrics, settings)
        service.committed = self.delivery.committed  # this process's commits, delivered at once
        service.listening = self.subscriber

    @property
    def tables(self) -> dict[str, LocalTable]:
        return self.registry.tables

    @property
    def limits(self) -> AddressLimits:
        return self.registry.limits

    # ---- lifecycle -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Read pub/sub and refresh presence until `stop` is set."""
        await self.subscriber.start(stop)
        async with asyncio.TaskGroup() as group:
            self.background.start(group)
            reader = group.create_task(guarded(self.subscriber.read_loop()))
            refresher = group.create_task(guarded(self.presence.refresh_loop()))
            await stop.wait()
            reader.cancel()
            refresher.cancel()
            self.background.cancel_all()
        self.background.stop()
        await self.subscriber.close()

    def close_all(self, code: Close, reason: str) -> None:
        for table in self.registry.values():
            for conn in table.connections():
                conn.close_soon(code, reason)

    # ---- attach / detach -------------------------------------------------------------------

    async def attach(self, conn: Connection, since: int | None, welcome: Welcome) -> None:
        """Register `conn`, queue welcome + its catch-up (snapshot or missed diffs) in order.
        A spectator over the caps of its table or address: Rejected `too_many_spectators`."""
        limits = self.registry.limits
        if not limits.attach(conn.address, conn.table):
            raise Rejected("too_many_tables", "too many tables watched from your address",
                           status=429)
        watching = 0
        try:
            if conn.seat is None:
                watching = await self.crowd.admit(conn)
        except BaseException:
            limits.detach(conn.address, conn.table)
            raise
        try:
            await self._attach(conn, since, welcome)
        except BaseException:
            limits.detach(conn.address, conn.table)
            table_id = self.crowd.forget(conn)
            if table_id is not None:
                self.background.spawn(self._release_spectator(conn, table_id))
            raise
        if 0 < watching <= self.settings.spectator_chat_max:
            await self._spectators_changed(conn.table)

    async def _spectators_changed(self, table_id: str) -> None:
        """A small crowd's count is kept live (a presence frame for each spectator who comes
        or goes); a larger one's is told with the next presence frame."""
        try:
            await self.presence.publish(table_id, {"k": "presence"})
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()

    async def _release_spectator(self, conn: Connection, table_id: str) -> None:
        try:
            watching = await self.crowd.release(conn, table_id)
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()
            return
        if watching <= self.settings.spectator_chat_max:
            await self._spectators_changed(table_id)

    async def _attach(self, conn: Connection, since: int | None, welcome: Welcome) -> None:
        table = self.registry.get(conn.table)
        if table is None:
            if self.registry.full():
                raise server_full()
            _, doc = await self.service.snapshot(conn.table, "s")
            players = len(doc.get("table", {}).get("seats", [])) or 0
            table = self.registry.get(conn.table)
            if table is None:
                table = self.registry.add(conn.table, players)
                table.attaching += 1
                try:
                    await self.subscriber.watch(conn.table)
                finally:
                    table.attaching -= 1
        # From here until it is in an audience, this socket keeps the table from being dropped
        # (by the last other socket leaving meanwhile): it would be left on a table nobody
        # listens for.
        table.attaching += 1
        try:
            async with table.lock:
                await self.delivery.catch_up(conn, since, welcome)
                table.audiences.setdefault(conn.audience, set()).add(conn)
        except BaseException:
            table.attaching -= 1
            if table.idle and self.registry.get(conn.table) is table:
                await self._drop_table(conn.table)
            raise
        table.attaching -= 1
        if conn.seat is not None:
            await self.presence.claim(conn)
            await self.presence.arrived(conn)
        await self.chats.send_recent(conn)
        await self.presence.send(table, [conn])
        if conn.seat is not None:
            await self.presence.publish(conn.table, {"k": "presence"})

    async def detach(self, conn: Connection) -> None:
        table_id = self.crowd.forget(conn)
        if table_id is not None:
            await self._release_spectator(conn, table_id)
        table = self.registry.get(conn.table)
        self.presence.forget(conn)
        if table is None:
            return
        conns = table.audiences.get(conn.audience)
        if conns is None or conn not in conns:
            return
        conns.discard(conn)
        self.registry.limits.detach(conn.address, conn.table)
        if not conns:
            del table.audiences[conn.audience]
        if table.idle and self.registry.get(conn.table) is table:
            await self._drop_table(conn.table)
        if conn.seat is not None:
            try:
                await self.presence.left(conn)
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()

    async def _drop_table(self, table_id: str) -> None:
        """Forget a table that has no local connection left; its channels are unsubscribed
        unless it is attached again meanwhile (`Subscriber.unwatch`)."""
        self.registry.remove(table_id)
        await self.subscriber.unwatch(table_id, self.registry.__contains__)

    # ---- fan-out, presence, chat -----------------------------------------------------------

    async def resync(self, conn: Connection, since: int) -> None:
        await self.delivery.resync(conn, since)

    async def pump_now(self, table_id: str, version: int | None = None) -> None:
        """Queue every version up to the newest to all local sockets of `table_id`."""
        await self.delivery.pump_now(table_id, version)

    def request_pump(self, table_id: str, version: int | None) -> None:
        self.delivery.request_pump(table_id, version)

    async def online(self, table: LocalTable) -> list[bool]:
        return await self.presence.online(table)

    async def chat(self, conn: Connection, name: str, text: str) -> bool:
        """Post a chat line (`Chat.post`); False when the seat's token no longer held it."""
        return await self.chats.post(conn, name, text)

    # ---- what the pub/sub reader hands over (`pubsub.Listener`) ----------------------------

    def notice(self, table_id: str, version: int | None) -> None:
        self.delivery.request_pump(table_id, version)

    def committed(self, table_id: str, notice: CommitNotice) -> None:
        if notice.state is not None:
            self.service.noticed(table_id, notice.version, notice.state)
        elif notice.move is not None:
            self.service.noticed(table_id, notice.version, notice.move, move=True)
        self.delivery.committed(table_id, notice.version, notice.frames, notice.token_field)

    def live(self, table_id: str, message: dict[str, Any]) -> None:
        table = self.registry.get(table_id)
        if table is None:
            return
        k = message.get("k")
        if k == "chat" and isinstance(message.get("f"), bytes):
            self.chats.relay(table, message["f"])
        elif k == "presence":
            self.background.spawn(self.presence.send_safely(table))
        elif k == "claim":
            self.presence.claimed(table, message.get("seat"), message.get("n"))
