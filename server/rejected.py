"""`Rejected`: the one refusal of the whole server. Imports nothing.

Every request the server refuses -- an HTTP call, a websocket frame, a move, a hello -- is refused
by raising a `Rejected` (or a subclass: server.protocol.ProtocolError for a frame that breaks the
wire protocol). It is turned into an answer in exactly two places: the HTTP error body (server.app,
server.lobby `refusal_response`) and the websocket `error` / `rejected` frame (server.ws). Nothing
was changed by a refused request.
"""

from __future__ import annotations


class Rejected(Exception):
    """A request refused with a stable ``code`` and a plain-words ``message``; nothing changed.

    ``status`` is the HTTP status to answer with: 400 bad input, 401 not logged in, 403 bad
    token/origin, 404 unknown table, 409 conflict, 413 too large, 415 bad media type, 429 rate
    limited, 503 unavailable. ``version`` is the table's version the refusal was decided at
    (a stale move: the current one; a rule refusal: the one the rules were checked against),
    None when the table was not read. ``retry_after`` (seconds), when set, is sent as HTTP
    `Retry-After`; on a websocket, an `unavailable` refusal with one means "this process is
    full, reconnect" (close 1001) rather than "storage is down" (close 1011).
    """

    code: str
    message: str
    version: int | None
    status: int
    retry_after: int | None

    def __init__(
        self, code: str, message: str, *, status: int = 400, version: int | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.version = version
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"Rejected({self.code!r}, {self.message!r}, status={self.status})"


def unavailable(message: str = "storage unavailable, try again") -> Rejected:
    """Storage (Redis) did not answer."""
    return Rejected("unavailable", message, status=503)


def server_full() -> Rejected:
    """This process already serves as many tables as it may (MAX_TABLES_PER_PROCESS): another
    process (or this one, later) may take the connection."""
    return Rejected("unavailable", "this server is full, reconnect", status=503, retry_after=1)
