"""Bots and clocks: deadlines kept in Redis, acted on once, through the one write path."""

from __future__ import annotations

import asyncio
import functools
import gzip
import itertools
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
import redis.asyncio

from server.clock import ClockState, start, stop
from server.scheduler import Scheduler
from server.store import DEADLINES
from server.table_config import ClockConfig
from server.tables import Rejected, TableService
from tests.support.redis_server import RedisServer
from tests.support.tables import ManualClock, new_table, play_random

REALTIME = {"kind": "realtime", "move_s": 5, "reserve_s": 10}


def make_service(client: redis.asyncio.Redis, clock: ManualClock | None = None,
                 bot_delay_ms: int = 0) -> TableService:
    service = TableService(client, bot_delay_ms=bot_delay_ms, clock=clock or ManualClock())
    service.seed_source = functools.partial(random.Random(99).getrandbits, 62)
    return service


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def tables(redis_client: redis.asyncio.Redis,
                 clock: ManualClock) -> AsyncIterator[TableService]:
    yield make_service(redis_client, clock)


async def last_events(tables: TableService, table_id: str, since: int) -> list[dict[str, Any]]:
    frames = await tables.frames_since(table_id, "s", since)
    assert frames is not None
    return [e for _, frame in frames for e in msgpack.unpackb(frame)["ev"]]


async def test_a_bot_seat_plays_by_itself(redis_client: redis.asyncio.Redis) -> None:
    tables = make_service(redis_client)
    table_id, tokens = await new_table(tables, 2, bots={"1": "greedy"})
    assert list(tokens) == [0]
    stopping = asyncio.Event()
    loop = asyncio.create_task(tables.run_deadlines(stopping))
    rng = random.Random(5)
    human_moves = 0
    finished = False
    try:
        for _ in range(20_000):  # about 100 s at most; the game needs far less
            _, doc = await tables.snapshot(table_id, "s")
            finished = doc["table"]["status"] == "finished"
            if finished or human_moves == 30:
                break
            if doc["game"]["turn"] == 0:
                await play_random(tables, table_id, rng, f"h{human_moves}")
                human_moves += 1
            else:
                await asyncio.sleep(0.005)
    finally:
        stopping.set()
        await asyncio.wait_for(loop, 10)
    # The person only moves when the turn comes back, so reaching 30 moves (or the end)
    # needs the bot to have answered every time.
    assert finished or human_moves == 30
    events = await last_events(tables, table_id, 0)
    movers = [e["seat"] for e in events if e["type"] in ("play", "draw", "pass")]
    assert movers.count(0) == human_moves
    turns_to_bot = sum(1 for a, b in itertools.pairwise(movers) if (a, b) == (0, 1))
    assert turns_to_bot >= 5


async def test_a_searching_bot_thinks_in_a_worker_process(
    redis_client: redis.asyncio.Redis,
) -> None:
    tables = make_service(redis_client)
    table_id, _ = await new_table(tables, 2, bots={"0": "strong-fast"})
    version, doc = await tables.snapshot(table_id, "s")
    if doc["game"]["turn"] != 0:
        version = await play_random(tables, table_id, random.Random(4), "first")
    stopping = asyncio.Event()
    loop = asyncio.create_task(tables.run_deadlines(stopping))
    try:
        for _ in range(3000):  # up to 30 s for the worker to start and think
            if (await tables.snapshot(table_id, "s"))[0] > version:
                break
            await asyncio.sleep(0.01)
    finally:
        stopping.set()
        await asyncio.wait_for(loop, 30)
    events = await last_events(tables, table_id, version)
    assert events and events[0]["seat"] == 0 and events[0]["type"] in ("play", "draw")


async def test_a_bot_waits_for_its_delay(redis_client: redis.asyncio.Redis,
                                         clock: ManualClock) -> None:
    tables = make_service(redis_client, clock, bot_delay_ms=600)
    table_id, _ = await new_table(tables, 2, bots={"0": "random"})
    scheduler = Scheduler(tables)
    version, doc = await tables.snapshot(table_id, "s")
    if doc["game"]["turn"] != 0:
        await play_random(tables, table_id, random.Random(1), "first")
        version += 1
    clock.advance(0.599)
    await scheduler.run_once()
    assert (await tables.snapshot(table_id, "s"))[0] == version
    clock.advance(0.001)
    await scheduler.run_once()
    assert (await tables.snapshot(table_id, "s"))[0] == version + 1
    assert (await last_events(tables, table_id, version))[0]["seat"] == 0


