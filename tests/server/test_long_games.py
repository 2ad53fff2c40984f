"""A game may be set up to last very long (a high target, small scores: Bergen to 1,000 is
about 700 hands). A game ends after MAX_HANDS hands at the latest, so what one game costs -- its
documents, its stream, its replay, rendered in a process's one render slot -- stays bounded
(against a real server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end

# Block with a fixed bonus of 1 point a hand: a game to 1,000 would last 1,000 hands or more.
LONG_RULES = {"preset": "block", "bonus": "fixed", "bonus_points": 1, "target": 1000}
HANDS = 3


@pytest.fixture
async def capped(redis_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, "MAX_HANDS": str(HANDS), "NEXT_HAND_S": "0"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


async def test_a_game_ends_after_max_hands_the_side_ahead_winning(
    capped: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=capped.url, timeout=10) as http:
        table = await create_table(http, rules=LONG_RULES)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
        players = {}
        for seat in (0, 1):
            players[seat] = await GameClient.connect(capped.ws_url)
            assert (await players[seat].hello(table, tokens[seat]))["t"] == "welcome"
        await play_to_end(players, [], max_versions=2000)
        for client in players.values():
            doc = client.doc
            assert doc is not None and doc["table"]["status"] == "finished"
            game = doc["game"]
            assert len(game["rounds"]) == HANDS  # hands played, each settled
            assert game["turn"] is None and game["legal"] == []
            scores = game["scores"]
            assert max(scores) < 1000  # nobody reached the target
            ahead = None if scores[0] == scores[1] else scores.index(max(scores))
            assert doc["table"]["result"] == {"winner": ahead, "reason": "hand_limit",
                                              "seat": None}
        replay = await http.get(f"/api/tables/{table}/replay")
        assert replay.status_code == 200
        assert len(replay.json()["views"]) == len(  # the start of each hand, then each move
            [entry for rnd in (await http.get(f"/api/tables/{table}/transcript")).json()["rounds"]
             for entry in [None, *rnd["moves"]]])
        for _ in range(100):  # archived a moment later, its transcript walking
            archived = await http.get(f"/api/games/{table}")
            if archived.status_code == 200:
                break
            await asyncio.sleep(0.1)
        assert archived.status_code == 200, archived.text
        game = archived.json()
        assert game["result"]["reason"] == "hand_limit" and game["hands"] == HANDS
