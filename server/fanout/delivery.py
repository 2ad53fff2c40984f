"""What each local socket is sent of its table's history, in order, never twice: the catch-up
on attach (a snapshot, or the missed diffs chunk by chunk), the answer to a `sync`, and the
pump that queues every new version to every audience.

Owns: the delivery of versions under each table's lock. A version this process committed is
queued straight from the frames it stored (`committed`); otherwise, on a notice, it fetches,
for every audience at once, the frames since that audience's last delivered version
(`TableFeed.frames_since_many`: one read of the table's history) and queues the same bytes on
every socket of that audience. A seat socket whose token a version replaced is closed before
that version reaches it (server.fanout.tokens).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping

from redis.exceptions import RedisError

from server import protocol
from server.backlog import Chunk, ReplayPace, read_chunk
from server.connection import Close, Connection
from server.fanout.registry import LocalTable, LocalTables
from server.fanout.tasks import Background, redis_error
from server.fanout.tokens import SeatTokens, revoke
from server.metrics import Metrics
from server.rejected import Rejected
from server.seams import TableFeed
from server.settings import Settings
from server.store import Frames

Welcome = Callable[[int], dict[str, object]]


class Delivery:
    def __init__(self, service: TableFeed, tables: LocalTables, tokens: SeatTokens,
                 background: Background, metrics: Metrics, settings: Settings) -> None:
        self.service = service
        self.tables = tables
        self.tokens = tokens
        self.background = background
        self.metrics = metrics
        self.settings = settings
        self.replay_pace = ReplayPace(settings.replay_rate, settings.replay_burst)

    # ---- catch-up and replay ---------------------------------------------------------------

    async def catch_up(self, conn: Connection, since: int | None, welcome: Welcome) -> None:
        """Queue welcome + the catch-up of a socket being attached (under the table's lock)."""
        chunk = None
        if since is not None and since >= 0:
            chunk = await self._read_chunk(conn, since)
        if chunk is None:
            version, doc = await self.service.snapshot(conn.table, conn.audience)
            await self.tokens.check(conn, version)
            if since is not None:
                self.metrics.snapshots.labels(reason="history_gone").inc()
            self.metrics.snapshots.labels(reason="hello").inc()
            conn.send_message(welcome(version))
            conn.send_message(protocol.snapshot(version, doc))
            conn.version = version
            return
        await self.tokens.check(conn, chunk.current)
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
        return await read_chunk(self.service.store, conn.table, conn.audience, since,
                                max_frames=conn.chunk_frames, max_bytes=conn.chunk_bytes)

    def _queue_chunk(self, conn: Connection, chunk: Chunk, *, next_one: bool = False) -> None:
        """Queue a chunk of `conn`'s history (under the table's lock) and, unless it reaches
        the table's version, have the writer ask for the next one when it has sent it.
        `next_one`: a chunk of a replay, which waits (is read again later) when what was queued
        while it was read leaves no room for it."""
        if next_one and not conn.has_room(len(chunk.frames),
                                          sum(len(frame) for _, frame in chunk.frames)):
            return
        if not revoke([conn], chunk.frames):
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
            redis_error(self.metrics, exc, conn.table)
            conn.replay(None)
            conn.send_message(protocol.error("unavailable",
                                             "storage unavailable, reconnect with since"))
            conn.close_soon(Close.INTERNAL, "storage unavailable")

    async def _snapshot_to(self, conn: Connection, reason: str) -> None:
        """Queue a snapshot on `conn` (under the table's lock); it ends any replay."""
        version, doc = await self.service.snapshot(conn.table, conn.audience)
        conn.replay(None)
        if not await self.tokens.still_holds(conn):
            return
        self.metrics.snapshots.labels(reason=reason).inc()
        conn.send_message(protocol.snapshot(version, doc))
        conn.version = version

    # ---- sync ------------------------------------------------------------------------------

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
            self.background.spawn(self._answer_sync_later(conn, since))

    async def _answer_sync_later(self, conn: Connection, since: int) -> None:
        try:
            await self._answer_sync(conn, since)
        except (RedisError, OSError, Rejected) as exc:
            redis_error(self.metrics, exc, conn.table)
            conn.send_message(protocol.error("unavailable", "storage unavailable, try again"))

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

    # ---- the pump --------------------------------------------------------------------------

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

    def committed(self, table_id: str, version: int, frames: Mapping[str, bytes],
                  token_field: str | None) -> None:
        """A version committed with the frames it stored (by this process, or by another one
        whose notice carried them): queued at once on every local socket at the version before
        it, without reading the stream. A
        socket further behind or replaying, or a table whose lock is held (a catch-up or a pump
        is reading the stream and will deliver in order), is left to the pump. A seat socket
        whose token this version replaced is closed instead (server.fanout.tokens)."""
        table = self.tables.get(table_id)
        if table is None:
            return
        if table.lock.locked():
            self.request_pump(table_id, version)
            return
        table.announced = max(table.announced, version)
        left_behind = sent = False
        for audience, conns in table.audiences.items():
            frame = frames.get(audience)
            ready: list[Connection] = []
            for conn in conns:
                if conn.closing is not None or conn.refill is not None \
                        or conn.version >= version:
                    continue
                if conn.version == version - 1 and frame is not None:
                    ready.append(conn)
                else:
                    left_behind = True
            if not ready or frame is None:
                continue
            if token_field == audience:  # this version replaced the seat's token
                batch = Frames([(version, frame)])
                batch.revoked_at = version
                ready = revoke(ready, batch)
            for conn in ready:
                conn.send_nowait(frame)
                conn.version = version
                sent = True
        if sent:
            self.metrics.direct_deliveries.inc()
        if left_behind:
            self.request_pump(table_id, version)

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
            self.background.spawn(self._pump_loop(table))

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
                    redis_error(self.metrics, exc, table.id)
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
                frame = protocol.pack(protocol.snapshot(version, doc))
                for conn in [c for c in live if await self.tokens.still_holds(c)]:
                    if conn.version < version:
                        conn.send_nowait(frame)
                        conn.version = version
                sent = True
                continue
            live = revoke(live, frames)
            for version, frame in frames:
                table.announced = max(table.announced, version)
                for conn in live:
                    if conn.version < version:
                        conn.send_nowait(frame)
                        conn.version = version
                        sent = True
        if sent and table.noticed_at:
            self.metrics.fanout_seconds.observe(time.perf_counter() - table.noticed_at)