async def test_clock_deadline_and_reserve_follow_the_time_taken(
    tables: TableService, clock: ManualClock,
) -> None:
    table_id, _ = await new_table(tables, 2, clock=REALTIME, on_timeout="bot")
    _, doc = await tables.snapshot(table_id, "s")
    started = round(clock.now * 1000)
    first = doc["game"]["turn"]
    assert doc["table"]["clock"] == {"kind": "realtime", "deadline": started + 15_000,
                                     "reserve": [10_000, 10_000]}
    # 7 s on a 5 s move: 2 s come off the reserve; the other seat starts a full turn.
    clock.advance(7)
    version = await play_random(tables, table_id, random.Random(2), "slow")
    _, doc = await tables.snapshot(table_id, "s")
    reserve = [10_000, 10_000]
    if doc["game"]["turn"] != first:
        reserve[first] = 8_000
        assert doc["table"]["clock"] == {"kind": "realtime", "deadline": started + 22_000,
                                         "reserve": reserve}
    else:  # it drew and moves again: its time keeps running
        assert doc["table"]["clock"]["deadline"] == started + 15_000
    assert version == 4


async def test_an_expired_clock_is_played_by_a_bot(tables: TableService,
                                                   clock: ManualClock) -> None:
    table_id, _ = await new_table(tables, 2, clock=REALTIME, on_timeout="bot")
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    scheduler = Scheduler(tables)
    clock.advance(14.999)
    await scheduler.run_once()
    assert (await tables.snapshot(table_id, "s"))[0] == version
    clock.advance(0.001)
    for _ in range(30):  # a stand-in that draws moves again until the turn passes
        await scheduler.run_once()
        _, doc = await tables.snapshot(table_id, "s")
        if doc["game"]["turn"] != seat:
            break
    events = await last_events(tables, table_id, version)
    assert events[0] == {"type": "timeout", "seat": seat, "action": "bot"}
    assert events[1]["seat"] == seat and events[1]["type"] in ("play", "draw")
    now = round(clock.now * 1000)
    reserve = [10_000, 10_000]
    reserve[seat] = 0
    assert doc["table"]["clock"] == {"kind": "realtime", "deadline": now + 15_000,
                                     "reserve": reserve}
    assert doc["table"]["status"] == "playing"


async def test_an_expired_clock_forfeits_when_the_table_says_so(
    tables: TableService, clock: ManualClock,
) -> None:
    table_id, _ = await new_table(tables, 2, clock=REALTIME, on_timeout="forfeit")
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    clock.advance(15)
    await Scheduler(tables).run_once()
    new_version, doc = await tables.snapshot(table_id, "s")
    assert new_version == version + 1
    assert doc["table"]["status"] == "finished"
    assert doc["table"]["result"] == {"winner": 1 - seat, "reason": "forfeit", "seat": seat,
                                      "cause": "time"}
    assert doc["table"]["clock"]["deadline"] is None
    assert await last_events(tables, table_id, version) == [
        {"type": "timeout", "seat": seat, "action": "forfeit"}]
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, seat, {"draw": True}, new_version, "late")
    assert refused.value.code == "game_over"
    transcript = json.loads(gzip.decompress(await tables.transcript(table_id)))
    assert transcript["players"] == 2


async def test_a_turn_clock_gives_a_day_per_move(tables: TableService,
                                                 clock: ManualClock) -> None:
    table_id, _ = await new_table(tables, 2, clock={"kind": "turn", "move_h": 24, "max_h": 72})
    _, doc = await tables.snapshot(table_id, "s")
    assert doc["table"]["clock"] == {"kind": "turn", "reserve": None,
                                     "deadline": round(clock.now * 1000) + 24 * 3_600_000}


def test_turn_clock_banks_grow_a_day_per_turn_up_to_three_days() -> None:
    config = ClockConfig("turn", move_ms=24 * 3_600_000, max_ms=72 * 3_600_000)
    hour = 3_600_000
    clock = start(config, ClockState.initial(config, 2), 0, 0)
    assert clock.deadline_ms == 24 * hour
    clock = stop(config, clock, 1 * hour)  # seat 0 took an hour
    assert clock.banks == (23 * hour, 0)
    clock = start(config, clock, 1, 1 * hour)
    assert clock.deadline_ms == 25 * hour
    clock = stop(config, start(config, stop(config, clock, 2 * hour), 0, 2 * hour), 3 * hour)
    assert clock.banks == (46 * hour, 23 * hour)
    clock = start(config, clock, 0, 3 * hour)  # 46 + 24 = 70 hours
    assert clock.deadline_ms == 73 * hour
    clock = start(config, stop(config, clock, 3 * hour), 0, 3 * hour)  # capped at 72
    assert clock.banks[0] == 72 * hour


