"""Nothing grows forever: quotas per client address, and every table's keys expire.

A waiting table nobody joins expires after WAITING_TTL; a finished table leaves the lobby at once
and all its keys expire after RETENTION (its transcript and replay are served until then); the
lobby lists open tables first and is never drowned by playing, finished or expired ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end

LIFECYCLE = {**FAST, "WAITING_TTL": "1.5", "RETENTION": "2", "BOT_DELAY_MS": "0"}


@pytest.fixture
async def short_lived(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=LIFECYCLE)) as process:
        yield process


async def keys_of(redis_client: redis.asyncio.Redis, table: str) -> list[bytes]:
    return [key async for key in redis_client.scan_iter(match=f"*{{{table}}}*")]


async def listed(http: httpx.AsyncClient) -> list[str]:
    return [t["id"] for t in (await http.get("/api/tables")).json()["tables"]]


async def test_a_waiting_table_nobody_joins_disappears_whole(
    short_lived: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    async with httpx.AsyncClient(base_url=short_lived.url, timeout=10) as http:
        table = await create_table(http)
        assert table in await listed(http)
        assert await keys_of(redis_client, table)
        await asyncio.sleep(2.0)
        assert (await http.get(f"/api/tables/{table}")).status_code == 404
        assert table not in await listed(http)
        assert await keys_of(redis_client, table) == []
        # Joining the vanished table is refused like any unknown one.
        response = await http.post(f"/api/tables/{table}/join", json={"seat": 0, "name": "a"})
        assert response.status_code == 404


async def test_a_finished_table_leaves_the_lobby_and_expires_after_retention(
    short_lived: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    async with httpx.AsyncClient(base_url=short_lived.url, timeout=10) as http:
        table = await create_table(http, bots={"1": "greedy"},
                                   rules={"preset": "all-fives", "target": 5})
        token = await join(http, table, 0, "ann")
        assert table in await listed(http)  # playing
        player = await GameClient.connect(short_lived.ws_url)
        assert (await player.hello(table, token))["t"] == "welcome"
        await player.send({"t": "chat", "text": "good game"})
        await play_to_end({0: player}, [])
        assert table not in await listed(http)
        for path in ("transcript", "replay"):
            assert (await http.get(f"/api/tables/{table}/{path}")).status_code == 200
        for _ in range(100):  # kept without expiry until the archive has the game
            if await redis_client.pttl(f"t:{{{table}}}:state") > 0:
                break
            await asyncio.sleep(0.1)
        keys = await keys_of(redis_client, table)
        assert keys
        for key in keys:  # nothing is kept for good (short-lived budgets expire sooner)
            assert await redis_client.pttl(key) > 0, key
        assert await redis_client.pttl(f"t:{{{table}}}:state") <= 2000
        await player.close()
        for _ in range(60):
            if not await keys_of(redis_client, table):
                break
            await asyncio.sleep(0.1)
        assert await keys_of(redis_client, table) == []
        assert (await http.get(f"/api/tables/{table}")).status_code == 404
        # the transcript and replay are still served, from the archive (server.archive)
        for path in ("transcript", "replay"):
            assert (await http.get(f"/api/tables/{table}/{path}")).status_code == 200


async def test_a_playing_table_is_kept(
    short_lived: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    async with httpx.AsyncClient(base_url=short_lived.url, timeout=10) as http:
        table = await create_table(http)
        await join(http, table, 0, "ann")
        await join(http, table, 1, "bob")
        for key in await keys_of(redis_client, table):
            assert await redis_client.pttl(key) == -1, key
        await asyncio.sleep(2.0)
        assert (await http.get(f"/api/tables/{table}")).json()["status"] == "playing"


QUOTAS = {**FAST, "CREATE_RATE": "5", "MAX_WAITING_TABLES": "3", "JOIN_RATE": "5"}


@pytest.fixture
async def quota_service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=QUOTAS)) as process:
        yield process


async def test_quotas_per_address_answer_429_with_retry_after(
    quota_service: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    async with httpx.AsyncClient(base_url=quota_service.url, timeout=10) as http:
        waiting = [await create_table(http) for _ in range(3)]
        refused = await http.post("/api/tables", json={"players": 2})
        assert refused.status_code == 429, refused.text  # three waiting tables already
        assert refused.json()["error"]["code"] == "rate_limited"
        assert int(refused.headers["retry-after"]) >= 1
        # A table that starts no longer counts as waiting, but the per-minute count goes on.
        for seat in (0, 1):
            await join(http, waiting[0], seat, f"p{seat}")
        assert (await http.post("/api/tables", json={"players": 2})).status_code == 201
        over = await http.post("/api/tables", json={"players": 2})
        assert over.status_code == 429  # the sixth attempt this minute
        joins = [await http.post(f"/api/tables/{waiting[1]}/join",
                                 json={"seat": None, "name": f"j{i}"}) for i in range(4)]
        # Two seats were taken above: 5 joins a minute allow three more attempts.
        assert [r.status_code for r in joins][:3] != [429] * 3
        assert joins[3].status_code == 429
        assert joins[3].json()["error"]["code"] == "rate_limited"
    # Another address has quotas of its own.
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.3")
    async with httpx.AsyncClient(base_url=quota_service.url, timeout=10,
                                 transport=transport) as other:
        assert (await other.post("/api/tables", json={"players": 2})).status_code == 201


async def test_the_lobby_lists_open_tables_first_and_is_never_drowned(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    open_table = await create_table(http, name="the open one")
    transports = [httpx.AsyncHTTPTransport(local_address=f"127.0.0.{10 + i}")
                  for i in range(12)]
    started: list[str] = []
    for transport in transports:  # within every address's quotas
        async with httpx.AsyncClient(base_url=service.url, timeout=10,
                                     transport=transport) as other:
            for _ in range(18):
                table = await create_table(other, bots={"1": "random"})
                await join(other, table, 0, "p")
                started.append(table)
    ids = await listed(http)
    assert len(started) > 200
    assert ids[0] == open_table
    assert len(ids) == 200 and set(ids[1:]) <= set(started)


@pytest.fixture
async def seat_snipers(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**FAST, "SEAT_CONNECT_S": "1.5"})) as p:
        yield p


async def test_a_seat_nobody_connects_to_is_freed(seat_snipers: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=seat_snipers.url, timeout=10) as http:
        table = await create_table(http, players=3)
        sniped = await join(http, table, 0, "sniper")  # never connects
        kept = await join(http, table, 1, "ann")
        ann = await GameClient.connect(seat_snipers.ws_url)
        assert (await ann.hello(table, kept))["t"] == "welcome"
        await asyncio.sleep(3.0)
        seats = (await http.get(f"/api/tables/{table}")).json()["seats"]
        assert [s["taken"] for s in seats] == [False, True, False]
        # The freed seat's token no longer holds it; someone else can sit there.
        refused = await http.post(f"/api/tables/{table}/leave", json={"token": sniped})
        assert refused.status_code == 403
        await join(http, table, 0, "bob")
        await ann.recv_until("diff")
