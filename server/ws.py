"""The `/ws` endpoint: the wire protocol of docs/protocol.md on one websocket.

Owns: frame validation, hello/authentication, moves -> TableService.submit -> accepted/rejected,
chat, ping, sync, limits (frame size, rate, bad tokens, origin). Fan-out belongs to server.hub.
Must not import the engine: the socket layer knows nothing of the rules.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, TypeGuard

import msgpack
from redis.exceptions import RedisError
from starlette.websockets import WebSocket, WebSocketDisconnect

from server.admission import AddressLimits
from server.connection import Close, Connection, pack
from server.guard import origin_allowed
from server.hub import Hub, TooManyTables
from server.limits import AddressBudget, TokenBucket
from server.logs import event
from server.metrics import Metrics
from server.rejected import Rejected
from server.settings import Settings
from server.store import token_hash
from server.text import chat_text

if TYPE_CHECKING:  # the table service's type only: the socket layer knows no game rules
    from server.tables import TableService

PROTO = 1
MAX_ID = 32
MAX_CHAT = 200
CLIENT_TYPES = ("hello", "move", "chat", "ping", "sync")


class BadMessage(Exception):
    """A client frame that breaks the protocol; answered with error bad_message."""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def decode(data: bytes) -> dict[str, Any]:
    try:
        message = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise BadMessage("frame is not msgpack") from exc
    if not isinstance(message, dict):
        raise BadMessage("frame is not a map")
    kind = message.get("t")
    if not isinstance(kind, str):
        raise BadMessage('frame has no string "t"')
    if kind not in CLIENT_TYPES:
        raise BadMessage(f"unknown message type {kind[:40]!r}")
    return message


class Session:
    """One client's conversation, from hello to close."""

    __slots__ = (
        "address", "attached", "bad_tokens", "bucket", "chat_bucket", "conn", "hub", "limits",
        "metrics", "service", "settings", "ws",
    )

    def __init__(self, websocket: WebSocket, state: Any) -> None:
        self.ws = websocket
        self.settings: Settings = state.settings
        self.service: TableService = state.service
        self.hub: Hub = state.hub
        self.metrics: Metrics = state.metrics
        self.bad_tokens: AddressBudget = state.bad_tokens
        self.limits: AddressLimits = state.address_limits
        self.conn = Connection(websocket, self.metrics, self.settings.send_queue,
                               self.settings.send_queue_bytes)
        self.bucket = TokenBucket(self.settings.rate, self.settings.rate_burst)
        self.chat_bucket = TokenBucket(self.settings.chat_rate, self.settings.chat_burst)
        self.address = websocket.client.host if websocket.client else "?"
        self.attached = False

    def log(self, msg: str, level: int = logging.INFO, exc: bool = False, **fields: object) -> None:
        event(msg, level=level, exc=exc, table=self.conn.table or None, seat=self.conn.seat,
              conn=self.conn.id, **fields)

    def error(self, code: str, message: str) -> None:
        self.metrics.bad_messages.labels(code=code).inc()
        self.conn.send_message({"t": "error", "code": code, "message": message})

    async def run(self) -> None:
        await self.ws.accept()
        if not origin_allowed(
            self.ws.headers.get("origin"), self.ws.headers.get("host"),
            self.settings.allowed_origins, self.ws.url.scheme,
        ):
            await self.ws.close(int(Close.POLICY), "origin not allowed")
            return
        if not self.limits.open_socket(self.address):
            self.metrics.closes.labels(code=str(int(Close.TOO_MANY_CONNECTIONS))).inc()
            await self.ws.send_bytes(pack({"t": "error", "code": "too_many_connections",
                                           "message": "too many connections from your address"}))
            await self.ws.close(int(Close.TOO_MANY_CONNECTIONS), "too many connections")
            return
        try:
            await self._run()
        finally:
            self.limits.close_socket(self.address)

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
        """The next binary frame; None for a text frame (already answered). Raises on close."""
        if wait_s is None:
            message = await self.ws.receive()
        else:
            message = await asyncio.wait_for(self.ws.receive(), wait_s)
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        data = message.get("bytes")
        if data is None:
            text = message.get("text") or ""
            if len(text.encode()) > self.settings.max_frame:
                self.conn.close_soon(Close.TOO_BIG, "frame too big")
                raise WebSocketDisconnect(int(Close.TOO_BIG))
            self.error("bad_message", "frames must be binary msgpack")
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
            if data is None:
                continue
            if not self._limit():
                if self.conn.closing is None:
                    self.error("rate_limited", "too many messages")
                    continue
                return
            try:
                message = decode(data)
                if message["t"] != "hello":
                    raise BadMessage('the first message must be "hello"')
                await self._hello(message)
            except BadMessage as exc:
                self.error("bad_message", str(exc))
            if self.conn.closing is not None:
                return
        while self.conn.closing is None:
            data = await self._receive(None)
            if data is None:
                continue
            started = time.perf_counter()
            try:
                message = decode(data)
            except BadMessage as exc:
                if self._limit():
                    self.error("bad_message", str(exc))
                continue
            if not self._limit():
                if self.conn.closing is not None:
                    return
                if message["t"] == "move" and isinstance(message.get("id"), str):
                    self.conn.send_message({
                        "t": "rejected", "id": message["id"][:MAX_ID], "code": "rate_limited",
                        "message": "too many messages", "v": None,
                    })
                    self.metrics.moves_rejected.labels(code="rate_limited").inc()
                else:
                    self.error("rate_limited", "too many messages")
                continue
            try:
                await self._dispatch(message, started)
            except BadMessage as exc:
                self.error("bad_message", str(exc))
            except (RedisError, OSError) as exc:
                self.metrics.redis_errors.inc()
                self.log("redis error", level=logging.WARNING, error=repr(exc))
                self.error("unavailable", "storage unavailable, try again")
            except Rejected as rej:
                self.error(rej.code, rej.message)

    async def _dispatch(self, message: dict[str, Any], started: float) -> None:
        kind = message["t"]
        if kind == "move":
            await self._move(message, started)
        elif kind == "ping":
            n = message.get("n")
            if not _is_int(n) and n is not None:
                raise BadMessage('"n" must be an integer')
            self.conn.send_message({"t": "pong", "n": n})
        elif kind == "chat":
            await self._chat(message)
        elif kind == "sync":
            since = message.get("since")
            if not _is_int(since) or since < 0:
                raise BadMessage('"since" must be a version (integer >= 0)')
            await self.hub.resync(self.conn, since)
        else:
            raise BadMessage("hello was already received")

    async def _hello(self, message: dict[str, Any]) -> None:
        proto, table, token, since, invite = (
            message.get("proto"), message.get("table"), message.get("token"),
            message.get("since"), message.get("invite"),
        )
        if not _is_int(proto):
            raise BadMessage('"proto" must be an integer')
        if proto != PROTO:
            self.error("unsupported_proto", f"this server speaks proto {PROTO}")
            self.conn.close_soon(Close.POLICY, "unsupported proto")
            return
        if not isinstance(table, str) or not 0 < len(table) <= 64:
            raise BadMessage('"table" must be a table id')
        if token is not None and (not isinstance(token, str) or not 0 < len(token) <= 256):
            raise BadMessage('"token" must be a string or null')
        if since is not None and (not _is_int(since) or since < 0):
            raise BadMessage('"since" must be a version (integer >= 0) or null')
        if invite is not None and (not isinstance(invite, str) or not 0 < len(invite) <= 64):
            raise BadMessage('"invite" must be a string or null')
        self.conn.table = table
        try:
            seat, checked_at = await self.service.authenticate(table, token, invite)
        except Rejected as rej:
            self._refuse(rej)
            return
        except (RedisError, OSError):
            self.metrics.redis_errors.inc()
            self.error("unavailable", "storage unavailable, try again")
            self.conn.close_soon(Close.INTERNAL, "storage unavailable")
            return
        self.conn.seat = seat
        self.conn.audience = "s" if seat is None else str(seat)
        if seat is not None and isinstance(token, str):
            self.conn.token_hash = token_hash(token)
            self.conn.token_version = checked_at

        def welcome(version: int) -> dict[str, object]:
            return {"t": "welcome", "proto": PROTO, "table": table, "seat": seat, "v": version}

        try:
            await self.hub.attach(self.conn, since, welcome)
        except (RedisError, OSError) as exc:
            self.metrics.redis_errors.inc()
            self.log("redis error", level=logging.WARNING, error=repr(exc))
            self.attached = True  # detach cleans up whatever attach registered
            self.error("unavailable", "storage unavailable, try again")
            self.conn.close_soon(Close.INTERNAL, "storage unavailable")
            return
        except TooManyTables:
            self.error("unavailable", "this server is full, reconnect")
            self.conn.close_soon(Close.GOING_AWAY, "server full")
            return
        except Rejected as rej:
            self._refuse(rej)
            return
        self.attached = True
        self.log("hello", since=since)

    def _refuse(self, rej: Rejected) -> None:
        code = rej.code
        if code == "bad_token" and not self.bad_tokens.charge(self.address):
            self.error("rate_limited", "too many bad tokens from this address")
            self.conn.close_soon(Close.RATE_LIMIT, "bad token rate")
        elif code == "bad_token":
            self.error("bad_token", rej.message)
            self.conn.close_soon(Close.BAD_TOKEN, "bad token")
        elif code == "seat_left":
            self.error("seat_left", rej.message)
            self.conn.close_soon(Close.SEAT_LEFT, "seat left")
        elif code == "unknown_table":
            self.error("unknown_table", rej.message)
            self.conn.close_soon(Close.UNKNOWN_TABLE, "unknown table")
        elif code == "too_many_tables":
            self.error(code, rej.message)
            self.conn.close_soon(Close.TOO_MANY_CONNECTIONS, "too many tables")
        elif code == "too_many_spectators":
            self.error(code, rej.message)
            self.conn.close_soon(Close.TOO_MANY_SPECTATORS, "too many spectators")
        else:
            self.error(code, rej.message)
            self.conn.close_soon(Close.INTERNAL if code == "unavailable" else Close.POLICY, code)
        self.log("hello refused", code=code)

    async def _move(self, message: dict[str, Any], started: float) -> None:
        client_id, version, move = message.get("id"), message.get("v"), message.get("move")
        if not isinstance(client_id, str) or not 0 < len(client_id) <= MAX_ID:
            if not isinstance(client_id, str | int) or isinstance(client_id, bool):
                raise BadMessage('"id" must be a string of 1 to 32 characters')
            # Answered with the id as sent, so a client waiting on it is not left waiting.
            self._reject(client_id, "bad_message", '"id" must be a string of 1 to 32 characters',
                         None)
            return
        try:
            if not _is_int(version) or version < 0:
                raise BadMessage('"v" must be a version (integer >= 0)')
            if not isinstance(move, dict) or not all(isinstance(k, str) for k in move):
                raise BadMessage('"move" must be a map')
            if self.conn.seat is None:
                self._reject(client_id, "not_seated", "spectators cannot move", None)
                return
            new_version = await self.service.submit(
                self.conn.table, self.conn.seat, move, version, client_id,
                token=self.conn.token_hash,
            )
        except BadMessage as exc:
            self._reject(client_id, "bad_message", str(exc), None)
        except Rejected as rej:
            self._reject(client_id, rej.code, rej.message, rej.version)
            if rej.code == "seat_left":
                self.conn.close_soon(Close.SEAT_LEFT, "seat left")
        else:
            # The move is committed: its answer is `accepted` whatever happens to delivery. A
            # diff that cannot be fetched now is retried in the background (and a client that
            # sees `accepted` before the diff detects the gap and syncs).
            try:
                await self.hub.pump_now(self.conn.table, new_version)
            except (RedisError, OSError, Rejected) as exc:
                self.metrics.redis_errors.inc()
                self.log("delivery after commit failed", level=logging.WARNING, error=repr(exc))
                self.hub.request_pump(self.conn.table, None)
            self.conn.send_message({"t": "accepted", "id": client_id, "v": new_version})
            self.metrics.moves_accepted.inc()
        self.metrics.ack_seconds.observe(time.perf_counter() - started)

    def _reject(self, client_id: str | int, code: str, message: str,
                version: int | None) -> None:
        self.metrics.moves_rejected.labels(code=code).inc()
        self.conn.send_message(
            {"t": "rejected", "id": client_id, "code": code, "message": message, "v": version}
        )
        self.log("move rejected", code=code)  # never the move: it may name a hidden tile

    async def _chat(self, message: dict[str, Any]) -> None:
        text = chat_text(message.get("text"), MAX_CHAT, BadMessage)
        if self.chat_bucket.take() != "ok":
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
        await self.hub.chat(self.conn, name, text)


async def websocket_endpoint(websocket: WebSocket) -> None:
    await Session(websocket, websocket.app.state).run()
