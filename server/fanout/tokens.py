"""Seat tokens at delivery: a seat's socket is never sent what a version that replaced its
token carries, nor a snapshot once its token no longer holds the seat.

Owns: the checks before a seat's socket is sent a catch-up or a snapshot, the revocation of
sockets among a batch of frames, and the `seat_left` close (4005).
"""

from __future__ import annotations

from server import protocol
from server.connection import Close, Connection
from server.rejected import Rejected
from server.seams import TableFeed
from server.store import Frames


def seat_left(conn: Connection) -> None:
    conn.send_message(protocol.error(
        "seat_left", "this seat's token is no longer valid: the seat was left"))
    conn.close_soon(Close.SEAT_LEFT, "seat left")


def revoke(conns: list[Connection], frames: Frames) -> list[Connection]:
    """Close the seat sockets whose token a version among ``frames`` replaced (before any
    such version reaches them); the others, to deliver to."""
    if frames.revoked_at is None:
        return conns
    keep = []
    for conn in conns:
        if conn.token_version < frames.revoked_at:
            seat_left(conn)
        else:
            keep.append(conn)
    return keep


class SeatTokens:
    """Checks of a seat socket's token against the table's current one."""

    def __init__(self, service: TableFeed) -> None:
        self.service = service

    async def check(self, conn: Connection, version: int) -> None:
        """Before a seat's socket is sent what was read at ``version``: its token must still
        hold the seat (read after that version, so a change of token at or before it shows).
        Its token is then known good up to ``version``; later changes come with the history."""
        if conn.seat is None:
            return
        if not await self.service.token_current(conn.table, conn.seat, conn.token_hash):
            raise Rejected("seat_left", "this seat's token is no longer valid: the seat was left",
                           status=403)
        conn.token_version = max(conn.token_version, version)

    async def still_holds(self, conn: Connection) -> bool:
        """For a seat's socket about to be sent a snapshot: whether its token still holds the
        seat (a snapshot carries no history that could say otherwise)."""
        if conn.seat is None:
            return True
        if await self.service.token_current(conn.table, conn.seat, conn.token_hash):
            return True
        seat_left(conn)
        return False
