"""The process's Redis pub/sub readers: subscriptions to the notice and live channels of the
local tables, one reader per connection, and each connection's renewal after an error.

On a single Redis one classic pub/sub connection holds everything: the process channel and every
local table's channels (SUBSCRIBE); it is read with hiredis directly (server.redis_link
`PubSubLink`) unless the connection is one that module does not make (TLS). On Redis Cluster
the tables' channels are shard channels (SSUBSCRIBE; their names carry the table's hash tag, so
they live in the table's own slot and SPUBLISH keeps a notice on that slot's primary): one
`Shard` connection per primary that serves a local table, placed by the cluster client's slot
map; the process channel stays classic on a connection of its own.

Owns: channel -> (kind, table id), table -> shard, the turns of subscribe and unsubscribe
commands, the renewals, the following of a slot that moved (Redis ends the shard subscriptions
of a slot a node gave away with ``sunsubscribe``; a refused SSUBSCRIBE answers MOVED or ASK:
either way the slot map is refreshed and the table subscribed again on the slot's owner), and the
decoding of what arrives. What a message means for the sockets is the `Listener`'s (the hub): a
notice (or a subscription taking effect, which is how a renewed or moved subscription resyncs its
table) asks for a pump; a live message is handed over decoded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import AskError, RedisClusterException, RedisError, SlotNotCoveredError
from redis.retry import Retry

from server.fanout.tasks import guarded, redis_error
from server.logs import event
from server.metrics import Metrics
from server.redis_link import PubSubLink
from server.store import PROCESS_CHANNEL, CommitNotice, TableKeys, committed_notice

PUBSUB_CLIENT_NAME = "dominoes-pubsub-{pid}"  # every pub/sub connection's CLIENT SETNAME
READ_TIMEOUT_S = 1.0  # one wait for a message; then the reader looks at its connection again
RENEW_AFTER_S = 0.5  # pause after a connection error before the connection is renewed
PLACE_RETRY_S = (0.05, 2.0)  # first and longest pause before tables are placed again


class Listener(Protocol):
    def notice(self, table_id: str, version: int | None) -> None:
        """A commit announced ``version`` (None: a subscription took effect, or the notice was
        unreadable: something may have been missed)."""

    def live(self, table_id: str, message: dict[str, Any]) -> None:
        """A message of the table's live channel (chat, presence, claim)."""

    def committed(self, table_id: str, notice: CommitNotice) -> None:
        """A commit's notice carried its frames and state (server.store `committed_notice`)."""


def _own_pubsub(connection_class: type[aioredis.Connection],
                connection_kwargs: dict[str, Any], name: str) -> PubSub:
    """A pub/sub on a connection of its own that never reconnects by itself: redis-py's own
    reconnect inside a read can race a concurrent subscribe and leave those subscriptions on a
    second socket that nobody reads. Its reader renews it instead."""
    kwargs = {**connection_kwargs, "retry": Retry(NoBackoff(), 0), "client_name": name}
    kwargs.pop("retry_on_error", None)
    pool = aioredis.ConnectionPool(connection_class=connection_class, max_connections=1,
                                   **kwargs)
    return aioredis.Redis(connection_pool=pool).pubsub()


def reader_pubsub(redis: aioredis.Redis, name: str) -> PubSub | PubSubLink:
    """A classic pub/sub for a reader that renews it after an error, its connection named
    ``name`` (CLIENT SETNAME): read with hiredis where server.redis_link makes the connection,
    else redis-py's on a connection of its own (`_own_pubsub`); on a cluster, redis-py's
    cluster pub/sub, which picks a node by itself."""
    pool = getattr(redis, "connection_pool", None)
    if pool is None:
        return redis.pubsub()
    return PubSubLink.of(redis, name) or _own_pubsub(pool.connection_class,
                                                     pool.connection_kwargs, name)


def _connected(pubsub: PubSub) -> bool:
    connection = pubsub.connection
    return connection is not None and bool(connection.is_connected)


async def _close(pubsub: PubSub | PubSubLink) -> None:
    with contextlib.suppress(RedisError, OSError):
        await pubsub.aclose()


