"""HTTP routes: the JSON lobby of docs/protocol.md §9, health, metrics and the static client.

Owns: request parsing, body size limits and the one mapping of a refusal (`Rejected`, whoever
raised it) to an HTTP answer (`refused`, the application's exception handler). Must not import
the engine.
"""

from __future__ import annotations

import asyncio
import gzip
import hmac
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import RedisError
from starlette.datastructures import MutableHeaders
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

from server import players
from server.db import DB_DOWN
from server.fairness import client_key, client_owner
from server.identity import SESSION_COOKIE, Visitor, changing, pool
from server.identity import unavailable as unavailable_accounts
from server.limits import charged_refusal
from server.record import FINISHED
from server.rejected import Rejected, unavailable
from server.seams import app_state
from server.table_config import clean_player_name, create_meta
from server.text import digits

MAX_DEPTH = 8  # arrays and objects nested in a request body
STATIC_GZIP_MIN = 512  # bytes: smaller static files are sent as they are

if TYPE_CHECKING:  # the seam's types only: the lobby knows no game rules
    from server.seams import AppState, TableLobby

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def refusal_response(refusal: Rejected) -> JSONResponse:
    """The HTTP answer of a refusal, the only one: its status, `{"error": {"code", "message"}}`
    and `Retry-After` when it has one."""
    response = error_response(refusal.status, refusal.code, refusal.message)
    if refusal.retry_after is not None:
        response.headers["Retry-After"] = str(refusal.retry_after)
    return response


async def refused(request: Request, exc: Exception) -> Response:
    """The application's exception handler (server.app) for every HTTP route: a `Rejected`
    becomes its answer; a storage failure is answered `503 unavailable`."""
    if not isinstance(exc, Rejected):
        _state(request).metrics.redis_errors.inc()
        exc = unavailable()
    return refusal_response(exc)


EXCEPTION_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    Rejected: refused, RedisError: refused, OSError: refused,
    **dict.fromkeys(DB_DOWN, refused),
}
"""What server.app registers: refusals and storage failures (Redis or PostgreSQL out of
reach), answered by `refused`."""


def _has_body(request: Request) -> bool:
    declared = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (declared is not None and declared != "0")


