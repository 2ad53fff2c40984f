"""The `/ws` endpoint: the wire protocol of docs/protocol.md on one websocket.

Owns: the conversation -- hello/authentication, moves -> TableService.submit -> accepted/rejected,
chat, ping, sync, limits (frame size, rate, bad tokens, origin) -- and the one place where a
refusal (`Rejected`, `ProtocolError` included) becomes a websocket answer (`Session.refuse`).
Frames are decoded and built by server.protocol only. Fan-out belongs to server.hub. Must not
import the engine: the socket layer knows nothing of the rules.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from redis.exceptions import RedisError
from starlette.websockets import WebSocket, WebSocketDisconnect

from server import protocol
from server.admission import AddressLimits
from server.connection import Connection
from server.guard import origin_allowed
from server.hub import Hub
from server.keepalive import receive_now_of
from server.limits import AddressBudget, TokenBucket, charged_refusal
from server.logs import event
from server.metrics import Metrics
from server.protocol import (
    MAX_ID,
    Chat,
    ClientMessage,
    Close,
    Hello,
    Hint,
    Move,
    Ping,
    ProtocolError,
    Ready,
    Sync,
    hello_close,
)
from server.rejected import Rejected, unavailable
from server.seams import app_state
from server.settings import Settings
from server.store import token_hash

if TYPE_CHECKING:  # the seam's types only: the socket layer knows no game rules
    from server.seams import AppState, TablePlay

FIRST_HELLO = 'the first message must be "hello"'
AGAIN_HELLO = "hello was already received"


class Session:
    """One client's conversation, from hello to close."""

    __slots__ = (
        "attached", "bad_tokens", "bucket", "chat_bucket", "conn", "hint_task", "hub",
        "limits", "metrics", "receive", "service", "settings", "ws",
    )

    def __init__(self, websocket: WebSocket, state: AppState) -> None:
        self.ws = websocket
        # Frames straight from the websocket protocol when it offers them (keepalive.RECEIVE_NOW),
        # else through Starlette's receive: the same messages in the same order.
        self.receive = receive_now_of(websocket.scope) or websocket.receive
        self.settings: Settings = state.settings
        self.service: TablePlay = state.service
        self.hub: Hub = state.hub
        self.metrics: Metrics = state.metrics
        self.bad_tokens: AddressBudget = state.bad_tokens
        self.limits: AddressLimits = state.address_limits
        self.conn = Connection(websocket, self.metrics, self.settings.send_queue,
                               self.settings.send_queue_bytes)
        self.bucket = TokenBucket(self.settings.rate, self.settings.rate_burst)
        self.chat_bucket = TokenBucket(self.settings.chat_rate, self.settings.chat_burst)
        self.attached = False
        self.hint_task: asyncio.Task[None] | None = None

    def log(self, msg: str, level: int = logging.INFO, exc: bool = False, **fields: object) -> None:
        event(msg, level=level, exc=exc, table=self.conn.table or None, seat=self.conn.seat,
              conn=self.conn.id, **fields)

    def error(self, code: str, message: str) -> None:
        self.metrics.bad_messages.labels(code=code).inc()
        self.conn.send_message(protocol.error(code, message))

    def refuse(self, refusal: Rejected, *, move_id: str | int | None = None,
               hello: bool = False) -> None:
        """The websocket answer of a refusal, the only one: `rejected` for a move (``move_id``:
        its id as sent) with the version it was refused at, else `error`. A refused `hello`
        then closes the socket with its code (protocol.hello_close); later, only `seat_left`
        closes (4005)."""
        if move_id is not None:
            self.metrics.moves_rejected.labels(code=refusal.code).inc()
            self.conn.send_message(protocol.rejected(move_id, refusal.code, refusal.message,
                                                     refusal.version))
            self.log("move rejected", code=refusal.code)  # never the move: it may name a tile
        else:
            self.error(refusal.code, refusal.message)
        if hello:
            close = hello_close(refusal)
            self.conn.close_soon(close, refusal.code.replace("_", " "))
            self.log("hello refused", code=refusal.code)
        elif refusal.code == "seat_left":
            self.conn.close_soon(Close.SEAT_LEFT, "seat left")

    async def run(self) -> None:
        await self.ws.accept()
        if not origin_allowed(
            self.ws.headers.get("origin"), self.ws.headers.get("host"),
            self.settings.allowed_origins, self.ws.url.scheme,
        ):
            await self.ws.close(int(Close.POLICY), "origin not allowed")
            return
        if not self.limits.open_socket(self.conn.address):
            self.metrics.closes.labels(code=str(int(Close.TOO_MANY_CONNECTIONS))).inc()
            await self.ws.send_bytes(protocol.pack(protocol.error(
                "too_many_connections", "too many connections from your address")))
            await self.ws.close(int(Close.TOO_MANY_CONNECTIONS), "too many connections")
            return
        try:
            await self._run()
        finally:
            self.limits.close_socket(self.conn.address)

    async def _run(self) -> None:
        self.metrics.connections.inc()
        task = asyncio.current_task()
        forced = False

        def force() -> None:
            nonlocal forced
            forced = True
            if task is not None:
                task.cancel()

        self.conn.watchdog = force
        try:
            # The reader runs in this task; a writer task runs only while frames wait.
            async with asyncio.TaskGroup() as group:
                self.conn.group = group
                await self._read_safely()
                if self.hint_task is not None:
                    self.hint_task.cancel()
                self.conn.close_soon(Close.NORMAL)  # no-op when a close is already underway
        except asyncio.CancelledError:
            if not forced:
                raise
            if task is not None:
                task.uncancel()
        finally:
            self.conn.group = None
            self.conn.finished = True
            self.metrics.connections.dec()
            if self.attached:
                try:
                    await self.hub.detach(self.conn)
                except (RedisError, OSError):
                    self.metrics.redis_errors.inc()
            self.log("closed", code=int(self.conn.closing or Close.NORMAL))

    async def _read_safely(self) -> None:
        try:
            await self._read()
        except WebSocketDisconnect:
            self.conn.close_soon(Close.NORMAL)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log("connection failed", level=logging.ERROR, exc=True)
            self.conn.close_soon(Close.INTERNAL, "internal error")

    async def _receive(self, wait_s: float | None) -> bytes | None:
        """The next binary frame; None for a text frame (already answered, and charged to the
        message rate like any frame). Raises on close."""
        if wait_s is None:
            message = await self.receive()
        else:
            async with asyncio.timeout(wait_s):  # (no inner task, unlike wait_for)
                message = await self.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        data = message.get("bytes")
        if data is None:
            text = message.get("text") or ""
            if len(text.encode()) > self.settings.max_frame:
                self.conn.close_soon(Close.TOO_BIG, "frame too big")
                raise WebSocketDisconnect(int(Close.TOO_BIG))
            if self._limit():  # a frame like any other for the message rate
                self.error("bad_message", "frames must be binary msgpack")
            elif self.conn.closing is None:
                self.error("rate_limited", "too many messages")
            return None
        if len(data) > self.settings.max_frame:
            self.conn.close_soon(Close.TOO_BIG, "frame too big")
            raise WebSocketDisconnect(int(Close.TOO_BIG))
        return bytes(data)

    def _limit(self) -> bool:
        """True when this message may be handled; answers or cuts off a flooding client."""
        verdict = self.bucket.take()
        if verdict == "cut":
            self.error("rate_limited", "too many messages")
            self.conn.close_soon(Close.RATE_LIMIT, "rate limit")
            return False
        return verdict == "ok"

    async def _read(self) -> None:
        deadline = time.monotonic() + self.settings.hello_timeout_s
        while not self.attached:
            left = deadline - time.monotonic()
            try:
                data = await self._receive(max(0.01, left))
            except TimeoutError:
                self.conn.close_soon(Close.POLICY, "no hello")
                return
            if data is None:  # a text frame, answered (and perhaps cut off)
                if self.conn.closing is not None:
                    return
                continue
            if not self._limit():
                if self.conn.closing is None:
                    self.error("rate_limited", "too many messages")
                    continue
                return
            try:
                message = protocol.decode(data)
            except ProtocolError as exc:
                if exc.code == "unsupported_proto":
                    self.refuse(exc, hello=True)
                elif exc.kind not in (None, "hello"):
                    self.error("bad_message", FIRST_HELLO)
                else:
                    self.error(exc.code, exc.message)
            else:
                if isinstance(message, Hello):
                    await self._hello(message)
                else:
                    self.error("bad_message", FIRST_HELLO)
            if self.conn.closing is not None:
                return
        while self.conn.closing is None:
            data = await self._receive(None)
            if data is None:  # a text frame, answered; the loop ends if it was cut off
                continue
            started = time.perf_counter()
            decoded: ClientMessage | ProtocolError
            try:
                decoded = protocol.decode(data)
            except ProtocolError as exc:
                decoded = exc
            if not self._limit():
                if self.conn.closing is not None:
                    return
                self._rate_limited(decoded)
                continue
            if isinstance(decoded, ProtocolError):
                if isinstance(decoded.id, str | int) and decoded.kind == "move":
                    self.refuse(decoded, move_id=decoded.id)
                elif decoded.kind == "hello":
                    self.refuse(ProtocolError("bad_message", AGAIN_HELLO, kind="hello"))
                else:
                    self.refuse(decoded)
                continue
            try:
                await self._dispatch(decoded, started)
            except (RedisError, OSError) as exc:
                self.metrics.redis_errors.inc()
                self.log("redis error", level=logging.WARNING, error=repr(exc))
                self.refuse(unavailable())
            except Rejected as rej:
                self.refuse(rej)

    def _rate_limited(self, decoded: ClientMessage | ProtocolError) -> None:
        """The answer to a frame over the rate: a move with an id (a string, or a number) is
        `rejected` with it (so that its sender is not left waiting), anything else gets `error
        rate_limited`."""
        move_id = decoded.id if isinstance(decoded, Move | ProtocolError) else None
        refusal = Rejected("rate_limited", "too many messages", status=429)
        if isinstance(move_id, str):
            self.refuse(refusal, move_id=move_id[:MAX_ID])
        elif isinstance(move_id, int) and not isinstance(move_id, bool):
            self.refuse(refusal, move_id=move_id)
        else:
            self.refuse(refusal)

    async def _dispatch(self, message: ClientMessage, started: float) -> None:
        if isinstance(message, Move):
            await self._move(message, started)
        elif isinstance(message, Ping):
            self.conn.send_message(protocol.pong(message.n))
        elif isinstance(message, Chat):
            await self._chat(message)
        elif isinstance(message, Sync):
            await self.hub.resync(self.conn, message.since)
        elif isinstance(message, Ready):
            await self._ready()
        elif isinstance(message, Hint):
            self._start_hint()
        else:
            raise ProtocolError("bad_message", AGAIN_HELLO, kind="hello")

    async def _hello(self, message: Hello) -> None:
        table, token, since = message.table, message.token, message.since
        self.conn.table = table
        try:
            seat, checked_at = await self.service.authenticate(table, token, message.invite)
        except Rejected as rej:
            self._refuse_hello(rej, token)
            return
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()
            self.refuse(unavailable(), hello=True)
            return
        self.conn.seat = seat
        self.conn.audience = "s" if seat is None else str(seat)
        if seat is not None and token is not None:
            self.conn.token_hash = token_hash(token)
            self.conn.token_version = checked_at

        def welcome(version: int) -> dict[str, object]:
            return protocol.welcome(table, seat, version)

        try:
            await self.hub.attach(self.conn, since, welcome)
        except (RedisError, OSError) as exc:
            self.metrics.redis_errors.inc()
            self.log("redis error", level=logging.WARNING, error=repr(exc))
            self.attached = True  # detach cleans up whatever attach registered
            self.refuse(unavailable(), hello=True)
            return
        except Rejected as rej:
            self._refuse_hello(rej, token)
            return
        self.attached = True
        self.log("hello", since=since)

    def _refuse_hello(self, rej: Rejected, token: str | None) -> None:
        """A refused hello; a refused token is charged to the address's bad-token budget
        (`charged_refusal`, as over HTTP), and once that is spent the answer is `rate_limited`
        instead."""
        if charged_refusal(rej.code, token) and not self.bad_tokens.charge(self.conn.address):
            rej = Rejected("rate_limited", "too many bad tokens from this address", status=429)
        self.refuse(rej, hello=True)

    async def _move(self, message: Move, started: float) -> None:
        if self.conn.seat is None:
            self.refuse(Rejected("not_seated", "spectators cannot move", status=403),
                        move_id=message.id)
            return
        try:
            new_version = await self.service.submit(
                self.conn.table, self.conn.seat, message.move, message.v, message.id,
                token=self.conn.token_hash,
            )
        except Rejected as rej:
            self.refuse(rej, move_id=message.id)
        else:
            # The move is committed: its answer is `accepted` whatever happens to delivery. Its
            # diff is usually queued already (the commit hands its frames to the local sockets);
            # otherwise it is fetched now, before `accepted`. A diff that cannot be fetched now
            # is retried in the background (and a client that sees `accepted` before the diff
            # detects the gap and syncs).
            try:
                if self.conn.version < new_version:
                    await self.hub.pump_now(self.conn.table, new_version)
            except (RedisError, OSError, Rejected) as exc:
                self.metrics.redis_errors.inc()
                self.log("delivery after commit failed", level=logging.WARNING, error=repr(exc))
                self.hub.request_pump(self.conn.table, None)
            self.conn.send_nowait(protocol.pack_accepted(message.id, new_version))
            self.metrics.moves_accepted.inc()
        self.metrics.ack_seconds.observe(time.perf_counter() - started)

    async def _ready(self) -> None:
        if self.conn.seat is None:
            self.refuse(Rejected("not_seated", "spectators are not dealt hands", status=403))
            return
        try:
            version = await self.service.ready(self.conn.table, self.conn.seat,
                                               self.conn.token_hash)
        except Rejected as rej:
            self.refuse(rej)
            return
        try:
            await self.hub.pump_now(self.conn.table, version)
        except (RedisError, OSError, Rejected):
            self.metrics.redis_errors.inc()
            self.hub.request_pump(self.conn.table, None)

    def _start_hint(self) -> None:
        """Think of a hint beside the reader (it takes a bot's think), one at a time."""
        if self.conn.seat is None:
            self.refuse(Rejected("not_seated", "spectators get no hints", status=403))
        elif self.hint_task is not None and not self.hint_task.done():
            self.refuse(Rejected("rate_limited", "a hint is being thought of", status=429))
        elif self.conn.group is not None:
            self.hint_task = self.conn.group.create_task(self._hint(self.conn.seat))

    async def _hint(self, seat: int) -> None:
        try:
            version, move = await self.service.hint(self.conn.table, seat)
        except Rejected as rej:
            self.refuse(rej)
        except (RedisError, OSError) as exc:
            self.metrics.redis_errors.inc()
            self.log("redis error", level=logging.WARNING, error=repr(exc))
            self.refuse(unavailable())
        else:
            self.conn.send_message(protocol.hint(version, move))

    async def _chat(self, message: Chat) -> None:
        if not self.chat_bucket.available():
            self.error("rate_limited", "too many chat messages")
            return
        name = "spectator"
        if self.conn.seat is not None:
            try:
                _, doc = await self.service.snapshot(self.conn.table, "s")
                seat_name = doc["table"]["seats"][self.conn.seat]["name"]
                name = str(seat_name or f"seat {self.conn.seat}")
            except (Rejected, KeyError, IndexError, TypeError):
                name = f"seat {self.conn.seat}"
        await self.hub.chat(self.conn, name, message.text)  # refused (Rejected): not spent
        self.chat_bucket.spend()


async def websocket_endpoint(websocket: WebSocket) -> None:
    await Session(websocket, app_state(websocket.app)).run()