def test_realtime_clock_spends_reserve_only_beyond_the_move_time() -> None:
    config = ClockConfig("realtime", move_ms=30_000, reserve_ms=120_000)
    clock = start(config, ClockState.initial(config, 3), 2, 1_000)
    assert clock.deadline_ms == 151_000
    assert stop(config, clock, 25_000).banks == (120_000, 120_000, 120_000)
    assert stop(config, clock, 41_000).banks == (120_000, 120_000, 110_000)
    assert stop(config, clock, 500_000).banks == (120_000, 120_000, 0)


async def test_deadlines_survive_a_redis_crash_and_a_new_process(clock: ManualClock) -> None:
    with RedisServer() as server:
        client = redis.asyncio.Redis.from_url(server.url)
        table_id, _ = await new_table(make_service(client, clock), 2, clock=REALTIME,
                                      on_timeout="forfeit")
        server.kill()
        server.start()
        await client.aclose()
        client = redis.asyncio.Redis.from_url(server.url)
        tables = make_service(client, clock)  # a new process: nothing in memory
        clock.advance(15)
        await Scheduler(tables).run_once()
        _, doc = await tables.snapshot(table_id, "s")
        assert doc["table"]["status"] == "finished"
        assert doc["table"]["result"]["reason"] == "forfeit"
        await client.aclose()


async def test_lost_deadline_entries_are_rearmed(tables: TableService, clock: ManualClock,
                                                 redis_client: redis.asyncio.Redis) -> None:
    table_id, _ = await new_table(tables, 2, clock=REALTIME, on_timeout="forfeit")
    waiting = (await tables.create({}))["id"]
    version, _ = await tables.snapshot(table_id, "s")
    await redis_client.delete(DEADLINES)
    scheduler = Scheduler(tables)
    assert await scheduler.rearm() == 1  # the playing table; the waiting one needs nothing
    assert await redis_client.zrange(DEADLINES, 0, -1, withscores=True) == [
        (f"{table_id}:{version}".encode(), round(clock.now * 1000) + 15_000)]
    clock.advance(15)
    await scheduler.run_once()
    assert (await tables.snapshot(table_id, "s"))[1]["table"]["status"] == "finished"
    assert (await tables.snapshot(waiting, "s"))[0] == 1


async def test_only_the_lease_holder_acts(tables: TableService, clock: ManualClock) -> None:
    table_id, _ = await new_table(tables, 2, clock=REALTIME, on_timeout="forfeit")
    version, _ = await tables.snapshot(table_id, "s")
    clock.advance(15)
    other = Scheduler(tables)
    assert await tables.store.acquire_lease(table_id, other.owner, 10_000)
    mine = Scheduler(tables)
    await mine.run_once()
    assert (await tables.snapshot(table_id, "s"))[0] == version
    await tables.store.release_lease(table_id, other.owner)
    await mine.run_once()
    assert (await tables.snapshot(table_id, "s"))[0] == version + 1


async def test_a_player_who_leaves_a_game_is_replaced_by_a_bot(
    tables: TableService, clock: ManualClock,
) -> None:
    table_id, tokens = await new_table(tables, 2)
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    await tables.leave(table_id, tokens[seat])
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, seat, {"draw": True}, version + 1, "after-leaving")
    assert (refused.value.code, refused.value.status) == ("not_seated", 403)
    _, doc = await tables.snapshot(table_id, "s")
    assert doc["table"]["seats"][seat] == {"name": f"player{seat}", "bot": "greedy",
                                           "taken": True, "player": None}
    await Scheduler(tables).run_once()
    events = await last_events(tables, table_id, version + 1)
    assert events and events[0]["seat"] == seat
    with pytest.raises(Rejected) as refused:
        await tables.authenticate(table_id, tokens[seat])
    assert refused.value.code == "bad_token"


async def test_run_deadlines_returns_when_asked_to_stop(tables: TableService) -> None:
    stopping = asyncio.Event()
    loop = asyncio.create_task(tables.run_deadlines(stopping))
    await asyncio.sleep(0.05)
    stopping.set()
    await asyncio.wait_for(loop, 5)
    assert loop.done() and loop.exception() is None
