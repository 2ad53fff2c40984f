"""The websocket protocol the server runs under uvicorn: uvicorn's sans-I/O one, with fewer
pings for sockets whose clients talk.

uvicorn pings every socket every ``WS_PING_INTERVAL_S`` and drops one that does not answer
within ``WS_PING_TIMEOUT_S``. A message the client has just sent shows that it is there, so
such a socket is not pinged at its ping time (the next one is an interval later), as long as
nothing waits in its write buffer and it answered a ping within the last `PROOF_INTERVALS`
intervals: a client that sends but does not read is still pinged (it cannot answer) and
dropped, at most that many intervals later than with a ping every interval. Players who move
and chat are pinged once every `PROOF_INTERVALS` intervals instead of every interval; silent
sockets (spectators) every interval, as before.

Where the installed uvicorn lacks the hooks used here, its own protocol runs unchanged.
Imports nothing of the server.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame

__all__ = ["PROOF_INTERVALS", "QuietPingProtocol", "protocol_for"]

PROOF_INTERVALS = 4  # a talking socket still answers a ping at least this often (intervals)
_HOOKS = ("send_keepalive_ping", "schedule_ping", "handle_pong", "handle_bytes", "handle_text")


class QuietPingProtocol(WebSocketsSansIOProtocol):
    heard = False  # a message arrived since the last ping time
    answered_at: float | None = None  # when the peer last answered a ping (loop time)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.answered_at = self.loop.time()  # a new peer counts as having answered

    def handle_bytes(self, event: Frame) -> None:
        self.heard = True
        super().handle_bytes(event)

    def handle_text(self, event: Frame) -> None:
        self.heard = True
        super().handle_text(event)

    def handle_pong(self, event: Frame) -> None:
        waiting = getattr(self, "pending_ping_payload", None)
        super().handle_pong(event)
        if waiting is not None and getattr(self, "pending_ping_payload", None) is None:
            self.answered_at = self.loop.time()  # the pong of the ping in flight

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


def protocol_for(name: str) -> str | type[asyncio.Protocol]:
    """What uvicorn's ``ws`` setting takes for the ``WS_IMPL`` setting ``name``."""
    if name == "websockets-sansio" and all(
            callable(getattr(WebSocketsSansIOProtocol, hook, None)) for hook in _HOOKS):
        return QuietPingProtocol
    return name
