"""Redis going away under a running service, and coming back.

While Redis is down the server stays up and answers every request with the documented
temporary error (`unavailable`: a rejected move, an `error` on hello, HTTP 503), and writes
nothing. When Redis returns (from its append-only file, appendfsync always), the very same
sockets play on: the move refused during the outage is sent again with its id and accepted
once, every acknowledged move is still there, and nobody sees a gap.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
import redis.asyncio

from tests.reliability.conftest import FAST, start, stop
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end

RULES = {"preset": "all-fives", "target": 30}


async def wait_healthy(http: httpx.AsyncClient, budget_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    while (await http.get("/healthz")).status_code != 200:
        assert loop.time() < deadline, "the service did not recover"
        await asyncio.sleep(0.1)


async def stored_version(url: str, table: str) -> int:
    client = redis.asyncio.Redis.from_url(url)
    try:
        return int(await client.get(f"t:{{{table}}}:v"))
    finally:
        await client.aclose()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill", "restart"])
async def test_while_redis_is_down_requests_get_unavailable_and_play_resumes_after(
    own_redis: RedisServer, how: str
) -> None:
    server = ServiceProcess(own_redis.url, env=FAST)
    await start(server)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            table = await create_table(http, rules=RULES, players=2)
            tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
            players = [await GameClient.connect(server.ws_url) for _ in tokens]
            for client, token in zip(players, tokens, strict=True):
                await client.hello(table, token)
            watcher = await GameClient.connect(server.ws_url)
            await watcher.hello(table)
            await play_to_end({0: players[0], 1: players[1]}, [watcher], stop_after=6)
            before = await stored_version(own_redis.url, table)
            acked = [m for p in players for m in p.messages if m["t"] == "accepted"]
            assert max(m["v"] for m in acked) == before

            if how == "kill":
                own_redis.kill()  # a crash: only what the AOF holds survives
            else:
                own_redis.stop()

            # Down: the process lives and says "unavailable" everywhere.
            health = await http.get("/healthz")
            assert health.status_code == 503
            mover = next(p for p in players if p.my_turn())
            move = mover.game["legal"][0]
            answer = await mover.move(move, client_id="during-outage")
            assert (answer["t"], answer["code"]) == ("rejected", "unavailable")
            created = await http.post("/api/tables", json={"players": 2})
            assert created.status_code == 503
            assert created.json()["error"]["code"] == "unavailable"
            listed = await http.get("/api/tables")
            assert listed.status_code == 503
            late = await GameClient.connect(server.ws_url)
            await late.send({"t": "hello", "proto": 1, "table": table, "token": None,
                             "since": None})
            refused = await late.recv()
            assert (refused["t"], refused["code"]) == ("error", "unavailable")
            await late.socket.wait_closed()
            assert late.socket.close_code == 1011
            pong = await watcher.socket.ping()  # the old sockets are still open
            await asyncio.wait_for(pong, 5)
            assert server.proc is not None and server.proc.poll() is None

            await asyncio.to_thread(own_redis.start)
            await wait_healthy(http)
            # Nothing was written while Redis was away, and nothing acknowledged was lost.
            assert await stored_version(own_redis.url, table) == before
            answer = await mover.move(move, v=before, client_id="during-outage")
            assert answer["t"] == "accepted", answer
            assert answer["v"] == before + 1
            again = await mover.move(move, v=before, client_id="during-outage")
            assert (again["t"], again["v"]) == ("accepted", before + 1)  # applied once
            await play_to_end({0: players[0], 1: players[1]}, [watcher])
            assert watcher.game["game_over"] is True
            versions = [m["v"] for m in watcher.messages if m["t"] == "diff"]
            assert versions == list(range(versions[0], versions[-1] + 1))
            fresh = await GameClient.connect(server.ws_url)
            await fresh.hello(table)
            assert fresh.doc == watcher.doc
            transcript = (await http.get(f"/api/tables/{table}/transcript")).json()
            moves = sum(len(r["moves"]) for r in transcript["rounds"])
            accepted = {(m["id"], m["v"]) for p in players for m in p.messages
                        if m["t"] == "accepted"}
            assert moves == len(accepted)
    finally:
        await GameClient.close_all()
        await stop(server)
        server.log_path.unlink(missing_ok=True)


@pytest.mark.slow
async def test_a_server_started_while_redis_is_down_serves_fully_once_it_is_up(
    own_redis: RedisServer,
) -> None:
    """Bot moves reach sockets only through the pub/sub reader: it must survive a Redis that
    was down when the process started."""
    own_redis.stop()
    server = ServiceProcess(own_redis.url, env=FAST)
    starting = asyncio.create_task(asyncio.to_thread(server.start, 40.0))
    async with httpx.AsyncClient(base_url=server.url, timeout=2) as http:
        for _ in range(400):  # until the process answers (503: up, without Redis)
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get("/healthz")).status_code == 503:
                    break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the service did not come up without Redis")
    await asyncio.sleep(1.0)  # its background loops meet a Redis that is down
    assert not starting.done()
    await asyncio.to_thread(own_redis.start)
    await starting
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            table = await create_table(http, rules=RULES, players=2, bots={"1": "greedy"})
            token = await join(http, table, 0, "ann")
            player = await GameClient.connect(server.ws_url)
            await player.hello(table, token)
            await asyncio.wait_for(play_to_end({0: player}, []), 60)
            assert player.game["game_over"] is True
    finally:
        await GameClient.close_all()
        await stop(server)
        server.log_path.unlink(missing_ok=True)
