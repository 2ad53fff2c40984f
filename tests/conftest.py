"""Shared fixtures: one real redis-server per test session, emptied before each test.

- ``redis_server``: the session's RedisServer (tests/support/redis_server.py).
- ``redis_url``: its URL, after FLUSHALL, for tests that need an empty Redis.
- ``redis_client``: a redis.asyncio.Redis on ``redis_url`` (bytes replies), closed afterwards.
Tests that kill or restart Redis make their own ``RedisServer()`` instead of using these.

And one real PostgreSQL server per session (tests/support/pg_server.py), started on first use:

- ``pg_server``: the session's PgServer (also the one ``ServiceProcess`` points DATABASE_URL at).
- ``database_url``: the URL of a new, empty database on it, dropped after the test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported by the fixtures themselves: engine tests need no server stack
    import redis.asyncio

    from tests.support.pg_server import PgServer
    from tests.support.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    from tests.support.redis_server import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    if not redis_server.running:
        redis_server.start()
    redis_server.flush()
    return redis_server.url


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[redis.asyncio.Redis]:
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture(scope="session")
def pg_server() -> PgServer:
    from tests.support import pg_server as pg_support

    return pg_support.shared()


@pytest.fixture
def database_url(pg_server: PgServer) -> Iterator[str]:
    if not pg_server.running:
        pg_server.start()
    url = pg_server.fresh_database()
    try:
        yield url
    finally:
        name = url.rsplit("/", 1)[1]
        pg_server.drop_database(name)