class Shard:
    """One cluster primary's sharded pub/sub connection, the local tables whose channels it
    holds (SSUBSCRIBE), and its reader task.

    Its own connection rather than redis-py's ClusterPubSub.ssubscribe (8.1): that one reads its
    per-node pub/subs in turn, waiting on each (a notice on one node waits out the others'
    timeouts); it follows a moved slot only when something else refreshes the slot map (the
    node's ``sunsubscribe`` alone leaves the channel on the old node), retrying a failed move
    only on the next refresh; and its per-node pub/subs borrow the node's command connections,
    which reconnect and subscribe again inside a read (the race `_own_pubsub` avoids)."""

    def __init__(self, node: ClusterNode) -> None:
        self.node = node
        self.tables: set[str] = set()
        self.pubsub = self.new_pubsub()
        self.task: asyncio.Task[None] | None = None
        self.closed = False

    def new_pubsub(self) -> PubSub:
        return _own_pubsub(self.node.connection_class, self.node.connection_kwargs,
                           PUBSUB_CLIENT_NAME.format(pid=os.getpid()))


class Subscriber:
    """The process's subscriptions and readers (see the module docstring); `watch` and
    `unwatch` are the hub's, `read_loop` runs in the hub's task group."""

    def __init__(self, redis: aioredis.Redis, metrics: Metrics,
                 notice_channel: Callable[[str], str], listener: Listener,
                 sharded: bool = True,
                 announce: Callable[[Sequence[str]], Awaitable[None]] | None = None) -> None:
        self.redis = redis
        # A single Redis keeps classic pub/sub: it works on every Redis version (SSUBSCRIBE
        # needs 7.0), and one server has no cluster bus for a PUBLISH to flood. So does a
        # cluster whose nodes are older than 7.0 (`sharded` False: store.sharded_pubsub).
        self.cluster: RedisCluster | None = (
            redis if isinstance(redis, RedisCluster) and sharded else None)
        self.metrics = metrics
        self.notice_channel = notice_channel
        self.listener = listener
        self.pubsub = self._new_pubsub()  # the process channel (single Redis: and the tables')
        self.channels: dict[str, tuple[str, str]] = {}  # channel -> (kind, table id)
        self.shards: dict[str, Shard] = {}  # cluster: node name -> its shard connection
        self.placed: dict[str, Shard] = {}  # cluster: table id -> the shard holding its channels
        self._subscribing = asyncio.Lock()  # (un)subscribe commands, one at a time
        self._unplaced: set[str] = set()  # cluster: tables to subscribe again on their slot's owner
        self._replace = asyncio.Event()  # set when `_unplaced` gets a table
        self._group: asyncio.TaskGroup | None = None  # the readers' tasks while `read_loop` runs
        # Single Redis: the tables whose notice subscription is in effect on the classic
        # connection (its confirmation came, no unsubscribe was sent since, the connection was
        # not lost since). A commit of this process then publishes its notice only if another
        # subscriber would read it (Store.commit ``subscribed``). When the connection is lost
        # they are announced again once it is renewed (`announce`: Store.announce), for the
        # other processes' sake: a commit may have left its notice unpublished after Redis
        # dropped this connection and before the reader saw it.
        # A commit that counted the subscription is "in flight" until it has returned
        # (`begin_commit` / `end_commit`): an unsubscribe, or the announcement after a lost
        # connection, waits for the table's commits in flight, so that none of them can land
        # after it with its notice left out.
        self.counting = not isinstance(redis, RedisCluster)
        self.confirmed: set[str] = set()
        self._leaving: dict[str, int] = {}  # notice channel -> its unsubscribes not yet answered
        self._in_flight: dict[str, int] = {}  # table -> its commits in flight that counted it
        self._landed: dict[str, asyncio.Event] = {}  # set when a table has none in flight
        self._announce = announce
        self._unannounced: set[str] = set()

    def subscribed(self, table_id: str) -> bool | None:
        """Whether this process's subscription to the table's notices is in effect; None on a
        cluster (a node counts only its own subscribers)."""
        return table_id in self.confirmed if self.counting else None

    def begin_commit(self, table_id: str) -> bool | None:
        """`subscribed`, for a commit about to be sent (Store.commit ``subscribed``); True
        counts the commit in flight until `end_commit`."""
        subscribed = self.subscribed(table_id)
        if subscribed:
            self._in_flight[table_id] = self._in_flight.get(table_id, 0) + 1
        return subscribed

    def end_commit(self, table_id: str) -> None:
        """A commit that `begin_commit` counted has returned (landed or failed)."""
        left = self._in_flight.get(table_id, 0) - 1
        if left > 0:
            self._in_flight[table_id] = left
            return
        self._in_flight.pop(table_id, None)
        landed = self._landed.pop(table_id, None)
        if landed is not None:
            landed.set()

    async def _landed_all(self, table_id: str) -> None:
        """Until the table has no commit in flight that counted its subscription."""
        while self._in_flight.get(table_id):
            await self._landed.setdefault(table_id, asyncio.Event()).wait()

    def _table_channels(self, table_id: str) -> tuple[str, str]:
        return self.notice_channel(table_id), TableKeys(table_id).live

    async def start(self, stop: asyncio.Event) -> None:
        """Subscribe to the process channel, retrying until it works or `stop` is set."""
        while not stop.is_set():  # Redis may still be down while the process starts
            try:
                await self.pubsub.subscribe(PROCESS_CHANNEL)
                break
            except (RedisError, OSError) as exc:
                redis_error(self.metrics, exc, None)
                await self._renew_pubsub(subscribe=False)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)

    async def close(self) -> None:
        for shard in list(self.shards.values()):
            await self._close_shard(shard)
        await _close(self.pubsub)

    async def watch(self, table_id: str) -> None:
        """Subscribe to the table's channels (their names are known to the reader at once). On
        a cluster whose slot map has no owner for the table's slot (mid-failover) the table is
        subscribed once it has one."""
        notice, live = self._table_channels(table_id)
        self.channels[notice] = ("notice", table_id)
        self.channels[live] = ("live", table_id)
        async with self._subscribing:
            if self.cluster is None:
                await self.pubsub.subscribe(notice, live)
                return
            try:
                await self._place(self.cluster, table_id)
            except SlotNotCoveredError:
                self._unplace({table_id})

    async def unwatch(self, table_id: str, wanted: Callable[[str], bool]) -> None:
        """Stop listening for a table. Subscribing and unsubscribing take turns
        (`_subscribing`), and the unsubscribe is sent only if the table is not `wanted` again
        by then (attached meanwhile): otherwise it could land after the new subscribe and
        silence it."""
        notice, live = self._table_channels(table_id)
        self.channels.pop(notice, None)
        self.channels.pop(live, None)
        async with self._subscribing:
            if wanted(table_id):
                return
            if self.cluster is not None:
                self._unplaced.discard(table_id)
                shard = self.placed.pop(table_id, None)
                if shard is not None:
                    await self._leave(shard, table_id)
                return
            # Not counted from before the unsubscribe takes effect until a later subscribe's
            # confirmation (Redis answers a connection's commands in order).
            self.confirmed.discard(table_id)
            self._leaving[notice] = self._leaving.get(notice, 0) + 1
            await self._landed_all(table_id)
            try:
                await self.pubsub.unsubscribe(notice, live)
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()

    # ---- the classic connection ------------------------------------------------------------

    def _new_pubsub(self) -> PubSub | PubSubLink:
        # Every notice of a table another process commits arrives here (single Redis).
        return reader_pubsub(self.redis, PUBSUB_CLIENT_NAME.format(pid=os.getpid()))

    async def _renew_pubsub(self, *, subscribe: bool) -> None:
        """Replace the classic pub/sub after an error and (when asked) subscribe it again to the
        process channel and, on a single Redis, every table's channels; each table's subscribe
        confirmation makes the reader fetch what was missed meanwhile. Raises the Redis error if
        it cannot; the reader tries again. (The reader marked the old one's subscriptions lost
        when it found the connection failed, `_lost`.)"""
        old, self.pubsub = self.pubsub, self._new_pubsub()
        await _close(old)
        if subscribe:
            tables = self.channels if self.cluster is None else {}
            await self.pubsub.subscribe(PROCESS_CHANNEL, *tables)

    def _lost(self) -> None:
        """The classic connection failed: none of its subscriptions counts any more."""
        self._unannounced |= self.confirmed
        self.confirmed = set()
        self._leaving.clear()

    # ---- the shard connections (Redis Cluster) ---------------------------------------------

    async def _place(self, cluster: RedisCluster, table_id: str) -> None:
        """Subscribe the table's channels on the primary that serves their slot, in the slot map
        as the cluster client knows it (leaving the shard that held them, if another). A shard
        whose connection is down only records the table: its renewal subscribes it. Runs in
        `_subscribing`; raises the Redis error of a new shard's first subscribe (its reader then
        renews it) and SlotNotCoveredError while the slot has no owner."""
        notice, live = self._table_channels(table_id)
        node = cluster.get_node_from_key(notice)
        if node is None:  # only a replica may be missing; a primary is there or this raised
            raise SlotNotCoveredError(notice)
        shard = self.shards.get(node.name)
        fresh = shard is None
        if shard is None:
            shard = self.shards[node.name] = Shard(node)
        old = self.placed.get(table_id)
        shard.tables.add(table_id)
        self.placed[table_id] = shard  # before leaving `old`: its answer is then not a move
        if old is not None and old is not shard:
            await self._leave(old, table_id)
        try:
            if fresh or _connected(shard.pubsub):
                await shard.pubsub.ssubscribe(notice, live)
        finally:
            if fresh:
                self._start(shard)

    async def _leave(self, shard: Shard, table_id: str) -> None:
        """Take the table off `shard` (unsubscribed there, if its connection is up); a shard left
        with no table is closed. Runs in `_subscribing`."""
        shard.tables.discard(table_id)
        if _connected(shard.pubsub):
            try:
                await shard.pubsub.sunsubscribe(*self._table_channels(table_id))
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()
        if not shard.tables:
            await self._close_shard(shard)

    async def _close_shard(self, shard: Shard) -> None:
        shard.closed = True
        if self.shards.get(shard.node.name) is shard:
            del self.shards[shard.node.name]
        if shard.task is not None and shard.task is not asyncio.current_task():
            shard.task.cancel()
        await _close(shard.pubsub)

    def _start(self, shard: Shard) -> None:
        """Run the shard's reader (at once when `read_loop` runs, else when it starts)."""
        if self._group is not None and shard.task is None and not shard.closed:
            shard.task = self._group.create_task(guarded(self._read_shard(shard)))

    def _unplace(self, tables: set[str]) -> None:
        """Have these tables subscribed again, on their slot's owner after a slot map refresh."""
        if tables:
            self._unplaced |= tables
            self._replace.set()

    async def _renew_shard(self, shard: Shard) -> None:
        """Replace the shard's connection after an error and subscribe it again to every table
        it holds; each table's subscribe confirmation makes the reader fetch what was missed
        meanwhile. A node that cannot be reached has its tables placed again after a slot map
        refresh (a failover may have given their slots to another primary)."""
        fresh = shard.new_pubsub()
        try:
            await fresh.connect()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        except (RedisError, OSError) as exc:
            redis_error(self.metrics, exc, None)
            await _close(fresh)
            self._unplace(shard.tables)
            return
        async with self._subscribing:
            old, shard.pubsub = shard.pubsub, fresh
            await _close(old)
            if shard.closed:
                await _close(fresh)
                return
            try:
                for table_id in sorted(shard.tables):  # one SSUBSCRIBE per table: one slot each
                    await fresh.ssubscribe(*self._table_channels(table_id))
            except (RedisError, OSError) as exc:
                redis_error(self.metrics, exc, None)  # the reader sees it down, renews again

    async def _refresh_slots(self, cluster: RedisCluster) -> None:
        try:
            await cluster.nodes_manager.initialize()
        except (RedisError, RedisClusterException, OSError) as exc:
            redis_error(self.metrics, exc, None)

    async def _replace_loop(self, cluster: RedisCluster) -> None:
        """Place the `_unplaced` tables again: refresh the slot map, then subscribe each on its
        slot's owner (its confirmation resyncs the table); the ones that fail are tried again,
        after longer and longer pauses."""
        while True:
            await self._replace.wait()
            self._replace.clear()
            pause = PLACE_RETRY_S[0]
            while self._unplaced:
                await asyncio.sleep(pause)
                pause = min(2 * pause, PLACE_RETRY_S[1])
                await self._refresh_slots(cluster)
                async with self._subscribing:
                    tables, self._unplaced = self._unplaced, set()
                    for table_id in sorted(tables):
                        if self.notice_channel(table_id) not in self.channels:
                            continue  # forgotten meanwhile
                        try:
                            await self._place(cluster, table_id)
                        except (RedisError, RedisClusterException, OSError) as exc:
                            redis_error(self.metrics, exc, table_id)
                            self._unplaced.add(table_id)

    async def _read_shard(self, shard: Shard) -> None:
        while not shard.closed:
            try:
                if not _connected(shard.pubsub):  # an error, or a renewal that found it down
                    raise aioredis.ConnectionError("not connected")
                message = await shard.pubsub.get_message(timeout=READ_TIMEOUT_S)
            except AskError as exc:  # an SSUBSCRIBE refused: its slot is (being) moved
                self._unplace({t for t in shard.tables
                               if key_slot(self.notice_channel(t).encode()) == exc.slot_id})
                continue
            except (RedisError, OSError) as exc:
                redis_error(self.metrics, exc, None)
                await asyncio.sleep(RENEW_AFTER_S)
                await self._renew_shard(shard)
                continue
            if message is None:
                continue
            try:
                self._dispatch(message, shard)
            except Exception:  # one bad message must not stop the reader
                event("pubsub message failed", level=logging.ERROR, exc=True)

    # ---- the readers -----------------------------------------------------------------------

    async def read_loop(self) -> None:
        """Read the classic connection and (on a cluster) every shard connection, and place the
        tables of moved slots again, until cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                if self.cluster is not None:
                    group.create_task(guarded(self._replace_loop(self.cluster)))
                for shard in list(self.shards.values()):
                    self._start(shard)
                await self._read_classic()
            finally:
                self._group = None

    async def _read_classic(self) -> None:
        while True:
            try:
                if not self.pubsub.subscribed:  # a renewal that found Redis still down
                    raise aioredis.ConnectionError("not subscribed")
                if self._unannounced and self._announce is not None:  # subscribed again
                    unannounced = sorted(self._unannounced)
                    for table_id in unannounced:
                        await self._landed_all(table_id)
                    await self._announce(unannounced)
                    self._unannounced.difference_update(unannounced)
                message = await self.pubsub.get_message(timeout=READ_TIMEOUT_S)
            except (RedisError, OSError) as exc:
                self._lost()
                redis_error(self.metrics, exc, None)
                await asyncio.sleep(RENEW_AFTER_S)
                with contextlib.suppress(RedisError, OSError):
                    await self._renew_pubsub(subscribe=True)
                continue
            if message is None:
                continue
            try:
                self._dispatch(message, None)
            except Exception:  # one bad message must not stop the reader
                event("pubsub message failed", level=logging.ERROR, exc=True)

    def _dispatch(self, message: dict[str, Any], shard: Shard | None) -> None:
        """Hand a message of the classic connection (`shard` None) or of a shard over."""
        channel = message.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode()
        if message["type"] == "unsubscribe" and shard is None and channel in self._leaving:
            self._leaving[channel] -= 1
            if not self._leaving[channel]:
                del self._leaving[channel]
        entry = self.channels.get(channel) if isinstance(channel, str) else None
        if entry is None:
            return
        kind, table_id = entry
        kind_of_message = message["type"]
        if kind_of_message in ("subscribe", "ssubscribe"):
            # Anything committed before the subscription took effect is fetched now.
            if kind == "notice":
                if shard is None and self.counting and channel not in self._leaving:
                    self.confirmed.add(table_id)
                self.listener.notice(table_id, None)
            return
        if kind_of_message == "sunsubscribe":
            # Not asked for (an unwatched table's channels are no longer in `channels`): the
            # node gave the slot away. (Also the rare confirmation of an unsubscribe that a
            # watch of the same table followed at once: subscribing it again costs a resync.)
            if kind == "notice" and shard is not None and self.placed.get(table_id) is shard:
                self._unplace({table_id})
            return
        if kind_of_message not in ("message", "smessage"):
            return
        data = message["data"]
        if kind == "notice":
            committed = committed_notice(data)
            if committed is not None:
                self.listener.committed(table_id, committed)
                return
            try:
                version = int(data)
            except (TypeError, ValueError):
                version = None
            self.listener.notice(table_id, version)
            return
        try:
            live = msgpack.unpackb(data, raw=False)
        except (ValueError, msgpack.UnpackException):
            return
        if not isinstance(live, dict):
            return
        self.listener.live(table_id, live)
