"""One client address cannot fill a process: it may hold at most MAX_SOCKETS_PER_ADDRESS sockets
and keep at most its share of MAX_TABLES_PER_PROCESS tables attached, so the last slots stay
for everyone else."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
import websockets

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, close_code, create_table, join

CAPS = {**FAST, "MAX_SOCKETS_PER_ADDRESS": "12", "MAX_TABLES_PER_PROCESS": "40",
        "TABLES_PER_ADDRESS_SHARE": "0.2", "MAX_SPECTATORS_PER_ADDRESS": "1000"}


@pytest.fixture
async def capped(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=CAPS)) as process:
        yield process


async def spectate(url: str, table: str, source: str) -> tuple[dict[str, object], GameClient]:
    client = await GameClient.connect(url, local_addr=(source, 0))
    with contextlib.suppress(websockets.ConnectionClosed):  # a refused socket is closed at once
        await client.send({"t": "hello", "proto": 1, "table": table, "token": None,
                           "since": None})
    return await client.recv(), client


async def test_one_address_holds_at_most_its_sockets(capped: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=capped.url, timeout=10) as http:
        table = await create_table(http)
        token = await join(http, table, 0, "ann")
    answers = [await spectate(capped.ws_url, table, "127.0.0.2") for _ in range(14)]
    kinds = [first["t"] for first, _ in answers]
    assert kinds[:12] == ["welcome"] * 12
    for first, client in answers[12:]:
        assert first == {"t": "error", "code": "too_many_connections",
                         "message": "too many connections from your address"}
        assert await close_code(client) == 4007
    # Everyone else still gets in, a seat holder too.
    other, _ = await spectate(capped.ws_url, table, "127.0.0.3")
    assert other["t"] == "welcome"
    ann = await GameClient.connect(capped.ws_url, local_addr=("127.0.0.4", 0))
    assert (await ann.hello(table, token))["t"] == "welcome"
    # A socket closed frees its place.
    await answers[0][1].close()
    await asyncio.sleep(0.2)
    again, _ = await spectate(capped.ws_url, table, "127.0.0.2")
    assert again["t"] == "welcome"


async def test_one_address_attaches_at_most_its_share_of_the_tables(
    capped: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=capped.url, timeout=10) as http:
        tables = [await create_table(http) for _ in range(12)]
    results = []
    for table in tables[:10]:
        first, client = await spectate(capped.ws_url, table, "127.0.0.5")
        results.append(first)
        if first["t"] != "welcome":
            assert await close_code(client) == 4007
    # 20 % of 40 tables: 8 tables for one address.
    assert [r["t"] for r in results] == ["welcome"] * 8 + ["error"] * 2
    assert results[-1]["code"] == "too_many_tables"
    # Another address attaches the tables the first could not.
    first, _ = await spectate(capped.ws_url, tables[9], "127.0.0.6")
    assert first["t"] == "welcome"


async def test_an_ipv6_network_is_one_client_for_the_socket_cap(redis_url: str) -> None:
    """One host usually holds a whole IPv6 /64: the per-address caps count the /64 as one
    client, as the quotas do (server.fairness.owner_key), so a host rotating its addresses gets
    no more sockets than one address (each address used to get its own cap). The addresses
    come through the trusted proxy's X-Forwarded-For (127.0.0.1 is trusted by default)."""
    async with running(ServiceProcess(redis_url, env={**FAST, "MAX_SOCKETS_PER_ADDRESS": "2"})) \
            as service:
        held, refused = [], 0
        try:
            for host in ("2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1"):
                for _ in range(2):
                    client = await GameClient.connect(
                        service.ws_url, additional_headers={"X-Forwarded-For": host})
                    with contextlib.suppress(TimeoutError):
                        answer = await client.recv(0.5)
                        assert answer["code"] == "too_many_connections"
                        assert await close_code(client) == 4007
                        refused += 1
                        continue
                    held.append((host, client))
            # 2 for the first /64, whichever of its addresses; 2 for the other /64
            assert [host for host, _ in held] == ["2001:db8::1"] * 2 + ["2001:db8:0:1::1"] * 2
            assert refused == 4
        finally:
            for _, client in held:
                await client.close()
