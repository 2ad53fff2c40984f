"""Player accounts and login sessions over HTTP (docs/players.md), stored in PostgreSQL.

Owns: registration, log in / log out, the session cookie, password changes and account
deletion, the login limits (every password check and every failed one, counted in Redis,
shared by every process) and the cap on sessions per account. Passwords are hashed with
argon2id off the event loop; a session id is random, sent only in an HttpOnly cookie and
stored as its SHA-256. Must not import the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # ships no type hints
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server import player_stats, ratings, text
from server.archive import DELETED_PLAYER
from server.db import DB_DOWN, Pool, Queries
from server.fairness import client_key
from server.identity import (
    GUEST_COOKIE,
    SESSION_COOKIE,
    changing,
    current_player,
    guest_of,
    pool,
    session_hash,
    unavailable,
)
from server.lobby import read_json
from server.players import taken_by_a_lookalike
from server.rejected import Rejected
from server.seams import AppState, app_state
from server.settings import Settings
from server.store import player_key, publish_sessions_ended
from server.text import USERNAME

COOKIE = SESSION_COOKIE
MIN_PASSWORD = 8
MAX_PASSWORD = 1024
# pg_advisory_xact_lock key held while a registration checks its name and inserts it: any
# 64-bit number no other code uses.
REGISTRATION_LOCK = 0x6E616D6573  # "names"

_hasher = PasswordHasher()  # argon2id, the library's recommended parameters
_hashing = asyncio.Semaphore(4)  # each hash takes ~64 MiB and a core for a moment
_dummy_hash: str | None = None

Handler = Callable[[Request], Awaitable[Response]]


# ---- passwords -------------------------------------------------------------------------------

async def hash_password(password: str) -> str:
    async with _hashing:
        return await asyncio.to_thread(_hasher.hash, password)


async def verify_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored``; with no stored hash (unknown user) a dummy hash
    is verified instead, so that both answers take about the same time."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = await hash_password(secrets.token_urlsafe(16))
    async with _hashing:
        try:
            return await asyncio.to_thread(_hasher.verify, stored or _dummy_hash, password) \
                and stored is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False


def check_username(value: object) -> str:
    if not isinstance(value, str):
        raise Rejected("bad_request", '"username" must be a string', status=400)
    if not USERNAME.fullmatch(value):
        raise Rejected("invalid_username", "a username is 3 to 20 letters, digits, _ or -",
                       status=400)
    if text.bot_like(value) or text.reserved(value):
        raise Rejected("reserved_username", "that username is reserved", status=400)
    return value


def check_new_password(value: object, username: str) -> str:
    if not isinstance(value, str):
        raise Rejected("bad_request", '"password" must be a string', status=400)
    if len(value) < MIN_PASSWORD:
        raise Rejected("weak_password",
                       f"a password has at least {MIN_PASSWORD} characters", status=400)
    if len(value) > MAX_PASSWORD:
        raise Rejected("weak_password", f"a password has at most {MAX_PASSWORD} characters",
                       status=400)
    if value.casefold() == username.casefold():
        raise Rejected("weak_password", "the password must not be the username", status=400)
    return value


def _string(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise Rejected("bad_request", f'"{key}" must be a string', status=400)
    return value


# ---- plumbing --------------------------------------------------------------------------------

def _state(request: Request) -> AppState:
    return app_state(request.app)


def _db(request: Request) -> Pool:
    return pool(_state(request))


def players_api(handler: Handler) -> Handler:
    """A route whose database failure is answered 503 ``unavailable``."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except DB_DOWN as exc:
            raise unavailable() from exc

    return wrapped


def _settings(request: Request) -> Settings:
    return _state(request).settings


def _set_cookie(request: Request, response: Response, session_id: str) -> None:
    response.set_cookie(
        COOKIE, session_id, max_age=int(_settings(request).session_ttl_s), path="/",
        httponly=True, samesite="lax", secure=request.url.scheme in ("https", "wss"),
    )


