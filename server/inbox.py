"""A player's inbox: live notices to every page the player has open, on any process, and the
player's own websocket ``/ws/me`` that carries them (docs/protocol.md §11).

A notice (a private message, messages read, an invitation, "your turn", a quick-play match,
a rematch) is a msgpack map with a string ``t``, published on the Redis channel
``inbox:<player id>`` (server.store.inbox_channel); the player's websocket ``/ws/me`` (on
whichever process holds it) relays it as it is. Publishing is fire and forget: a notice
nobody is listening for is lost, so everything a notice says can also be read over HTTP.
One notice is the inbox's own and not relayed: ``sessions_ended`` (server.store
`publish_sessions_ended`, sent by server.accounts), on which the player's sockets whose session
ended are closed.

Owns: `publish`; `Inbox`, the process's one registry player id -> local ``/ws/me`` sockets with
its one Redis pub/sub connection (a player's channel is subscribed with the first of its
sockets here and unsubscribed with the last) and the player's presence (``online:<id>``,
server.store.online_key: one entry per process holding a socket of the player, renewed every
PRESENCE_REFRESH_S, expiring after PRESENCE_TTL_S); `me_endpoint`, one socket from the session
cookie to its close. Must not import the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

import msgpack
import redis.asyncio
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError
from starlette.websockets import WebSocket, WebSocketDisconnect

from server import protocol
from server.connection import Connection
from server.db import DB_DOWN, Queries
from server.fairness import client_key
from server.fanout.pubsub import reader_pubsub
from server.fanout.tasks import guarded
from server.identity import SESSION_COOKIE, session_hash
from server.limits import TokenBucket
from server.logs import event
from server.metrics import Metrics
from server.protocol import Close
from server.redis_link import PubSubLink
from server.seams import AppState, app_state
from server.store import SESSIONS_ENDED, inbox_channel, online_key, publish_notice

PRESENCE_TTL_S = 60.0  # a process's presence entry for a player lasts this long ...
PRESENCE_REFRESH_S = 20.0  # ... and is renewed this often while it holds a socket of theirs
SUBSCRIBE_WAIT_S = 5.0  # how long a new socket waits for its channel's subscription
INBOX_CLIENT_NAME = "dominoes-inbox-{pid}"  # the inbox pub/sub connection's CLIENT SETNAME
LOG_IN_FIRST = int(Close.LOG_IN_FIRST)
INBOX_PREFIX = "inbox:"
INBOX_ATTRIBUTE = "inbox"  # the attribute of Starlette's ``app.state`` that holds the Inbox

# The unread messages of a player (server.social's ``messages``), not counting those of the
# players they blocked.
UNREAD_SQL = """
SELECT count(*) FROM messages m
WHERE m.recipient = $1 AND m.read_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = $1 AND b.blocked = m.sender)
"""


async def publish(redis: redis.asyncio.Redis, player_id: int,
                  notice: Mapping[str, Any]) -> None:
    """Send ``notice`` (a map with a string 't') to every open page of the player."""
    await publish_notice(redis, player_id, notice)


async def unread_total(db: Queries, player_id: int) -> int:
    """How many messages the player has not read (``db``: a pool or a connection)."""
    return int(await db.fetchval(UNREAD_SQL, player_id))


def _now_ms() -> int:
    return int(time.time() * 1000)


async def online(redis: redis.asyncio.Redis, player_ids: Iterable[int]) -> set[int]:
    """Which of ``player_ids`` have a ``/ws/me`` socket open on some process now."""
    ids = list(dict.fromkeys(player_ids))
    if not ids:
        return set()
    async with redis.pipeline(transaction=False) as pipe:
        for player_id in ids:
            pipe.hvals(online_key(player_id))
        entries = await pipe.execute()
    now = _now_ms()
    found: set[int] = set()
    for player_id, values in zip(ids, entries, strict=True):
        for value in values or ():
            with contextlib.suppress(ValueError, TypeError):
                if int(value) > now:
                    found.add(player_id)
                    break
    return found


class Inbox:
    """The ``/ws/me`` sockets of one process, by player, and the one pub/sub that feeds them."""

    def __init__(self, redis: redis.asyncio.Redis, metrics: Metrics, process_id: str) -> None:
        self.redis = redis
        self.metrics = metrics
        self.process_id = process_id
        self.sockets: dict[int, set[MeSocket]] = {}
        self.subscribed: set[int] = set()  # players whose channel was subscribed
        self.pubsub = self._new_pubsub()
        self._subscribing = asyncio.Lock()  # (un)subscribe commands, one at a time
        self._confirmed: dict[int, asyncio.Event] = {}  # set once Redis confirmed it
        self._wake = asyncio.Event()  # a first channel is subscribed: the reader reads

    # ---- sockets ---------------------------------------------------------------------------

    async def add(self, sock: MeSocket) -> None:
        """Register ``sock``; once this returns, every notice published for its player reaches
        it and the player shows online. Raises on a Redis failure (nothing stays registered)."""
        player_id = sock.player_id
        group = self.sockets.setdefault(player_id, set())
        group.add(sock)
        try:
            async with self._subscribing:
                # Under the lock: `remove` drops the event of an unsubscribed channel.
                confirmed = self._confirmed.setdefault(player_id, asyncio.Event())
                if player_id not in self.subscribed:
                    self.subscribed.add(player_id)
                    await self.pubsub.subscribe(inbox_channel(player_id))
                    self._wake.set()
            await asyncio.wait_for(confirmed.wait(), SUBSCRIBE_WAIT_S)
            await self._mark_online([player_id])
        except BaseException:
            await self.remove(sock)
            raise

    async def remove(self, sock: MeSocket) -> None:
        """Forget ``sock``; with the player's last socket here, its channel is unsubscribed
        and this process's presence entry for the player dropped."""
        player_id = sock.player_id
        group = self.sockets.get(player_id)
        if group is None or sock not in group:
            return
        group.discard(sock)
        if group:
            return
        del self.sockets[player_id]
        async with self._subscribing:
            if player_id in self.sockets:  # a new socket came meanwhile: it keeps the channel
                return
            self._confirmed.pop(player_id, None)
            if player_id in self.subscribed:
                self.subscribed.discard(player_id)
                try:
                    await self.pubsub.unsubscribe(inbox_channel(player_id))
                except (RedisError, OSError):
                    self.metrics.redis_errors.inc()
        try:
            await self.redis.hdel(online_key(player_id), self.process_id)
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()  # the entry expires by itself

    def close_all(self, code: Close, reason: str) -> None:
        for group in list(self.sockets.values()):
            for sock in list(group):
                sock.conn.close_soon(code, reason)

    async def going_away(self, grace_s: float = 2.0) -> None:
        """Close every socket with 1001 and wait (briefly) for them to finish."""
        self.close_all(Close.GOING_AWAY, "server going away")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while self.sockets and loop.time() < deadline:  # noqa: ASYNC110 - bounded poll
            await asyncio.sleep(0.02)

    # ---- presence --------------------------------------------------------------------------

    async def _mark_online(self, player_ids: Iterable[int]) -> None:
        expiry = _now_ms() + int(PRESENCE_TTL_S * 1000)
        async with self.redis.pipeline(transaction=False) as pipe:
            for player_id in player_ids:
                key = online_key(player_id)
                pipe.hset(key, self.process_id, str(expiry))
                pipe.pexpire(key, int(PRESENCE_TTL_S * 1000))
            await pipe.execute()

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(PRESENCE_REFRESH_S)
            if not self.sockets:
                continue
            try:
                await self._mark_online(list(self.sockets))
            except (RedisError, OSError) as exc:
                self.metrics.redis_errors.inc()
                event("redis error", level=logging.WARNING, error=repr(exc))
            with contextlib.suppress(*DB_DOWN):
                await self._close_ended_sessions()

    async def _close_ended_sessions(self, player_id: int | None = None) -> None:
        """Close (4008) the sockets (of ``player_id``; None: of everyone) whose session has
        expired or ended since they opened. A log out (everywhere), a new password or a
        deleted account says so on the player's channel (server.accounts), which closes them
        at once; this sweep, every PRESENCE_REFRESH_S, catches what that missed (Redis down
        at the time) and the sessions that expired."""
        groups = self.sockets.values() if player_id is None \
            else [self.sockets.get(player_id, set())]
        sockets = [s for group in groups for s in group if s.session]
        pool = sockets[0].state.postgres.pool if sockets else None
        if pool is None:
            return
        live = {bytes(row["id_hash"]) for row in await pool.fetch(
            "SELECT id_hash FROM sessions WHERE id_hash = ANY($1::bytea[]) "
            "AND expires_at > now()", list({s.session for s in sockets}))}
        for sock in sockets:
            if sock.session not in live:
                sock.conn.close_soon(Close.LOG_IN_FIRST, "the session has ended")

    # ---- the pub/sub -----------------------------------------------------------------------

    def _new_pubsub(self) -> PubSub | PubSubLink:
        """A pub/sub that never reconnects by itself (as the hub's, server.fanout.pubsub): the
        reader renews it after an error."""
        return reader_pubsub(self.redis, INBOX_CLIENT_NAME.format(pid=os.getpid()))

    async def _renew(self) -> None:
        old, self.pubsub = self.pubsub, self._new_pubsub()
        with contextlib.suppress(RedisError, OSError):
            await old.aclose()
        async with self._subscribing:
            if self.subscribed:
                await self.pubsub.subscribe(*(inbox_channel(p) for p in self.subscribed))

    async def _read_loop(self) -> None:
        while True:
            if not self.subscribed:  # nothing to listen for (and nothing to read)
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), 1.0)
                continue
            try:
                if not self.pubsub.subscribed:  # a renewal that found Redis still down
                    raise redis.asyncio.ConnectionError("not subscribed")
                message = await self.pubsub.get_message(timeout=1.0)
            except (RedisError, OSError) as exc:
                self.metrics.redis_errors.inc()
                event("redis error", level=logging.WARNING, error=repr(exc))
                await asyncio.sleep(0.5)
                with contextlib.suppress(RedisError, OSError):
                    await self._renew()
                continue
            if message is not None:
                try:
                    ended = self._dispatch(message)
                    if ended is not None:
                        with contextlib.suppress(*DB_DOWN):
                            await self._close_ended_sessions(ended)
                except Exception:  # one bad message must not stop the reader
                    event("inbox message failed", level=logging.ERROR, exc=True)

    def _dispatch(self, message: Mapping[str, Any]) -> int | None:
        """Relay a notice to its player's sockets here; for the inbox's own notice that
        sessions of the player ended (not relayed), the player's id, whose sockets the reader
        then checks."""
        channel = message.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode()
        if not isinstance(channel, str) or not channel.startswith(INBOX_PREFIX):
            return None
        suffix = channel[len(INBOX_PREFIX):]
        if not suffix.isdigit():
            return None
        player_id = int(suffix)
        if message.get("type") == "subscribe":
            confirmed = self._confirmed.get(player_id)
            if confirmed is not None:
                confirmed.set()
            return None
        data = message.get("data")
        if message.get("type") != "message" or not isinstance(data, bytes):
            return None
        if data == SESSIONS_ENDED:
            return player_id
        for sock in list(self.sockets.get(player_id, ())):
            sock.deliver(data)
        return None

    async def run(self, stop: asyncio.Event) -> None:
        """Read the pub/sub and renew presence until ``stop`` is set."""
        try:
            async with asyncio.TaskGroup() as group:
                reader = group.create_task(guarded(self._read_loop(), "inbox task"))
                refresher = group.create_task(guarded(self._refresh_loop(), "inbox task"))
                await stop.wait()
                reader.cancel()
                refresher.cancel()
        finally:
            with contextlib.suppress(RedisError, OSError):
                await self.pubsub.aclose()


