"""Protocol fuzzing: random bytes, random msgpack and mutated valid messages.

The decoder only ever returns a well-formed client message or raises ProtocolError. On the live
socket (a real server, a game in progress, a seat and a spectator), every answer is a documented
frame type with a documented code, the connection stays usable (a ping after the garbage is
answered), nothing is written unless a move is accepted, and the server stays healthy.
"""

from __future__ import annotations

import asyncio
import string
from collections.abc import Iterator
from typing import Any

import httpx
import msgpack
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.protocol import Chat, Hello, Move, Ping, ProtocolError, Sync, decode
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end

ERROR_CODES = {"bad_message", "unknown_table", "bad_token", "rate_limited", "unsupported_proto",
               "unavailable"}
# docs/protocol.md "rejected" codes, plus the engine's own codes for malformed moves.
REJECT_CODES = {"not_your_turn", "not_in_hand", "not_playable", "bad_end", "must_play",
                "must_draw", "cannot_draw", "must_lead_double", "game_over", "stale_version",
                "bad_message", "not_seated", "not_started", "rate_limited", "unavailable",
                "bad_move", "bad_tile"}
SERVER_TYPES = {"welcome", "snapshot", "diff", "accepted", "rejected", "error", "chat",
                "presence", "pong"}
DOCUMENTED_CLOSES = {1000, 1008, 1009, 4004}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False),
    st.text(max_size=40), st.binary(max_size=40),
    st.sampled_from(["hello", "move", "chat", "ping", "sync", "6-4", "5-5", "play", "on"]),
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.one_of(st.text(max_size=8), st.integers(-99, 99)),
                                            inner, max_size=5)),
    max_leaves=20,
)


def valid_messages(table: str) -> list[dict[str, Any]]:
    return [
        {"t": "hello", "proto": 1, "table": table, "token": None, "since": None},
        {"t": "move", "id": "f1", "v": 3, "move": {"play": "6-6"}},
        {"t": "move", "id": "f2", "v": 3, "move": {"draw": True}},
        {"t": "move", "id": "f3", "v": 3, "move": {"pass": True}},
        {"t": "chat", "text": "gg"},
        {"t": "ping", "n": 5},
        {"t": "sync", "since": 2},
    ]


@st.composite
def mutated(draw: st.DrawFn, table: str) -> dict[str, Any]:
    message = dict(draw(st.sampled_from(valid_messages(table))))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["set", "drop", "add", "nest"]))
        keys = sorted(message, key=str)
        if action == "set" and keys:
            message[draw(st.sampled_from(keys))] = draw(structures)
        elif action == "drop" and keys:
            message.pop(draw(st.sampled_from(keys)))
        elif action == "add":
            message[draw(st.text(string.ascii_lowercase, min_size=1, max_size=6))] = draw(scalars)
        elif action == "nest" and "move" in message:
            message["move"] = {draw(st.sampled_from(["play", "on", "draw", "pass", "x"])):
                               draw(scalars)}
    return message


def frames(table: str) -> st.SearchStrategy[bytes | str]:
    packed = st.one_of(structures, mutated(table)).map(
        lambda value: msgpack.packb(value, use_bin_type=True))
    return st.one_of(st.binary(max_size=200), packed, packed, st.text(max_size=50))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), structures.map(msgpack.packb),
                 mutated("abcd1234").map(msgpack.packb)))
def test_the_decoder_returns_a_client_message_or_raises_bad_message(data: bytes) -> None:
    try:
        message = decode(data)
    except ProtocolError as exc:
        assert exc.code in ("bad_message", "unsupported_proto")
        return
    assert isinstance(message, Hello | Move | Chat | Ping | Sync)


# ---- the live socket ---------------------------------------------------------------------------


class LiveTable:
    def __init__(self, server: ServiceProcess, table: str, tokens: list[str]) -> None:
        self.server, self.table, self.tokens = server, table, tokens


@pytest.fixture(scope="module")
def live() -> Iterator[LiveTable]:
    redis = RedisServer()
    redis.start()
    server = ServiceProcess(redis.url, env={"RATE": "1000/2000"})
    server.start()

    async def prepare() -> LiveTable:
        async with httpx.AsyncClient(base_url=server.url) as http:
            table = await create_table(http, rules={"preset": "all-fives", "target": 250})
            tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
        players = [await GameClient.connect(server.ws_url) for _ in tokens]
        for client, token in zip(players, tokens, strict=True):
            await client.hello(table, token)
        await play_to_end(dict(enumerate(players)), [], stop_after=4)
        await GameClient.close_all()
        return LiveTable(server, table, tokens)

    try:
        yield asyncio.run(prepare())
    finally:
        server.stop()
        server.log_path.unlink(missing_ok=True)
        redis.close()


async def version_of(live: LiveTable) -> tuple[int, dict[str, Any]]:
    watcher = await GameClient.connect(live.server.ws_url)
    await watcher.hello(live.table)
    await watcher.close()
    assert watcher.v is not None and watcher.doc is not None
    return watcher.v, watcher.doc


async def fuzz_once(live: LiveTable, seat: int | None, garbage: list[bytes | str]) -> None:
    before, _ = await version_of(live)
    token = None if seat is None else live.tokens[seat]
    client = await GameClient.connect(live.server.ws_url)
    await client.hello(live.table, token)
    accepted = 0
    for data in garbage:
        await client.send_raw(data)
    await client.send({"t": "ping", "n": 424242})
    closed_with: int | None = None
    try:
        while True:
            message = await client.recv(10)
            kind = message.get("t")
            assert kind in SERVER_TYPES, message
            if kind == "error":
                assert message["code"] in ERROR_CODES, message
            elif kind == "rejected":
                assert message["code"] in REJECT_CODES, message
            elif kind == "accepted":
                accepted += 1
            elif kind == "pong" and message["n"] == 424242:
                break
    except websockets.ConnectionClosed:
        closed_with = client.socket.close_code
        assert closed_with in DOCUMENTED_CLOSES, closed_with
    await client.close()
    after, doc = await version_of(live)
    assert after == before + accepted  # nothing written but accepted moves
    if closed_with is None and client.doc is not None and client.v == after and seat is None:
        assert client.doc == doc


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_garbage_on_a_live_socket_gets_documented_answers_and_writes_nothing(
    live: LiveTable, data: st.DataObject
) -> None:
    seat = data.draw(st.sampled_from([None, 0, 1]))
    garbage = data.draw(st.lists(frames(live.table), min_size=1, max_size=8))
    asyncio.run(fuzz_once(live, seat, garbage))
    assert live.server.healthy()
