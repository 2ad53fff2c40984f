"""HTTP routes: the JSON lobby of docs/protocol.md §9, health, metrics and the static client.

Owns: request parsing, body size limits and mapping TableService refusals to HTTP statuses.
Must not import the engine.
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
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from server import text
from server.fairness import owner_key
from server.rejected import Rejected

MAX_DEPTH = 8  # arrays and objects nested in a request body

if TYPE_CHECKING:  # the table service's type only: the lobby knows no game rules
    from server.tables import TableService

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, *,
                 retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after_s = retry_after_s


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def api(handler: Handler) -> Handler:
    """Turn refusals and storage failures into the documented JSON errors."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            response = error_response(exc.status, exc.code, exc.message)
            if exc.retry_after_s is not None:
                response.headers["Retry-After"] = str(exc.retry_after_s)
            return response
        except Rejected as rej:
            return error_response(rej.status, rej.code, rej.message)
        except (RedisError, OSError):
            request.app.state.metrics.redis_errors.inc()
            return error_response(503, "unavailable", "storage unavailable, try again")

    return wrapped


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
        raise ApiError(415, "unsupported_media_type",
                       "request bodies must be sent as Content-Type: application/json")
    limit: int = request.app.state.settings.max_frame
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", f"request body over {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "too_large", f"request body over {limit} bytes")
    too_deep, data = False, None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "bad_request", "the body must be JSON") from None
    except RecursionError:
        too_deep = True
    if too_deep or _depth(data) > MAX_DEPTH:
        raise ApiError(400, "bad_request", f"the body must be JSON nested at most {MAX_DEPTH} "
                       "levels")
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ApiError(400, "bad_request", "the body must be valid Unicode text") from None
    return data


def _service(request: Request) -> TableService:
    service: TableService = request.app.state.service
    return service


@api
async def create_table(request: Request) -> Response:
    body = await read_json(request)
    address = request.client.host if request.client else None
    owner = owner_key(address)
    quotas = request.app.state.quotas
    if owner is not None:
        await over_quota(await quotas.create(owner), "tables created from this address")
    created = await _service(request).create(body, owner=owner)
    if owner is not None:
        await quotas.created(owner, created["id"])
    return JSONResponse(created, status_code=201)


async def over_quota(retry_after_s: int | None, what: str) -> None:
    if retry_after_s is not None:
        raise ApiError(429, "rate_limited", f"too many {what}; try again later",
                       retry_after_s=retry_after_s)


@api
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
        if token is None or rej.code not in ("bad_token", "unknown_table"):
            raise
        budget = request.app.state.bad_tokens
        address = request.client.host if request.client else "?"
        if not budget.charge(address):
            raise ApiError(429, "rate_limited", "too many bad tokens from this address",
                           retry_after_s=budget.retry_after_s(address)) from rej
        raise


def _reader(request: Request) -> tuple[str, str | None, str | None]:
    """(table id, invite, seat token) of a read of one table."""
    return (request.path_params["table_id"], request.query_params.get("invite"),
            seat_token(request))


@api
async def table_summary(request: Request) -> Response:
    table_id, invite, token = _reader(request)
    summary = await checking_token(
        request, _service(request).summary(table_id, invite, token), token)
    return JSONResponse(summary)


@api
async def join_table(request: Request) -> Response:
    body = await read_json(request)
    seat, name, invite = body.get("seat"), body.get("name"), body.get("invite")
    if seat is not None and (not isinstance(seat, int) or isinstance(seat, bool)):
        raise ApiError(400, "bad_request", '"seat" must be a seat number or null')
    try:
        name = text.player_name(name, text.MAX_PLAYER_NAME)
    except ValueError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None
    if invite is not None and not isinstance(invite, str):
        raise ApiError(400, "bad_request", '"invite" must be a string or null')
    owner = owner_key(request.client.host if request.client else None)
    if owner is not None:
        await over_quota(await request.app.state.quotas.join(owner),
                         "seats taken from this address")
    seat, token = await _service(request).join(
        request.path_params["table_id"], seat, name, invite
    )
    return JSONResponse({"seat": seat, "token": token})


@api
async def leave_table(request: Request) -> Response:
    body = await read_json(request)
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise ApiError(400, "bad_request", '"token" must be a string')
    await checking_token(
        request, _service(request).leave(request.path_params["table_id"], token), token)
    return JSONResponse({"ok": True})


@api
async def transcript(request: Request) -> Response:
    return await _finished_game(request, "transcript")


@api
async def replay(request: Request) -> Response:
    return await _finished_game(request, "replay")


async def _finished_game(request: Request, kind: str) -> Response:
    table_id, invite, token = _reader(request)
    service = _service(request)
    read = service.transcript if kind == "transcript" else service.replay
    body = await checking_token(request, read(table_id, invite, token), token)
    return await gzipped_json(request, body)


@api
async def archived_game(request: Request) -> Response:
    """An archived game (server.archive): its summary and transcript."""
    game = await request.app.state.archive.game(request.path_params["game_id"],
                                                request.query_params.get("invite"))
    return JSONResponse(game)


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
        await asyncio.wait_for(request.app.state.redis.ping(), 2.0)
    except (RedisError, OSError, TimeoutError):
        request.app.state.metrics.redis_errors.inc()
        return JSONResponse({"ok": False, "redis": "down"}, status_code=503)
    # PostgreSQL (players, archive) is reported, never fails the live-table health.
    postgres = getattr(request.app.state, "postgres", None)
    pg_up = postgres is not None and await postgres.healthy()
    return JSONResponse({"ok": True, "postgres": "up" if pg_up else "down"})


def _bearer(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode())


async def metrics(request: Request) -> Response:
    token: str | None = request.app.state.settings.metrics_token
    if token is not None and not _bearer(request.headers.get("authorization"), token):
        refused = error_response(401, "unauthorized",
                                 "metrics need Authorization: Bearer <METRICS_TOKEN>")
        refused.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    m = request.app.state.metrics
    return Response(m.render(), media_type=m.content_type)


NOT_FOUND_PAGE = """<!doctype html><meta charset="utf-8"><title>Not found</title>
<h1>Not found</h1><p>The browser client is not built here. The lobby API is at
<a href="/api/tables">/api/tables</a>.</p>"""


class StaticClient:
    """Serves STATIC_DIR (index.html at `/`); a plain 404 page when it is missing."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files = StaticFiles(directory=directory, html=True, check_dir=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not self.directory.is_dir():
            await HTMLResponse(NOT_FOUND_PAGE, status_code=404)(scope, receive, send)
            return
        await self.files(scope, receive, send)
