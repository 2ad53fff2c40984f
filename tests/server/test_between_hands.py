"""The pause between hands (protocol.md "Between hands") on the real service: the table stays
on the finished hand with no clock running, until every connected player is ready or
NEXT_HAND_S has passed."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx
import redis.asyncio

import engine
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join, sync_all
from tests.support.tables import ManualClock, new_table, play_random

# A real-time clock of one second a move, no reserve, forfeit on time: a clock that ran
# during the pause would lose the game.
HURRIED = {"kind": "realtime", "move_s": 1, "reserve_s": 0}


async def two_players(service: ServiceProcess, **body: Any) -> tuple[GameClient, GameClient,
                                                                        str]:
    async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
        table = await create_table(http, **body)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    clients = []
    for token in tokens:
        client = await GameClient.connect(service.ws_url)
        assert (await client.hello(table, token))["t"] == "welcome"
        clients.append(client)
    await sync_all(clients)
    return clients[0], clients[1], table


async def play_to_hand_end(clients: list[GameClient]) -> None:
    """First legal moves until a hand ends (the document between hands)."""
    for _ in range(200):
        await sync_all(clients)
        game = clients[0].game
        assert not game["game_over"], "the game ended before a hand did"
        if game["turn"] is None:
            return
        mover = next(c for c in clients if c.seat == game["turn"])
        answer = await mover.move(mover.game["legal"][0])
        assert answer["t"] == "accepted", answer
    raise AssertionError("no hand ended")


async def test_the_table_waits_on_the_finished_hand_and_no_clock_runs(
    redis_url: str,
) -> None:
    env = {**FAST, "NEXT_HAND_S": "20"}
    async with running(ServiceProcess(redis_url, env=env)) as svc:
        first, second, _ = await two_players(svc, rules={"preset": "all-fives", "target": 500},
                                             clock=HURRIED, on_timeout="forfeit")
        before = first.game
        assert before["turn"] is not None
        await play_to_hand_end([first, second])
        doc = first.doc
        assert doc is not None
        game, table = doc["game"], doc["table"]
        # the finished hand stays on the board, revealed in rounds, and nobody may move
        assert game["layout"] and game["round"] == 0 and len(game["rounds"]) == 1
        assert game["legal"] == [] and game["game_over"] is False
        pause = table["next_hand"]
        assert pause["ready"] == []
        assert 15_000 < pause["deadline"] - time.time() * 1000 <= 20_000
        assert table["clock"]["deadline"] is None
        refused = await first.move({"draw": True})
        assert (refused["t"], refused["code"]) == ("rejected", "between_hands")
        await asyncio.sleep(2.5)  # longer than a move's time: nothing forfeits
        await first.send({"t": "ready"})
        await first.wait_version((first.v or 0) + 1)
        assert first.doc is not None and first.doc["table"]["next_hand"]["ready"] == [0]
        assert first.doc["table"]["status"] == "playing"
        assert first.doc["table"]["result"] is None
        await second.send({"t": "ready"})
        await sync_all([first, second])
        await first.wait_version((first.v or 0) + 1)
        dealt = first.doc
        assert dealt is not None and dealt["table"]["next_hand"] is None
        assert dealt["game"]["round"] == 1 and dealt["game"]["turn"] is not None
        assert dealt["table"]["clock"]["deadline"] is not None  # the leader's clock runs
        assert dealt["table"]["result"] is None
        events = [e["type"] for m in first.messages if m.get("t") == "diff"
                  for e in m.get("ev", [])]
        assert events.count("ready") == 2 and "deal" in events and "timeout" not in events


async def test_the_next_hand_is_dealt_at_the_deadline_and_ready_is_for_seats(
    redis_url: str,
) -> None:
    env = {**FAST, "NEXT_HAND_S": "1"}
    async with running(ServiceProcess(redis_url, env=env)) as svc:
        first, second, table = await two_players(svc, rules={"preset": "all-fives",
                                                             "target": 500})
        watcher = await GameClient.connect(svc.ws_url)
        assert (await watcher.hello(table))["t"] == "welcome"
        await watcher.send({"t": "ready"})
        assert (await watcher.recv_until("error"))["code"] == "not_seated"
        await first.send({"t": "ready"})  # no hand is waiting yet
        assert (await first.recv_until("error"))["code"] == "not_between_hands"
        await play_to_hand_end([first, second])
        ended = first.v or 0
        await first.wait_version(ended + 1, wait_s=10)  # nobody says ready: the deadline
        assert first.doc is not None and first.doc["table"]["next_hand"] is None
        assert first.doc["game"]["round"] == 1


async def test_without_a_pause_the_next_hand_is_dealt_with_the_last_move(
    redis_url: str,
) -> None:
    async with running(ServiceProcess(redis_url, env={**FAST, "NEXT_HAND_S": "0"})) as svc:
        first, second, _ = await two_players(svc, rules={"preset": "all-fives", "target": 500})
        for _ in range(200):
            await sync_all([first, second])
            game = first.game
            assert game["turn"] is not None  # never between hands
            if game["round"] == 1:
                assert first.doc is not None and first.doc["table"]["next_hand"] is None
                return
            mover = next(c for c in (first, second) if c.seat == game["turn"])
            assert (await mover.move(mover.game["legal"][0]))["t"] == "accepted"
        raise AssertionError("no second hand")


# ---- the table service alone ---------------------------------------------------------------

async def _hand_end(service: TableService, table_id: str) -> dict[str, Any]:
    rng = random.Random(3)
    for n in range(300):
        _, doc = await service.snapshot(table_id, "s")
        if doc["game"]["turn"] is None:
            return doc
        await play_random(service, table_id, rng, f"m{n}")
    raise AssertionError("no hand ended")


async def test_a_turn_clock_table_pauses_for_next_hand_turn_s(
    redis_client: redis.asyncio.Redis,
) -> None:
    clock = ManualClock()
    service = TableService(redis_client, clock=clock, next_hand_s=20, next_hand_turn_s=3600)
    table_id, _ = await new_table(service, rules={"preset": "all-fives", "target": 500},
                                  clock={"kind": "turn", "move_h": 24, "max_h": 72})
    doc = await _hand_end(service, table_id)
    assert doc["table"]["next_hand"]["deadline"] == round(clock.now * 1000) + 3_600_000
    service.close()


async def test_a_table_of_bots_only_goes_straight_on(redis_client: redis.asyncio.Redis) -> None:
    service = TableService(redis_client, clock=ManualClock(), next_hand_s=20)
    table_id, tokens = await new_table(service, bots={"1": "greedy"},
                                       rules={"preset": "all-fives", "target": 500})
    await service.leave(table_id, tokens[0])  # a bot stands in: nobody left to wait for
    record = (await service.load(table_id)).record
    game = record.game
    rng = random.Random(1)
    while game.round == 0:
        seat = game.turn
        assert seat is not None, "a table of bots never waits between hands"
        change = service.play(record, seat, rng.choice(engine.legal_moves(game)), None)
        record, game = change.record, change.record.game
        assert record.next_hand is None
    assert game.round == 1 and game.turn is not None  # the next hand dealt with the last move
    service.close()
