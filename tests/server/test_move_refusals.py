"""Moves refused: a frame that would crash the handler gets its documented answer, and no
refusal names a tile its seat may not see (against a real server)."""

from __future__ import annotations

import httpx
import msgpack
import pytest
import websockets

from tests.reliability.leaks import tiles_in
from tests.server.test_seat_security import two_seated
from tests.support.servers import GameClient, ServiceProcess, create_table, join

# ---- a frame that would crash the handler ---------------------------------------------------

def nested(depth: int) -> bytes:
    """A msgpack list nested `depth` deep (msgpack's own stack takes up to 1,024)."""
    return b"\x91" * depth + b"\xc0"


@pytest.mark.parametrize("field", ["play", "on", "other"])
async def test_a_deeply_nested_move_is_rejected_and_the_socket_stays_open(
    service: ServiceProcess, http: httpx.AsyncClient, field: str
) -> None:
    """A 4 KB frame whose `move` holds a list nested ~1,000 deep: the engine's error message
    repr()s it (RecursionError), which escapes the handler: the socket is closed 1011 and the
    server logs a traceback, where protocol.md promises `rejected bad_tile`/`bad_move`."""
    table = await create_table(http)
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    player = await GameClient.connect(service.ws_url)
    assert (await player.hello(table, tokens[0]))["t"] == "welcome"
    await player.drain()
    if field == "play":
        move = b"\x81" + msgpack.packb("play") + nested(1000)
    elif field == "on":
        move = b"\x82" + msgpack.packb("play") + msgpack.packb("6-6") \
            + msgpack.packb("on") + nested(1000)
    else:
        move = b"\x81" + msgpack.packb("x") + nested(1000)
    frame = (b"\x84" + msgpack.packb("t") + msgpack.packb("move") + msgpack.packb("id")
             + msgpack.packb("deep") + msgpack.packb("v") + msgpack.packb(player.v)
             + msgpack.packb("move") + move)
    assert len(frame) <= 4096
    await player.send_raw(frame)
    try:
        answer = await player.recv_until("rejected", id="deep")
    except websockets.ConnectionClosed:
        logged = "RecursionError" in service.log()
        raise AssertionError(f"socket closed {player.socket.close_code} instead of a rejected "
                             f"(RecursionError in the server log: {logged})") from None
    assert answer["code"] in ("bad_tile", "bad_move")
    await player.send({"t": "ping", "n": 1})
    assert (await player.recv_until("pong"))["n"] == 1
    assert "Traceback" not in service.log()

# ---- guarantees that hold (not covered elsewhere) --------------------------------------------

TILES = [f"{a}-{b}" for a in range(7) for b in range(a + 1)]


def tiles_named(value: object) -> set[str]:
    return set(tiles_in(value))


async def test_refusals_of_every_illegal_move_name_no_hidden_tile(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    """Each seat sends, at several positions, a play of every tile of the set (on every layout
    tile and on none), a draw and a pass, in and out of turn: every `rejected` names only tiles
    it was sent, its own hand or the layout, never another hand or the boneyard."""
    _, _, clients = await two_seated(service, http, rules={"preset": "all-fives", "target": 1000})
    checked = 0
    for _ in range(4):  # four positions, one legal move between them
        await clients[0].drain()
        await clients[1].drain()
        for client in clients:
            game = client.game
            own, legal = set(game["hand"]), game["legal"]
            layout = [node["tile"] for node in game["layout"]]
            moves: list[dict[str, object]] = [{"draw": True}, {"pass": True}]
            for tile in TILES:
                if legal and tile in own:
                    continue  # (it might be accepted)
                moves += [{"play": tile}] + [{"play": tile, "on": on} for on in layout]
            for move in moves:
                if move in legal:
                    continue
                answer = await client.move(move)
                assert answer["t"] == "rejected", (move, answer)
                shown = tiles_named(answer) - tiles_named(move) - own - set(layout)
                assert not shown, (move, answer)
                checked += 1
        mover = next(c for c in clients if c.my_turn())
        assert (await mover.move(mover.game["legal"][0]))["t"] == "accepted"
    assert checked > 200
