"""Hints on practice tables (protocol.md "Hints"): the strong bot's move for the seat to move,
from that seat's own view, sent to that socket only; refused on tables without hints, to
spectators and out of turn; only casual tables with bots may have them."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import redis.asyncio

import engine
from engine.bots import BUDGETS, choose_move
from server.scheduler import Scheduler, bot_seed
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join
from tests.support.tables import new_table
from tests.support.web import account, code


async def test_a_hint_is_the_strong_bots_move_for_the_seats_own_view(
    redis_client: redis.asyncio.Redis, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The search stops at its sample count, never at its clock: the same view and seed then
    # give the same move however busy the machine is.
    monkeypatch.setitem(BUDGETS, "strong", (600_000, 400))
    service = TableService(redis_client)
    service.scheduler = Scheduler(service)  # no worker pool: the think runs in this process
    try:
        for _ in range(20):  # a deal where a person (not the bot at seat 2) is to move
            table_id, _ = await new_table(service, 3, hints=True, bots={"2": "greedy"})
            loaded = await service.load(table_id)
            if loaded.record.seat_to_move in (0, 1):
                break
        seat = loaded.record.seat_to_move
        assert seat in (0, 1)
        version, move = await service.hint(table_id, seat)
        assert version == loaded.version
        own_view = engine.view(loaded.record.game, seat)
        expected = choose_move("strong", own_view, bot_seed(loaded.record, version))
        assert move == engine.move_to_data(expected)
        assert move in own_view["legal"]
        service.scheduler = None  # asked again for the same position: no second think
        assert await service.hint(table_id, seat) == (version, move)
    finally:
        service.close()


async def test_hints_over_the_socket_reach_the_asking_seat_only(redis_url: str) -> None:
    # The bot waits two seconds before it moves, so its turn can be asked about.
    env = {**FAST, "BOT_DELAY_MS": "2000"}
    async with running(ServiceProcess(redis_url, env=env)) as svc:
        async with httpx.AsyncClient(base_url=svc.url, timeout=10) as http:
            table = await create_table(http, hints=True, bots={"1": "greedy"})
            token = await join(http, table, 0, "ann")
            plain = await create_table(http, bots={"1": "greedy"})
            plain_token = await join(http, plain, 0, "bob")
        player = await GameClient.connect(svc.ws_url)
        assert (await player.hello(table, token))["t"] == "welcome"
        watcher = await GameClient.connect(svc.ws_url)
        assert (await watcher.hello(table))["t"] == "welcome"
        await watcher.send({"t": "hint"})
        refused = await watcher.recv_until("error")
        assert refused["code"] == "not_seated"
        for _ in range(2):  # one hint on the bot's turn, one on the player's
            while player.doc is None or player.doc["game"] is None:
                await player.recv()
            if not player.my_turn():
                await player.send({"t": "hint"})
                assert (await player.recv_until("error"))["code"] == "not_your_turn"
                while not player.my_turn():
                    await player.recv()
            await player.send({"t": "hint"})
            hint = await player.recv_until("hint", wait_s=20)
            assert hint["v"] == player.v
            assert hint["move"] in player.game["legal"]
            answer = await player.move(hint["move"])
            assert answer["t"] == "accepted"
        await asyncio.sleep(0.5)
        while True:  # nothing is left for the spectator but game frames
            try:
                await watcher.recv(0.2)
            except TimeoutError:
                break
        assert all(m["t"] != "hint" for m in watcher.messages)
        other = await GameClient.connect(svc.ws_url)
        assert (await other.hello(plain, plain_token))["t"] == "welcome"
        await other.send({"t": "hint"})
        assert (await other.recv_until("error"))["code"] == "hints_off"


async def test_only_casual_tables_with_bots_may_have_hints(redis_url: str) -> None:
    async with running(ServiceProcess(redis_url, env=FAST)) as svc, \
            account(svc, "hint_ann") as web:
        for body in ({"hints": True}, {"hints": True, "rated": True}):
            answer = await web.post("/api/tables", json={"players": 2, **body})
            assert answer.status_code == 400 and code(answer) == "hints_practice_only", body
        answer = await web.post("/api/tables", json={"players": 2, "hints": "yes",
                                                     "bots": {"1": "greedy"}})
        assert answer.status_code == 400 and code(answer) == "bad_request"
        made = await web.post("/api/tables",
                              json={"players": 2, "hints": True, "bots": {"1": "strong"}})
        assert made.status_code == 201
        listed = (await web.get(f"/api/tables/{made.json()['id']}")).json()
        assert listed["hints"] is True
        meta = (await web.get("/api/meta")).json()
        assert meta["create"]["hints"] == {"default": False, "needs_bots": True}
