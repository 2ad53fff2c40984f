"""Bot farms: tables nobody is connected to end as abandoned, and many busy bot tables cannot
starve another table's bot. Real service processes on the session's Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio

from server.scheduler import Scheduler
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join
from tests.support.tables import ManualClock, new_table

ABANDON_AFTER_S = 3
# A farm is made from one address here: the per-address table quotas are lifted so that it can
# be big (a farm spread over many addresses is what these tests stand for).
QUOTAS_OFF = {"CREATE_RATE": "1000000", "JOIN_RATE": "1000000", "MAX_WAITING_TABLES": "1000000"}
FARM_ADDRESS = "127.0.0.2"  # every hostile table is created from here
HONEST_ADDRESS = "127.0.0.3"


@pytest.fixture
async def short_abandon(redis_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, **QUOTAS_OFF, "ABANDON_AFTER": str(ABANDON_AFTER_S), "BOT_DELAY_MS": "50"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


@pytest.fixture
async def farm_service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**FAST, **QUOTAS_OFF})) as process:
        yield process


def client_from(service: ServiceProcess, address: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=address)
    return httpx.AsyncClient(base_url=service.url, transport=transport, timeout=20)


async def farm_table(http: httpx.AsyncClient, level: str) -> str:
    """A table whose only person joined and left: a bot plays each seat, nobody is there."""
    table = await create_table(http, rules={"preset": "all-fives", "target": 1000},
                               bots={"1": level})
    token = await join(http, table, 0, "gone")
    response = await http.post(f"/api/tables/{table}/leave", json={"token": token})
    assert response.status_code == 200, response.text
    return table


async def table_doc(service: ServiceProcess, table: str) -> dict[str, Any]:
    """The table part of the spectators' document (a spectator never keeps a table alive)."""
    client = await GameClient.connect(service.ws_url)
    try:
        await client.hello(table)
        assert client.doc is not None
        return dict(client.doc["table"])
    finally:
        await client.close()


async def test_tables_nobody_is_connected_to_end_as_abandoned_even_after_a_restart(
    short_abandon: ServiceProcess,
) -> None:
    async with client_from(short_abandon, FARM_ADDRESS) as http:
        farm = [await farm_table(http, level) for level in ("greedy", "random", "strong-fast")]
        # Joined over HTTP and never connected: its clock runs out every second and a bot
        # plays the turn; the join is the last time its person was there.
        never = await create_table(http, bots={"1": "greedy"}, on_timeout="bot",
                                   clock={"kind": "realtime", "move_s": 1, "reserve_s": 0})
        await join(http, never, 0, "absent")
    for table in [*farm, never]:
        doc = await table_doc(short_abandon, table)
        assert doc["status"] == "playing", doc
    # The tables live in Redis: a restarted process finds them again.
    await asyncio.to_thread(short_abandon.restart)
    deadline = time.monotonic() + ABANDON_AFTER_S + 25
    docs: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        docs = {table: await table_doc(short_abandon, table) for table in [*farm, never]}
        if all(doc["status"] == "finished" for doc in docs.values()):
            break
        await asyncio.sleep(0.5)
    for table, doc in docs.items():
        assert doc["status"] == "finished", (table, doc)
        assert doc["result"] == {"winner": None, "reason": "abandoned", "seat": None}, doc
    # Nothing plays on at an abandoned table.
    versions = {t: (await http_version(short_abandon, t)) for t in docs}
    await asyncio.sleep(1.0)
    assert versions == {t: (await http_version(short_abandon, t)) for t in docs}


async def http_version(service: ServiceProcess, table: str) -> int:
    async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
        response = await http.get(f"/api/tables/{table}")
        assert response.status_code == 200, response.text
        return int(response.json()["v"])


async def test_a_connected_player_keeps_the_table_going(short_abandon: ServiceProcess) -> None:
    """Connected but never moving: the clock runs out every second and a bot plays the turn,
    for several times ABANDON_AFTER; the table plays on because its person is there."""
    async with client_from(short_abandon, HONEST_ADDRESS) as http:
        table = await create_table(http, bots={"1": "greedy"}, on_timeout="bot",
                                   rules={"preset": "all-fives", "target": 1000},
                                   clock={"kind": "realtime", "move_s": 1, "reserve_s": 0})
        token = await join(http, table, 0, "here")
    player = await GameClient.connect(short_abandon.ws_url)
    await player.hello(table, token)
    first = player.v
    assert first is not None
    until = time.monotonic() + 3 * ABANDON_AFTER_S
    while time.monotonic() < until:
        try:
            await player.recv(max(0.01, until - time.monotonic()))
        except TimeoutError:
            break
    assert player.doc is not None
    assert player.doc["table"]["status"] == "playing", player.doc["table"]
    assert player.v is not None and player.v > first + 3  # the timeouts were played


# ---- a farm of busy bot tables next to an honest one ----------------------------------------


