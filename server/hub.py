"""Per-process fan-out: one Redis pub/sub connection feeding every local websocket.

Owns: which tables this process watches, the last version queued to each local connection,
presence of seats across processes, chat relay, and replacement of a seat's older connection.
For each table with local sockets it subscribes to TableService.notice_channel and the table's
live channel. On a notice it fetches, for every audience at once, the frames since that audience's
last delivered version (TableService.frames_since_many: one read of the table's history) and
queues the same bytes on every socket of that audience, in order, never twice.
Must not import the engine, and knows no game rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from server.connection import Close, Connection, pack
from server.logs import event, now_ms
from server.metrics import Metrics
from server.rejected import Rejected
from server.settings import Settings

PROCESS_CHANNEL = "dominoes:processes"


def live_channel(table_id: str) -> str:
    return f"{{{table_id}}}:live"


def chat_key(table_id: str) -> str:
    return f"{{{table_id}}}:chat"


def presence_key(table_id: str) -> str:
    return f"{{{table_id}}}:presence"


def claim_key(table_id: str, seat: int) -> str:
    return f"{{{table_id}}}:claim:{seat}"


class TooManyTables(Exception):
    """This process already serves MAX_TABLES_PER_PROCESS tables."""


@dataclass(eq=False)
class LocalTable:
    id: str
    players: int
    audiences: dict[str, set[Connection]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dirty: bool = False
    force: bool = False  # fetch even if no notice says there is something new (resubscribed)
    pumping: bool = False
    announced: int = -1  # highest version announced by a notice
    noticed_at: float = 0.0

    def connections(self) -> list[Connection]:
        return [c for conns in self.audiences.values() for c in conns]


class Hub:
    def __init__(
        self,
        redis: aioredis.Redis,
        service: Any,
        metrics: Metrics,
        settings: Settings,
        process_id: str,
    ) -> None:
        self.redis = redis
        self.service = service
        self.metrics = metrics
        self.settings = settings
        self.process_id = process_id
        self.pubsub = self._new_pubsub()
        self.tables: dict[str, LocalTable] = {}
        self.channels: dict[str, tuple[str, str]] = {}  # channel -> (kind, table id)
        self.claims: dict[int, int] = {}  # connection id -> claim number
        self._tasks: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Read pub/sub and refresh presence until `stop` is set."""
        while not stop.is_set():  # Redis may still be down while the process starts
            try:
                await self.pubsub.subscribe(PROCESS_CHANNEL)
                break
            except (RedisError, OSError) as exc:
                self._redis_error(exc, None)
                await self._renew_pubsub(subscribe=False)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
        async with asyncio.TaskGroup() as group:
            self._group = group
            reader = group.create_task(self._guarded(self._read_loop()))
            refresher = group.create_task(self._guarded(self._refresh_presence_loop()))
            await stop.wait()
            reader.cancel()
            refresher.cancel()
            for task in list(self._tasks):
                task.cancel()
        self._group = None
        with contextlib.suppress(RedisError, OSError):
            await self.pubsub.aclose()

    def close_all(self, code: Close, reason: str) -> None:
        for table in list(self.tables.values()):
            for conn in table.connections():
                conn.close_soon(code, reason)

    def _spawn(self, coro: Any) -> None:
        if self._group is None:
            coro.close()
            return
        task = self._group.create_task(self._guarded(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, coro: Any) -> None:
        """A background job's failure is logged; it never takes the hub down."""
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            event("hub task failed", level=logging.ERROR, exc=True)

    # ---- attach / detach -------------------------------------------------------------------

    async def attach(
        self, conn: Connection, since: int | None, welcome: Callable[[int], dict[str, object]]
    ) -> None:
        """Register `conn`, queue welcome + its catch-up (snapshot or missed diffs) in order."""
        table = self.tables.get(conn.table)
        if table is None:
            if len(self.tables) >= self.settings.max_tables_per_process:
                raise TooManyTables
            _, doc = await self.service.snapshot(conn.table, "s")
            players = len(doc.get("table", {}).get("seats", [])) or 0
            table = self.tables.get(conn.table)
            if table is None:
                table = LocalTable(conn.table, players)
                self.tables[conn.table] = table
                self.metrics.tables.set(len(self.tables))
                notice = self.service.notice_channel(conn.table)
                live = live_channel(conn.table)
                self.channels[notice] = ("notice", conn.table)
                self.channels[live] = ("live", conn.table)
                await self.pubsub.subscribe(notice, live)
        try:
            async with table.lock:
                await self._catch_up(conn, since, welcome)
                table.audiences.setdefault(conn.audience, set()).add(conn)
        except BaseException:
            if not table.audiences and self.tables.get(conn.table) is table:
                await self._drop_table(conn.table)
            raise
        if conn.seat is not None:
            await self._claim(conn)
        await self._send_recent_chat(conn)
        await self._send_presence(table, [conn])
        if conn.seat is not None:
            await self._publish_live(conn.table, {"k": "presence"})

    async def _catch_up(
        self, conn: Connection, since: int | None, welcome: Callable[[int], dict[str, object]]
    ) -> None:
        frames = None
        if since is not None and since >= 0:
            frames = await self.service.frames_since(conn.table, conn.audience, since)
        if frames is None:
            version, doc = await self.service.snapshot(conn.table, conn.audience)
            if since is not None:
                self.metrics.snapshots.labels(reason="history_gone").inc()
            self.metrics.snapshots.labels(reason="hello").inc()
            conn.send_message(welcome(version))
            conn.send_message({"t": "snapshot", "v": version, "doc": doc})
            conn.version = version
            return
        if not frames:
            # An empty list means `since` was the current version when it was read; a commit
            # landing since then reaches this connection through the pump, as a diff.
            assert since is not None
            conn.send_message(welcome(since))
            conn.version = since
            return
        conn.send_message(welcome(frames[-1][0]))
        conn.send_batch([frame for _, frame in frames])  # any gap: one slot of the queue
        conn.version = frames[-1][0]

    async def resync(self, conn: Connection, since: int) -> None:
        """Answer a client's `sync`: the diffs after `since`, or a snapshot."""
        self.metrics.resyncs.inc()
        table = self.tables.get(conn.table)
        if table is None:
            return
        async with table.lock:
            frames = await self.service.frames_since(conn.table, conn.audience, since)
            if frames is None or since < 0:
                version, doc = await self.service.snapshot(conn.table, conn.audience)
                self.metrics.snapshots.labels(reason="sync").inc()
                conn.send_message({"t": "snapshot", "v": version, "doc": doc})
                conn.version = version
                return
            if frames:
                conn.send_batch([frame for _, frame in frames])
                conn.version = max(conn.version, frames[-1][0])

    async def detach(self, conn: Connection) -> None:
        table = self.tables.get(conn.table)
        self.claims.pop(conn.id, None)
        if table is None:
            return
        conns = table.audiences.get(conn.audience)
        if conns is None or conn not in conns:
            return
        conns.discard(conn)
        if not conns:
            del table.audiences[conn.audience]
        if not table.audiences:
            await self._drop_table(conn.table)
        if conn.seat is not None:
            try:
                await self.redis.hdel(presence_key(conn.table), self._presence_field(conn))
                await self._publish_live(conn.table, {"k": "presence"})
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()

    async def _drop_table(self, table_id: str) -> None:
        """Forget a table that has no local connection left."""
        self.tables.pop(table_id, None)
        self.metrics.tables.set(len(self.tables))
        notice = self.service.notice_channel(table_id)
        live = live_channel(table_id)
        self.channels.pop(notice, None)
        self.channels.pop(live, None)
        try:
            await self.pubsub.unsubscribe(notice, live)
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()

    # ---- fan-out ---------------------------------------------------------------------------

    async def pump_now(self, table_id: str, version: int | None = None) -> None:
        """Queue every version up to the newest to all local sockets of `table_id`."""
        table = self.tables.get(table_id)
        if table is None:
            return
        if version is not None and version > table.announced:
            table.announced = version
            table.noticed_at = time.perf_counter()
        async with table.lock:
            await self._pump(table)

    def request_pump(self, table_id: str, version: int | None) -> None:
        table = self.tables.get(table_id)
        if table is None:
            return
        if version is not None:
            if version <= table.announced and not table.dirty:
                conns = table.connections()
                if conns and all(c.version >= version for c in conns):
                    return
            if version > table.announced:
                table.announced = version
                table.noticed_at = time.perf_counter()
        else:
            table.force = True  # a (re)subscription: notices may have been missed meanwhile
        table.dirty = True
        if not table.pumping:
            table.pumping = True
            self._spawn(self._pump_loop(table))

    async def _pump_loop(self, table: LocalTable) -> None:
        failures = 0
        try:
            while table.dirty and self.tables.get(table.id) is table:
                table.dirty = False
                try:
                    async with table.lock:
                        await self._pump(table)
                    failures = 0
                except (RedisError, OSError, Rejected) as exc:
                    self._redis_error(exc, table.id)
                    if failures > 50:
                        break
                    failures += 1
                    table.dirty = True
                    table.force = True
                    await asyncio.sleep(min(2.0, 0.1 * failures))
        finally:
            table.pumping = False

    async def _pump(self, table: LocalTable) -> None:
        todo: list[tuple[str, list[Connection], int]] = []
        force, table.force = table.force, False
        for audience, conns in list(table.audiences.items()):
            live = [c for c in conns if c.closing is None]
            if not live:
                continue
            low = min(c.version for c in live)
            if not force and table.announced >= 0 and low >= table.announced:
                continue
            todo.append((audience, live, low))
        if not todo:
            return
        # One read of the table's history serves every audience (one entry per version).
        fetched = await self.service.frames_since_many(
            table.id, {audience: low for audience, _, low in todo})
        sent = False
        for audience, live, _ in todo:
            frames = fetched[audience]
            if frames is None:
                version, doc = await self.service.snapshot(table.id, audience)
                self.metrics.snapshots.labels(reason="history_gone").inc()
                frame = pack({"t": "snapshot", "v": version, "doc": doc})
                for conn in live:
                    if conn.version < version:
                        conn.send_nowait(frame)
                        conn.version = version
                sent = True
                continue
            for version, frame in frames:
                table.announced = max(table.announced, version)
                for conn in live:
                    if conn.version < version:
                        conn.send_nowait(frame)
                        conn.version = version
                        sent = True
        if sent and table.noticed_at:
            self.metrics.fanout_seconds.observe(time.perf_counter() - table.noticed_at)

    # ---- pub/sub reader --------------------------------------------------------------------

    def _new_pubsub(self) -> PubSub:
        """A pub/sub on a connection that never reconnects by itself: redis-py's own reconnect
        inside a read can race a concurrent subscribe and leave those subscriptions on a second
        socket that nobody reads. The reader renews it instead (`_renew_pubsub`)."""
        pool = getattr(self.redis, "connection_pool", None)
        if pool is None:  # Redis Cluster: its pub/sub picks a node by itself
            return self.redis.pubsub()
        kwargs = {**pool.connection_kwargs, "retry": Retry(NoBackoff(), 0)}
        kwargs.pop("retry_on_error", None)
        own = aioredis.ConnectionPool(connection_class=pool.connection_class, max_connections=1,
                                      **kwargs)
        return aioredis.Redis(connection_pool=own).pubsub()

    async def _renew_pubsub(self, *, subscribe: bool) -> None:
        """Replace the pub/sub after an error and (when asked) subscribe it again to every
        channel; each table's subscribe confirmation makes the reader fetch what was missed
        meanwhile. Raises the Redis error if it cannot; the reader tries again."""
        old, self.pubsub = self.pubsub, self._new_pubsub()
        with contextlib.suppress(RedisError, OSError):
            await old.aclose()
        if subscribe:
            await self.pubsub.subscribe(PROCESS_CHANNEL, *self.channels)

    async def _read_loop(self) -> None:
        while True:
            try:
                if not self.pubsub.subscribed:  # a renewal that found Redis still down
                    raise aioredis.ConnectionError("not subscribed")
                message = await self.pubsub.get_message(timeout=1.0)
            except (RedisError, OSError) as exc:
                self._redis_error(exc, None)
                await asyncio.sleep(0.5)
                with contextlib.suppress(RedisError, OSError):
                    await self._renew_pubsub(subscribe=True)
                continue
            if message is None:
                continue
            try:
                self._dispatch(message)
            except Exception:  # one bad message must not stop the reader
                event("pubsub message failed", level=logging.ERROR, exc=True)

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode()
        entry = self.channels.get(channel) if isinstance(channel, str) else None
        if entry is None:
            return
        kind, table_id = entry
        if message["type"] == "subscribe":
            # Anything committed before the subscription took effect is fetched now.
            if kind == "notice":
                self.request_pump(table_id, None)
            return
        if message["type"] != "message":
            return
        data = message["data"]
        if kind == "notice":
            try:
                version = int(data)
            except (TypeError, ValueError):
                version = None
            self.request_pump(table_id, version)
            return
        try:
            live = msgpack.unpackb(data, raw=False)
        except (ValueError, msgpack.UnpackException):
            return
        if not isinstance(live, dict):
            return
        table = self.tables.get(table_id)
        if table is None:
            return
        k = live.get("k")
        if k == "chat" and isinstance(live.get("f"), bytes):
            for conn in table.connections():
                conn.send_nowait(live["f"])
        elif k == "presence":
            self._spawn(self._send_presence_safely(table))
        elif k == "claim":
            seat, number = live.get("seat"), live.get("n")
            for conn in table.audiences.get(str(seat), set()).copy():
                mine = self.claims.get(conn.id)
                if isinstance(number, int) and mine is not None and mine < number:
                    conn.close_soon(Close.REPLACED, "replaced by a newer connection")

    def _redis_error(self, exc: BaseException, table_id: str | None) -> None:
        self.metrics.redis_errors.inc()
        event("redis error", level=logging.WARNING, table=table_id, error=repr(exc))

    # ---- presence, claims, chat ------------------------------------------------------------

    def _presence_field(self, conn: Connection) -> str:
        return f"{self.process_id}:{conn.id}"

    async def _claim(self, conn: Connection) -> None:
        assert conn.seat is not None
        expiry = now_ms() + int(self.settings.reconnect_window_s * 1000)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(claim_key(conn.table, conn.seat))
            pipe.expire(claim_key(conn.table, conn.seat), 7 * 86400)
            pipe.hset(presence_key(conn.table), self._presence_field(conn), f"{conn.seat}:{expiry}")
            number, *_ = await pipe.execute()
        self.claims[conn.id] = int(number)
        table = self.tables.get(conn.table)
        if table is not None:  # replace local connections of the seat at once
            for other in table.audiences.get(conn.audience, set()).copy():
                if other is not conn and self.claims.get(other.id, 0) < int(number):
                    other.close_soon(Close.REPLACED, "replaced by a newer connection")
        await self._publish_live(conn.table, {"k": "claim", "seat": conn.seat, "n": int(number)})

    async def _publish_live(self, table_id: str, message: dict[str, object]) -> None:
        await self.redis.publish(live_channel(table_id), msgpack.packb(message))

    async def online(self, table: LocalTable) -> list[bool]:
        raw = await self.redis.hgetall(presence_key(table.id))
        online = [False] * table.players
        now = now_ms()
        stale = []
        for key, value in raw.items():
            seat_s, _, expiry_s = value.decode().partition(":")
            try:
                seat, expiry = int(seat_s), int(expiry_s)
            except ValueError:
                stale.append(key)
                continue
            if expiry < now:
                stale.append(key)
            elif 0 <= seat < table.players:
                online[seat] = True
        if stale:
            await self.redis.hdel(presence_key(table.id), *stale)
        return online

    async def _send_presence(self, table: LocalTable, conns: list[Connection]) -> None:
        frame = pack({"t": "presence", "online": await self.online(table)})
        for conn in conns:
            conn.send_nowait(frame)

    async def _send_presence_safely(self, table: LocalTable) -> None:
        try:
            await self._send_presence(table, table.connections())
        except (RedisError, OSError, Rejected) as exc:
            self._redis_error(exc, table.id)

    async def _refresh_presence_loop(self) -> None:
        period = max(0.5, self.settings.reconnect_window_s / 3)
        while True:
            await asyncio.sleep(period)
            expiry = now_ms() + int(self.settings.reconnect_window_s * 1000)
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for table in self.tables.values():
                        for conn in table.connections():
                            if conn.seat is not None:
                                pipe.hset(
                                    presence_key(table.id),
                                    self._presence_field(conn),
                                    f"{conn.seat}:{expiry}",
                                )
                    await pipe.execute()
            except (RedisError, OSError) as exc:
                self._redis_error(exc, None)

    async def chat(self, conn: Connection, name: str, text: str) -> None:
        frame = pack({"t": "chat", "seat": conn.seat, "name": name, "text": text, "ts": now_ms()})
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.rpush(chat_key(conn.table), frame)
            pipe.ltrim(chat_key(conn.table), -self.settings.recent_chat, -1)
            pipe.expire(chat_key(conn.table), 7 * 86400)
            pipe.publish(live_channel(conn.table), msgpack.packb({"k": "chat", "f": frame}))
            await pipe.execute()

    async def _send_recent_chat(self, conn: Connection) -> None:
        for frame in await self.redis.lrange(chat_key(conn.table), 0, -1):
            conn.send_nowait(frame)
