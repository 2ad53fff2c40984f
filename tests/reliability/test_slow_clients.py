"""Slow clients cannot exhaust a process: with more incomplete requests open than it serves at
once (MAX_CONNECTIONS), the process answers new requests 503 instead of running out of
descriptors, keeps serving the sockets it has, and recovers when they go."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.reliability.conftest import FAST
from tests.server.conftest import running
from tests.support.servers import GameClient, ServiceProcess, create_table, join


@pytest.fixture
async def small(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**FAST, "MAX_CONNECTIONS": "40"})) as p:
        yield p


async def test_slow_loris_gets_503s_not_a_dead_process(small: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=small.url, timeout=10) as http:
        table = await create_table(http)
        token = await join(http, table, 0, "ann")
    player = await GameClient.connect(small.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"

    writers = []
    for _ in range(60):  # request heads that never end
        _, writer = await asyncio.open_connection("127.0.0.1", small.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
        await writer.drain()
        writers.append(writer)
    await asyncio.sleep(0.5)
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=small.url, timeout=10) as http:
        busy = await http.get("/healthz")
    assert busy.status_code == 503
    assert time.monotonic() - started < 5
    # The socket already open is still served.
    await player.send({"t": "ping", "n": 7})
    assert (await player.recv_until("pong", n=7))["n"] == 7

    for writer in writers:
        writer.close()
    await asyncio.sleep(0.5)
    async with httpx.AsyncClient(base_url=small.url, timeout=10) as http:
        assert (await http.get("/healthz")).status_code == 200
