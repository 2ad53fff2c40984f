"""Fixtures for the reliability gates: every test that breaks Redis gets a Redis of its own.

- ``own_redis``: a fresh RedisServer (AOF, appendfsync always) for this test only.
- ``start(process)`` / ``stop(process)``: run a ServiceProcess off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess

FAST = {"RATE": "1000/2000", "LOG_LEVEL": "INFO"}


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


async def start(process: ServiceProcess) -> ServiceProcess:
    return await asyncio.to_thread(process.start)


async def stop(process: ServiceProcess) -> None:
    await asyncio.to_thread(process.stop)


@pytest.fixture(autouse=True)
async def close_clients() -> AsyncIterator[None]:
    yield
    await GameClient.close_all()