def _clear_cookie(request: Request, response: Response, name: str = COOKIE) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite="lax",
                           secure=request.url.scheme in ("https", "wss"))


async def _new_session(request: Request, conn: Queries, player_id: int) -> tuple[str, bool]:
    """A new session of the player: its id, and whether live sessions of the player ended to
    make room for it (the caller then tells their sockets, `_sessions_ended`). The player keeps
    at most MAX_SESSIONS_PER_ACCOUNT live sessions, the newest; the oldest beyond it end, and
    expired ones are deleted. Each login trims after its own insert, so once concurrent logins
    are done the cap holds."""
    settings = _settings(request)
    session_id = secrets.token_urlsafe(32)
    digest = session_hash(session_id)
    await conn.execute(
        "INSERT INTO sessions (id_hash, player_id, expires_at) "
        "VALUES ($1, $2, now() + make_interval(secs => $3))",
        digest, player_id, settings.session_ttl_s)
    gone = await conn.fetch(
        "DELETE FROM sessions WHERE player_id = $1 AND id_hash <> $2 AND ("
        "expires_at <= now() OR id_hash NOT IN ("
        "SELECT id_hash FROM sessions WHERE player_id = $1 AND id_hash <> $2 "
        "AND expires_at > now() ORDER BY created_at DESC, expires_at DESC LIMIT $3)) "
        "RETURNING expires_at > now() AS live",
        player_id, digest, settings.max_sessions_per_account - 1)
    return session_id, any(row["live"] for row in gone)


def _me(player: dict[str, Any]) -> dict[str, Any]:
    return {"id": player["id"], "username": player["username"],
            "created_at": player["created_at"].isoformat()}


# ---- login limits ----------------------------------------------------------------------------

class LoginLimits:
    """The limits on checking a password, counted in Redis (shared by every process) per
    account name and per client address over LOGIN_WINDOW_S: failed checks
    (LOGIN_FAILURES_PER_ACCOUNT / _PER_ADDRESS) and, whatever their outcome, all checks, each
    an argon2id verification (LOGINS_PER_ACCOUNT / _PER_ADDRESS). Once one is spent, password
    checks for it are answered 429 ``too_many_attempts`` (the right password too) until its
    window ends."""

    def __init__(self, request: Request, username: str) -> None:
        settings = _settings(request)
        self.redis = _state(request).redis
        self.store = _state(request).service.store
        self.window = max(1, int(settings.login_window_s))
        name = hashlib.sha256(username.casefold().encode()).hexdigest()[:32]
        address = client_key(request.client)
        self.keys = ((f"login:fail:a:{name}", settings.login_failures_per_account),
                     (f"login:fail:ip:{address}", settings.login_failures_per_address))
        # the address first: an address past its budget spends none of the account's
        self.tries = ((f"login:ip:{address}", settings.logins_per_address),
                      (f"login:a:{name}", settings.logins_per_account))

    async def check(self) -> None:
        for key, limit in self.keys:
            count = await self.redis.get(key)
            if count is not None and int(count) >= limit:
                ttl = await self.redis.ttl(key)
                raise Rejected("too_many_attempts", "too many failed logins; try again later",
                               status=429, retry_after=max(1, int(ttl)))

    async def attempt(self) -> None:
        """Count one password check (fixed windows, `Store.hit`), right or wrong; over the
        address's or the account's budget: 429, and no argon2id work is done."""
        for key, limit in self.tries:
            count, left = await self.store.hit(key, self.window)
            if count > limit:
                raise Rejected("too_many_attempts", "too many logins; try again later",
                               status=429, retry_after=left)

    async def failed(self) -> None:
        for key, _ in self.keys:
            if int(await self.redis.incr(key)) == 1:
                await self.redis.expire(key, self.window)

    async def succeeded(self) -> None:
        await self.redis.delete(self.keys[0][0])


