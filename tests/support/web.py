"""HTTP clients the way a browser page holds them, for tests of the players' API.

- ``browser(service)``: an httpx client keeping its cookies and sending the page's Origin.
- ``account(service, name)``: a browser logged in to a new account ``name`` (password
  ``PASSWORD``).
- ``code(response)``: the error code of a refusal.
- ``create(web, **body)`` / ``sit(web, table, seat)``: a table made / a seat taken by ``web``.
- ``eventually(check)``: await ``check()`` until it is truthy (or fail after a while).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx

from tests.support.servers import ServiceProcess

PASSWORD = "long enough"


def browser(service: ServiceProcess) -> httpx.AsyncClient:
    """A browser-like client: cookies kept, the page's Origin on every request."""
    return httpx.AsyncClient(base_url=service.url, timeout=20, headers={"Origin": service.url})


@contextlib.asynccontextmanager
async def account(service: ServiceProcess, name: str) -> AsyncIterator[httpx.AsyncClient]:
    """A browser logged in to a new account ``name``."""
    async with browser(service) as web:
        made = await web.post("/api/accounts", json={"username": name, "password": PASSWORD})
        assert made.status_code == 201, made.text
        yield web


def code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


async def create(web: httpx.AsyncClient, **body: Any) -> str:
    made = await web.post("/api/tables", json={"players": 2, **body})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def sit(web: httpx.AsyncClient, table: str, seat: int | None,
              name: str = "someone") -> str:
    joined = await web.post(f"/api/tables/{table}/join", json={"seat": seat, "name": name})
    assert joined.status_code == 200, joined.text
    return str(joined.json()["token"])


async def eventually(check: Callable[[], Awaitable[Any]], within_s: float = 20.0,
                     what: str = "condition") -> Any:
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no {what} within {within_s}s")
        await asyncio.sleep(0.1)