async def count_bot_replies(service: ServiceProcess, table: str, token: str,
                            seconds: float) -> int:
    """Play the person's seat as fast as the bot answers for `seconds`; bot moves seen."""
    player = await GameClient.connect(service.ws_url, local_addr=(HONEST_ADDRESS, 0))
    await player.hello(table, token)
    replies = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if player.game.get("game_over"):
            break
        if player.my_turn():
            answer = await player.move(player.game["legal"][0])
            assert answer["t"] == "accepted", answer
            continue
        try:
            message = await player.recv(max(0.01, until - time.monotonic()))
        except TimeoutError:
            break
        if message["t"] == "diff":
            replies += sum(1 for e in message["ev"]
                           if e.get("seat") == 1 and e.get("type") in ("play", "draw", "pass"))
    await player.close()
    return replies


async def test_an_honest_tables_bots_keep_answering_while_a_farm_of_bot_tables_is_due(
    farm_service: ServiceProcess,
) -> None:
    service = farm_service
    async def one_farm_table() -> str:
        # a fresh client each time: a farm drops its cookies (a new guest identity per table)
        # and so is held back by its address's quotas only
        async with client_from(service, FARM_ADDRESS) as http:
            return await farm_table(http, "strong")

    made = await asyncio.gather(*(one_farm_table() for _ in range(50)))
    assert len(made) == 50
    async with client_from(service, HONEST_ADDRESS) as http:
        greedy = await create_table(http, rules={"preset": "all-fives", "target": 1000},
                                    bots={"1": "greedy"})
        greedy_token = await join(http, greedy, 0, "honest")
        strong = await create_table(http, rules={"preset": "all-fives", "target": 1000},
                                    bots={"1": "strong"})
        strong_token = await join(http, strong, 0, "honest")
    await asyncio.sleep(1.0)  # the farm is in full swing
    greedy_replies, strong_replies = await asyncio.gather(
        count_bot_replies(service, greedy, greedy_token, 12.0),
        count_bot_replies(service, strong, strong_token, 12.0),
    )
    print(f"honest bot moves in 12 s next to 50 farm tables: greedy {greedy_replies}, "
          f"strong {strong_replies}")
    # Idle, the greedy bot answers in milliseconds and the strong one in about 0.3 s.
    assert greedy_replies >= 10, (greedy_replies, strong_replies)
    assert strong_replies >= 4, (greedy_replies, strong_replies)


# ---- the rule, on a table service with a clock that moves only when told --------------------


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def tables(redis_client: redis.asyncio.Redis,
                 manual_clock: ManualClock) -> TableService:
    return TableService(redis_client, bot_delay_ms=0, clock=manual_clock)


async def status(tables: TableService, table_id: str) -> tuple[str, Any]:
    _, doc = await tables.snapshot(table_id, "s")
    return doc["table"]["status"], doc["table"]["result"]


async def test_the_last_connection_of_a_seat_people_play_is_what_counts(
    tables: TableService, manual_clock: ManualClock,
) -> None:
    scheduler = Scheduler(tables, abandon_after_ms=600_000)
    gone, _ = await new_table(tables, 2)  # two people joined, nobody ever connected
    kept, _ = await new_table(tables, 2)
    manual_clock.advance(599)
    await tables.store.mark_seen(kept, {1: tables.now_ms()})  # seat 1 of `kept` was there
    await scheduler.rearm()
    assert await status(tables, gone) == ("playing", None)
    manual_clock.advance(1)
    await scheduler.rearm()
    assert await status(tables, gone) == (
        "finished", {"winner": None, "reason": "abandoned", "seat": None})
    assert (await status(tables, kept))[0] == "playing"
    manual_clock.advance(599)
    await scheduler.rearm()
    assert (await status(tables, kept))[0] == "finished"


async def test_a_turn_clock_table_waits_for_the_longest_turn_its_clock_allows(
    tables: TableService, manual_clock: ManualClock,
) -> None:
    scheduler = Scheduler(tables, abandon_after_ms=600_000)
    table_id, _ = await new_table(tables, 2, clock={"kind": "turn", "move_h": 1, "max_h": 3},
                                  on_timeout="forfeit")
    manual_clock.advance(601)  # past ABANDON_AFTER: a day-by-day game is not abandoned yet
    await scheduler.rearm()
    assert await status(tables, table_id) == ("playing", None)
    manual_clock.advance(3 * 3600 - 601)  # three hours (max_h) since anybody was there
    await scheduler.rearm()
    assert await status(tables, table_id) == (
        "finished", {"winner": None, "reason": "abandoned", "seat": None})


async def test_a_table_of_bots_only_counts_the_last_connection_of_any_seat(
    tables: TableService, manual_clock: ManualClock,
) -> None:
    """Its person left: a bot plays the seat, and a turn clock no longer paces anything."""
    scheduler = Scheduler(tables, abandon_after_ms=600_000)
    table_id, tokens = await new_table(tables, 2, bots={"1": "greedy"},
                                       clock={"kind": "turn", "move_h": 24, "max_h": 72})
    await tables.leave(table_id, tokens[0])
    manual_clock.advance(599)
    await scheduler.run_once()  # bots move; the table is still within its time
    assert (await status(tables, table_id))[0] == "playing"
    manual_clock.advance(1)
    await scheduler.run_once()
    assert await status(tables, table_id) == (
        "finished", {"winner": None, "reason": "abandoned", "seat": None})