async def _registration_budget(request: Request) -> None:
    """Each registration costs an argon2id hash: REGISTRATIONS_PER_ADDRESS per window."""
    settings = _settings(request)
    address = client_key(request.client)
    key = f"register:ip:{address}"
    redis = _state(request).redis
    count = int(await redis.incr(key))
    if count == 1:
        await redis.expire(key, max(1, int(settings.login_window_s)))
    if count > settings.registrations_per_address:
        ttl = int(await redis.ttl(key))
        raise Rejected("rate_limited", "too many accounts made from this address",
                       status=429, retry_after=max(1, ttl))


async def _check_password(request: Request, username: str, password: str,
                          stored: str | None) -> None:
    """Verify a login (or a re-entered password) under the login limits: a name or an address
    locked out by its failures is refused first, then the check is counted, then verified."""
    limits = LoginLimits(request, username)
    await limits.check()
    await limits.attempt()
    if not await verify_password(stored, password):
        await limits.failed()
        raise Rejected("wrong_credentials", "wrong username or password", status=401)
    await limits.succeeded()


# ---- routes ----------------------------------------------------------------------------------

@players_api
async def register(request: Request) -> Response:
    body = await read_json(request)
    username = check_username(body.get("username"))
    password = check_new_password(body.get("password"), username)
    pool = _db(request)
    await _registration_budget(request)
    digest = await hash_password(password)
    async with pool.acquire() as conn, conn.transaction():
        # one registration at a time checks and inserts, so two lookalikes made at once
        # cannot both pass
        await conn.execute("SELECT pg_advisory_xact_lock($1)", REGISTRATION_LOCK)
        if await taken_by_a_lookalike(conn, username):
            raise Rejected("username_taken", "that username is taken, or one drawn like it",
                           status=409)
        try:
            row = await conn.fetchrow(
                "INSERT INTO players (username, password_hash) VALUES ($1, $2) "
                "RETURNING id, username, created_at", username, digest)
        except asyncpg.UniqueViolationError:
            raise Rejected("username_taken", "that username is taken", status=409) from None
        session_id, _ = await _new_session(request, conn, row["id"])  # its first: none ends
        guest = guest_of(request)
        if guest is not None:  # the guest's archived games become the account's
            await conn.execute(
                "UPDATE games g SET seat_players[gp.seat + 1] = $1, "
                "seat_names[gp.seat + 1] = $3 FROM game_players gp "
                "WHERE gp.game_id = g.id AND gp.guest = $2", row["id"], guest, username)
            await conn.execute("UPDATE game_players SET player_id = $1, guest = NULL, "
                               "account = true WHERE guest = $2", row["id"], guest)
            await player_stats.recount(conn, row["id"])  # their profile's stats
    claimed = False
    if guest is not None:  # and so do the seats it holds now
        shown = {"name": username, "rating": ratings.display(ratings.Skill.new().mu),
                 "provisional": True}
        with contextlib.suppress(Rejected):  # Redis down: the seats stay the guest's
            await _state(request).service.claim_seats(guest, player_key(row["id"]), shown)
            claimed = True
    response = JSONResponse(_me(dict(row)), status_code=201)
    _set_cookie(request, response, session_id)
    if claimed:  # else the guest cookie stays, and with it the seats it holds
        _clear_cookie(request, response, GUEST_COOKIE)
    return response


@players_api
async def login(request: Request) -> Response:
    body = await read_json(request)
    username, password = _string(body, "username"), _string(body, "password")
    pool = _db(request)
    row = None
    if USERNAME.fullmatch(username) and len(password) <= MAX_PASSWORD:
        row = await pool.fetchrow(
            "SELECT id, username, password_hash, created_at FROM players "
            "WHERE lower(username) = lower($1)", username)
    await _check_password(request, username, password,
                          None if row is None else row["password_hash"])
    assert row is not None
    async with pool.acquire() as conn:
        session_id, ended = await _new_session(request, conn, row["id"])
    if ended:  # beyond MAX_SESSIONS_PER_ACCOUNT: the oldest ended, as if logged out
        await _sessions_ended(request, row["id"])
    response = JSONResponse(_me(dict(row)))
    _set_cookie(request, response, session_id)
    return response


