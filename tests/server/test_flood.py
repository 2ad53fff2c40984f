"""Chat floods, crowds of spectators and history replays, against a real server and Redis.

- chat has a budget per connection and per table (players' and spectators' lines apart, shared
  by every server process); spectator chat is off on a crowded table unless its creator turned
  it on, and the creator may turn it off;
- chat is dropped, never fatal, for a socket whose send queue is filling: a chat flood cannot
  close a player;
- spectator sockets are capped per table (across processes) and per client address (4006);
- the send queue is bounded in bytes: a history replay goes out in chunks as the socket reads,
  a `sync` has a cooldown (coalesced), and a never-reading socket costs a few hundred KB at most
  before it is closed 4003.
(What the attacks do to another table's latency is measured by bench/scenarios.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgpack
import pytest
import redis.asyncio
import websockets

from server.settings import Settings
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.servers import (
    GameClient,
    ServiceProcess,
    close_code,
    create_table,
    join,
    play_to_end,
)
from tests.support.tables import new_table, play_random

ADDRESSES = [f"127.0.0.{n}" for n in range(2, 40)]
LINE = "x" * 200  # the longest chat line


def metric(text: str, name: str) -> float:
    """The value of one sample line of /metrics (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise LookupError("VmRSS")


async def spectator(url: str, table: str, address: str = "127.0.0.1",
                    since: int | None = None) -> GameClient:
    client = await GameClient.connect(url, local_addr=(address, 0))
    await client.hello(table, since=since, doc={} if since is not None else None)
    return client


async def seated(url: str, table: str, tokens: list[str]) -> list[GameClient]:
    players = [await GameClient.connect(url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
    return players


async def started_table(http: httpx.AsyncClient, **body: Any) -> tuple[str, list[str]]:
    table = await create_table(http, players=2, **body)
    return table, [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]


class Reader:
    """Reads a client's frames as fast as they come until stopped; notes how it ended."""

    def __init__(self, client: GameClient) -> None:
        self.client = client
        self.closed: int | None = None
        self.stopping = False
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while not self.stopping:
            try:
                await self.client.recv(0.2)
            except TimeoutError:
                continue
            except websockets.ConnectionClosed:
                self.closed = self.client.socket.close_code
                return

    async def stop(self) -> None:
        self.stopping = True
        await self.task

    def chat(self) -> list[dict[str, Any]]:
        return [m for m in self.client.messages if m["t"] == "chat"]


async def move_once(players: list[GameClient]) -> dict[str, Any]:
    mover = players[0] if players[0].my_turn() else players[1]
    return await mover.move(mover.game["legal"][0])


async def errors_after_chat(clients: list[GameClient], lines: int, *,
                            settle: bool = True) -> list[str]:
    """Send `lines` chat lines from each client (reading what comes meanwhile); the codes of
    the errors they got. `settle`: first wait until every line has its answer (an error, or
    the line itself relayed back), else just a second (answers to chat come through Redis)."""
    readers = [Reader(c) for c in clients]
    for n in range(lines):
        await asyncio.gather(*(c.send({"t": "chat", "text": f"{k}:{n} {LINE}"[:200]})
                               for k, c in enumerate(clients)))

    def answered(k: int, client: GameClient) -> int:
        own = [m for m in client.messages if m["t"] == "chat" and m["text"].startswith(f"{k}:")]
        return len(own) + sum(m["t"] == "error" for m in client.messages)

    deadline = time.monotonic() + (30 if settle else 1)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        if settle and all(answered(k, c) >= lines for k, c in enumerate(clients)):
            break
    await asyncio.gather(*(r.stop() for r in readers))
    return [m["code"] for c in clients for m in c.messages if m["t"] == "error"]


# ---- chat ---------------------------------------------------------------------------------------


async def test_spectators_chat_on_a_crowded_table_is_off_and_never_closes_a_player(
    redis_url: str,
) -> None:
    # The defaults: more than 50 spectators turn spectator chat off (the table did not choose).
    async with (
        running(ServiceProcess(redis_url, env=FAST)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        table, tokens = await started_table(http)
        players = await seated(server.ws_url, table, tokens)
        readers = [Reader(p) for p in players]
        crowd = [await spectator(server.ws_url, table, ADDRESSES[n % 10]) for n in range(100)]
        codes = await errors_after_chat(crowd, 5)
        assert codes == ["chat_off"] * 500  # every line refused, none relayed
        await players[0].send({"t": "chat", "text": "players still talk"})
        await asyncio.sleep(1.0)
        for reader in readers:
            await reader.stop()
            assert reader.closed is None
            assert [m["text"] for m in reader.chat()] == ["players still talk"]
        assert (await move_once(players))["t"] == "accepted"
        late = await spectator(server.ws_url, table, ADDRESSES[20])
        await asyncio.sleep(0.5)
        with contextlib.suppress(TimeoutError):
            while True:
                await late.recv(0.1)
        assert [m["text"] for m in late.messages if m["t"] == "chat"] == ["players still talk"]


async def test_spectators_chat_is_held_to_the_tables_budget_and_never_closes_a_player(
    redis_url: str,
) -> None:
    # Spectator chat on however many watch; the spectators of a table share 1 line/s, burst 10,
    # whichever process their sockets are on.
    env = {**FAST, "SPECTATOR_CHAT_MAX": "1000", "TABLE_CHAT_RATE": "1/10"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as one,
        running(ServiceProcess(redis_url, env=env)) as two,
        httpx.AsyncClient(base_url=one.url) as http,
    ):
        table, tokens = await started_table(http)
        players = await seated(one.ws_url, table, tokens)
        readers = [Reader(p) for p in players]
        crowd = [await spectator((one, two)[n % 2].ws_url, table, ADDRESSES[n % 10])
                 for n in range(100)]
        started = time.monotonic()
        codes = await errors_after_chat(crowd, 5)
        took = time.monotonic() - started
        await players[1].send({"t": "chat", "text": "a player's line has its own budget"})
        await asyncio.sleep(1.0)
        for reader in readers:
            await reader.stop()
            assert reader.closed is None
        relayed = [m for m in readers[0].chat() if m["seat"] is None]
        assert 10 <= len(relayed) <= 10 + took + 1
        assert sorted(codes) == ["rate_limited"] * (500 - len(relayed))
        assert [m["text"] for m in readers[0].chat() if m["seat"] == 1] == [
            "a player's line has its own budget"]
        assert (await move_once(players))["t"] == "accepted"
        # A new spectator is replayed only what was relayed, not the flood.
        late = await spectator(two.ws_url, table, ADDRESSES[20])
        await asyncio.sleep(0.5)
        with contextlib.suppress(TimeoutError):
            while True:
                await late.recv(0.1)
        assert [m["text"] for m in late.messages if m["t"] == "chat"] == [
            m["text"] for m in readers[0].chat()]


@contextlib.asynccontextmanager
async def chatting(redis_url: str, env: dict[str, str]) -> AsyncIterator[list[GameClient]]:
    """The two players of a started table, connected, on a service with ``env``."""
    async with (
        running(ServiceProcess(redis_url, env={**FAST, **env})) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        table, tokens = await started_table(http)
        yield await seated(server.ws_url, table, tokens)


async def test_refused_chat_lines_do_not_spend_a_players_chat_budget(redis_url: str) -> None:
    """The per-connection chat budget (here 5 lines a second, burst 5) charges only the lines
    it lets through: a player who sent too many is back to a whole burst once it has refilled,
    however many were refused meanwhile (refused lines used to go into debt, so a player who
    kept typing faster than the rate got nothing through at all)."""
    async with chatting(redis_url, {"CHAT_RATE": "5/5", "TABLE_CHAT_RATE": "1000/1000"}) \
            as players:
        for n in range(30):
            await players[0].send({"t": "chat", "text": f"line {n}"})
        await asyncio.sleep(1.5)  # 7.5 lines' worth: the burst of 5 is whole again
        for n in range(5):
            await players[0].send({"t": "chat", "text": f"later {n}"})
        later = [await players[0].recv_until("chat", text=f"later {n}") for n in range(5)]
        assert [m["text"] for m in later] == [f"later {n}" for n in range(5)]
        texts = [m["text"] for m in players[0].messages if m["t"] == "chat"]
        assert texts[:5] == [f"line {n}" for n in range(5)] and len(texts) == 10
        codes = [m["code"] for m in players[0].messages if m["t"] == "error"]
        assert codes == ["rate_limited"] * 25


async def test_a_line_the_tables_budget_refuses_costs_the_player_nothing(
    redis_url: str,
) -> None:
    """A line refused by the table's budget was not relayed, so it takes nothing of the
    player's own budget (here 0.1 line a second, burst 3, so nothing refills during the test;
    the table's 1 line a second, burst 1)."""
    async with chatting(redis_url, {"CHAT_RATE": "0.1/3", "TABLE_CHAT_RATE": "1/1"}) as players:
        for n in range(4):  # the first relayed, the other three refused by the table
            await players[0].send({"t": "chat", "text": f"line {n}"})
        await players[0].recv_until("chat", text="line 0")
        for _ in range(3):
            assert (await players[0].recv_until("error"))["code"] == "rate_limited"
        for n in range(2):  # the table refills: the player's burst still has 2 lines
            await asyncio.sleep(1.1)
            await players[0].send({"t": "chat", "text": f"later {n}"})
            await players[0].recv_until("chat", text=f"later {n}")


async def test_the_creator_turns_spectator_chat_off_or_keeps_it_on_for_a_crowd(
    redis_url: str,
) -> None:
    async with (
        running(ServiceProcess(redis_url, env={**FAST, "SPECTATOR_CHAT_MAX": "2"})) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        for bad in ("yes", 1, "null"):
            response = await http.post("/api/tables", json={"spectator_chat": bad})
            assert response.status_code == 400
            assert response.json()["error"]["code"] == "bad_request"
        quiet, tokens = await started_table(http, spectator_chat=False)
        players = await seated(server.ws_url, quiet, tokens)
        watcher = await spectator(server.ws_url, quiet)
        await watcher.send({"t": "chat", "text": "hello?"})
        refused = await watcher.recv_until("error")
        assert refused["code"] == "chat_off"
        await players[0].send({"t": "chat", "text": "players may"})
        assert (await watcher.recv_until("chat"))["text"] == "players may"
        # Three spectators are a crowd here (SPECTATOR_CHAT_MAX=2): off by default, on when the
        # creator asked for it.
        for choice, expected in ((None, "error"), (True, "chat")):
            body = {} if choice is None else {"spectator_chat": choice}
            table = await create_table(http, players=2, **body)
            crowd = [await spectator(server.ws_url, table, ADDRESSES[n]) for n in range(3)]
            await crowd[0].send({"t": "chat", "text": "anyone?"})
            answer = await crowd[0].recv_until(expected)
            if expected == "error":
                assert answer["code"] == "chat_off"
            else:
                assert (answer["seat"], answer["text"]) == (None, "anyone?")
                assert (await crowd[2].recv_until("chat"))["text"] == "anyone?"


async def test_chat_is_dropped_not_fatal_for_a_player_who_does_not_read_for_a_while(
    redis_url: str,
) -> None:
    # No chat budget to speak of: 200 spectators send 5 long lines each (about 240 KB of chat to
    # every socket) while one player's socket is not read (its receive window is tiny).
    env = {**FAST, "SPECTATOR_CHAT_MAX": "1000", "TABLE_CHAT_RATE": "100000/100000"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        table, tokens = await started_table(http)
        crowd = [await spectator(server.ws_url, table, ADDRESSES[n % 10]) for n in range(200)]
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.connect(("127.0.0.1", server.port))
        sock.setblocking(False)
        paused = await GameClient.connect(server.ws_url, sock=sock, max_queue=1)
        await paused.hello(table, tokens[0])
        await paused.recv_until("presence")
        other = (await seated(server.ws_url, table, tokens[1:]))[0]
        reader = Reader(other)
        await errors_after_chat(crowd, 5, settle=False)
        await asyncio.sleep(1.0)
        text = (await http.get("/metrics")).text
        assert metric(text, 'dominoes_ws_closes_total{code="4003"}') == 0
        assert metric(text, 'dominoes_frames_dropped_total{kind="chat"}') > 0
        # The player reads again: its socket is open and its game goes on.
        got_chat = 0
        with contextlib.suppress(TimeoutError):
            while True:
                got_chat += (await paused.recv(1.0))["t"] == "chat"
        assert 0 < got_chat < 1000
        await reader.stop()
        assert reader.closed is None
        assert (await move_once([paused, other]))["t"] == "accepted"


# ---- spectator caps -----------------------------------------------------------------------------


async def test_spectator_sockets_are_capped_per_table_and_per_address(redis_url: str) -> None:
    env = {**FAST, "MAX_SPECTATORS_PER_TABLE": "5", "MAX_SPECTATORS_PER_ADDRESS": "3"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as one,
        running(ServiceProcess(redis_url, env=env)) as two,
        httpx.AsyncClient(base_url=one.url) as http,
    ):
        table, tokens = await started_table(http)
        other_table = await create_table(http, players=2)

        async def refused(url: str, where: str, address: str) -> None:
            client = await GameClient.connect(url, local_addr=(address, 0))
            answer = await client.hello(where)
            assert (answer["t"], answer["code"]) == ("error", "too_many_spectators")
            assert await close_code(client) == 4006

        first = [await spectator(one.ws_url, table, "127.0.0.2") for _ in range(3)]
        await refused(one.ws_url, table, "127.0.0.2")  # 3 from one address on one process
        await refused(one.ws_url, other_table, "127.0.0.2")  # on any table of that process
        second = [await spectator(two.ws_url, table, "127.0.0.2") for _ in range(2)]
        await refused(two.ws_url, table, "127.0.0.3")  # 5 on the table, over both processes
        await refused(one.ws_url, table, "127.0.0.4")
        await seated(two.ws_url, table, tokens)  # seats do not count
        await first[0].close()
        for _ in range(50):  # the slot is released (through Redis) soon after the close
            await asyncio.sleep(0.1)
            client = await GameClient.connect(two.ws_url, local_addr=("127.0.0.5", 0))
            if (await client.hello(table))["t"] == "welcome":
                break
        else:
            raise AssertionError("a closed spectator's slot was not released")
        assert len(second) == 2
        await spectator(one.ws_url, other_table, "127.0.0.2")  # .2 has 2 on process one now


# ---- the send queue in bytes, history replays, sync ---------------------------------------------


async def finished_game(redis_url: str, target: int = 150) -> tuple[str, int]:
    """A two-player game played to its end straight through a TableService: (id, version)."""
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        service = TableService(client, bot_delay_ms=0)
        table, _ = await new_table(service, 2, rules={"preset": "all-fives", "target": target})
        rng = random.Random(target)
        n = 0
        while True:
            version, doc = await service.snapshot(table, "s")
            if doc["game"]["game_over"]:
                return table, version
            await play_random(service, table, rng, f"m{n}")
            n += 1
    finally:
        await client.aclose()


async def never_reading(url: str, port: int, table: str, address: str) -> Any:
    """A spectator with a tiny receive window that reads nothing after its hello."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    client = await websockets.connect(url, sock=sock, max_queue=1, max_size=2**24,
                                      ping_interval=None)
    await client.send(msgpack.packb({"t": "hello", "proto": 1, "table": table, "token": None,
                                     "since": None}))
    return client


async def sync_attack(server: ServiceProcess, table: str, since: int, *, sockets: int,
                      per_second: float, seconds: float,
                      until: Any = None) -> tuple[list[Any], float]:
    """`sockets` never-reading spectators each send `sync since` `per_second` times a second
    for `seconds` (or until `until()` is true); returns them and the peak growth of the server's
    RSS per socket, in KB. (On loopback the kernel buffers about a megabyte per socket before
    the server's own buffers fill; that memory is not in the RSS.)"""
    slow = [await never_reading(server.ws_url, server.port, table, ADDRESSES[n % 20])
            for n in range(sockets)]
    await asyncio.sleep(1.0)
    base = rss_kb(server.pid)
    peak = base
    frame = msgpack.packb({"t": "sync", "since": since})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for client in slow:
            if client.state.name == "OPEN":
                with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                    await asyncio.wait_for(client.send(frame), 0.05)
        peak = max(peak, rss_kb(server.pid))
        if until is not None and await until():
            break
        await asyncio.sleep(1 / per_second)
    return slow, (peak - base) / sockets


async def test_never_reading_sockets_asking_for_the_whole_history_cost_little_memory(
    redis_url: str,
) -> None:
    table, _ = await finished_game(redis_url)
    async with running(ServiceProcess(redis_url, env=FAST)) as server:
        slow, per_socket_kb = await sync_attack(server, table, 0, sockets=10, per_second=10,
                                                seconds=10)
        print(f"never-reading sockets asking for the whole history 10 times a second: "
              f"server RSS +{per_socket_kb:.0f} KB per socket at the peak")
        assert per_socket_kb < 300
        assert server.healthy()
        for client in slow:
            client.transport.abort()


async def test_a_never_reading_socket_is_closed_4003_before_it_costs_a_few_hundred_kb(
    redis_url: str,
) -> None:
    # Without the sync cooldown every `sync` is answered at once (here: 31 diffs, ~10 KB), so
    # the answers pile up until the socket's queue is full.
    table, version = await finished_game(redis_url)
    env = {**FAST, "SYNC_COOLDOWN_S": "0"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        async def all_cut() -> bool:
            text = (await http.get("/metrics")).text
            return metric(text, 'dominoes_ws_closes_total{code="4003"}') >= 10

        slow, per_socket_kb = await sync_attack(server, table, version - 31, sockets=10,
                                                per_second=50, seconds=90, until=all_cut)
        print(f"never-reading sockets until closed 4003: server RSS +{per_socket_kb:.0f} KB "
              "per socket at the peak")
        assert await all_cut()
        assert per_socket_kb < 300
        for client in slow:
            client.transport.abort()


async def test_syncs_within_the_cooldown_are_coalesced_and_a_long_gap_gets_a_snapshot(
    redis_url: str,
) -> None:
    table, version = await finished_game(redis_url)
    async with running(ServiceProcess(redis_url, env=FAST)) as server:
        watcher = await spectator(server.ws_url, table)
        await asyncio.sleep(0.3)
        with contextlib.suppress(TimeoutError):
            while True:
                await watcher.recv(0.1)
        seen = len(watcher.messages)
        for _ in range(5):
            await watcher.send({"t": "sync", "since": version - 3})
        with contextlib.suppress(TimeoutError):
            while True:
                await watcher.recv(2.0)
        answers = [(m["t"], m.get("v")) for m in watcher.messages[seen:]]
        # The first at once; the four others (within the 1 s cooldown) get one answer.
        assert answers == [("diff", version - 2), ("diff", version - 1), ("diff", version)] * 2
        seen = len(watcher.messages)
        await watcher.send({"t": "sync", "since": 0})
        with contextlib.suppress(TimeoutError):
            while True:
                await watcher.recv(2.0)
        assert [(m["t"], m.get("v")) for m in watcher.messages[seen:]] == [("snapshot", version)]
        assert watcher.v == version


async def test_a_long_resume_is_sent_in_chunks_while_the_game_goes_on(redis_url: str) -> None:
    # A queue of 2 KB (chunks of 1 KB, 4 frames): a resume from version 0 takes many chunks,
    # and the moves made meanwhile reach the resuming socket in order, after its history. The
    # 50 recent chat lines come too, however full the queue is.
    env = {**FAST, "SEND_QUEUE": "8", "SEND_QUEUE_BYTES": "2048", "CHAT_RATE": "1000/1000",
           "TABLE_CHAT_RATE": "1000/1000"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        table, tokens = await started_table(http, rules={"preset": "all-fives", "target": 150})
        players = await seated(server.ws_url, table, tokens)
        await play_to_end(dict(enumerate(players)), [], stop_after=40)
        for n in range(60):
            await players[0].send({"t": "chat", "text": f"line {n}"})
            await players[0].recv_until("chat", text=f"line {n}")
        resumed = [await spectator(server.ws_url, table, since=0) for _ in range(3)]
        playing = asyncio.create_task(play_to_end(dict(enumerate(players)), [], stop_after=10))
        for client in resumed:
            await client.wait_version(players[0].v or 0, 30)
        await playing
        fresh = await spectator(server.ws_url, table)
        for client in resumed:
            await client.wait_version(fresh.v or 0, 30)
            assert not any(m["t"] == "snapshot" for m in client.messages)
            assert client.doc == fresh.doc
            assert [m["text"] for m in client.messages if m["t"] == "chat"] == [
                f"line {n}" for n in range(10, 60)]
        text = (await http.get("/metrics")).text
        assert metric(text, "dominoes_replay_chunks_total") >= 3 * 40 / 4
        assert metric(text, 'dominoes_ws_closes_total{code="4003"}') == 0


async def test_an_address_replays_history_at_its_pace_and_other_addresses_are_not_slowed(
    redis_url: str,
) -> None:
    table, version = await finished_game(redis_url)
    # One whole history per address at once (the burst), then 5 versions a second.
    env = {**FAST, "REPLAY_RATE": f"5/{version}"}
    async with running(ServiceProcess(redis_url, env=env)) as server:
        first = await spectator(server.ws_url, table, "127.0.0.2", since=0)
        await first.wait_version(version, 10)
        started = time.monotonic()
        again = await spectator(server.ws_url, table, "127.0.0.2", since=0)
        other = await spectator(server.ws_url, table, "127.0.0.3", since=0)
        await other.wait_version(version, 10)
        reader = Reader(again)
        await asyncio.sleep(2.0)
        await reader.stop()
        took = time.monotonic() - started
        # The address had spent its burst: a chunk (32 versions) on credit, then 5 a second.
        assert (again.v or 0) <= 2 * 32 + 5 * took
        for client in (first, again, other):
            assert not any(m["t"] == "snapshot" for m in client.messages)
        async with httpx.AsyncClient(base_url=server.url) as http:
            text = (await http.get("/metrics")).text
        assert metric(text, "dominoes_replay_waits_total") >= 1


# ---- settings -----------------------------------------------------------------------------------


def test_the_flood_limits_are_settings_with_defaults() -> None:
    d = Settings.from_env({})
    assert (d.send_queue_bytes, d.sync_cooldown_s) == (65536, 1.0)
    assert (d.chat_rate, d.chat_burst, d.table_chat_rate, d.table_chat_burst) == (1.0, 5, 2.0, 10)
    assert (d.spectator_chat_max, d.max_spectators_per_table,
            d.max_spectators_per_address) == (50, 2000, 100)
    assert (d.replay_rate, d.replay_burst) == (500.0, 2000)
    s = Settings.from_env({
        "SEND_QUEUE_BYTES": "2048", "SYNC_COOLDOWN_S": "0.5", "CHAT_RATE": "2/4",
        "TABLE_CHAT_RATE": "3", "SPECTATOR_CHAT_MAX": "7", "MAX_SPECTATORS_PER_TABLE": "9",
        "MAX_SPECTATORS_PER_ADDRESS": "4", "REPLAY_RATE": "10/30",
    })
    assert (s.send_queue_bytes, s.sync_cooldown_s) == (2048, 0.5)
    assert (s.chat_rate, s.chat_burst, s.table_chat_rate, s.table_chat_burst) == (2.0, 4, 3.0, 6)
    assert (s.spectator_chat_max, s.max_spectators_per_table,
            s.max_spectators_per_address) == (7, 9, 4)
    assert (s.replay_rate, s.replay_burst) == (10.0, 30)


@pytest.mark.parametrize("name, value", [
    ("SEND_QUEUE_BYTES", "-5"), ("SYNC_COOLDOWN_S", "soon"), ("CHAT_RATE", "fast"),
    ("TABLE_CHAT_RATE", "1/x"), ("MAX_SPECTATORS_PER_TABLE", "-1"), ("REPLAY_RATE", "-1/5"),
])
def test_nonsense_flood_limits_are_refused_with_the_variable_named(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        Settings.from_env({name: value})


@pytest.fixture(autouse=True)
async def _no_leftover_clients() -> AsyncIterator[None]:
    yield
    await GameClient.close_all()