def _depth(data: Any) -> int:
    """How deeply arrays and objects nest in `data` (0 for a scalar), without recursion."""
    deepest, todo = 0, [(data, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                todo.extend((item, depth + 1) for item in (
                    value.values() if isinstance(value, dict) else value))
    return deepest


async def read_json(request: Request) -> dict[str, Any]:
    """The body as a JSON object. A body must be declared `application/json` (a browser form
    or a "simple" cross-site request cannot), be at most MAX_FRAME bytes, nest at most
    MAX_DEPTH levels and hold no lone surrogate (text that cannot be stored or sent)."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if _has_body(request) and media_type != "application/json":
        raise Rejected("unsupported_media_type",
                       "request bodies must be sent as Content-Type: application/json", status=415)
    limit: int = _state(request).settings.max_frame
    declared = request.headers.get("content-length")
    if declared is not None and digits(declared) and int(declared) > limit:
        raise Rejected("too_large", f"request body over {limit} bytes", status=413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Rejected("too_large", f"request body over {limit} bytes", status=413)
    too_deep, data = False, None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Rejected("bad_request", "the body must be JSON") from None
    except RecursionError:
        too_deep = True
    if too_deep or _depth(data) > MAX_DEPTH:
        raise Rejected("bad_request", f"the body must be JSON nested at most {MAX_DEPTH} levels")
    if not isinstance(data, dict):
        raise Rejected("bad_request", "the body must be a JSON object")
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise Rejected("bad_request", "the body must be valid Unicode text") from None
    return data


def _state(request: Request) -> AppState:
    return app_state(request.app)


def _service(request: Request) -> TableLobby:
    service: TableLobby = _state(request).service
    return service


def _cookie_change(request: Request) -> None:
    """A change made as a logged-in player (a seat bound to the account) follows the CSRF rule
    of every cookie-authenticated change (server.identity.changing)."""
    if request.cookies.get(SESSION_COOKIE):
        changing(request)


async def create_table(request: Request) -> Response:
    _cookie_change(request)
    body = await read_json(request)
    visitor = await Visitor.of(request)
    if body.get("rated") is True and visitor.identity.guest:
        if visitor.identity.unchecked:
            raise unavailable_accounts()
        raise Rejected("account_required", "log in to create a rated table", status=403)
    owner = client_owner(request.client)
    await charge_create(request, owner)
    created = await _service(request).create(body, owner=owner)
    if owner is not None:
        await _state(request).quotas.created(owner, created["id"])
    return visitor.respond(request, JSONResponse(created, status_code=201))


async def over_quota(retry_after_s: int | None, what: str) -> None:
    if retry_after_s is not None:
        raise Rejected("rate_limited", f"too many {what}; try again later", status=429,
                       retry_after=retry_after_s)


async def charge_create(request: Request, owner: str | None, *, waits: bool = True) -> None:
    """Count a table made for the client ``owner`` (fairness.client_owner) against its
    CREATE_RATE,
    and its MAX_WAITING_TABLES when the table ``waits`` for players: over them, 429
    rate_limited with Retry-After. Every way a client makes a table goes through here."""
    if owner is not None:
        await over_quota(await _state(request).quotas.create(owner, waits=waits),
                         "tables created from this address")


async def charge_join(request: Request, owner: str | None) -> None:
    """Count a seat taken by the client ``owner`` against its JOIN_RATE: over it, 429
    rate_limited with Retry-After. Every way a client is handed a seat goes through here."""
    if owner is not None:
        await over_quota(await _state(request).quotas.join(owner),
                         "seats taken from this address")


async def meta(request: Request) -> Response:
    """`GET /api/meta`: the presets, the create options with their bounds and the bot levels."""
    return JSONResponse({**create_meta(), **players.meta()})


async def list_tables(request: Request) -> Response:
    return JSONResponse({"tables": await _service(request).list_public()})


def seat_token(request: Request) -> str | None:
    """A seat token sent as ``Authorization: Bearer <token>`` (reads of a private table)."""
    scheme, _, value = request.headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


async def checking_token(request: Request, call: Awaitable[T], token: object) -> T:
    """Await ``call``, which checks ``token``. A refusal of a token is charged to the client
    address's bad-token budget; once that is spent the answer is 429 rate_limited (with
    Retry-After) instead. Only failures count: a valid token always goes through."""
    try:
        return await call
    except Rejected as rej:
        if not charged_refusal(rej.code, token):
            raise
        budget = _state(request).bad_tokens
        address = client_key(request.client)
        if not budget.charge(address):
            raise Rejected("rate_limited", "too many bad tokens from this address", status=429,
                           retry_after=budget.retry_after_s(address)) from rej
        raise


def _reader(request: Request) -> tuple[str, str | None, str | None]:
    """(table id, invite, seat token) of a read of one table."""
    return (request.path_params["table_id"], request.query_params.get("invite"),
            seat_token(request))


async def table_summary(request: Request) -> Response:
    table_id, invite, token = _reader(request)
    summary = await checking_token(
        request, _service(request).summary(table_id, invite, token), token)
    return JSONResponse(summary)


async def join_table(request: Request) -> Response:
    _cookie_change(request)
    body = await read_json(request)
    seat, name, invite = body.get("seat"), body.get("name"), body.get("invite")
    if seat is not None and (not isinstance(seat, int) or isinstance(seat, bool)):
        raise Rejected("bad_request", '"seat" must be a seat number or null')
    if invite is not None and not isinstance(invite, str):
        raise Rejected("bad_request", '"invite" must be a string or null')
    state = _state(request)
    visitor = await Visitor.of(request)
    identity = visitor.identity
    # An account's seat is named by its username: `name` is read (and checked) only for a
    # guest (a session that cannot be checked now, PostgreSQL down, is one too).
    if identity.guest:
        name = clean_player_name(name)
        await players.not_an_accounts_name(state.postgres, name)
    else:
        name = ""
    await charge_join(request, client_owner(request.client))
    table_id = request.path_params["table_id"]
    service = _service(request)
    limit = state.settings.max_tables_per_player
    if len(await state.service.store.seated_tables(identity.key)) >= limit \
            and len(await service.seated(identity.key)) >= limit:
        raise Rejected("too_many_tables", f"you already sit at {limit} tables", status=429)
    player = None
    if not identity.guest or identity.unchecked:
        summary = await service.summary(table_id, invite)
        if identity.unchecked and summary["rated"]:
            raise unavailable_accounts()  # the session may be an account's: say so, not 403
        if not identity.guest:
            player = await players.shown_player(identity, summary["family"], pool(state))
    seat, token = await service.join(table_id, seat, name, invite, owner=identity.key,
                                     player=player)
    return visitor.respond(request, JSONResponse({"seat": seat, "token": token}))


async def my_tables(request: Request) -> Response:
    """`GET /api/me/tables`: the tables the visitor (account or guest) sits at."""
    visitor = await Visitor.of(request)
    tables = await _service(request).seated(visitor.identity.key)
    return visitor.respond(request, JSONResponse({"tables": tables}))


async def resume_seat(request: Request) -> Response:
    """`POST /api/tables/{id}/resume`: a new token for the visitor's own seat."""
    changing(request)
    await read_json(request)
    visitor = await Visitor.of(request)
    await charge_join(request, client_owner(request.client))  # a new token: a seat taken again
    seat, token = await _service(request).resume(request.path_params["table_id"],
                                                 visitor.identity.key)
    return visitor.respond(request, JSONResponse({"seat": seat, "token": token}))


async def leave_table(request: Request) -> Response:
    body = await read_json(request)
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise Rejected("bad_request", '"token" must be a string')
    await checking_token(
        request, _service(request).leave(request.path_params["table_id"], token), token)
    return JSONResponse({"ok": True})


def _seat_token(body: dict[str, Any]) -> str:
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise Rejected("bad_request", '"token" must be a string')
    return token


async def rematch(request: Request) -> Response:
    """`POST /api/tables/{id}/rematch` {"token"}: the seat accepts a rematch. The request that
    makes the rematch table (the last acceptance) is charged a table created, as `create_table`
    (it starts at once: MAX_WAITING_TABLES does not apply); a refusal records nothing."""
    token = _seat_token(await read_json(request))
    owner = client_owner(request.client)

    async def charge() -> None:
        await charge_create(request, owner, waits=False)

    found = await checking_token(
        request, _service(request).rematch(request.path_params["table_id"], token,
                                           creator=owner, before_make=charge), token)
    return JSONResponse({"rematch": found})


async def rematch_seat(request: Request) -> Response:
    """`POST /api/tables/{id}/rematch/seat` {"token"}: the seat's place at the rematch table,
    a seat taken as `join_table` (JOIN_RATE)."""
    token = _seat_token(await read_json(request))
    await charge_join(request, client_owner(request.client))
    found = await checking_token(
        request, _service(request).rematch_seat(request.path_params["table_id"], token), token)
    return JSONResponse(found)


async def transcript(request: Request) -> Response:
    return await _finished_game(request, "transcript")


async def replay(request: Request) -> Response:
    return await _finished_game(request, "replay")


async def _finished_game(request: Request, kind: str) -> Response:
    table_id, invite, token = _reader(request)
    service = _service(request)
    read = service.transcript if kind == "transcript" else service.replay
    body = await checking_token(request, read(table_id, invite, token), token)
    return await gzipped_json(request, body)


async def archived_game(request: Request) -> Response:
    """An archived game (server.archive): its summary and transcript."""
    game = await _state(request).archive.game(request.path_params["game_id"],
                                                request.query_params.get("invite"))
    return JSONResponse(game)


async def game_analysis(request: Request) -> Response:
    """An archived game's post-game analysis (server.analysis), or how far it is: a game that
    has ended but is not archived yet is `pending` too (for a reader who may see its table)."""
    state = _state(request)
    game_id = request.path_params["game_id"]
    invite = request.query_params.get("invite")
    try:
        found = await state.analyst.read(game_id, invite)
    except Rejected as refusal:
        if refusal.code != "unknown_game":
            raise
        try:
            live = await state.service.summary(game_id, invite)
        except Rejected:
            raise refusal from None
        if live["status"] != FINISHED:
            raise
        found = {"id": game_id, "status": "pending", "analysis": None}
    return JSONResponse(found)


async def gzipped_json(request: Request, body: bytes) -> Response:
    """A stored gzip-compressed JSON body, sent as it is to a client that accepts gzip (every
    browser), else uncompressed off the event loop."""
    if "gzip" in request.headers.get("accept-encoding", "").lower():
        return Response(body, media_type="application/json",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(await asyncio.to_thread(gzip.decompress, body),
                    media_type="application/json", headers={"Vary": "Accept-Encoding"})


async def healthz(request: Request) -> Response:
    try:
        await asyncio.wait_for(_state(request).redis.ping(), 2.0)
    except (RedisError, OSError, TimeoutError):
        _state(request).metrics.redis_errors.inc()
        return JSONResponse({"ok": False, "redis": "down"}, status_code=503)
    # PostgreSQL (players, archive) is reported, never fails the live-table health.
    pg_up = await _state(request).postgres.healthy()
    return JSONResponse({"ok": True, "postgres": "up" if pg_up else "down"})


def _bearer(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode())


async def metrics(request: Request) -> Response:
    token: str | None = _state(request).settings.metrics_token
    if token is not None and not _bearer(request.headers.get("authorization"), token):
        answer = refusal_response(Rejected(
            "unauthorized", "metrics need Authorization: Bearer <METRICS_TOKEN>", status=401))
        answer.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return answer
    m = _state(request).metrics
    return Response(m.render(), media_type=m.content_type)


NOT_FOUND_PAGE = """<!doctype html><meta charset="utf-8"><title>Not found</title>
<h1>Not found</h1><p>The browser client is not built here. The lobby API is at
<a href="/api/tables">/api/tables</a>.</p>"""


class StaticClient:
    """Serves STATIC_DIR (index.html at `/`); a plain 404 page when it is missing.

    Compressed with gzip for a client that accepts it (the bundle is about a quarter of its
    size), and sent with ``Cache-Control: no-cache`` and an ETag: a browser keeps the files
    and asks again each time, answered ``304 Not Modified`` until the server's files change
    (their names carry no version, so they must not be taken from a cache unasked)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files = GZipMiddleware(StaticFiles(directory=directory, html=True, check_dir=False),
                                    minimum_size=STATIC_GZIP_MIN, compresslevel=6)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not self.directory.is_dir():
            await HTMLResponse(NOT_FOUND_PAGE, status_code=404)(scope, receive, send)
            return

        async def revalidated(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).setdefault("Cache-Control", "no-cache")
            await send(message)

        await self.files(scope, receive, revalidated)
