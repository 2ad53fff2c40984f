"""Clocks: an expired turn is played by a bot (or forfeits), through the one write path."""

from __future__ import annotations

import httpx

from tests.server.test_seat_security import two_seated
from tests.support.servers import GameClient, ServiceProcess, create_table, join

CLOCK = {"kind": "realtime", "move_s": 1, "reserve_s": 0}  # a turn runs out in a second


async def test_an_expired_turn_is_played_by_a_bot(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    _, _, players = await two_seated(service, http, on_timeout="bot", clock=CLOCK)
    watcher = players[0]
    clock = watcher.doc["table"]["clock"] if watcher.doc else None
    assert clock is not None and clock["kind"] == "realtime"
    assert isinstance(clock["deadline"], int)
    turn = watcher.game["turn"]
    history = len(watcher.game["history"])
    # Nobody moves: within a few seconds the seat to move has moved anyway.
    diff = await watcher.recv_until("diff", wait_s=15)
    events = diff["ev"]
    assert {"type": "timeout", "seat": turn, "action": "bot"} in events
    assert len(watcher.game["history"]) == history + 1
    assert watcher.game["history"][-1]["seat"] == turn
    assert watcher.game["turn"] != turn or "draw" in watcher.game["history"][-1]


async def test_an_expired_turn_forfeits_when_the_table_says_so(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(
        http,
        players=2,
        clock=CLOCK,
        on_timeout="forfeit",
    )
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    spectator = await GameClient.connect(service.ws_url)
    await spectator.hello(table)
    turn = spectator.game["turn"]
    diff = await spectator.recv_until("diff", wait_s=15)
    assert {"type": "timeout", "seat": turn, "action": "forfeit"} in diff["ev"]
    assert spectator.doc is not None and spectator.doc["table"]["status"] == "finished"
    summary = (await http.get(f"/api/tables/{table}")).json()
    assert summary["status"] == "finished"
    assert len(tokens) == 2


async def test_a_game_lost_on_time_offers_no_more_moves(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    """After a forfeit nobody is to move (protocol.md §2: `turn` is null once the game is over)
    and no seat's view lists moves, the forfeiting seat's included; a fresh snapshot agrees."""
    table, tokens, players = await two_seated(service, http, on_timeout="forfeit", clock=CLOCK)
    turn = players[0].game["turn"]
    assert players[turn].game["legal"]  # before: the seat to move has moves
    for client in players:
        diff = await client.recv_until("diff", wait_s=15)
        assert {"type": "timeout", "seat": turn, "action": "forfeit"} in diff["ev"]
        assert client.doc is not None and client.doc["table"]["status"] == "finished"
        assert client.game["turn"] is None and client.game["legal"] == []
    late = await GameClient.connect(service.ws_url)
    await late.hello(table, tokens[turn])
    assert late.game["turn"] is None and late.game["legal"] == []
