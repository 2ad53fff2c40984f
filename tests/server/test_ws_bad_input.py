"""Every kind of bad input is answered as docs/protocol.md says, and changes nothing."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import httpx
import msgpack
import pytest

from tests.server.conftest import running
from tests.support.servers import (
    GameClient,
    ServiceProcess,
    close_code,
    create_table,
    join,
    play_to_end,
)


@pytest.fixture
async def strict(redis_url: str) -> AsyncIterator[ServiceProcess]:
    """The service with its default message limits and a small bad-token budget."""
    async with running(ServiceProcess(redis_url, env={"BAD_TOKEN_RATE": "3"})) as process:
        yield process


async def started_table(http: httpx.AsyncClient) -> tuple[str, list[str]]:
    table = await create_table(http, players=2)
    return table, [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]


async def test_garbage_frames_get_bad_message_and_the_connection_stays_usable(
    strict: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, _ = await started_table(http)
    client = await GameClient.connect(strict.ws_url)
    bad_frames: list[bytes | str] = [
        b"\xc1\xff\x00",  # not msgpack
        msgpack.packb([1, 2, 3]),  # not a map
        msgpack.packb("hello"),
        msgpack.packb({"t": 5}),  # "t" not a string
        msgpack.packb({}),
        msgpack.packb({"t": "jump"}),  # unknown type
        msgpack.packb({"t": "move", "id": "x", "v": 0, "move": {"pass": True}}),  # before hello
        "a text frame",
    ]
    for frame in bad_frames:
        await client.send_raw(frame)
        answer = await client.recv()
        assert (answer["t"], answer["code"]) == ("error", "bad_message"), frame
    for hello in (
        {"t": "hello", "proto": "1", "table": table},
        {"t": "hello", "proto": 1, "table": 5},
        {"t": "hello", "proto": 1, "table": table, "since": -1},
        {"t": "hello", "proto": 1, "table": table, "token": 7},
        {"t": "hello", "proto": 1, "table": table, "since": True},
    ):
        await client.send(hello)
        answer = await client.recv()
        assert (answer["t"], answer["code"]) == ("error", "bad_message"), hello
    welcome = await client.hello(table)
    assert welcome["t"] == "welcome" and welcome["seat"] is None
    for frame in (
        {"t": "ping", "n": "five"},
        {"t": "sync", "since": "x"},
        {"t": "chat", "text": ""},
        {"t": "chat", "text": "x" * 201},
        {"t": "chat", "text": 5},
        {"t": "hello", "proto": 1, "table": table},
    ):
        await client.send(frame)
        answer = await client.recv_until("error")
        assert answer["code"] == "bad_message", frame
    await asyncio.sleep(0.3)  # 20 frames so far, the burst of the message rate: it refills
    await client.send({"t": "ping", "n": 7})
    assert (await client.recv_until("pong"))["n"] == 7


async def test_refused_hellos_close_with_their_codes(strict: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, _ = await started_table(http)
    cases = [
        ({"proto": 2, "table": table}, "unsupported_proto", 1008),
        ({"proto": 1, "table": "nosuch"}, "unknown_table", 4001),
        ({"proto": 1, "table": table, "token": "not-a-token"}, "bad_token", 4002),
    ]
    for fields, code, close in cases:
        client = await GameClient.connect(strict.ws_url)
        await client.send({"t": "hello", **fields})
        answer = await client.recv()
        assert (answer["t"], answer["code"]) == ("error", code)
        assert await close_code(client) == close
    # The address has now spent its budget of bad tokens (3 per minute here).
    for _ in range(3):
        client = await GameClient.connect(strict.ws_url)
        await client.send({"t": "hello", "proto": 1, "table": table, "token": "guess"})
        await close_code(client)
    client = await GameClient.connect(strict.ws_url)
    await client.send({"t": "hello", "proto": 1, "table": table, "token": "guess"})
    answer = await client.recv()
    assert (answer["t"], answer["code"]) == ("error", "rate_limited")
    assert await close_code(client) == 4004


async def test_bad_moves_are_rejected_with_their_codes_and_change_nothing(
    strict: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, tokens = await started_table(http)
    players = [await GameClient.connect(strict.ws_url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    spectator = await GameClient.connect(strict.ws_url)
    await spectator.hello(table)
    assert spectator.doc is not None
    before_v, before_doc = spectator.v, spectator.doc
    turn = spectator.game["turn"]
    mover, waiter = players[turn], players[1 - turn]
    hand = mover.game["hand"]
    held = set(hand) | {"-".join(reversed(t.split("-"))) for t in hand}
    not_held = next(f"{a}-{b}" for a in range(7) for b in range(a + 1) if f"{a}-{b}" not in held)

    async def rejected(client: GameClient, move: object, v: object, code: str,
                       at: int | None = before_v) -> None:
        await client.send({"t": "move", "id": "bad", "v": v, "move": move})
        answer = await client.recv_until("rejected")
        assert (answer["id"], answer["code"]) == ("bad", code), move
        assert answer["v"] == at, (move, answer)  # the version it was refused at, if read

    await rejected(waiter, {"play": waiter.game["hand"][0]},
                   before_v, "not_your_turn")
    await rejected(mover, {"play": not_held}, before_v, "not_in_hand")
    await rejected(mover, {"jump": True}, before_v, "bad_move", None)
    await rejected(mover, "5-5", before_v, "bad_message", None)
    await rejected(mover, {"pass": True}, "zero", "bad_message", None)
    await rejected(mover, {"pass": True}, before_v - 1, "stale_version")
    await rejected(spectator, {"pass": True}, before_v, "not_seated", None)
    # A malformed id is answered with that id, so a client waiting on it hears back.
    for bad_id in ("x" * 33, "", 7):
        await mover.send({"t": "move", "id": bad_id, "v": before_v, "move": {"pass": True}})
        answer = await mover.recv_until("rejected")
        assert (answer["id"], answer["code"]) == (bad_id, "bad_message")
    await mover.send({"t": "move", "id": None, "v": before_v, "move": {"pass": True}})
    assert (await mover.recv_until("error"))["code"] == "bad_message"  # no id to answer
    # Nothing changed: a fresh snapshot is the document we had.
    fresh = await GameClient.connect(strict.ws_url)
    await fresh.hello(table)
    assert (fresh.v, fresh.doc) == (before_v, before_doc)
    # And the game goes on.
    answer = await mover.move(mover.game["legal"][0])
    assert answer["t"] == "accepted" and answer["v"] == before_v + 1


async def test_concurrent_conflicting_moves_accept_exactly_one(strict: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, tokens = await started_table(http)
    players = [await GameClient.connect(strict.ws_url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    mover = players[players[0].game["turn"]]
    v = mover.v
    legal = mover.game["legal"]
    ids = [f"c{i}" for i in range(6)]
    await asyncio.gather(*(
        mover.send({"t": "move", "id": i, "v": v, "move": legal[n % len(legal)]})
        for n, i in enumerate(ids)
    ))
    answers = {}
    while len(answers) < len(ids):
        message = await mover.recv()
        if message["t"] in ("accepted", "rejected"):
            answers[message["id"]] = message
    accepted = [a for a in answers.values() if a["t"] == "accepted"]
    assert len(accepted) == 1 and accepted[0]["v"] == v + 1
    assert sorted(a["code"] for a in answers.values() if a["t"] == "rejected") == [
        "stale_version"
    ] * 5
    # A retried id is applied once and answered with the same version.
    answer = await mover.move(legal[0], v=v, client_id=accepted[0]["id"])
    assert answer == {"t": "accepted", "id": accepted[0]["id"], "v": v + 1}
    fresh = await GameClient.connect(strict.ws_url)
    await fresh.hello(table)
    assert fresh.v == v + 1


async def test_oversized_frames_close_1009(strict: ServiceProcess) -> None:
    for frame in (b"\x80" + b"\x00" * 5000, "x" * 5000):
        client = await GameClient.connect(strict.ws_url)
        await client.send_raw(frame)
        assert await close_code(client) == 1009
    big_hello = {"t": "hello", "proto": 1, "table": "t" * 4100}
    client = await GameClient.connect(strict.ws_url)
    await client.send(big_hello)
    assert await close_code(client) == 1009
    assert strict.healthy()


async def test_a_flood_is_rate_limited_then_cut_off(strict: ServiceProcess) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, _ = await started_table(http)
    client = await GameClient.connect(strict.ws_url)
    await client.hello(table)
    for n in range(200):
        try:
            await client.send({"t": "ping", "n": n})
        except Exception:  # the server may already have closed the socket
            break
    assert await close_code(client) == 4004
    codes = [m.get("code") for m in client.messages if m["t"] == "error"]
    assert codes and set(codes) == {"rate_limited"}
    pongs = [m["n"] for m in client.messages if m["t"] == "pong"]
    assert 0 < len(pongs) < 200 and pongs == sorted(pongs)
    # The server is still healthy and serves the next client.
    assert strict.healthy()
    other = await GameClient.connect(strict.ws_url)
    assert (await other.hello(table))["t"] == "welcome"


async def test_a_foreign_origin_is_refused(strict: ServiceProcess) -> None:
    refused = await GameClient.connect(
        strict.ws_url, additional_headers={"Origin": "https://evil.example"}
    )
    assert await close_code(refused) == 1008
    same = await GameClient.connect(
        strict.ws_url, additional_headers={"Origin": f"http://127.0.0.1:{strict.port}"}
    )
    await same.send({"t": "ping", "n": 1})
    assert (await same.recv())["t"] == "error"  # answered (bad_message before hello), not closed


async def test_a_client_that_stops_reading_is_cut_off_not_waited_for(redis_url: str) -> None:
    # No sync cooldown: every sync is answered at once (a snapshot of the table, ~2 KB), so
    # the answers pile up: past what the kernel buffers on loopback (a few MB), the queue
    # fills (tests/server/test_flood.py covers the cooldown).
    env = {"RATE": "1000/2000", "SEND_QUEUE": "4", "SYNC_COOLDOWN_S": "0"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        table, tokens = await started_table(http)
        players = [await GameClient.connect(server.ws_url) for _ in tokens]
        for client, token in zip(players, tokens, strict=True):
            await client.hello(table, token)
        await play_to_end(dict(enumerate(players)), [], stop_after=12)
        # A client with a tiny receive window that asks for the whole history again and
        # again without reading any of it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.connect(("127.0.0.1", server.port))
        sock.setblocking(False)
        slow = await GameClient.connect(server.ws_url, sock=sock)
        await slow.hello(table)
        for _ in range(4000):
            await slow.send({"t": "sync", "since": 0})
        cut = 'dominoes_ws_closes_total{code="4003"} 1.0'
        for _ in range(150):
            if cut in (await http.get("/metrics")).text:
                break
            await asyncio.sleep(0.1)
        assert cut in (await http.get("/metrics")).text
        # The players were never held up, and the server serves on.
        mover = players[0] if players[0].my_turn() else players[1]
        answer = await mover.move(mover.game["legal"][0])
        assert answer["t"] == "accepted"
        assert server.healthy()
        slow.socket.transport.abort()  # it never reads: no closing handshake to wait for
        GameClient.opened.remove(slow)


async def flood_answers(client: GameClient, frame: bytes | str, frames: int) -> list[str]:
    """Send ``frames`` copies of ``frame`` at once; the codes of the errors and rejections
    that answer them, up to the close."""
    for _ in range(frames):
        try:
            await client.send_raw(frame)
        except Exception:  # the server may already have closed the socket
            break
    await close_code(client)
    return [m["code"] for m in client.messages if m["t"] in ("error", "rejected")]


@pytest.mark.parametrize("hello_first", [False, True])
@pytest.mark.parametrize("frame", ["a text frame", b"\xc1\xc1", msgpack.packb({"t": "jump"})],
                         ids=["text", "not msgpack", "unknown type"])
async def test_every_kind_of_frame_counts_against_the_message_rate(
    strict: ServiceProcess, frame: bytes | str, hello_first: bool,
) -> None:
    """Text frames and frames that are no message at all take from the message budget like any
    other (10 a second, burst 20): over it they are answered rate_limited, and a flood is cut
    off with 4004 (text frames used to be answered bad_message for ever)."""
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, _ = await started_table(http)
    client = await GameClient.connect(strict.ws_url)
    if hello_first:
        await client.hello(table)
    codes = await flood_answers(client, frame, 100)
    assert client.socket.close_code == 4004
    assert set(codes) == {"bad_message", "rate_limited"}
    assert codes.count("bad_message") <= 21  # the burst, and a token refilled meanwhile
    assert codes.count("rate_limited") >= 10  # each frame over the rate is answered


async def test_a_move_with_a_number_for_id_over_the_rate_is_rejected_with_it(
    strict: ServiceProcess,
) -> None:
    """A move refused for the rate is `rejected` with its id as sent, a number too, so that its
    sender is not left waiting (it used to get `error`, without the id)."""
    async with httpx.AsyncClient(base_url=strict.url) as http:
        table, tokens = await started_table(http)
    client = await GameClient.connect(strict.ws_url)
    await client.hello(table, tokens[0])
    for n in range(35):
        await client.send({"t": "move", "id": n, "v": 0, "move": {"pass": True}})
    await client.send({"t": "ping", "n": 1})
    rejected = [(m["code"], m["id"]) for m in client.messages if m["t"] == "rejected"]
    deadline = asyncio.get_running_loop().time() + 10
    while len(rejected) < 35 and asyncio.get_running_loop().time() < deadline:
        await client.recv()
        rejected = [(m["code"], m["id"]) for m in client.messages if m["t"] == "rejected"]
    assert [i for _, i in rejected] == list(range(35))
    assert {c for c, _ in rejected} == {"bad_message", "rate_limited"}
    assert not [m for m in client.messages if m["t"] == "error"]


@pytest.mark.parametrize("private", [True, False], ids=["private table", "no such table"])
async def test_wrong_tokens_for_a_private_table_spend_the_bad_token_budget(
    strict: ServiceProcess, private: bool,
) -> None:
    """A private table answers a wrong token `unknown_table`, as if it did not exist; those
    guesses are charged to the address's bad-token budget like `bad_token` ones (they used to
    be free, so a private table's seats could be guessed at any rate), and guesses at a table
    that does not exist cost the same, so the budget tells nothing about which tables exist."""
    table = "nosuchtable"
    if private:
        async with httpx.AsyncClient(base_url=strict.url) as http:
            made = await http.post("/api/tables", json={"players": 2, "private": True})
            assert made.status_code == 201
            table = made.json()["id"]
    for _ in range(3):  # the budget: 3 a minute here
        client = await GameClient.connect(strict.ws_url)
        await client.send({"t": "hello", "proto": 1, "table": table, "token": "guess"})
        answer = await client.recv()
        assert (answer["t"], answer["code"]) == ("error", "unknown_table")
        assert await close_code(client) == 4001
    client = await GameClient.connect(strict.ws_url)
    await client.send({"t": "hello", "proto": 1, "table": table, "token": "guess"})
    answer = await client.recv()
    assert (answer["t"], answer["code"]) == ("error", "rate_limited")
    assert await close_code(client) == 4004


async def test_a_socket_that_never_says_hello_is_closed_after_the_deadline(
    strict: ServiceProcess,
) -> None:
    """docs/protocol.md: a connection that sends no `hello` within 10 s is closed (1008); a
    frame that is not a hello does not extend it."""
    client = await GameClient.connect(strict.ws_url)
    opened = asyncio.get_running_loop().time()
    await client.send_raw(msgpack.packb({"t": "ping", "n": 1}))
    answer = await client.recv()
    assert (answer["t"], answer["code"]) == ("error", "bad_message")
    assert await close_code(client, wait_s=15.0) == 1008
    assert 9.5 <= asyncio.get_running_loop().time() - opened < 14.0
    assert client.socket.close_reason == "no hello"
