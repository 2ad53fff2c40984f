"""One pipelined connection for the move path's commit script, on a single Redis.

redis-py's async client costs about 130 µs of CPU per command on this path (the pool, retry
and health-check layers, its Python encoder and parser) against about 20 µs for the same
EVALSHA written and read with hiredis directly. The commit is the one command every move sends,
so it goes through this link: hiredis packs the command and parses the replies, and an asyncio
protocol keeps the replies' futures in the order their commands were written (Redis answers a
connection's commands in order), so any number of commits share the connection at once.

Everything else, and the commit on a Redis Cluster or over TLS, uses redis-py. Errors are
redis-py's: a lost or refused connection raises ``redis.exceptions.ConnectionError`` (every
command written and not yet answered fails with it; the next call connects again), an error
reply raises ``redis.exceptions.ResponseError``.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import hiredis
import redis.asyncio
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

Arg = str | bytes | int | float  # what hiredis packs into a command


PUSHED_HIGH = 1024  # pub/sub messages read ahead of the reader before the socket is paused
PUSHED_LOW = 256  # ... and resumed once the reader has taken all but this many
# A reader that falls behind leaves the rest to the socket and to Redis' output buffer for the
# connection, whose limit (client-output-buffer-limit pubsub) closes it, as with redis-py.


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=ResponseError)
        self.waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.lost: BaseException | None = None
        # Pub/sub: what arrives when no command waits for a reply (messages and (un)subscribe
        # confirmations), and a callback run when one arrives or the connection is lost.
        self.pushed: collections.deque[Any] | None = None
        self.woken: Callable[[], None] | None = None
        self.heard_at = time.monotonic()  # when the connection last received anything

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        _OPEN.add(self)

    def data_received(self, data: bytes) -> None:
        self.heard_at = time.monotonic()
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.waiting:
                if self.pushed is None:  # a reply nobody asked for: the stream is out of step
                    self.fail(RedisConnectionError("unexpected reply from Redis"))
                    return
                self.pushed.append(reply)
                continue
            future = self.waiting.popleft()
            if not future.done():
                future.set_result(reply)
        if self.pushed and self.woken is not None:
            if len(self.pushed) >= PUSHED_HIGH and self.transport is not None:
                self.transport.pause_reading()  # the rest waits in the socket, then in Redis
            self.woken()

    def connection_lost(self, exc: Exception | None) -> None:
        _OPEN.discard(self)
        self.lost = RedisConnectionError(f"connection to Redis lost: {exc or 'closed'}")
        self.fail(self.lost)

    def fail(self, error: Exception) -> None:
        self.lost = self.lost or error
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)
        if self.transport is not None:
            self.transport.abort()
        if self.woken is not None:
            self.woken()


_OPEN: set[_Protocol] = set()  # every open connection of this process's links


def close_all() -> None:
    """Close every link's connection in this process (for whoever ends an event loop that
    used some without closing their stores)."""
    for protocol in list(_OPEN):
        if protocol.transport is not None:
            protocol.transport.close()


class CommitLink:
    """A lazily opened, pipelined connection to the Redis of ``client`` (see the module)."""

    def __init__(self, kwargs: dict[str, Any], unix: bool) -> None:
        self._kwargs = kwargs
        self._unix = unix
        self._protocol: _Protocol | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None

    @classmethod
    def of(cls, client: redis.asyncio.Redis) -> CommitLink | None:
        """A link to the server ``client`` talks to, or None where redis-py must stay (a
        cluster, TLS or any other connection class)."""
        args = _connection_args(client)
        return None if args is None else cls(*args)

    async def evalsha(self, sha: str, script: str, keys: Sequence[str],
                      args: Sequence[Arg]) -> Any:
        """Run a script by its digest; a Redis that does not have it (restarted, flushed)
        runs it from its text instead, and keeps it."""
        protocol = self._open_now() or await self._connected()
        reply = await _send(protocol, ("EVALSHA", sha, len(keys), *keys, *args))
        if isinstance(reply, ResponseError):
            if not str(reply).startswith("NOSCRIPT"):
                raise reply
            return await self.call("EVAL", script, len(keys), *keys, *args)
        return reply

    async def call(self, *command: Arg) -> Any:
        reply = await _send(await self._connected(), command)
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def close(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()

    def _open_now(self) -> _Protocol | None:
        """The link's connection when it is open on the running loop (nothing to await),
        else None."""
        if self._loop is asyncio.get_running_loop() and self._usable():
            return self._protocol
        return None

    async def _connected(self) -> _Protocol:
        found = self._open_now()
        if found is not None:
            return found
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new event loop: start afresh
            self._loop, self._lock, self._protocol = loop, asyncio.Lock(), None
        assert self._lock is not None
        async with self._lock:
            if not self._usable():
                self._protocol = await self._open(loop)
            assert self._protocol is not None
            return self._protocol

    def _usable(self) -> bool:
        protocol = self._protocol
        return (protocol is not None and protocol.lost is None and protocol.transport is not None
                and not protocol.transport.is_closing())

    async def _open(self, loop: asyncio.AbstractEventLoop) -> _Protocol:
        return await _open(self._kwargs, self._unix, loop)


def _connection_args(client: redis.asyncio.Redis) -> tuple[dict[str, Any], bool] | None:
    """redis-py's connection arguments of ``client`` and whether they name a Unix socket, or
    None for a connection this module does not make (a cluster, TLS, any other class)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or pool.connection_class not in (Connection, UnixDomainSocketConnection):
        return None
    return dict(pool.connection_kwargs), pool.connection_class is UnixDomainSocketConnection


