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

It also lets the server write a binary frame without the ASGI layers (`send_now`, offered to
the application as the scope extension ``SEND_NOW``): when the socket is open and its transport
is not paused, the frame is written at once, as uvicorn's own ``websocket.send`` would write it,
without a message dict, an awaited event and the middleware's wrappers; otherwise the caller
falls back to the ASGI ``send``, which waits for the transport.

Where the installed uvicorn lacks the hooks used here, its own protocol runs unchanged (and no
``SEND_NOW`` is offered). Imports nothing of the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.frames import Frame
from websockets.http11 import Request

__all__ = ["PROOF_INTERVALS", "SEND_NOW", "QuietPingProtocol", "protocol_for", "send_now_of"]

PROOF_INTERVALS = 4  # a talking socket still answers a ping at least this often (intervals)
_HOOKS = ("send_keepalive_ping", "schedule_ping", "handle_pong", "handle_bytes", "handle_text",
          "handle_connect")
_STATE = ("handshake_complete", "close_sent", "initial_response", "disconnected", "writable",
          "conn", "transport")
SEND_NOW = "dominoes.send_now"  # the scope extension: a callable (bytes) -> bool


class QuietPingProtocol(WebSocketsSansIOProtocol):
    heard = False  # a message arrived since the last ping time
    answered_at: float | None = None  # when the peer last answered a ping (loop time)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.answered_at = self.loop.time()  # a new peer counts as having answered

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None and all(hasattr(self, name) for name in _STATE):
            extensions = cast(dict[str, object], scope.setdefault("extensions", {}))
            extensions[SEND_NOW] = self.send_now

    def send_now(self, data: bytes) -> bool:
        """Write `data` as one binary frame now, if the handshake is done, no close was sent,
        the peer is connected and the transport takes more; False (nothing written) if not."""
        if not self.handshake_complete or self.close_sent or self.initial_response is not None \
                or self.disconnected or not self.writable.is_set() \
                or self.transport.is_closing():
            return False
        try:
            self.conn.send_binary(data)
        except InvalidState:
            return False
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True

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


def send_now_of(scope: object) -> Callable[[bytes], bool] | None:
    """The `send_now` a connection's ASGI scope offers, or None."""
    extensions = scope.get("extensions") if isinstance(scope, dict) else None
    found = extensions.get(SEND_NOW) if isinstance(extensions, dict) else None
    return cast(Callable[[bytes], bool], found) if callable(found) else None


def protocol_for(name: str) -> str | type[asyncio.Protocol]:
    """What uvicorn's ``ws`` setting takes for the ``WS_IMPL`` setting ``name``."""
    if name == "websockets-sansio" and all(
            callable(getattr(WebSocketsSansIOProtocol, hook, None)) for hook in _HOOKS):
        return QuietPingProtocol
    return name
