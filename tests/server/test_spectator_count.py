"""The presence frame counts a table's spectators, over every process."""

from __future__ import annotations

import httpx

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join


async def _count_reaches(client: GameClient, count: int) -> None:
    while True:
        message = await client.recv_until("presence")
        if message["spectators"] == count:
            return


async def test_players_see_spectators_come_and_go_on_either_process(redis_url: str) -> None:
    async with running(ServiceProcess(redis_url, env=FAST)) as one, \
            running(ServiceProcess(redis_url, env=FAST)) as two:
        async with httpx.AsyncClient(base_url=one.url) as http:
            table = await create_table(http, bots={"1": "greedy"})
            token = await join(http, table, 0, "ann")
        player = await GameClient.connect(one.ws_url)
        assert (await player.hello(table, token))["t"] == "welcome"
        await _count_reaches(player, 0)
        watchers = []
        for n in range(2):
            watcher = await GameClient.connect((one if n == 0 else two).ws_url)
            assert (await watcher.hello(table))["t"] == "welcome"
            watchers.append(watcher)
        await _count_reaches(player, 2)
        await watchers[1].close()
        await _count_reaches(player, 1)
