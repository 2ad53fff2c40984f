"""A committed move is answered `accepted` even when delivering its diff fails.

The fault is real: the service connects to its own redis-server as an ACL user that may not
read the table's history stream (XRANGE), so every commit lands but no diff can be fetched.
The mover still gets `accepted` with the new version; once reading is allowed again, the diff
reaches both players (retried in the background), with no gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio

from tests.server.conftest import FAST, running
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess, create_table, join

USER = "mover"


@pytest.fixture
async def admin_and_service() -> AsyncIterator[tuple[redis.asyncio.Redis, ServiceProcess]]:
    with RedisServer() as server:
        admin = redis.asyncio.Redis.from_url(server.url)
        await admin.execute_command(
            "ACL", "SETUSER", USER, "on", "nopass", "~*", "&*", "+@all", "-xrange")
        url = f"redis://{USER}:any@127.0.0.1:{server.port}/0"
        try:
            async with running(ServiceProcess(url, env=FAST)) as process:
                yield admin, process
        finally:
            await admin.aclose()


async def answer_to(client: GameClient, client_id: str) -> dict[str, object]:
    """The first accepted/rejected/error frame after a move (diffs on the way are applied)."""
    while True:
        message = await client.recv()
        if message["t"] == "error" or (
                message["t"] in ("accepted", "rejected") and message.get("id") == client_id):
            return message


async def test_a_committed_move_is_accepted_when_its_diff_cannot_be_fetched(
    admin_and_service: tuple[redis.asyncio.Redis, ServiceProcess],
) -> None:
    admin, service = admin_and_service
    async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
        table = await create_table(http, rules={"preset": "all-fives", "target": 30}, players=2)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(service.ws_url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    before = players[0].v
    assert before == 3  # created, then two joins (the second starts the game)
    mover = next(p for p in players if p.my_turn())
    await mover.send({"t": "move", "id": "x1", "v": before, "move": mover.game["legal"][0]})
    answer = await answer_to(mover, "x1")
    assert answer == {"t": "accepted", "id": "x1", "v": 4}
    assert int(await admin.get(f"t:{{{table}}}:v")) == 4
    assert mover.v == 3  # the diff could not be read yet

    await admin.execute_command("ACL", "SETUSER", USER, "+xrange")
    await asyncio.gather(*(p.wait_version(4, wait_s=30) for p in players))
    assert players[0].doc is not None and players[0].doc["v"] == 4
    # The same id again is the same move: accepted once, at the same version.
    await mover.send({"t": "move", "id": "x1", "v": before, "move": {"pass": True}})
    assert await answer_to(mover, "x1") == {"t": "accepted", "id": "x1", "v": 4}
