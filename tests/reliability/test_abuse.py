"""Abuse, each handled as designed while another table's game goes on untouched.

- seat tokens carry at least 128 bits and guessing them is limited per client address (other
  addresses keep their budget);
- a client that never reads and asks for the whole history again and again costs little: its
  syncs are coalesced, and nothing is buffered for it beyond its bounded send queue;
- a flood is rate limited then closed (4004), an oversized frame closes 1009, 200 spectator
  sockets from one address get the address's 100 (MAX_SPECTATORS_PER_ADDRESS) and 4006;
while robots play another table to its end and its audit stays clean.
(Latency of the other tables under abuse is measured by bench/scenarios.py, not asserted here.)
"""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import msgpack
import pytest
import websockets

from tests.reliability.conftest import start, stop
from tests.reliability.games import audit_table, seat_tables
from tests.support.redis_server import RedisServer
from tests.support.servers import (
    GameClient,
    ServiceProcess,
    close_code,
    create_table,
    join,
    play_to_end,
)

STRICT = {"BAD_TOKEN_RATE": "5", "SEND_QUEUE": "8", "RATE": "100/100", "LOG_LEVEL": "INFO"}


async def connect_from(address: str, url: str) -> GameClient:
    """A client whose socket comes from `address` (any 127.0.0.x is the loopback)."""
    return await GameClient.connect(url, local_addr=(address, 0))


@pytest.fixture
async def strict(own_redis: RedisServer) -> AsyncIterator[ServiceProcess]:
    process = ServiceProcess(own_redis.url, env=STRICT)
    await start(process)
    try:
        yield process
    finally:
        await GameClient.close_all()
        await stop(process)
        process.log_path.unlink(missing_ok=True)


async def test_seat_tokens_have_128_bits_and_guessing_is_limited_per_address(
    strict: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=strict.url) as http:
        tokens = []
        for _ in range(10):
            table = await create_table(http, players=2)
            tokens += [(table, await join(http, table, seat, f"p{seat}")) for seat in (0, 1)]
    for _, token in tokens:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert len(raw) * 8 >= 128
    assert len({token for _, token in tokens}) == len(tokens)
    table, good = tokens[0]
    # Wrong guesses from 127.0.0.2 are answered bad_token until the address's budget (5 a
    # minute, refilling as time passes) is spent; then its wrong guesses are refused as
    # rate_limited, while a right token -- from that address too -- is always accepted.
    refused = []
    for guess in range(20):
        guesser = await connect_from("127.0.0.2", strict.ws_url)
        answer = await guesser.hello(table, "A" * 43 + str(guess))
        refused.append((answer["code"], await close_code(guesser)))
        if answer["code"] == "rate_limited":
            break
    assert refused[-1] == ("rate_limited", 4004)
    assert set(refused[:-1]) == {("bad_token", 4002)}
    assert 5 <= len(refused[:-1]) <= 6  # the budget, plus what refilled during the run
    blocked = await connect_from("127.0.0.2", strict.ws_url)
    assert (await blocked.hello(table, good))["seat"] == 0
    again = await connect_from("127.0.0.2", strict.ws_url)
    answer = await again.hello(table, "B" * 43)
    assert (answer["t"], answer["code"]) == ("error", "rate_limited")
    assert await close_code(again) == 4004
    other = await connect_from("127.0.0.3", strict.ws_url)
    assert (await other.hello(table, good))["seat"] == 0
    # A spectator from the blocked address (no token) still watches.
    watcher = await connect_from("127.0.0.2", strict.ws_url)
    assert (await watcher.hello(table))["t"] == "welcome"


async def never_reading_spectator(url: str, table: str) -> websockets.ClientConnection:
    """A spectator with a tiny receive buffer that stops reading after its hello."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
    sock.setblocking(False)
    client = await websockets.connect(url, sock=sock, max_queue=1, max_size=2**24,
                                      ping_interval=None)
    await client.send(msgpack.packb({"t": "hello", "proto": 1, "table": table,
                                     "token": None, "since": None}))
    return client


def metric(text: str, name: str) -> float:
    """The value of one sample line of /metrics (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def rss_kb(process: ServiceProcess) -> int:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError("VmRSS")


async def finished_long_game(http: httpx.AsyncClient, url: str) -> str:
    table = await create_table(http, rules={"preset": "all-fives", "target": 150})
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    await play_to_end(dict(enumerate(players)), [])
    for client in players:
        await client.close()
    return table


@pytest.mark.slow
async def test_abusers_are_cut_off_while_another_tables_game_goes_on(
    strict: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=strict.url, timeout=10) as http:
        long_table = await finished_long_game(http, strict.ws_url)
        tables = await seat_tables(http, [strict.ws_url], tables=2, target=30)
        robots = [r for rs in tables.values() for r in rs]
        games = asyncio.gather(*(r.run(60) for r in robots))

        # A reader that never reads and asks for a long history again and again (under the
        # message rate): one answer per sync cooldown (a snapshot), nothing piles up for it.
        # It is cut off (4003) only if its send queue fills, or goes at the websocket ping
        # timeout (test_flood.py measures both).
        rss_before = rss_kb(strict)
        slow = await never_reading_spectator(strict.ws_url, long_table)
        sync = msgpack.packb({"t": "sync", "since": 0})
        for _ in range(250):
            try:
                await asyncio.wait_for(slow.send(sync), 1.0)
            except (websockets.ConnectionClosed, TimeoutError):
                break
            await asyncio.sleep(0.02)
        text = (await http.get("/metrics")).text
        assert metric(text, "dominoes_syncs_coalesced_total") >= 200
        assert rss_kb(strict) - rss_before < 30_000  # bounded, not the ~MBs it asked for
        slow.transport.abort()

        # A flood, an oversized frame, and 200 spectator sockets from one address.
        victim_table = await create_table(http, players=2)
        flooder = await connect_from("127.0.0.4", strict.ws_url)
        await flooder.hello(victim_table)
        reading = asyncio.create_task(close_code(flooder, 20))
        for n in range(2000):
            try:
                await flooder.send({"t": "ping", "n": n})
            except websockets.ConnectionClosed:
                break
        # Cut off by the rate limit (4004), or by its own send queue (4003) when it cannot
        # even read the answers to its flood as fast as the server writes them.
        assert await reading in (4003, 4004)
        assert {m["code"] for m in flooder.messages if m["t"] == "error"} <= {"rate_limited"}
        assert len([m for m in flooder.messages if m["t"] == "pong"]) < 2000
        big = await connect_from("127.0.0.4", strict.ws_url)
        await big.send_raw(b"\x80" + b"\x00" * 9000)
        assert await close_code(big) == 1009
        crowd = [await connect_from("127.0.0.5", strict.ws_url) for _ in range(200)]
        await asyncio.gather(*(c.send({"t": "hello", "proto": 1, "table": victim_table,
                                       "token": None, "since": None}) for c in crowd))
        welcomes = await asyncio.gather(*(c.recv() for c in crowd))
        assert sum(w["t"] == "welcome" for w in welcomes) == 100
        refused = [w for w in welcomes if w["t"] != "welcome"]
        assert {(w["t"], w["code"]) for w in refused} == {("error", "too_many_spectators")}
        assert len(refused) == 100
        for client in crowd:
            await client.close()

        await asyncio.wait_for(games, 70)
        for table, robot_list in tables.items():
            await audit_table(http, strict.ws_url, table, robot_list)
    assert strict.healthy()
