"""The websocket protocol the server runs under uvicorn: uvicorn's sans-I/O one, with fewer
pings for sockets whose clients talk.

uvicorn pings every socket every ``WS_PING_INTERVAL_S`` and drops one that does not answer
within ``WS_PING_TIMEOUT_S``; here a socket's first ping time is drawn between half an interval
and one and a half after its handshake, so sockets that connected together are not pinged
together. A message the client has just sent shows that it is there, so such a socket is not
pinged at its ping time (the next one is an interval later), as long as nothing waits in its
write buffer and it answered a ping within the last `PROOF_INTERVALS` intervals: a client that
sends but does not read is still pinged (it cannot answer) and dropped, at most that many
intervals later than with a ping every interval. Players who move and chat are pinged once
every `PROOF_INTERVALS` intervals instead of every interval; silent sockets (spectators) every
interval, as before.

It also lets the server write a binary frame without the ASGI layers (`send_now`, offered to
the application as the scope extension ``SEND_NOW``): when the socket is open and its transport
is not paused, the frame is written at once, as uvicorn's own ``websocket.send`` would write it,
without a message dict, an awaited event and the middleware's wrappers (and, on a connection
without compression, without websockets' frame object: `binary_frame` writes the same bytes);
otherwise the caller falls back to the ASGI ``send``, which waits for the transport.

And it lets the server read without them (`receive_now`, the scope extension ``RECEIVE_NOW``):
the same messages as the ASGI ``receive`` (``websocket.receive``, ``websocket.disconnect``), in
the same order and from the same queue, taken straight from the protocol instead of through
Starlette's and the middleware's wrappers. The queue is an `Inbox` (a deque and one waiter rather
than an ``asyncio.Queue``), and reading is paused only once `PAUSE_AT` messages wait unread
(uvicorn pauses after every message and resumes once it is taken: two transport calls per frame),
so a client that floods faster than the server reads still waits in its own TCP buffers; what
a read brought beyond that is held back as bytes (`unread`) and parsed `FEED_BYTES` at a time
as the messages are taken, so a read of tiny frames never becomes thousands of messages. On a
connection without compression, the binary frames a read brings whole while websockets' parser
waits between two frames are taken by the protocol itself (`_take_frames`: the same messages and
size limit, without websockets' generator-based parser and frame objects); anything else (a
control frame, text, a fragment, a frame cut by the read) goes through websockets as before.

When the connection is lost it drops what would keep its objects in reference cycles (the
scope's two extensions, bound methods of itself; websockets' parser generator), so a closed
socket is freed at once instead of waiting, with everything it holds, for the garbage
collector's older generations.

Where the installed uvicorn lacks the hooks used here, its own protocol runs unchanged (and
neither ``SEND_NOW`` nor ``RECEIVE_NOW`` is offered). Imports nothing of the server.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable, Generator
from typing import cast

from starlette.types import Message, Receive
from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.frames import Frame
from websockets.http11 import Request
from websockets.protocol import Protocol, State
from websockets.streams import StreamReader

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover (websockets built without its C extension)
    from websockets.utils import apply_mask

__all__ = ["PAUSE_AT", "PROOF_INTERVALS", "RECEIVE_NOW", "SEND_NOW", "Inbox", "QuietPingProtocol",
           "binary_frame", "protocol_for", "receive_now_of", "send_now_of"]

PROOF_INTERVALS = 4  # a talking socket still answers a ping at least this often (intervals)
PAUSE_AT = 8  # reading from a socket pauses while this many of its messages wait unread
FEED_BYTES = 4096  # bytes parsed at a time while messages wait unread
_HOOKS = ("send_keepalive_ping", "schedule_ping", "start_keepalive", "handle_pong",
          "handle_bytes", "handle_text", "handle_connect", "send_receive_event_to_app", "receive",
          "send", "data_received")
_STATE = ("handshake_complete", "close_sent", "initial_response", "disconnected", "writable",
          "conn", "transport", "queue", "read_paused")
_FRAMES = ("frames", "curr_msg_data_type")  # what `_take_frames` sets of uvicorn's protocol
_PARSER = ("reader", "parser", "current_size", "max_message_size", "max_fragment_size",
           "extensions", "parser_exc", "expect_continuation_frame", "writes")
# ... and what it and `send_now` read of websockets' own
_AT_EOF = StreamReader.at_eof.__code__  # where websockets' parser waits between two frames
SEND_NOW = "dominoes.send_now"  # the scope extension: a callable (bytes) -> bool
RECEIVE_NOW = "dominoes.receive_now"  # the scope extension: ASGI's receive, unwrapped


class Inbox:
    """The protocol's queue of ASGI receive messages, as much of ``asyncio.Queue`` as uvicorn's
    protocol uses (`put_nowait`, `get`, `empty`; and `qsize`): a deque and at most one waiter
    (one reader per socket), unbounded like uvicorn's own (the protocol pauses reading). About
    0.8 KB a socket against 3.3 KB for an ``asyncio.Queue``."""

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        self.items: deque[Message] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Message) -> None:
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> Message:
        while not self.items:
            waiter = self.waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self.waiter is waiter:
                    self.waiter = None
        return self.items.popleft()

    def empty(self) -> bool:
        return not self.items

    def qsize(self) -> int:
        return len(self.items)


class QuietPingProtocol(WebSocketsSansIOProtocol):
    direct = False  # its queue is an Inbox and it offers SEND_NOW and RECEIVE_NOW
    own_frames = False  # it reads and writes binary frames itself (`_take_frames`, `send_now`)
    # What reads brought beyond `PAUSE_AT` waiting messages, parsed up to `unread_at` (`_feed`)
    unread: bytearray | None = None
    unread_at = 0
    heard = False  # a message arrived since the last ping time
    answered_at: float | None = None  # when the peer last answered a ping (loop time)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.answered_at = self.loop.time()  # a new peer counts as having answered
        if all(hasattr(self, name) for name in _STATE):
            # still empty: nothing arrives before the connection
            self.queue = Inbox()  # type: ignore[assignment]  # (what uvicorn uses of a Queue)
            self.direct = True
            self.own_frames = all(hasattr(self, name) for name in _FRAMES) \
                and all(hasattr(self.conn, name) for name in _PARSER)

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None and self.direct:
            extensions = cast(dict[str, object], scope.setdefault("extensions", {}))
            extensions[SEND_NOW] = self.send_now
            extensions[RECEIVE_NOW] = self.receive

    def data_received(self, data: bytes) -> None:
        """uvicorn's, except that a read is parsed only while fewer than `PAUSE_AT` messages
        wait unread (`_feed`): what is left of it waits here, reading paused, until the
        application takes them (`receive`)."""
        if not self.direct or not self.handshake_complete:
            super().data_received(data)
        elif self.unread is not None:
            self.unread += data  # behind what already waits
        else:
            self._feed(data)

    def _feed(self, data: bytes | bytearray, at: int = 0) -> None:
        """Parse `data` from `at` on -- whole final binary frames here (`_take_frames`) when
        websockets' parser waits between two frames, anything else through it, `FEED_BYTES`
        at a time -- until `PAUSE_AT` messages wait unread; keep the rest in `unread`, reading
        paused (`data` is `unread` itself when it is parsed on: then only `unread_at` moves).
        Once a close was sent, nothing is queued any more and everything is parsed at once."""
        end = len(data)
        while at < end:
            if self.close_sent:
                super().data_received(bytes(data[at:]))
                break
            if self.queue.qsize() >= PAUSE_AT:
                if data is not self.unread:
                    self.unread = bytearray(data[at:])
                    at = 0
                self.unread_at = at
                if not self.read_paused:
                    self.read_paused = True
                    self.transport.pause_reading()
                return
            conn = self.conn
            if self.own_frames and conn.state is State.OPEN and conn.current_size is None \
                    and not conn.extensions and conn.parser_exc is None and _between_frames(conn):
                taken = self._take_frames(data, at, conn)
                if taken > at:
                    at = taken
                    continue
            piece = bytes(data[at:at + FEED_BYTES])
            super().data_received(piece)
            at += len(piece)
            if conn.parser_exc is not None or self.transport.is_closing():
                break  # refused (and closed): the rest is of no use
        if data is self.unread:
            self.unread, self.unread_at = None, 0

    def _take_frames(self, data: bytes | bytearray, at: int, conn: Protocol) -> int:
        """Deliver the whole, final, masked binary frames of `data` from `at` on, as websockets'
        parser and uvicorn's ``handle_bytes`` would (the same message, the same limits: a frame
        over ``max_size`` is left to websockets, which refuses it), until `PAUSE_AT` messages
        wait; return where they end (anything else: a control frame, text, a fragment, a frame
        cut by the read, is left there, at a frame's first byte)."""
        limit = conn.max_message_size
        if conn.max_fragment_size is not None:
            limit = conn.max_fragment_size if limit is None else min(limit, conn.max_fragment_size)
        end, queue = len(data), self.queue
        while end - at >= 6 and data[at] == 0x82 and data[at + 1] & 0x80 \
                and queue.qsize() < PAUSE_AT:  # FIN binary, masked
            size, start = data[at + 1] & 0x7F, at + 6
            if size == 126:
                if end - at < 8:
                    break
                size, start = int.from_bytes(data[at + 2:at + 4], "big"), at + 8
            elif size == 127:
                break
            stop = start + size
            if stop > end or (limit is not None and size > limit):
                break
            self.heard = True
            self.curr_msg_data_type = "bytes"
            self.frames = [apply_mask(data[start:stop], data[start - 4:start])]
            self.send_receive_event_to_app()
            at = stop
        return at

    async def receive(self) -> Message:  # type: ignore[override]  # (uvicorn's, with Message)
        """uvicorn's, except that what reads left unparsed is parsed on once no message waits,
        and reading resumes only when nothing is left."""
        if not self.direct:
            return cast(Message, await super().receive())
        message = await self.queue.get()
        if self.unread is not None and self.queue.empty():
            self._feed(self.unread, self.unread_at)
        if self.read_paused and self.queue.empty() and self.unread is None:
            self.read_paused = False
            self.transport.resume_reading()
        return cast(Message, message)

    async def send(self, message: ASGISendEvent) -> None:
        """uvicorn's; once it has sent a close, what a read left unparsed is parsed (the
        peer's close reply may be in it)."""
        await super().send(message)
        if self.close_sent and self.unread is not None:
            self._feed(self.unread, self.unread_at)

    def send_receive_event_to_app(self) -> None:
        """uvicorn's, except that reading pauses only once `PAUSE_AT` messages wait."""
        if not self.direct:
            super().send_receive_event_to_app()
            return
        paused = self.read_paused
        self.read_paused = True  # so uvicorn's does not pause: decided here
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = paused
        # After a close is sent nothing more is queued, and reading must go on until the peer's
        # close reply arrives, however many messages the application left unread.
        if not paused and not self.close_sent and self.queue.qsize() >= PAUSE_AT:
            self.read_paused = True
            self.transport.pause_reading()

    def send_now(self, data: bytes) -> bool:
        """Write `data` as one binary frame now, if the handshake is done, no close was sent,
        the peer is connected and the transport takes more; False (nothing written) if not."""
        if not self.handshake_complete or self.close_sent or self.initial_response is not None \
                or self.disconnected or not self.writable.is_set() \
                or self.transport.is_closing():
            return False
        conn = self.conn
        if not self.own_frames or conn.extensions or conn.expect_continuation_frame \
                or conn.writes or conn.state is not State.OPEN:
            try:  # websockets' own framing (compression, or anything out of the ordinary)
                conn.send_binary(data)
            except InvalidState:
                return False
            self.transport.write(b"".join(conn.data_to_send()))
            return True
        self.transport.write(binary_frame(data))
        return True

    def handle_bytes(self, event: Frame) -> None:
        self.heard = True
        super().handle_bytes(event)

    def handle_text(self, event: Frame) -> None:
        self.heard = True
        super().handle_text(event)

    def connection_lost(self, exc: Exception | None) -> None:
        """uvicorn's, then the references that would keep this socket's objects in cycles
        dropped, so they are freed now instead of by a later collection of the garbage
        collector (a server whose sockets come and go would otherwise pile them up): the
        scope's SEND_NOW and RECEIVE_NOW (bound methods of this protocol, which holds the
        scope), and websockets' parser (a generator that holds its protocol). Nothing reads
        from a lost connection; the application took both extensions when it started."""
        super().connection_lost(exc)
        scope = getattr(self, "scope", None)
        extensions = scope.get("extensions") if isinstance(scope, dict) else None
        if isinstance(extensions, dict):
            extensions.pop(SEND_NOW, None)
            extensions.pop(RECEIVE_NOW, None)
        parser = getattr(getattr(self, "conn", None), "parser", None)
        if isinstance(parser, Generator):
            parser.close()

    def handle_pong(self, event: Frame) -> None:
        waiting = getattr(self, "pending_ping_payload", None)
        super().handle_pong(event)
        if waiting is not None and getattr(self, "pending_ping_payload", None) is None:
            self.answered_at = self.loop.time()  # the pong of the ping in flight

    def start_keepalive(self) -> None:
        """uvicorn's, except that the first ping time is drawn between half an interval and one
        and a half after the handshake (then every interval, as uvicorn does): sockets that
        connected together (a crowd arriving for a game, every client after a restart) are not
        pinged in one burst, every interval, for as long as they stay."""
        if not self.ping_interval or self.ping_interval <= 0:
            return
        delay = self.ping_interval * random.uniform(0.5, 1.5)
        self.ping_timer = self.loop.call_later(delay, self.send_keepalive_ping)

    def send_keepalive_ping(self) -> None:
        heard, self.heard = self.heard, False
        answered = self.answered_at
        interval = self.ping_interval or 0.0
        if heard and getattr(self, "pending_ping_payload", None) is None \
                and self.transport.get_write_buffer_size() == 0 and answered is not None \
                and self.loop.time() - answered < PROOF_INTERVALS * interval:
            self.ping_timer = None
            self.schedule_ping()
            return
        super().send_keepalive_ping()


def _between_frames(conn: Protocol) -> bool:
    """Whether websockets' parser waits for the first byte of a frame, nothing buffered."""
    reader = conn.reader
    if reader.buffer or reader.eof:
        return False
    waiting = conn.parser
    while (inner := getattr(waiting, "gi_yieldfrom", None)) is not None:
        waiting = inner
    return getattr(waiting, "gi_code", None) is _AT_EOF


def binary_frame(data: bytes) -> bytes:
    """`data` as one final, unmasked binary frame with no extension: the bytes websockets'
    ``send_binary`` writes for it on a connection without compression, built without its
    frame object and buffers (a move's frames are written this way to every socket)."""
    size = len(data)
    if size < 126:
        return _HEADS[size] + data
    if size < 65536:
        return b"\x82\x7e" + size.to_bytes(2, "big") + data
    return b"\x82\x7f" + size.to_bytes(8, "big") + data


_HEADS = [bytes((0x82, size)) for size in range(126)]  # FIN + binary, then a 7-bit length


def _offered(scope: object, name: str) -> object | None:
    """The callable a connection's ASGI scope offers as the extension ``name``, or None."""
    extensions = scope.get("extensions") if isinstance(scope, dict) else None
    found = extensions.get(name) if isinstance(extensions, dict) else None
    return found if callable(found) else None


def send_now_of(scope: object) -> Callable[[bytes], bool] | None:
    """The `send_now` a connection's ASGI scope offers, or None."""
    return cast(Callable[[bytes], bool] | None, _offered(scope, SEND_NOW))


def receive_now_of(scope: object) -> Receive | None:
    """The `receive_now` a connection's ASGI scope offers, or None."""
    return cast(Receive | None, _offered(scope, RECEIVE_NOW))


def protocol_for(name: str) -> str | type[asyncio.Protocol]:
    """What uvicorn's ``ws`` setting takes for the ``WS_IMPL`` setting ``name``."""
    if name == "websockets-sansio" and all(
            callable(getattr(WebSocketsSansIOProtocol, hook, None)) for hook in _HOOKS):
        return QuietPingProtocol
    return name
