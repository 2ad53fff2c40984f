"""One websocket connection's outgoing side: a send queue bounded in frames and in bytes,
drained by a writer task, or written at once when nothing waits.

Owns: the per-connection queue and its rules (the close codes and the frames themselves are
server.protocol's; `Close` and `pack` are re-exported here). The server never waits on a slow
client. Answers (welcome, snapshot, diff, accepted, rejected, error, pong) are never dropped: a
queue too full for one closes the connection (4003). Chat lines are dropped for a socket whose
queue is filling (and evicted to make room for an answer), so chat never closes anyone. Presence
is coalesced: only the latest frame waits, and goes out once the queue is empty. A long history
is queued chunk by chunk as the socket drains (`replay`). Must not import tables, the hub or the
engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.websockets import WebSocket

from server.fairness import client_key
from server.keepalive import send_now_of
from server.logs import event
from server.metrics import Metrics
from server.protocol import Close, pack

__all__ = ["ANSWER", "CHAT", "Close", "Connection", "pack"]

_ids = itertools.count(1)
_samples = itertools.count()

ANSWER, CHAT = 0, 1  # the kinds of queued frames: never dropped / dropped when filling


class Connection:
    """A seat's or a spectator's socket, as the hub and the handler see it.

    Frames wait in a short list: at most `limit` frames, and no new answer once `byte_limit`
    bytes wait (so the list holds at most `byte_limit` plus one frame). A writer task exists
    only while there is something to send: it is started in the session's task group when
    frames arrive and ends when the list is empty, so an idle socket costs no task (and no
    asyncio.Queue, ~3 KB). An answer that finds the list empty and no writer running is
    written at once instead, when the server's websocket protocol offers it (keepalive.SEND_NOW)
    and the transport takes it: the same order, without a task. Chat always waits in the list,
    so a burst of chat is still thinned for a socket that falls behind."""

    __slots__ = (
        "address", "audience", "byte_limit", "close_reason", "closing", "direct", "finished",
        "grace_s",
        "group", "id", "limit", "metrics", "pending", "presence", "queued", "refill", "seat",
        "sync_at", "sync_since", "table", "token_hash", "token_version", "version", "watchdog",
        "websocket", "writer",
    )

    def __init__(self, websocket: WebSocket, metrics: Metrics, limit: int,
                 byte_limit: int = 65536) -> None:
        self.websocket = websocket
        self.metrics = metrics
        self.limit = limit
        self.byte_limit = byte_limit
        self.address = client_key(getattr(websocket, "client", None))  # its per-address key
        self.table = ""
        self.seat: int | None = None
        # A seat's socket: the hash of the token it authenticated with, and the version at
        # which that token was checked. A later version that changes the seat's token closes it.
        self.token_hash = ""
        self.token_version = 0
        self.audience = ""
        self.version = -1  # last version queued to this client
        self.id = next(_ids)
        self.closing: Close | None = None
        self.close_reason = ""
        self.pending: list[tuple[bytes, int]] = []  # (frame, ANSWER or CHAT)
        self.queued = 0  # bytes in `pending`
        self.presence: bytes | None = None  # the latest presence frame not sent yet
        # Set while a history is replayed: queues its next chunk (called when the queue is empty).
        self.refill: Callable[[], Awaitable[None]] | None = None
        self.sync_at = -1e9  # when a sync was last answered (time.monotonic)
        self.sync_since: int | None = None  # the lowest `since` of syncs waiting for the cooldown
        self.group: asyncio.TaskGroup | None = None  # the session's, while it runs
        self.writer: asyncio.Task[None] | None = None
        # Writes one frame at once, or says it cannot (False): keepalive.QuietPingProtocol's.
        self.direct = send_now_of(getattr(websocket, "scope", None))
        self.finished = False
        # Called when a requested close has not completed in time (a peer that reads nothing).
        self.watchdog: Callable[[], None] | None = None
        self.grace_s = 5.0

    @property
    def chunk_frames(self) -> int:
        """The most frames of a history queued at once: half the queue."""
        return max(1, self.limit // 2)

    @property
    def chunk_bytes(self) -> int:
        """The most bytes of a history queued at once: half the queue."""
        return max(1, self.byte_limit // 2)

    def _wake(self) -> None:
        if self.writer is None and self.group is not None:
            self.writer = self.group.create_task(self._drain())

    def _sample(self) -> None:
        depth = len(self.pending)
        if depth or next(_samples) % 16 == 0:  # every backlog, and one idle frame in 16
            self.metrics.send_queue_depth.observe(depth)
            self.metrics.send_queue_bytes.observe(self.queued)

    def _send_now(self, frame: bytes) -> bool:
        """Write `frame` at once if nothing is waiting or being written before it."""
        return (self.writer is None and not self.pending and self.group is not None
                and self.refill is None and self.direct is not None and self.direct(frame))

    def has_room(self, frames: int, size: int) -> bool:
        """Whether `frames` answers of `size` bytes in all fit without dropping anything (an
        empty queue takes them whatever their size)."""
        return not self.pending or (len(self.pending) + frames <= self.limit
                                    and self.queued + size <= self.byte_limit)

    def _full(self) -> bool:
        return len(self.pending) >= self.limit or self.queued >= self.byte_limit

    def _filling(self) -> bool:
        return len(self.pending) >= self.limit // 2 or self.queued >= self.byte_limit // 2

    def send_nowait(self, frame: bytes) -> bool:
        """Queue one answer (never dropped). A queue too full for it, even without its chat
        lines, closes the connection (4003). Never waits."""
        if self.closing is not None:
            return False
        self._sample()
        if self._send_now(frame):
            return True
        if self._full():
            self._evict_chat()
            if self._full():
                self.close_soon(Close.TOO_SLOW, "send queue full")
                return False
        self.pending.append((frame, ANSWER))
        self.queued += len(frame)
        self._wake()
        return True

    def send_chat(self, frame: bytes, *, always: bool = False) -> bool:
        """Queue a chat line, unless the queue is filling (half full in frames or bytes): then it
        is dropped (and counted). `always`: queue it anyway (the recent lines replayed on hello,
        at most RECENT_CHAT). Never closes the connection."""
        if self.closing is not None:
            return False
        self._sample()
        if not always and self._filling():
            self.metrics.frames_dropped.labels(kind="chat").inc()
            return False
        self.pending.append((frame, CHAT))
        self.queued += len(frame)
        self._wake()
        return True

    def send_presence(self, frame: bytes) -> None:
        """Make `frame` the presence to send once the queue is empty (it replaces one that is
        still waiting: presence is not versioned, the latest wins)."""
        if self.closing is not None:
            return
        if self.presence is not None:
            self.metrics.frames_dropped.labels(kind="presence").inc()
        self.presence = frame
        self._wake()

    def _evict_chat(self) -> None:
        """Drop the oldest queued chat lines until the queue has room for an answer."""
        kept: list[tuple[bytes, int]] = []
        dropped = 0
        for item in self.pending:
            full = len(self.pending) - dropped >= self.limit or self.queued >= self.byte_limit
            if item[1] == CHAT and full:
                self.queued -= len(item[0])
                dropped += 1
                continue
            kept.append(item)
        if dropped:
            self.metrics.frames_dropped.labels(kind="chat").inc(dropped)
            self.pending = kept

    def send_message(self, message: Mapping[str, object]) -> bool:
        """Queue one answer built by server.protocol (`send_nowait` of its bytes)."""
        return self.send_nowait(pack(message))

    def replay(self, refill: Callable[[], Awaitable[None]] | None) -> None:
        """While `refill` is set, the writer awaits it each time the queue runs empty; it queues
        the next chunk of a history and clears `refill` (`replay(None)`) after the last."""
        self.refill = refill
        if refill is not None and self.closing is None:
            self._wake()

    def close_soon(self, code: Close, reason: str = "") -> None:
        """Ask the writer to close the socket after what is already queued (at once if too slow)."""
        if self.closing is not None:
            return
        self.closing = code
        self.close_reason = reason
        self.refill = None
        self.presence = None
        self.metrics.closes.labels(code=str(int(code))).inc()
        if code == Close.TOO_SLOW:
            self.pending.clear()  # a slow client resumes with `since` instead
            self.queued = 0
        self._wake()
        asyncio.get_running_loop().call_later(self.grace_s, self._expire)

    def _expire(self) -> None:
        if not self.finished and self.watchdog is not None:
            self.watchdog()

    async def _drain(self) -> None:
        """Send what is queued, in order, then the waiting presence, then the next chunk of a
        history being replayed; once a close is requested and sent, close the socket."""
        try:
            while True:
                if self.pending:
                    frame, _ = self.pending.pop(0)
                    self.queued -= len(frame)
                elif self.closing is None and self.presence is not None:
                    frame, self.presence = self.presence, None
                elif self.closing is None and self.refill is not None:
                    await self._refill(self.refill)
                    continue
                else:
                    break
                try:
                    await self.websocket.send_bytes(frame)
                except Exception:  # the peer is gone; nothing more can be sent
                    self.closing = self.closing or Close.NORMAL
                    self.pending.clear()
                    self.queued = 0
                    self.refill = self.presence = None
                    return
            if self.closing is not None:
                # The peer may be gone already (Starlette raises WebSocketDisconnect, uvicorn
                # ClientDisconnected, RuntimeError after a close): closing is then done. (A
                # timeout, not wait_for: its inner task would keep the exception, and the
                # exception's frames that task, in a cycle for the garbage collector.)
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(2.0):
                        await self.websocket.close(int(self.closing), self.close_reason)
                self.group = None  # nothing is sent after the close
        finally:
            self.writer = None

    async def _refill(self, refill: Callable[[], Awaitable[None]]) -> None:
        try:
            await refill()
        except Exception:  # the hub answers its own errors; anything else ends the replay
            event("replay failed", level=logging.ERROR, exc=True, conn=self.id)
            self.refill = None
            self.close_soon(Close.INTERNAL, "internal error")
            return
        if self.refill is refill and not self.pending:
            self.refill = None  # a chunk that queued nothing: stop rather than spin
