"""A seat belongs to its current token, on every socket, at every instant.

The attack: sit at seat 0 and open a socket, leave (seat 0 is free again), sit at seat 1, and wait
for a victim to take seat 0. The old socket must be closed (4005 `seat_left`) before it receives
anything of the victim's seat; a move or a chat line sent on it is never applied. The same holds
when the old socket lives on another server process, and for the stand-in bot's hand after
leaving a game in progress.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgpack
import pytest
import redis.asyncio
import websockets

from server.rejected import Rejected
from server.tables import TableService, token_hash
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, close_code, create_table, join
from tests.support.tables import new_table

SEAT_LEFT = 4005


async def leave(http: httpx.AsyncClient, table: str, token: str) -> None:
    response = await http.post(f"/api/tables/{table}/leave", json={"token": token})
    assert response.status_code == 200, response.text


def versions_seen(client: GameClient) -> list[int]:
    return [m["v"] for m in client.messages if m.get("t") in ("snapshot", "diff")]


async def attack(http_a: httpx.AsyncClient, ws_old: str, ws_victim: str) -> dict[str, Any]:
    """Run the seat-swap attack; the old socket lives at `ws_old`, the victim at `ws_victim`."""
    table = await create_table(http_a)
    old_token = await join(http_a, table, 0, "mallory")
    old = await GameClient.connect(ws_old)
    welcome = await old.hello(table, old_token)
    assert welcome["t"] == "welcome" and welcome["seat"] == 0
    leave_from = old.v
    assert leave_from is not None
    await leave(http_a, table, old_token)
    await join(http_a, table, 1, "mallory")
    victim_token = await join(http_a, table, 0, "victim")  # this join starts the game
    victim = await GameClient.connect(ws_victim)
    assert (await victim.hello(table, victim_token))["t"] == "welcome"
    hand = set(victim.game["hand"])
    assert hand, "the victim holds tiles"
    return {"table": table, "old": old, "leave_from": leave_from, "victim": victim,
            "hand": hand, "victim_token": victim_token}


async def assert_old_socket_cut(run: dict[str, Any]) -> None:
    old: GameClient = run["old"]
    code = await close_code(old)
    assert code == SEAT_LEFT, f"old socket closed with {code}, expected {SEAT_LEFT}"
    # It never received the version of the leave (nor anything later): no frame of the new
    # holder's seat, whose hand it would show.
    assert all(v <= run["leave_from"] for v in versions_seen(old)), versions_seen(old)
    assert not any(_frame_has_tiles(raw, run["hand"]) for raw in old.raw)


async def test_old_socket_of_a_left_seat_is_closed_before_the_new_holder_sits(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    run = await attack(http, service.ws_url, service.ws_url)
    await assert_old_socket_cut(run)
    errors = [m for m in run["old"].messages if m.get("t") == "error"]
    assert errors and errors[-1]["code"] == "seat_left"


@pytest.fixture
async def two_services(redis_url: str) -> AsyncIterator[tuple[ServiceProcess, ServiceProcess]]:
    async with running(ServiceProcess(redis_url, env=FAST)) as a, \
            running(ServiceProcess(redis_url, env=FAST)) as b:
        yield a, b


async def test_old_socket_on_another_process_is_closed_too(
    two_services: tuple[ServiceProcess, ServiceProcess]
) -> None:
    a, b = two_services
    async with httpx.AsyncClient(base_url=a.url, timeout=10) as http:
        run = await attack(http, b.ws_url, a.ws_url)
    await assert_old_socket_cut(run)


async def test_leaving_a_game_in_progress_closes_the_socket_before_the_bot_takes_over(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http)
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    old = await GameClient.connect(service.ws_url)
    assert (await old.hello(table, tokens[0]))["t"] == "welcome"
    before = old.v
    assert before is not None
    await leave(http, table, tokens[0])
    assert await close_code(old) == SEAT_LEFT
    assert all(v <= before for v in versions_seen(old))


async def two_seated(service: ServiceProcess, http: httpx.AsyncClient, **options: Any
                     ) -> tuple[str, list[str], list[GameClient]]:
    """A started two-seat table (created with ``options``) with a connected client on each
    seat."""
    table = await create_table(http, **options)
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    clients = []
    for seat in (0, 1):
        client = await GameClient.connect(service.ws_url)
        assert (await client.hello(table, tokens[seat]))["t"] == "welcome"
        clients.append(client)
    return table, tokens, clients


async def test_a_move_and_a_chat_on_a_revoked_socket_are_never_applied(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    """Sent right after the leave, before the close can arrive: the commit itself refuses."""
    table, tokens, clients = await two_seated(service, http)
    mover = next(c for c in clients if c.my_turn())
    other = clients[1 - clients.index(mover)]
    legal = mover.game["legal"]
    await leave(http, table, tokens[mover.seat])  # type: ignore[index]
    start = mover.v
    try:
        await mover.send({"t": "move", "id": "late", "v": start, "move": legal[0]})
        await mover.send({"t": "chat", "text": "I am still here"})
    except websockets.ConnectionClosed:
        pass
    assert await close_code(mover) == SEAT_LEFT
    assert not any(m.get("t") == "accepted" for m in mover.messages)
    # The seat is the stand-in bot's now; nothing the old socket sent shows up for the others.
    await asyncio.sleep(0.5)
    watcher = await GameClient.connect(service.ws_url)
    await watcher.hello(table)
    await asyncio.sleep(0.3)
    while True:
        try:
            await watcher.recv(0.3)
        except TimeoutError:
            break
    chats = [m for m in other.messages + watcher.messages if m.get("t") == "chat"]
    assert not chats, chats


async def test_a_move_with_a_token_that_left_is_refused_and_one_before_the_leave_lands(
    redis_url: str,
) -> None:
    """Both orders of a move and a leave, through the table service."""
    client = redis.asyncio.Redis.from_url(redis_url)
    service = TableService(client)
    try:
        # Leave first, then the move: refused, nothing written.
        table_id, tokens = await new_table(service)
        version, doc = await service.snapshot(table_id, "s")
        seat = doc["game"]["turn"]
        _, own = await service.snapshot(table_id, str(seat))
        move = own["game"]["legal"][0]
        await service.leave(table_id, tokens[seat])
        after_leave, _ = await service.snapshot(table_id, "s")
        with pytest.raises(Rejected) as refused:
            await service.submit(table_id, seat, move, after_leave, "m1",
                                 token=token_hash(tokens[seat]))
        # The stand-in bot holds the seat now (checked first), and the commit would refuse
        # the old token in any case (tests/server/test_store.py).
        assert refused.value.code in ("not_seated", "seat_left")
        assert (await service.snapshot(table_id, "s"))[0] == after_leave

        # The move first, then the leave: both land, the move before the leave.
        table_id, tokens = await new_table(service)
        version, doc = await service.snapshot(table_id, "s")
        seat = doc["game"]["turn"]
        _, own = await service.snapshot(table_id, str(seat))
        moved = await service.submit(table_id, seat, own["game"]["legal"][0], version, "m1",
                                     token=token_hash(tokens[seat]))
        assert moved == version + 1
        await service.leave(table_id, tokens[seat])
        assert (await service.snapshot(table_id, "s"))[0] > moved
    finally:
        await client.aclose()


async def test_a_move_racing_a_leave_is_applied_only_before_it(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    """The move and the leave are sent at the same moment, many times: whichever wins, a move
    accepted for the seat is always at a version before the leave."""
    for _ in range(8):
        table, tokens, clients = await two_seated(service, http)
        mover = next(c for c in clients if c.my_turn())
        seat = mover.seat
        assert seat is not None
        move = {"t": "move", "id": "race", "v": mover.v, "move": mover.game["legal"][0]}
        await asyncio.gather(
            mover.send(move),
            http.post(f"/api/tables/{table}/leave", json={"token": tokens[seat]}),
        )
        await close_code(mover)
        accepted = [m for m in mover.messages if m.get("t") == "accepted"]
        watcher = await GameClient.connect(service.ws_url)
        await watcher.hello(table, None, 0, doc={})
        events: list[tuple[int, dict[str, Any]]] = []
        try:
            while True:
                message = await watcher.recv(0.5)
                if message.get("t") == "diff":
                    events += [(message["v"], ev) for ev in message["ev"]]
        except TimeoutError:
            pass
        leave_v = next(v for v, ev in events if ev.get("type") == "leave")
        if accepted:
            assert accepted[0]["v"] < leave_v, (accepted, leave_v)
        await GameClient.close_all()


def _frame_has_tiles(raw: bytes, tiles: set[str]) -> bool:
    message = msgpack.unpackb(raw, raw=False)
    text = repr(message)
    return any(f"'{tile}'" in text for tile in tiles)
