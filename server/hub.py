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
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from server.admission import AddressLimits
from server.backlog import Chunk, ReplayPace, read_chunk
from server.connection import Close, Connection, pack
from server.crowd import CHAT_MODES, Crowd
from server.logs import event, now_ms
from server.metrics import Metrics
from server.rejected import Rejected
from server.settings import Settings
from server.store import Frames, TableKeys, as_bytes

if TYPE_CHECKING:  # the table service's type only: the hub knows no game rules
    from server.tables import TableService

PROCESS_CHANNEL = "dominoes:processes"


def live_channel(table_id: str) -> str:
    return TableKeys(table_id).live


def chat_key(table_id: str) -> str:
    return TableKeys(table_id).chat


def presence_key(table_id: str) -> str:
    return TableKeys(table_id).presence


def claim_key(table_id: str, seat: int) -> str:
    return TableKeys(table_id).claim(seat)


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
    chat_mode: str = ""  # spectator chat: "on", "off", "auto" ("": not read yet)
    attaching: int = 0  # sockets on their way in: the table is not dropped under them

    def connections(self) -> list[Connection]:
        return [c for conns in self.audiences.values() for c in conns]


class Hub:
    def __init__(
        self,
        redis: aioredis.Redis,
        service: TableService,
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
        self._subscribing = asyncio.Lock()  # (un)subscribe commands, one at a time
        self.claims: dict[int, int] = {}  # connection id -> claim number
        self._tasks: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None
        self.crowd = Crowd(redis, settings, metrics, process_id)
        self.replay_pace = ReplayPace(settings.replay_rate, settings.replay_burst)
        self.limits = AddressLimits(
            settings.max_sockets_per_address,
            int(settings.max_tables_per_process * settings.tables_per_address_share))

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
            await self.pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped

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
        """Register `conn`, queue welcome + its catch-up (snapshot or missed diffs) in order.
        A spectator over the caps of its table or address: Rejected `too_many_spectators`."""
        if not self.limits.attach(conn.address, conn.table):
            raise Rejected("too_many_tables", "too many tables watched from your address",
                           status=429)
        try:
            if conn.seat is None:
                await self.crowd.admit(conn)
        except BaseException:
            self.limits.detach(conn.address, conn.table)
            raise
        try:
            await self._attach(conn, since, welcome)
        except BaseException:
            self.limits.detach(conn.address, conn.table)
            table_id = self.crowd.forget(conn)
            if table_id is not None:
                self._spawn(self._release_spectator(conn, table_id))
            raise

    async def _release_spectator(self, conn: Connection, table_id: str) -> None:
        try:
            await self.crowd.release(conn, table_id)
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()

    async def _attach(
        self, conn: Connection, since: int | None, welcome: Callable[[int], dict[str, object]]
    ) -> None:
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
                table.attaching += 1
                try:
                    async with self._subscribing:
                        await self.pubsub.subscribe(notice, live)
                finally:
                    table.attaching -= 1
        # From here until it is in an audience, this socket keeps the table from being dropped
        # (by the last other socket leaving meanwhile): it would be left on a table nobody
        # listens for.
        table.attaching += 1
        try:
            async with table.lock:
                await self._catch_up(conn, since, welcome)
                table.audiences.setdefault(conn.audience, set()).add(conn)
        except BaseException:
            table.attaching -= 1
            if not table.audiences and not table.attaching \
                    and self.tables.get(conn.table) is table:
                await self._drop_table(conn.table)
            raise
        table.attaching -= 1
        if conn.seat is not None:
            await self._claim(conn)
            # Connected at least until the presence refresh that follows (scheduler: abandon).
            window_ms = int(self.settings.reconnect_window_s * 1000)
            await self.service.store.mark_seen(conn.table, {conn.seat: now_ms() + window_ms})
        await self._send_recent_chat(conn)
        await self._send_presence(table, [conn])
        if conn.seat is not None:
            await self._publish_live(conn.table, {"k": "presence"})

    async def _catch_up(
        self, conn: Connection, since: int | None, welcome: Callable[[int], dict[str, object]]
    ) -> None:
        chunk = None
        if since is not None and since >= 0:
            chunk = await self._read_chunk(conn, since)
        if chunk is None:
            version, doc = await self.service.snapshot(conn.table, conn.audience)
            await self._check_seat_token(conn, version)
            if since is not None:
                self.metrics.snapshots.labels(reason="history_gone").inc()
            self.metrics.snapshots.labels(reason="hello").inc()
            conn.send_message(welcome(version))
            conn.send_message({"t": "snapshot", "v": version, "doc": doc})
            conn.version = version
            return
        await self._check_seat_token(conn, chunk.current)
        # Any gap resumes without a snapshot: the first chunk of the missed diffs now, the next
        # ones each time the socket has sent what it was given (`_replay_next`). A commit
        # landing meanwhile reaches it, as a diff, after the history.
        conn.send_message(welcome(chunk.current))
        conn.version = chunk.since
        if self.replay_pace.wait_s(conn.address) > 0:
            conn.replay(functools.partial(self._replay_next, conn))  # its address must wait
            return
        self._queue_chunk(conn, chunk)

    async def _read_chunk(self, conn: Connection, since: int) -> Chunk | None:
        return await read_chunk(self.redis, conn.table, conn.audience, since,
                                max_frames=conn.chunk_frames, max_bytes=conn.chunk_bytes)

    def _queue_chunk(self, conn: Connection, chunk: Chunk, *, next_one: bool = False) -> None:
        """Queue a chunk of `conn`'s history (under the table's lock) and, unless it reaches
        the table's version, have the writer ask for the next one when it has sent it.
        `next_one`: a chunk of a replay, which waits (is read again later) when what was queued
        while it was read leaves no room for it."""
        if next_one and not conn.has_room(len(chunk.frames),
                                          sum(len(frame) for _, frame in chunk.frames)):
            return
        if not self._revoke([conn], chunk.frames):
            return
        for _, frame in chunk.frames:
            conn.send_nowait(frame)
        conn.version = max(conn.version, chunk.last)
        if chunk.frames:
            self.metrics.replay_chunks.inc()
            self.replay_pace.spend(conn.address, len(chunk.frames))
        conn.replay(None if chunk.done else functools.partial(self._replay_next, conn))

    async def _replay_next(self, conn: Connection) -> None:
        """The writer's call for the next chunk of a history being replayed. The pump leaves a
        replaying socket alone; the chunk that reaches the table's version ends the replay,
        under the table's lock, so the pump takes over from exactly there."""
        while (wait := self.replay_pace.wait_s(conn.address)) > 0 and conn.closing is None:
            self.metrics.replay_waits.inc()
            await asyncio.sleep(min(wait, 0.5))  # REPLAY_RATE: this address replayed its share
        table = self.tables.get(conn.table)
        if table is None:
            conn.replay(None)
            return
        try:
            async with table.lock:
                if conn.closing is not None or conn not in table.audiences.get(conn.audience, ()):
                    conn.replay(None)
                    return
                chunk = await self._read_chunk(conn, conn.version)
                if chunk is None:
                    await self._snapshot_to(conn, "history_gone")
                    return
                self._queue_chunk(conn, chunk, next_one=True)
        except (RedisError, OSError, Rejected) as exc:
            self._redis_error(exc, conn.table)
            conn.replay(None)
            conn.send_message({"t": "error", "code": "unavailable",
                               "message": "storage unavailable, reconnect with since"})
            conn.close_soon(Close.INTERNAL, "storage unavailable")

    async def _snapshot_to(self, conn: Connection, reason: str) -> None:
        """Queue a snapshot on `conn` (under the table's lock); it ends any replay."""
        version, doc = await self.service.snapshot(conn.table, conn.audience)
        conn.replay(None)
        if not await self._token_still_holds(conn):
            return
        self.metrics.snapshots.labels(reason=reason).inc()
        conn.send_message({"t": "snapshot", "v": version, "doc": doc})
        conn.version = version

    async def resync(self, conn: Connection, since: int) -> None:
        """Answer a client's `sync`: the diffs after `since` when they fit in one chunk of the
        send queue, else a snapshot. A sync sooner than SYNC_COOLDOWN_S after the last one
        answered is coalesced: when the cooldown ends, one answer from the lowest `since`."""
        self.metrics.resyncs.inc()
        wait = conn.sync_at + self.settings.sync_cooldown_s - time.monotonic()
        if wait > 0:
            self.metrics.syncs_coalesced.inc()
            if conn.sync_since is None:
                asyncio.get_running_loop().call_later(wait, self._sync_due, conn)
            conn.sync_since = since if conn.sync_since is None else min(conn.sync_since, since)
            return
        await self._answer_sync(conn, since)

    def _sync_due(self, conn: Connection) -> None:
        since, conn.sync_since = conn.sync_since, None
        if since is not None and conn.closing is None and not conn.finished:
            self._spawn(self._answer_sync_later(conn, since))

    async def _answer_sync_later(self, conn: Connection, since: int) -> None:
        try:
            await self._answer_sync(conn, since)
        except (RedisError, OSError, Rejected) as exc:
            self._redis_error(exc, conn.table)
            conn.send_message({"t": "error", "code": "unavailable",
                               "message": "storage unavailable, try again"})

    async def _answer_sync(self, conn: Connection, since: int) -> None:
        conn.sync_at = time.monotonic()
        table = self.tables.get(conn.table)
        if table is None:
            return
        async with table.lock:
            if conn.closing is not None:
                return
            chunk = await self._read_chunk(conn, since)
            if chunk is None or not chunk.done:
                await self._snapshot_to(conn, "sync")
                return
            self._queue_chunk(conn, chunk)

    async def detach(self, conn: Connection) -> None:
        table_id = self.crowd.forget(conn)
        if table_id is not None:
            await self._release_spectator(conn, table_id)
        table = self.tables.get(conn.table)
        self.claims.pop(conn.id, None)
        if table is None:
            return
        conns = table.audiences.get(conn.audience)
        if conns is None or conn not in conns:
            return
        conns.discard(conn)
        self.limits.detach(conn.address, conn.table)
        if not conns:
            del table.audiences[conn.audience]
        if not table.audiences and not table.attaching and self.tables.get(conn.table) is table:
            await self._drop_table(conn.table)
        if conn.seat is not None:
            try:
                await self.redis.hdel(presence_key(conn.table), self._presence_field(conn))
                await self.service.store.mark_seen(conn.table, {conn.seat: now_ms()})
                await self._publish_live(conn.table, {"k": "presence"})
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()

    async def _drop_table(self, table_id: str) -> None:
        """Forget a table that has no local connection left. Subscribing and unsubscribing take
        turns (`_subscribing`), and the unsubscribe is sent only if the table was not attached
        again meanwhile: otherwise it could land after the new subscribe and silence it."""
        self.tables.pop(table_id, None)
        self.metrics.tables.set(len(self.tables))
        notice = self.service.notice_channel(table_id)
        live = live_channel(table_id)
        self.channels.pop(notice, None)
        self.channels.pop(live, None)
        async with self._subscribing:
            if table_id in self.tables:
                return
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
            # A socket replaying a history is not sent live diffs: its replay ends at the
            # newest version under this lock (`_replay_next`).
            live = [c for c in conns if c.closing is None and c.refill is None]
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
                for conn in [c for c in live if await self._token_still_holds(c)]:
                    if conn.version < version:
                        conn.send_nowait(frame)
                        conn.version = version
                sent = True
                continue
            live = self._revoke(live, frames)
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
            await old.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
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
                conn.send_chat(live["f"])  # dropped (counted) for a socket whose queue fills
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
            pipe.hset(presence_key(conn.table), self._presence_field(conn), f"{conn.seat}:{expiry}")
            number, *_ = await pipe.execute()
        await self.service.store.share_lifetime(conn.table)  # a finished table's keys expire
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
            seat_s, _, expiry_s = as_bytes(value).decode().partition(":")
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
            conn.send_presence(frame)  # the latest, once the socket's queue is empty

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
            seen: dict[str, dict[int, int]] = {}
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for table in self.tables.values():
                        self.crowd.refresh(pipe, table.id, table.audiences.get("s", ()))
                        for conn in table.connections():
                            if conn.seat is not None:
                                pipe.hset(
                                    presence_key(table.id),
                                    self._presence_field(conn),
                                    f"{conn.seat}:{expiry}",
                                )
                                seen.setdefault(table.id, {})[conn.seat] = expiry
                    await pipe.execute()
                await self.service.store.refresh_seen(seen)
            except (RedisError, OSError) as exc:
                self._redis_error(exc, None)

    async def chat(self, conn: Connection, name: str, text: str) -> bool:
        """Post a chat line; a seat's line only while its token still holds the seat (checked
        in the same atomic step). False when it did not: the connection is closed 4005."""
        await self._take_chat_budget(conn)
        frame = pack({"t": "chat", "seat": conn.seat, "name": name, "text": text, "ts": now_ms()})
        posted: bool = await self.service.store.post_chat(
            conn.table, frame, msgpack.packb({"k": "chat", "f": frame}),
            keep=self.settings.recent_chat,
            seat=None if conn.seat is None else (conn.seat, conn.token_hash))
        if not posted:
            self._seat_left(conn)
        return posted

    def _seat_left(self, conn: Connection) -> None:
        conn.send_message({"t": "error", "code": "seat_left",
                           "message": "this seat's token is no longer valid: the seat was left"})
        conn.close_soon(Close.SEAT_LEFT, "seat left")

    def _revoke(self, conns: list[Connection], frames: Frames) -> list[Connection]:
        """Close the seat sockets whose token a version among ``frames`` replaced (before any
        such version reaches them); the others, to deliver to."""
        if frames.revoked_at is None:
            return conns
        keep = []
        for conn in conns:
            if conn.token_version < frames.revoked_at:
                self._seat_left(conn)
            else:
                keep.append(conn)
        return keep

    async def _check_seat_token(self, conn: Connection, version: int) -> None:
        """Before a seat's socket is sent what was read at ``version``: its token must still
        hold the seat (read after that version, so a change of token at or before it shows).
        Its token is then known good up to ``version``; later changes come with the history."""
        if conn.seat is None:
            return
        if not await self.service.token_current(conn.table, conn.seat, conn.token_hash):
            raise Rejected("seat_left", "this seat's token is no longer valid: the seat was left",
                           status=403)
        conn.token_version = max(conn.token_version, version)

    async def _token_still_holds(self, conn: Connection) -> bool:
        """For a seat's socket about to be sent a snapshot: whether its token still holds the
        seat (a snapshot carries no history that could say otherwise)."""
        if conn.seat is None:
            return True
        if await self.service.token_current(conn.table, conn.seat, conn.token_hash):
            return True
        self._seat_left(conn)
        return False

    async def _take_chat_budget(self, conn: Connection) -> None:
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

    async def _send_recent_chat(self, conn: Connection) -> None:
        for frame in await self.redis.lrange(chat_key(conn.table), 0, -1):
            conn.send_chat(as_bytes(frame), always=True)  # at most RECENT_CHAT lines
