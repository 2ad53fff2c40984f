"""One websocket connection's outgoing side: a bounded send queue drained by a writer task.

Owns: the close codes, the per-connection queue and the rule that the server never waits on a
slow client (queue full -> close 4003). Must not import tables, the hub or the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass, field
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


def pack(message: dict[str, object]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


@dataclass(eq=False)
class Connection:
    """A seat's or a spectator's socket, as the hub and the handler see it."""

    websocket: WebSocket
    metrics: Metrics
    limit: int
    table: str = ""
    seat: int | None = None
    audience: str = ""
    version: int = -1  # last version queued to this client
    id: int = field(default_factory=lambda: next(_ids))
    closing: Close | None = None
    close_reason: str = ""
    queue: asyncio.Queue[bytes | list[bytes] | None] = field(init=False)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(maxsize=self.limit)

    def send_nowait(self, frame: bytes) -> bool:
        """Queue one encoded frame; a full queue closes the connection (4003). Never waits."""
        if self.closing is not None:
            return False
        self.metrics.send_queue_depth.observe(self.queue.qsize())
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:
            self.close_soon(Close.TOO_SLOW, "send queue full")
            return False
        return True

    def send_batch(self, frames: list[bytes]) -> bool:
        """Queue frames that must go out together (a resume's history) as ONE queue item: a
        gap of any length fits, while live traffic stays bounded by the queue."""
        if self.closing is not None:
            return False
        try:
            self.queue.put_nowait(frames)
        except asyncio.QueueFull:
            self.close_soon(Close.TOO_SLOW, "send queue full")
            return False
        return True

    def send_message(self, message: dict[str, object]) -> bool:
        return self.send_nowait(pack(message))

    def close_soon(self, code: Close, reason: str = "") -> None:
        """Ask the writer to close the socket after what is already queued (or at once if full)."""
        if self.closing is not None:
            return
        self.closing = code
        self.close_reason = reason
        self.metrics.closes.labels(code=str(int(code))).inc()
        if code == Close.TOO_SLOW:
            # Drop what a slow client has not taken; it resumes with `since`.
            while not self.queue.empty():
                self.queue.get_nowait()
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            self.queue.get_nowait()
            self.queue.put_nowait(None)
        self.closed.set()

    async def run_writer(self) -> None:
        """Send queued frames in order until a close is requested; then close the socket."""
        while True:
            frame = await self.queue.get()
            if frame is None:
                break
            try:
                for one in frame if isinstance(frame, list) else [frame]:
                    await self.websocket.send_bytes(one)
            except Exception:  # the peer is gone; nothing more can be sent
                self.closing = self.closing or Close.NORMAL
                self.closed.set()
                return
        code = self.closing or Close.NORMAL
        with contextlib.suppress(TimeoutError, RuntimeError, OSError):
            await asyncio.wait_for(self.websocket.close(int(code), self.close_reason), 2.0)