async def _open(kw: dict[str, Any], unix: bool, loop: asyncio.AbstractEventLoop,
                name: str | None = None) -> _Protocol:
    """A connection to the Redis of redis-py's connection arguments ``kw``, authenticated, on
    its database and (``name``) named with CLIENT SETNAME."""
    timeout = kw.get("socket_connect_timeout") or 5.0
    try:
        async with asyncio.timeout(timeout):
            if unix:
                _, protocol = await loop.create_unix_connection(_Protocol, kw["path"])
            else:
                _, protocol = await loop.create_connection(
                    _Protocol, kw.get("host", "localhost"), kw.get("port", 6379))
    except (OSError, TimeoutError) as error:
        raise RedisConnectionError(f"cannot connect to Redis: {error}") from error
    setup: list[tuple[str, ...]] = []
    if kw.get("password"):
        user = kw.get("username")
        password = str(kw["password"])
        setup.append(("AUTH", str(user), password) if user else ("AUTH", password))
    if kw.get("db"):
        setup.append(("SELECT", str(kw["db"])))
    if name:
        setup.append(("CLIENT", "SETNAME", name))
    try:
        for command in setup:
            reply = await _send(protocol, command)
            if isinstance(reply, ResponseError):
                raise RedisConnectionError(f"Redis refused {command[0]}: {reply}")
    except BaseException as error:  # refused, lost or cancelled: the connection goes
        protocol.fail(error if isinstance(error, Exception)
                      else RedisConnectionError("connection setup cancelled"))
        raise
    return protocol


