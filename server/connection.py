"""One websocket connection's outgoing side: a bounded send queue drained by a writer task.

Owns: the close codes, the per-connection queue and the rule that the server never waits on a
slow client (queue full -> close 4003). Must not import tables, the hub or the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from enum import IntEnum

import msgpack
from starlette.websockets import WebSocket

from server.metrics import Metrics


class Close(IntEnum):
    NORMAL = 1000
    GOING_AWAY = 1001
    POLICY = 1008
    TOO_BIG = 1009
    INTERNAL = 1011
    REPLACED = 4000
    UNKNOWN_TABLE = 4001
    BAD_TOKEN = 4002
    TOO_SLOW = 4003
    RATE_LIMIT = 4004


_ids = itertools.count(1)
_samples = itertools.count()


def pack(message: dict[str, object]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


class Connection:
    """A seat's or a spectator's socket, as the hub and the handler see it.

    Frames wait in a short list (at most `limit`). A writer task exists only while there is
    something to send: it is started in the session's task group when frames arrive and ends
    when the list is empty, so an idle socket costs no task (and no asyncio.Queue, ~3 KB)."""

    __slots__ = (
        "audience", "close_reason", "closing", "finished", "grace_s", "group", "id", "limit",
        "metrics", "pending", "seat", "table", "version", "watchdog", "websocket", "writer",
    )

    def __init__(self, websocket: WebSocket, metrics: Metrics, limit: int) -> None:
        self.websocket = websocket
        self.metrics = metrics
        self.limit = limit
        self.table = ""
        self.seat: int | None = None
        self.audience = ""
        self.version = -1  # last version queued to this client
        self.id = next(_ids)
        self.closing: Close | None = None
        self.close_reason = ""
        self.pending: list[bytes | list[bytes]] = []
        self.group: asyncio.TaskGroup | None = None  # the session's, while it runs
        self.writer: asyncio.Task[None] | None = None
        self.finished = False
        # Called when a requested close has not completed in time (a peer that reads nothing).
        self.watchdog: Callable[[], None] | None = None
        self.grace_s = 5.0

    def _wake(self) -> None:
        if self.writer is None and self.group is not None:
            self.writer = self.group.create_task(self._drain())

    def send_nowait(self, frame: bytes) -> bool:
        """Queue one encoded frame; a full queue closes the connection (4003). Never waits."""
        if self.closing is not None:
            return False
        depth = len(self.pending)
        if depth or next(_samples) % 16 == 0:  # every backlog, and one idle frame in 16
            self.metrics.send_queue_depth.observe(depth)
        if depth >= self.limit:
            self.close_soon(Close.TOO_SLOW, "send queue full")
            return False
        self.pending.append(frame)
        self._wake()
        return True

    def send_batch(self, frames: list[bytes]) -> bool:
        """Queue frames that must go out together (a resume's history) as ONE queue item: a
        gap of any length fits, while live traffic stays bounded by the queue."""
        if self.closing is not None:
            return False
        if len(self.pending) >= self.limit:
            self.close_soon(Close.TOO_SLOW, "send queue full")
            return False
        self.pending.append(frames)
        self._wake()
        return True

    def send_message(self, message: dict[str, object]) -> bool:
        return self.send_nowait(pack(message))

    def close_soon(self, code: Close, reason: str = "") -> None:
        """Ask the writer to close the socket after what is already queued (at once if too slow)."""
        if self.closing is not None:
            return
        self.closing = code
        self.close_reason = reason
        self.metrics.closes.labels(code=str(int(code))).inc()
        if code == Close.TOO_SLOW:
            self.pending.clear()  # a slow client resumes with `since` instead
        self._wake()
        asyncio.get_running_loop().call_later(self.grace_s, self._expire)

    def _expire(self) -> None:
        if not self.finished and self.watchdog is not None:
            self.watchdog()

    async def _drain(self) -> None:
        """Send what is queued, in order; once a close is requested and sent, close the socket."""
        try:
            while self.pending:
                item = self.pending.pop(0)
                try:
                    for frame in item if isinstance(item, list) else (item,):
                        await self.websocket.send_bytes(frame)
                except Exception:  # the peer is gone; nothing more can be sent
                    self.closing = self.closing or Close.NORMAL
                    self.pending.clear()
                    return
            if self.closing is not None:
                # The peer may be gone already (Starlette raises WebSocketDisconnect, uvicorn
                # ClientDisconnected, RuntimeError after a close): closing is then done.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        self.websocket.close(int(self.closing), self.close_reason), 2.0
                    )
                self.group = None  # nothing is sent after the close
        finally:
            self.writer = None
