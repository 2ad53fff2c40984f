"""The process's one Redis pub/sub connection: subscriptions to the notice and live channels of
the local tables, the reader, and the connection's renewal after an error.

Owns: channel -> (kind, table id), the turns of subscribe and unsubscribe commands, and the
decoding of what arrives. What a message means for the sockets is the `Listener`'s (the hub):
a notice (or a subscription taking effect) asks for a pump; a live message is handed over
decoded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

import msgpack
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from server.fanout.tasks import redis_error
from server.logs import event
from server.metrics import Metrics
from server.store import PROCESS_CHANNEL, TableKeys


class Listener(Protocol):
    def notice(self, table_id: str, version: int | None) -> None:
        """A commit announced ``version`` (None: a subscription took effect, or the notice was
        unreadable: something may have been missed)."""

    def live(self, table_id: str, message: dict[str, Any]) -> None:
        """A message of the table's live channel (chat, presence, claim)."""

    def committed(self, table_id: str, version: int, frames: dict[str, bytes],
                  token_field: str | None) -> None:
        """A commit's notice carried its frames (server.store `_notice`)."""


def _committed(data: object) -> tuple[int, dict[str, bytes], str | None] | None:
    """(version, audience -> frame, token field) of a notice that carries its frames, or None
    for a bare version (or anything unreadable)."""
    if not isinstance(data, bytes) or data[:1].isdigit():
        return None
    try:
        version, frames, token_field = msgpack.unpackb(data, raw=False)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if not isinstance(version, int) or isinstance(version, bool) or not isinstance(frames, dict) \
            or not all(isinstance(k, str) and isinstance(f, bytes) for k, f in frames.items()) \
            or not (token_field is None or isinstance(token_field, str)):
        return None
    return version, frames, token_field


class Subscriber:
    def __init__(self, redis: aioredis.Redis, metrics: Metrics,
                 notice_channel: Callable[[str], str], listener: Listener) -> None:
        self.redis = redis
        self.metrics = metrics
        self.notice_channel = notice_channel
        self.listener = listener
        self.pubsub = self._new_pubsub()
        self.channels: dict[str, tuple[str, str]] = {}  # channel -> (kind, table id)
        self._subscribing = asyncio.Lock()  # (un)subscribe commands, one at a time

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
        with contextlib.suppress(RedisError, OSError):
            await self.pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves it untyped

    async def watch(self, table_id: str) -> None:
        """Subscribe to the table's channels (their names are known to the reader at once)."""
        notice, live = self._table_channels(table_id)
        self.channels[notice] = ("notice", table_id)
        self.channels[live] = ("live", table_id)
        async with self._subscribing:
            await self.pubsub.subscribe(notice, live)

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
            try:
                await self.pubsub.unsubscribe(notice, live)
            except (RedisError, OSError):
                self.metrics.redis_errors.inc()

    # ---- the connection --------------------------------------------------------------------

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

    # ---- the reader ------------------------------------------------------------------------

    async def read_loop(self) -> None:
        while True:
            try:
                if not self.pubsub.subscribed:  # a renewal that found Redis still down
                    raise aioredis.ConnectionError("not subscribed")
                message = await self.pubsub.get_message(timeout=1.0)
            except (RedisError, OSError) as exc:
                redis_error(self.metrics, exc, None)
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
                self.listener.notice(table_id, None)
            return
        if message["type"] != "message":
            return
        data = message["data"]
        if kind == "notice":
            committed = _committed(data)
            if committed is not None:
                self.listener.committed(table_id, *committed)
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
