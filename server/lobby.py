"""HTTP routes: the JSON lobby of docs/protocol.md §9, health, metrics and the static client.

Owns: request parsing, body size limits and mapping TableService refusals to HTTP statuses.
Must not import the engine.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from server.rejected import Rejected

Handler = Callable[[Request], Awaitable[Response]]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def api(handler: Handler) -> Handler:
    """Turn refusals and storage failures into the documented JSON errors."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as exc:
            return error_response(exc.status, exc.code, exc.message)
        except Rejected as rej:
            return error_response(rej.status, rej.code, rej.message)
        except (RedisError, OSError):
            request.app.state.metrics.redis_errors.inc()
            return error_response(503, "unavailable", "storage unavailable, try again")

    return wrapped


async def read_json(request: Request) -> dict[str, Any]:
    limit: int = request.app.state.settings.max_frame
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", f"request body over {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "too_large", f"request body over {limit} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "bad_request", "the body must be JSON") from None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    return data


def _service(request: Request) -> Any:
    return request.app.state.service


@api
async def create_table(request: Request) -> Response:
    body = await read_json(request)
    created = await _service(request).create(body)
    return JSONResponse(created, status_code=201)


@api
async def list_tables(request: Request) -> Response:
    return JSONResponse({"tables": await _service(request).list_public()})


@api
async def table_summary(request: Request) -> Response:
    invite = request.query_params.get("invite")
    summary = await _service(request).summary(request.path_params["table_id"], invite)
    return JSONResponse(summary)


@api
async def join_table(request: Request) -> Response:
    body = await read_json(request)
    seat, name, invite = body.get("seat"), body.get("name"), body.get("invite")
    if seat is not None and (not isinstance(seat, int) or isinstance(seat, bool)):
        raise ApiError(400, "bad_request", '"seat" must be a seat number or null')
    if not isinstance(name, str) or not name.strip() or len(name) > 32:
        raise ApiError(400, "bad_request", '"name" must be 1 to 32 characters')
    if invite is not None and not isinstance(invite, str):
        raise ApiError(400, "bad_request", '"invite" must be a string or null')
    seat, token = await _service(request).join(
        request.path_params["table_id"], seat, name.strip(), invite
    )
    return JSONResponse({"seat": seat, "token": token})


@api
async def leave_table(request: Request) -> Response:
    body = await read_json(request)
    token = body.get("token")
    if not isinstance(token, str) or not token:
        raise ApiError(400, "bad_request", '"token" must be a string')
    await _service(request).leave(request.path_params["table_id"], token)
    return JSONResponse({"ok": True})


@api
async def transcript(request: Request) -> Response:
    return JSONResponse(await _service(request).transcript(request.path_params["table_id"]))


@api
async def replay(request: Request) -> Response:
    views = await _service(request).replay(request.path_params["table_id"])
    return JSONResponse({"views": views})


async def healthz(request: Request) -> Response:
    try:
        await asyncio.wait_for(request.app.state.redis.ping(), 2.0)
    except (RedisError, OSError, TimeoutError):
        request.app.state.metrics.redis_errors.inc()
        return JSONResponse({"ok": False, "redis": "down"}, status_code=503)
    return JSONResponse({"ok": True})


async def metrics(request: Request) -> Response:
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