async def _sessions_ended(request: Request, player_id: int) -> None:
    """Tell every process that sessions of the player ended: their ``/ws/me`` sockets close
    now (4008) rather than at the next sweep (server.inbox). Best effort: without Redis the
    sweep still closes them."""
    with contextlib.suppress(RedisError, OSError):
        await publish_sessions_ended(_state(request).redis, player_id)


async def _revoke_seats(request: Request, player_id: int) -> None:
    """Before every other session of the player ends (a password change, a log out
    everywhere, the account deleted): end every seat token any session took, at the tables it
    sits at and at its games finished within RETENTION (a finished game's token could still
    accept and claim a rematch), so that someone logged in as the player keeps none of them
    (`TableService.revoke_tokens`). Done first: a seat revoked by a request that then fails
    costs its owner only a `resume`. Best effort: a table that cannot be written now is logged
    (server.tables)."""
    finished = [row["game_id"] for row in await _db(request).fetch(
        "SELECT game_id FROM game_players WHERE player_id = $1 "
        "AND ended_at > now() - make_interval(secs => $2)",
        player_id, _settings(request).retention_s)]
    await _state(request).service.revoke_tokens(player_key(player_id), finished)


@players_api
async def logout(request: Request) -> Response:
    changing(request)
    player, digest = await current_player(request)
    await _db(request).execute("DELETE FROM sessions WHERE id_hash = $1", digest)
    await _sessions_ended(request, player["id"])
    response = Response(status_code=204)
    _clear_cookie(request, response)
    return response


@players_api
async def logout_everywhere(request: Request) -> Response:
    changing(request)
    player, _ = await current_player(request)
    await _revoke_seats(request, player["id"])
    await _db(request).execute("DELETE FROM sessions WHERE player_id = $1", player["id"])
    await _sessions_ended(request, player["id"])
    response = Response(status_code=204)
    _clear_cookie(request, response)
    return response


@players_api
async def me(request: Request) -> Response:
    player, _ = await current_player(request)
    return JSONResponse(_me(player))


async def _stored_hash(request: Request, player_id: int) -> str | None:
    value = await _db(request).fetchval(
        "SELECT password_hash FROM players WHERE id = $1", player_id)
    return None if value is None else str(value)


@players_api
async def change_password(request: Request) -> Response:
    changing(request)
    player, digest = await current_player(request)
    body = await read_json(request)
    current = _string(body, "password")
    new = check_new_password(body.get("new_password"), player["username"])
    await _check_password(request, player["username"], current,
                          await _stored_hash(request, player["id"]))
    new_hash = await hash_password(new)
    await _revoke_seats(request, player["id"])
    async with _db(request).acquire() as conn, conn.transaction():
        await conn.execute("UPDATE players SET password_hash = $2, updated_at = now() "
                           "WHERE id = $1", player["id"], new_hash)
        # every other session ends; this one stays logged in
        await conn.execute("DELETE FROM sessions WHERE player_id = $1 AND id_hash <> $2",
                           player["id"], digest)
    await _sessions_ended(request, player["id"])
    return Response(status_code=204)


@players_api
async def delete_account(request: Request) -> Response:
    changing(request)
    player, _ = await current_player(request)
    body = await read_json(request)
    await _check_password(request, player["username"], _string(body, "password"),
                          await _stored_hash(request, player["id"]))
    await _revoke_seats(request, player["id"])
    async with _db(request).acquire() as conn, conn.transaction():
        # Their games stay, under "deleted player" (server.archive.DELETED_PLAYER).
        await conn.execute(
            "UPDATE games g SET seat_names[gp.seat + 1] = $2 FROM game_players gp "
            "WHERE gp.game_id = g.id AND gp.player_id = $1", player["id"], DELETED_PLAYER)
        await conn.execute("DELETE FROM players WHERE id = $1", player["id"])
    await _sessions_ended(request, player["id"])
    response = Response(status_code=204)
    _clear_cookie(request, response)
    return response