# ---- one socket ------------------------------------------------------------------------------

def _frame(message: Mapping[str, object]) -> bytes:
    return protocol.pack(message)


class MeSocket:
    """One ``/ws/me`` socket, from the session cookie to its close."""

    def __init__(self, websocket: WebSocket, state: AppState, inbox: Inbox) -> None:
        self.ws = websocket
        self.state = state
        self.inbox = inbox
        self.settings = state.settings
        self.conn = Connection(websocket, state.metrics, self.settings.send_queue,
                               self.settings.send_queue_bytes)
        self.bucket = TokenBucket(self.settings.rate, self.settings.rate_burst)
        self.address = client_key(websocket.client)
        self.player_id = 0
        self.name = ""
        self.session = b""  # the SHA-256 of its session id
        self.ready = False  # hello_me queued: notices go straight to the queue
        self.early: list[bytes] = []  # notices that came before hello_me

    def deliver(self, data: bytes) -> None:
        """A notice for this socket's player (the bytes published): queued in order, after
        hello_me. A socket whose queue is full is closed (4003), as a table socket is."""
        if self.ready:
            self.conn.send_nowait(data)
        elif len(self.early) < self.settings.send_queue:
            self.early.append(data)
        else:
            self.conn.close_soon(Close.TOO_SLOW, "send queue full")

    async def _refuse(self, code: str, message: str, close: int, reason: str) -> None:
        """An error frame, then the close (before the socket was registered)."""
        with contextlib.suppress(Exception):  # the peer may be gone already
            await self.ws.send_bytes(_frame(protocol.error(code, message)))
            await self.ws.close(close, reason)

    async def run(self) -> None:
        # Here, not at the top: server.tables imports this module for `publish`, and
        # server.guard imports the lobby, which imports the tables.
        from server.guard import origin_allowed

        await self.ws.accept()
        if not origin_allowed(self.ws.headers.get("origin"), self.ws.headers.get("host"),
                              self.settings.allowed_origins, self.ws.url.scheme):
            await self.ws.close(int(Close.POLICY), "origin not allowed")
            return
        limits = self.state.address_limits
        if not limits.open_socket(self.address):
            await self._refuse("too_many_connections", "too many connections from your address",
                               int(Close.TOO_MANY_CONNECTIONS), "too many connections")
            return
        try:
            if await self._authenticate():
                await self._serve()
        finally:
            limits.close_socket(self.address)

    async def _authenticate(self) -> bool:
        """The player of the session cookie (the query of server.identity.current_player),
        else the refusal is sent and the socket closed."""
        session_id = self.ws.cookies.get(SESSION_COOKIE)
        if not session_id:
            await self._refuse("not_logged_in", "log in first", LOG_IN_FIRST, "log in first")
            return False
        pool = self.state.postgres.pool
        try:
            if pool is None:
                raise OSError("PostgreSQL is down")
            row = await pool.fetchrow(
                "SELECT p.id, p.username FROM sessions s JOIN players p ON p.id = s.player_id "
                "WHERE s.id_hash = $1 AND s.expires_at > now()", session_hash(session_id))
        except Exception:  # any database failure: try again later
            await self._refuse("unavailable", "accounts are unavailable, try again later",
                               int(Close.INTERNAL), "unavailable")
            return False
        if row is None:
            await self._refuse("session_expired",
                               "the session has expired or ended; log in again",
                               LOG_IN_FIRST, "log in first")
            return False
        self.player_id, self.name = int(row["id"]), str(row["username"])
        self.session = session_hash(session_id)
        return True

    async def _serve(self) -> None:
        task = asyncio.current_task()
        forced = False

        def force() -> None:  # a close the peer never completed
            nonlocal forced
            forced = True
            if task is not None:
                task.cancel()

        self.conn.watchdog = force
        added = False
        try:
            async with asyncio.TaskGroup() as group:
                self.conn.group = group
                try:
                    await self.inbox.add(self)
                    added = True
                    pool = self.state.postgres.pool
                    if pool is None:
                        raise OSError("PostgreSQL is down")
                    unread = await unread_total(pool, self.player_id)
                except Exception as exc:  # Redis or PostgreSQL: later
                    self.state.metrics.redis_errors.inc()
                    event("inbox socket failed", level=logging.WARNING, error=repr(exc))
                    self.conn.send_message(protocol.error(
                        "unavailable", "notices are unavailable, try again later"))
                    self.conn.close_soon(Close.INTERNAL, "unavailable")
                    return
                self.conn.send_message({"t": "hello_me", "name": self.name, "unread": unread})
                self.ready = True
                early, self.early = self.early, []
                for data in early:
                    self.conn.send_nowait(data)
                await self._read_safely()
                self.conn.close_soon(Close.NORMAL)  # no-op when a close is underway
        except asyncio.CancelledError:
            if not forced:
                raise
            if task is not None:
                task.uncancel()
        finally:
            self.conn.group = None
            self.conn.finished = True
            if added:
                await self.inbox.remove(self)

    async def _read_safely(self) -> None:
        try:
            await self._read()
        except WebSocketDisconnect:
            pass
        except asyncio.CancelledError:
            raise
        except Exception:
            event("inbox socket failed", level=logging.ERROR, exc=True)
            self.conn.close_soon(Close.INTERNAL, "internal error")

    def _error(self, code: str, message: str) -> None:
        self.state.metrics.bad_messages.labels(code=code).inc()
        self.conn.send_message(protocol.error(code, message))

    async def _read(self) -> None:
        while self.conn.closing is None:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            size = len(data) if data is not None else len((message.get("text") or "").encode())
            if size > self.settings.max_frame:
                self.conn.close_soon(Close.TOO_BIG, "frame too big")
                return
            verdict = self.bucket.take()
            if verdict == "cut":
                self._error("rate_limited", "too many messages")
                self.conn.close_soon(Close.RATE_LIMIT, "rate limit")
                return
            if verdict != "ok":
                self._error("rate_limited", "too many messages")
                continue
            if data is None:
                self._error("bad_message", "frames must be binary msgpack")
                continue
            try:
                frame = msgpack.unpackb(data, raw=False)
            except Exception:  # whatever the bytes are, not a frame
                frame = None
            if not isinstance(frame, dict) or frame.get("t") != "ping":
                self._error("bad_message", 'the only frame sent on /ws/me is "ping"')
                continue
            n = frame.get("n")
            ok = isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**53
            self.conn.send_message(protocol.pong(n if ok else None))


def inbox_of(state_holder: object) -> Inbox | None:
    """The Inbox the lifespan put on ``app.state`` (None before it ran)."""
    found = getattr(state_holder, INBOX_ATTRIBUTE, None)
    return found if isinstance(found, Inbox) else None


async def me_endpoint(websocket: WebSocket) -> None:
    """``/ws/me``: the logged-in player's notices (docs/protocol.md §11)."""
    inbox = inbox_of(websocket.app.state)
    if inbox is None:  # the lifespan has not built it (or is gone)
        await websocket.accept()
        with contextlib.suppress(Exception):
            await websocket.close(int(Close.GOING_AWAY), "server going away")
        return
    await MeSocket(websocket, app_state(websocket.app), inbox).run()