class PubSubLink:
    """A classic pub/sub connection read with hiredis, for the notices of a single Redis: the
    part of redis-py's ``PubSub`` that the process's reader uses (`subscribe`, `unsubscribe`,
    `get_message`, `subscribed`, `aclose`), at a fraction of its CPU per message (redis-py
    parses and dispatches each message through its connection, parser and timeout layers).

    It connects on its first `subscribe` and never reconnects by itself: once the connection is
    lost, `get_message` raises ``redis.exceptions.ConnectionError`` (after what arrived before
    the loss) and the reader replaces the link, subscribing it to every channel again; a
    `subscribe` meanwhile only records its channels for that. A connection that has received
    nothing for redis-py's ``health_check_interval`` is sent a PING, and one that does not
    answer within another interval counts as lost (a peer gone without closing it). Messages come as
    redis-py's: ``{"type": "message", "channel": bytes, "data": bytes, "pattern": None}``, and
    ``"subscribe"``/``"unsubscribe"`` confirmations with the count of subscriptions as data."""

    def __init__(self, kwargs: dict[str, Any], unix: bool, name: str | None = None) -> None:
        self._kwargs = kwargs
        self._unix = unix
        self._name = name
        self._protocol: _Protocol | None = None
        self._pushed: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._connecting: asyncio.Lock | None = None
        self._closed = False
        self._health_s = float(kwargs.get("health_check_interval") or 0)
        self._pinged_at: float | None = None  # a PING not yet answered, sent then
        self.channels: set[str] = set()  # subscribed (or asked for), by name

    @classmethod
    def of(cls, client: redis.asyncio.Redis, name: str | None = None) -> PubSubLink | None:
        """A link to the server ``client`` talks to, or None where redis-py must stay (see
        `CommitLink.of`)."""
        args = _connection_args(client)
        return None if args is None else cls(*args, name)

    @property
    def subscribed(self) -> bool:
        return bool(self.channels)

    @property
    def buffered(self) -> int:
        """Messages read from the connection and not yet taken (`PUSHED_HIGH` and a read's
        worth at most: then the socket is paused)."""
        return len(self._pushed)

    async def subscribe(self, *channels: str) -> None:
        """Subscribe (connecting first if this link has not yet); the confirmations arrive as
        messages. Raises redis-py's ConnectionError when the first connection fails; once it
        is lost, only records the channels (the reader's renewal subscribes them)."""
        protocol = self._protocol
        if protocol is None or protocol.lost is None:
            protocol = await self._connected()
        if protocol.lost is None:
            self._write("SUBSCRIBE", channels, protocol)
        self.channels.update(channels)

    async def unsubscribe(self, *channels: str) -> None:
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            raise RedisConnectionError("the pub/sub connection is lost")
        self._write("UNSUBSCRIBE", channels, protocol)
        self.channels.difference_update(channels)

    async def get_message(self, timeout: float) -> dict[str, Any] | None:  # noqa: ASYNC109 (redis-py's)
        """The next message, or None when none came within ``timeout`` seconds."""
        protocol = self._protocol
        if protocol is None:
            raise RedisConnectionError("the pub/sub link is not connected")
        if not self._pushed and protocol.lost is None:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError:
                self._check_health(protocol)
                if protocol.lost is None:
                    return None
            finally:
                self._waiter = None
        if self._pushed:
            reply = self._pushed.popleft()
            if len(self._pushed) == PUSHED_LOW and protocol.transport is not None:
                protocol.transport.resume_reading()
            if isinstance(reply, list) and len(reply) == 3 and isinstance(reply[0], bytes):
                return {"type": reply[0].decode(), "pattern": None, "channel": reply[1],
                        "data": reply[2]}
            if isinstance(reply, ResponseError):
                raise reply
            return None  # nothing a subscriber is sent (a stray reply)
        raise protocol.lost or RedisConnectionError("the pub/sub connection is lost")

    async def aclose(self) -> None:
        protocol, self._protocol = self._protocol, None
        self._closed = True
        self.channels.clear()
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()

    async def _connected(self) -> _Protocol:
        protocol = self._protocol
        if protocol is not None:
            if protocol.lost is not None:
                raise protocol.lost
            return protocol
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._closed:
                raise RedisConnectionError("the pub/sub link is closed")
            if self._protocol is None:
                protocol = await _open(self._kwargs, self._unix, asyncio.get_running_loop(),
                                       self._name)
                if self._closed:  # closed while it connected: nobody would read it
                    protocol.fail(RedisConnectionError("the pub/sub link is closed"))
                    raise RedisConnectionError("the pub/sub link is closed")
                protocol.pushed, protocol.woken = self._pushed, self._wake
                self._protocol = protocol
            return await self._connected()

    def _check_health(self, protocol: _Protocol) -> None:
        """After a wait with nothing to read: PING a connection silent for the health check
        interval; fail one that has not answered the last PING within another."""
        if not self._health_s or protocol.transport is None:
            return
        now = time.monotonic()
        if self._pinged_at is not None and protocol.heard_at >= self._pinged_at:
            self._pinged_at = None  # answered (or something else came)
        if self._pinged_at is None:
            if now - protocol.heard_at >= self._health_s:
                self._pinged_at = now
                protocol.transport.write(hiredis.pack_command(("PING",)))
        elif now - self._pinged_at >= self._health_s:
            protocol.fail(RedisConnectionError(
                f"no answer from Redis to a PING within {self._health_s:g} s"))

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @staticmethod
    def _write(command: str, channels: tuple[str, ...], protocol: _Protocol) -> None:
        if not channels:
            raise ValueError(f"{command} needs a channel")
        assert protocol.transport is not None
        protocol.transport.write(hiredis.pack_command(cast(Any, (command, *channels))))


def _send(protocol: _Protocol, command: tuple[Arg, ...]) -> asyncio.Future[Any]:
    """Write one command; the future gets its reply (an error reply as a ResponseError)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    protocol.waiting.append(future)
    assert protocol.transport is not None
    # (hiredis' stub types the argument as a tuple of one; it takes any number)
    protocol.transport.write(hiredis.pack_command(cast(Any, command)))
    return future
