"""The websocket protocol the server runs under uvicorn: uvicorn's sans-I/O one, with pings only
for sockets that have gone quiet.

uvicorn pings every socket every ``WS_PING_INTERVAL_S`` and drops one that does not answer
within ``WS_PING_TIMEOUT_S``. A message the client has just sent already shows that it is there,
so a socket that sent one since the last ping time is not pinged: its next ping time is one
interval later. A socket that has sent nothing for a whole interval is pinged as before (and a
peer that is gone is dropped at most one interval later than with a ping every interval).
Players who move and chat cost no pings; silent spectators are pinged as before.

Only messages count, not the peer's pongs, so an idle socket is pinged every interval. If a
future uvicorn renames the methods used here, every socket is simply pinged every interval
again. Imports nothing of the server.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["QuietPingProtocol", "protocol_for"]


class QuietPingProtocol(WebSocketsSansIOProtocol):
    heard = False  # a message arrived since the last ping time

    def handle_bytes(self, event: Any) -> None:
        self.heard = True
        super().handle_bytes(event)

    def handle_text(self, event: Any) -> None:
        self.heard = True
        super().handle_text(event)

    def send_keepalive_ping(self) -> None:
        if self.heard and self.pending_ping_payload is None:
            self.heard = False
            self.ping_timer = None
            self.schedule_ping()
            return
        super().send_keepalive_ping()


def protocol_for(name: str) -> str | type[Any]:
    """What uvicorn's ``ws`` setting takes for the ``WS_IMPL`` setting ``name``."""
    return QuietPingProtocol if name == "websockets-sansio" else name
