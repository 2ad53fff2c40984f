"""Who is asking: a logged-in account (the ``session`` cookie) or a guest (the ``guest``
cookie), for binding seats to people (docs/players.md "Guests and seats").

Owns: the two cookies, the session lookup, and identity keys -- ``p:<player id>`` for an
account, ``g:<32 hex>`` for a guest (the first half of the SHA-256 of its cookie: the server
stores no guest, and the key never leaves the server). Must not import the engine.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.db import DB_DOWN, Pool
from server.rejected import Rejected
from server.seams import AppState, app_state
from server.store import player_key

SESSION_COOKIE = "session"
GUEST_COOKIE = "guest"
_GUEST_VALUE = re.compile(r"[A-Za-z0-9_-]{43}")  # token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Identity:
    key: str  # "p:<id>" or "g:<hex>"
    player_id: int | None = None
    username: str | None = None
    # A guest only because the request's session could not be checked (PostgreSQL down).
    unchecked: bool = False

    @property
    def guest(self) -> bool:
        return self.player_id is None


def guest_key(cookie: str) -> str:
    return "g:" + hashlib.sha256(cookie.encode()).hexdigest()[:32]


def session_hash(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


def changing(request: Request) -> None:
    """A cookie-authenticated change must come as JSON from an allowed page: a cross-site form
    cannot send Content-Type: application/json, and the Guard middleware has already refused
    an Origin that does not match; here the Origin must also be present."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise Rejected("unsupported_media_type",
                       "changes must be sent as Content-Type: application/json", status=415)
    if not request.headers.get("origin"):
        raise Rejected("bad_origin", "changes need the Origin header of the page", status=403)


def unavailable() -> Rejected:
    return Rejected("unavailable", "accounts are unavailable, try again later", status=503)


def pool(state: AppState) -> Pool:
    """The PostgreSQL pool, or 503 ``unavailable`` while the database is down."""
    found = state.postgres.pool
    if found is None:
        raise unavailable()
    return found


async def current_player(request: Request) -> tuple[dict[str, Any], bytes]:
    """The logged-in player (id, username, created_at) and the hash of its session id."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id:
        raise Rejected("not_logged_in", "log in first", status=401)
    digest = session_hash(session_id)
    row = await pool(app_state(request.app)).fetchrow(
        "SELECT p.id, p.username, p.created_at FROM sessions s JOIN players p "
        "ON p.id = s.player_id WHERE s.id_hash = $1 AND s.expires_at > now()", digest)
    if row is None:
        raise Rejected("session_expired", "the session has expired or ended; log in again",
                       status=401)
    return dict(row), digest


async def identify(request: Request) -> Identity | None:
    """The account whose live session the request carries, else its guest identity, else
    None (a first visit). An expired session falls back to the guest cookie, and so does a
    session that cannot be checked while PostgreSQL is down (``unchecked``): casual tables
    keep working for everyone."""
    unchecked = False
    if request.cookies.get(SESSION_COOKIE):
        try:
            player, _ = await current_player(request)
        except Rejected as rej:
            if rej.code not in ("session_expired", "unavailable"):
                raise
            unchecked = rej.code == "unavailable"
        except DB_DOWN:
            unchecked = True
        else:
            return Identity(player_key(player["id"]), player["id"], player["username"])
    cookie = request.cookies.get(GUEST_COOKIE)
    if cookie is not None and _GUEST_VALUE.fullmatch(cookie):
        return Identity(guest_key(cookie), unchecked=unchecked)
    return None if not unchecked else Identity("", unchecked=True)  # no guest yet (Visitor)


def guest_of(request: Request) -> str | None:
    """The guest key of the request's guest cookie, logged in or not."""
    cookie = request.cookies.get(GUEST_COOKIE)
    if cookie is None or not _GUEST_VALUE.fullmatch(cookie):
        return None
    return guest_key(cookie)


class Visitor:
    """The identity of a request, making a guest of a first visit: `respond` then sets the new
    guest's cookie on the response."""

    def __init__(self, identity: Identity | None) -> None:
        self._new_cookie: str | None = None
        if identity is None or not identity.key:
            self._new_cookie = secrets.token_urlsafe(32)
            identity = Identity(guest_key(self._new_cookie),
                                unchecked=identity is not None and identity.unchecked)
        self.identity = identity

    @classmethod
    async def of(cls, request: Request) -> Visitor:
        return cls(await identify(request))

    def respond(self, request: Request, response: Response) -> Response:
        if self._new_cookie is not None:
            settings = app_state(request.app).settings
            response.set_cookie(
                GUEST_COOKIE, self._new_cookie, max_age=int(settings.guest_ttl_s), path="/",
                httponly=True, samesite="lax", secure=request.url.scheme in ("https", "wss"))
        return response
