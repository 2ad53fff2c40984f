"""`Rejected`: a request refused with a stable code; nothing was changed. Imports nothing."""

from __future__ import annotations


class Rejected(Exception):
    """A request refused with a stable ``code`` and plain-words ``message``; nothing changed.

    ``version`` is the table's current version when relevant (a stale move), ``status`` the
    HTTP status to use: 400 bad input, 403 bad token/invite, 404 unknown table, 409 conflict,
    503 unavailable.
    """

    code: str
    message: str
    version: int | None
    status: int

    def __init__(
        self, code: str, message: str, *, status: int = 400, version: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.version = version

    def __repr__(self) -> str:
        return f"Rejected({self.code!r}, {self.message!r}, status={self.status})"
