"""A committed move is answered `accepted` even when delivering its diff fails, and the
committing process delivers what it committed without reading it back.

The fault is real: two service processes connect to one redis-server as an ACL user that may
not read the tables' history streams (XRANGE), so every commit lands but no process can fetch
a diff. The mover's process still queues its own commit's diff (from the frames it wrote) and
`accepted`; the other player, on the other process, gets the diff once reading is allowed
again (retried in the background), with no gap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import redis.asyncio

from tests.server.conftest import FAST, running
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess, create_table, join

USER = "mover"


@contextlib.asynccontextmanager
async def no_stream_reads(
    env: dict[str, str],
) -> AsyncIterator[tuple[redis.asyncio.Redis, ServiceProcess, ServiceProcess]]:
    """Two service processes on one redis-server, as a user that may not read streams."""
    with RedisServer() as server:
        admin = redis.asyncio.Redis.from_url(server.url)
        await admin.execute_command(
            "ACL", "SETUSER", USER, "on", "nopass", "~*", "&*", "+@all", "-xrange")
        url = f"redis://{USER}:any@127.0.0.1:{server.port}/0"
        try:
            async with running(ServiceProcess(url, env={**FAST, **env})) as one, \
                    running(ServiceProcess(url, env={**FAST, **env})) as two:
                yield admin, one, two
        finally:
            await admin.aclose()


@contextlib.asynccontextmanager
async def two_processes() -> AsyncIterator[tuple[redis.asyncio.Redis, ServiceProcess,
                                                 ServiceProcess]]:
    """Two service processes on a redis-server of their own, and a client of it."""
    with RedisServer() as server:
        admin = redis.asyncio.Redis.from_url(server.url)
        try:
            async with running(ServiceProcess(server.url, env=FAST)) as one, \
                    running(ServiceProcess(server.url, env=FAST)) as two:
                yield admin, one, two
        finally:
            await admin.aclose()


async def seated(one: ServiceProcess, two: ServiceProcess) -> tuple[str, list[GameClient]]:
    """A 2-player table with seat 0 connected to `one` and seat 1 to `two`, at version 3."""
    async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
        table = await create_table(http, rules={"preset": "all-fives", "target": 30}, players=2)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(process.ws_url) for process in (one, two)]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    assert players[0].v == 3  # created, then two joins (the second starts the game)
    return table, players


async def answer_to(client: GameClient, client_id: str) -> dict[str, object]:
    """The first accepted/rejected/error frame after a move (diffs on the way are applied)."""
    while True:
        message = await client.recv()
        if message["t"] == "error" or (
                message["t"] in ("accepted", "rejected") and message.get("id") == client_id):
            return message


async def test_a_committed_move_is_accepted_when_its_diff_cannot_be_fetched() -> None:
    # Notices carry no frames here: the other process has to read the stream.
    async with no_stream_reads({"NOTICE_FRAMES_MAX": "0"}) as (admin, one, two):
        table, players = await seated(one, two)
        mover = next(p for p in players if p.my_turn())
        other = players[1] if mover is players[0] else players[0]
        await mover.send({"t": "move", "id": "x1", "v": 3, "move": mover.game["legal"][0]})
        answer = await answer_to(mover, "x1")
        assert answer == {"t": "accepted", "id": "x1", "v": 4}
        assert int(await admin.get(f"t:{{{table}}}:v")) == 4
        assert mover.v == 4  # queued from the commit itself: no read of the stream
        with contextlib.suppress(TimeoutError):  # read all that comes for a while
            while True:
                await other.recv(wait_s=0.5)
        assert other.v == 3  # its process must read the stream, and may not yet

        await admin.execute_command("ACL", "SETUSER", USER, "+xrange")
        await other.wait_version(4, wait_s=30)
        assert other.doc is not None and other.doc["v"] == 4
        # The same id again is the same move: accepted once, at the same version.
        await mover.send({"t": "move", "id": "x1", "v": 3, "move": {"pass": True}})
        assert await answer_to(mover, "x1") == {"t": "accepted", "id": "x1", "v": 4}


async def test_every_process_delivers_a_move_without_reading_the_stream() -> None:
    """The commit hands its frames to its own process and its notice carries them and the new
    state to the other: while the players take turns, one on each process, no process reads the
    history, nor the table (each move starts from the state the last notice carried)."""
    async with two_processes() as (admin, one, two):
        _, players = await seated(one, two)
        await asyncio.sleep(1.0)  # the catch-ups of the hellos are over
        reads, loads = await stream_reads(admin), await table_reads(admin)
        for n in range(6):
            mover = next(p for p in players if p.my_turn())
            version = mover.v
            assert version is not None
            await mover.send({"t": "move", "id": f"m{n}", "v": version,
                              "move": mover.game["legal"][0]})
            assert (await answer_to(mover, f"m{n}"))["t"] == "accepted"
            for player in players:
                await player.wait_version(version + 1, wait_s=10)
        assert await stream_reads(admin) == reads
        assert await table_reads(admin) == loads
        assert players[0].game["layout"] == players[1].game["layout"]


async def stream_reads(client: redis.asyncio.Redis) -> int:
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_xrange", {}).get("calls", 0))


async def table_reads(client: redis.asyncio.Redis) -> int:
    """Reads of a table's version and state together (`Store.load`)."""
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_mget", {}).get("calls", 0))
