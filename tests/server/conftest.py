"""Fixtures for the service tests: the real server as a subprocess on the session's Redis.

- ``service``: a ServiceProcess (python -m server) on a free port, stopped afterwards. Its message
  rate limit is raised so that scripted players can play as fast as the machine goes (the limits
  themselves are tested on a server with the defaults).
- ``http``: an httpx.AsyncClient on that service.
- ``db``: a connection to the test's own PostgreSQL database (``database_url``).

Every test ends by closing the commit links its table services opened (server.redis_link), in
its own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from server import redis_link
from server.db import migrate
from tests.support.servers import GameClient, ServiceProcess

FAST = {"RATE": "1000/2000"}


@pytest.fixture(autouse=True)
async def _close_commit_links() -> AsyncIterator[None]:
    yield
    redis_link.close_all()
    await asyncio.sleep(0)  # the transports finish closing in this loop


@pytest.fixture
async def service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=FAST)) as process:
        yield process


@contextlib.asynccontextmanager
async def running(process: ServiceProcess) -> AsyncIterator[ServiceProcess]:
    """Start `process`; at the end close the test's clients, then stop it (off the event loop,
    so that clients can still answer the server's closing handshake)."""
    await asyncio.to_thread(process.start)
    try:
        yield process
    finally:
        await GameClient.close_all()
        await asyncio.to_thread(process.stop)
        process.log_path.unlink(missing_ok=True)


@pytest.fixture
async def http(service: ServiceProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=service.url, timeout=10) as client:
        yield client


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(database_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def conn(db: asyncpg.Connection) -> asyncpg.Connection:
    """`db` with the schema migrated, for tests that write the archive's tables directly."""
    await migrate(db)
    return db


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    """Every websocket client a test opened is closed when it ends."""
    yield
    await GameClient.close_all()
