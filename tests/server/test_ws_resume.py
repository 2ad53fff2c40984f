"""Resuming: a dropped player, a killed server process, two processes on one Redis."""

from __future__ import annotations

import asyncio

import httpx

from tests.server.conftest import FAST
from tests.support.servers import (
    GameClient,
    ServiceProcess,
    create_table,
    join,
    play_to_end,
    sync_all,
)

RULES = {"preset": "all-fives", "target": 20}


async def seat_two_players(server: ServiceProcess) -> tuple[str, list[str], list[GameClient]]:
    """A new 2-player table on `server` with both seats taken and connected: (id, tokens,
    clients)."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        table = await create_table(http, rules=RULES, players=2)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(server.ws_url) for _ in range(2)]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    return table, tokens, players


async def test_a_dropped_player_resumes_with_since_and_matches_a_fresh_snapshot(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, rules=RULES, players=2)
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    a = await GameClient.connect(service.ws_url)
    b = await GameClient.connect(service.ws_url)
    await a.hello(table, tokens[0])
    await b.hello(table, tokens[1])
    # A few moves, then seat 0 drops.
    await play_to_end({0: a, 1: b}, [], stop_after=3)
    held_doc, held_v = a.doc, a.v
    assert held_v is not None
    await a.close()
    # Seat 1 plays on while seat 0 is away; seat 0's moves are made by a second socket later.
    moved = 0
    while moved < 6 and not b.game["game_over"]:
        if b.my_turn():
            answer = await b.move(b.game["legal"][0])
            assert answer["t"] == "accepted"
            moved += 1
        else:
            back = await GameClient.connect(service.ws_url)
            await back.hello(table, tokens[0], since=held_v, doc=held_doc)
            assert not any(m["t"] == "snapshot" for m in back.messages)
            await sync_all([back, b])
            assert back.v == b.v
            answer = await back.move(back.game["legal"][0])
            assert answer["t"] == "accepted"
            await sync_all([back, b])
            held_doc, held_v = back.doc, back.v
            # Drop again, one version behind the table after b's next move.
            await back.close()
    # Final resume: only diffs, and the same document as a fresh snapshot.
    resumed = await GameClient.connect(service.ws_url)
    welcome = await resumed.hello(table, tokens[0], since=held_v, doc=held_doc)
    assert welcome["v"] == b.v
    await resumed.wait_version(welcome["v"])
    assert not any(m["t"] == "snapshot" for m in resumed.messages)
    fresh = await GameClient.connect(service.ws_url)
    await fresh.hello(table, tokens[0])
    assert fresh.doc == resumed.doc
    assert fresh.v == resumed.v
    for client in (b, fresh):
        await client.close()


async def test_a_killed_server_loses_no_acknowledged_move(redis_url: str) -> None:
    server = ServiceProcess(redis_url, env=FAST).start()
    try:
        table, tokens, players = await seat_two_players(server)
        await play_to_end(dict(enumerate(players)), [], stop_after=5)
        acked = [m for p in players for m in p.messages if m["t"] == "accepted"]
        last_acked = max(m["v"] for m in acked)
        history_before = players[0].game["history"]
        server.kill()
        server.start()
        again = [await GameClient.connect(server.ws_url) for _ in range(2)]
        for client, old, token in zip(again, players, tokens, strict=True):
            await client.hello(table, token, since=old.v, doc=old.doc)
        await sync_all(again)
        assert again[0].v is not None and again[0].v >= last_acked
        fresh = await GameClient.connect(server.ws_url)
        await fresh.hello(table)  # a spectator: the seat's socket stays
        assert fresh.v == again[0].v
        # Seat 0's own history names the tiles it drew; a spectator's never does.
        public_before = [{k: v for k, v in e.items() if k != "tile"} for e in history_before]
        assert fresh.game["history"][: len(history_before)] == public_before
        await fresh.close()
        # The game goes on to the end after the crash.
        await play_to_end(dict(enumerate(again)), [])
        assert again[0].game["game_over"] is True
        for client in again:
            await client.close()
    finally:
        server.stop()


async def test_two_processes_on_one_redis_serve_one_table(redis_url: str) -> None:
    # The second in an interpreter of its own (its own hash seed), not forked like the first.
    with ServiceProcess(redis_url, env=FAST) as one, \
            ServiceProcess(redis_url, env=FAST, command=True) as two:
        async with httpx.AsyncClient(base_url=one.url) as http:
            table = await create_table(http, rules=RULES, players=2)
            tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
        a = await GameClient.connect(one.ws_url)
        b = await GameClient.connect(two.ws_url)
        await a.hello(table, tokens[0])
        await b.hello(table, tokens[1])
        watch_one = await GameClient.connect(one.ws_url)
        watch_two = await GameClient.connect(two.ws_url)
        await watch_one.hello(table)
        await watch_two.hello(table)
        online = await watch_two.recv_until("presence", online=[True, True])
        assert online["online"] == [True, True]
        await a.send({"t": "chat", "text": "hello from one"})
        chat = await b.recv_until("chat")
        assert (chat["seat"], chat["name"], chat["text"]) == (0, "p0", "hello from one")
        await play_to_end({0: a, 1: b}, [watch_one, watch_two])
        assert watch_one.doc == watch_two.doc
        assert watch_one.game["game_over"] is True
        # A second connection with seat 0's token on the other process replaces the first.
        a2 = await GameClient.connect(two.ws_url)
        await a2.hello(table, tokens[0])
        await a.socket.wait_closed()
        assert a.socket.close_code == 4000
        for client in (a2, b, watch_one, watch_two):
            await client.close()


async def test_sigterm_closes_sockets_with_1001_and_every_table_resumes(redis_url: str) -> None:
    # `python -m server` itself, as a service manager runs it: SIGTERM ends it with status 0.
    server = ServiceProcess(redis_url, env=FAST, command=True).start()
    try:
        table, tokens, players = await seat_two_players(server)
        await play_to_end(dict(enumerate(players)), [], stop_after=4)
        held = [(p.v, p.doc) for p in players]
        assert await asyncio.to_thread(server.stop) == 0
        for client in players:
            await client.socket.wait_closed()
            assert client.socket.close_code == 1001
        server.start()
        again = [await GameClient.connect(server.ws_url) for _ in range(2)]
        for client, token, (v, doc) in zip(again, tokens, held, strict=True):
            welcome = await client.hello(table, token, since=v, doc=doc)
            assert welcome["v"] == v  # nothing was lost, nothing happened while away
        await play_to_end(dict(enumerate(again)), [])
        assert again[0].game["game_over"] is True
        await GameClient.close_all()
    finally:
        await asyncio.to_thread(server.stop)


async def test_recent_chat_is_replayed_to_a_new_connection(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=2)
    token = await join(http, table, 0, "ann")
    ann = await GameClient.connect(service.ws_url)
    await ann.hello(table, token)
    for text in ("hi", "anyone?", "gg"):
        await ann.send({"t": "chat", "text": text})
        echo = await ann.recv_until("chat", text=text)
        assert (echo["seat"], echo["name"]) == (0, "ann")
    watcher = await GameClient.connect(service.ws_url)
    await watcher.hello(table)
    replayed = [await watcher.recv_until("chat") for _ in range(3)]
    assert [m["text"] for m in replayed] == ["hi", "anyone?", "gg"]
    assert all(set(m) == {"t", "seat", "name", "text", "ts"} for m in replayed)
