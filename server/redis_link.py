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
from typing import Any, cast

import hiredis
import redis.asyncio
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

Arg = str | bytes | int | float  # what hiredis packs into a command


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=ResponseError)
        self.waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self.transport: asyncio.Transport | None = None
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        _OPEN.add(self)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.waiting:  # a reply nobody asked for: the stream is out of step
                self.fail(RedisConnectionError("unexpected reply from Redis"))
                return
            future = self.waiting.popleft()
            if not future.done():
                future.set_result(reply)

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
        pool = getattr(client, "connection_pool", None)
        if pool is None or pool.connection_class not in (Connection, UnixDomainSocketConnection):
            return None
        return cls(dict(pool.connection_kwargs),
                   pool.connection_class is UnixDomainSocketConnection)

    async def evalsha(self, sha: str, script: str, keys: list[str], args: list[Arg]) -> Any:
        """Run a script by its digest; a Redis that does not have it (restarted, flushed)
        runs it from its text instead, and keeps it."""
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except ResponseError as error:
            if not str(error).startswith("NOSCRIPT"):
                raise
            return await self.call("EVAL", script, len(keys), *keys, *args)

    async def call(self, *command: Arg) -> Any:
        reply = await _send(await self._connected(), command)
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def close(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()

    async def _connected(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new event loop: start afresh
            self._loop, self._lock, self._protocol = loop, asyncio.Lock(), None
        if self._usable():
            assert self._protocol is not None
            return self._protocol
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
        kw = self._kwargs
        timeout = kw.get("socket_connect_timeout") or 5.0
        try:
            async with asyncio.timeout(timeout):
                if self._unix:
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
        for command in setup:
            reply = await _send(protocol, command)
            if isinstance(reply, ResponseError):
                refused = RedisConnectionError(f"Redis refused {command[0]}: {reply}")
                protocol.fail(refused)
                raise refused
        return protocol


def _send(protocol: _Protocol, command: tuple[Arg, ...]) -> asyncio.Future[Any]:
    """Write one command; the future gets its reply (an error reply as a ResponseError)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    protocol.waiting.append(future)
    assert protocol.transport is not None
    # (hiredis' stub types the argument as a tuple of one; it takes any number)
    protocol.transport.write(hiredis.pack_command(cast(Any, command)))
    return future
