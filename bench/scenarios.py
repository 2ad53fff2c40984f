"""Reliability scenarios measured against service.md: idle connections, reconnects, abuse.

    python -m bench.scenarios                       # every scenario, default sizes
    python -m bench.scenarios idle --idle 10000     # idle websockets on one process
    python -m bench.scenarios reconnect             # dropped sockets and a kill -9, resume times
    python -m bench.scenarios abuse                 # honest tables' latency, calm vs under abuse
    python -m bench.scenarios flood --tables 20     # chat floods and history replays (bench.floods)

Everything runs on loopback: a fresh Redis and fresh server processes per scenario (bench.load's
`Server`), clients spread over several 127.0.0.x source addresses. Every loop is bounded and
stops by itself. The bench raises its own open-file limit (children inherit it); with fewer
descriptors available it uses a smaller idle count and says so. Figures are printed, never
asserted; the last lines are a table against the targets of service.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import msgpack
import websockets

from bench.load import Client, Server, Stats, Table, pct, post
from server.diff import apply_ops
from server.redis_embedded import RedisProcess

ADDRESSES = [f"127.0.0.{n}" for n in range(2, 62)]  # source addresses of the bench clients
RESULTS: dict[str, str] = {}


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(hard, max(soft, wanted))
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Stack:
    """A Redis and `servers` server processes, stopped on exit."""

    def __init__(self, servers: int, env: dict[str, str]) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="dominoes-scenario-"))
        self.redis = RedisProcess(self.tmp / "redis", appendfsync="everysec")
        self.env = env
        self.count = servers
        self.servers: list[Server] = []

    async def __aenter__(self) -> Stack:
        url = await asyncio.to_thread(self.redis.start)
        self.redis_url = url
        self.servers = [Server(url, self.env, self.tmp / f"server-{n}.log")
                        for n in range(self.count)]
        await asyncio.gather(*(s.wait_healthy() for s in self.servers))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for server in self.servers:
            await asyncio.to_thread(server.stop)
        await asyncio.to_thread(self.redis.stop)


async def table_with_bot(http: httpx.AsyncClient, target: int = 150) -> tuple[str, str]:
    """A two-seat table: a bot in seat 1, a person's token for seat 0."""
    table = (await post(http, "/api/tables", {
        "rules": {"preset": "all-fives", "target": target}, "players": 2,
        "bots": {"1": "random"}}))["id"]
    token = (await post(http, f"/api/tables/{table}/join", {"seat": 0, "name": "p0"}))["token"]
    return table, token


class Watcher:
    """A socket that keeps one audience's document and can drop and resume."""

    def __init__(self, table: str, token: str | None, address: str) -> None:
        self.table, self.token, self.address = table, token, address
        self.doc: dict[str, Any] | None = None
        self.v: int | None = None
        self.socket: Any = None
        self.snapshots = 0

    async def open(self, url: str) -> int:
        """Connect, hello with `since`, read until in sync with the welcome; the version."""
        self.socket = await websockets.connect(url, max_size=2**22, open_timeout=10,
                                               local_addr=(self.address, 0))
        await self.socket.send(msgpack.packb({"t": "hello", "proto": 1, "table": self.table,
                                              "token": self.token, "since": self.v}))
        target = None
        while target is None or self.v is None or self.v < target:
            message = msgpack.unpackb(await asyncio.wait_for(self.socket.recv(), 30), raw=False)
            if message["t"] == "welcome":
                target = message["v"]
            else:
                self.apply(message)
        return target

    def apply(self, message: dict[str, Any]) -> None:
        if message["t"] == "snapshot":
            self.doc, self.v = message["doc"], message["v"]
            self.snapshots += 1
        elif message["t"] == "diff" and self.v is not None and message["v"] == self.v + 1:
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]

    async def follow(self, until: float) -> None:
        """Read (and play the seat, if any) until `until` or the game ends."""
        moved_at = -1
        with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
            while time.perf_counter() < until:
                game = (self.doc or {}).get("game")
                if game and game["game_over"]:
                    return
                if (self.token and game and game["turn"] == 0 and game["legal"]
                        and moved_at != self.v):
                    moved_at = self.v or 0
                    await self.socket.send(msgpack.packb({
                        "t": "move", "id": f"b{moved_at}", "v": moved_at,
                        "move": game["legal"][0]}))
                message = msgpack.unpackb(await asyncio.wait_for(self.socket.recv(), 5),
                                          raw=False)
                self.apply(message)


# ---- idle connections -------------------------------------------------------------------------


async def scenario_idle(count: int) -> None:
    limit = raise_fd_limit(count + 2000)
    usable = max(100, min(count, limit - 1000))
    if usable < count:
        print(f"idle: open-file limit {limit}; using {usable} connections instead of {count}")
    async with Stack(1, {"RATE": "50/100"}) as stack:
        server = stack.servers[0]
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            tables = [(await table_with_bot(http))[0] for _ in range(20)]
        base = server.rss_kb()
        sockets: list[Any] = []
        sem = asyncio.Semaphore(100)
        failures: dict[str, int] = {}

        async def one(n: int) -> None:
            async with sem:
                for _attempt in range(3):  # a loaded machine drops the odd handshake
                    try:
                        watcher = Watcher(tables[n % len(tables)], None, ADDRESSES[n % 60])
                        await watcher.open(server.ws_url)
                        sockets.append(watcher.socket)
                        return
                    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
                        name = type(exc).__name__
                        failures[name] = failures.get(name, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(usable)))
        took = time.perf_counter() - started
        await asyncio.sleep(12)  # two websocket ping rounds while idle
        alive = sum(1 for s in sockets if s.state.name == "OPEN")
        grown = server.rss_kb() - base
        per_kb = grown / max(1, len(sockets))
        print(f"idle: {alive}/{usable} connections open after 12 s idle (failed attempts: "
              f"{failures or 0}), "
              f"opened in {took:.1f}s; server RSS +{grown / 1024:.1f} MB = {per_kb:.1f} KB per "
              "connection")
        RESULTS["idle connections per process"] = f"{alive} open ({usable} tried)"
        RESULTS["memory per idle connection"] = f"{per_kb:.1f} KB"
        await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


# ---- reconnects -------------------------------------------------------------------------------


async def scenario_reconnect(tables: int, watchers_per_table: int) -> None:
    async with Stack(2, {"RATE": "50/100", "BOT_DELAY_MS": "150"}) as stack:
        one, two = stack.servers
        async with httpx.AsyncClient(base_url=one.url, timeout=30) as http:
            made = [await table_with_bot(http) for _ in range(tables)]
        players = [Watcher(t, token, ADDRESSES[i % 60]) for i, (t, token) in enumerate(made)]
        watchers = [Watcher(t, None, ADDRESSES[(i * 7 + k) % 60])
                    for i, (t, _) in enumerate(made) for k in range(watchers_per_table)]
        for i, client in enumerate(players + watchers):
            await client.open((one if i % 2 else two).ws_url)
        until = time.perf_counter() + 60
        playing = [asyncio.create_task(p.follow(until)) for p in players]

        # 1. Dropped sockets: each watcher closes, stays away 0.5 s, resumes with `since`.
        drop_ms: list[float] = []
        snapshots_before = sum(w.snapshots for w in watchers)

        async def drop(w: Watcher) -> None:
            await w.socket.close()
            await asyncio.sleep(0.5)
            begun = time.perf_counter()
            await w.open(one.ws_url)
            drop_ms.append((time.perf_counter() - begun) * 1000)

        await asyncio.gather(*(drop(w) for w in watchers))
        resumed_with_snapshot = sum(w.snapshots for w in watchers) - snapshots_before

        # 2. kill -9 of the process holding every watcher: all resume on the other one.
        crash_ms: list[float] = []
        one.proc.kill()
        one.proc.wait()
        killed = time.perf_counter()

        async def resume(w: Watcher) -> None:
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError, OSError):
                await asyncio.wait_for(w.socket.recv(), 10)  # notices the dead socket
            await w.open(two.ws_url)
            crash_ms.append((time.perf_counter() - killed) * 1000)

        await asyncio.gather(*(resume(w) for w in watchers))
        for task in playing:
            task.cancel()
        print(f"reconnect: {len(watchers)} watchers on {tables} tables; after a drop (0.5 s "
              f"away) hello->in sync p50/p95 {pct(drop_ms, .5):.1f}/{pct(drop_ms, .95):.1f} ms, "
              f"snapshots needed {resumed_with_snapshot}; after kill -9 of their process, "
              f"kill->in sync on the other p50/p95 {pct(crash_ms, .5):.0f}/"
              f"{pct(crash_ms, .95):.0f} ms")
        RESULTS["reconnect to in-sync p95 (dropped socket)"] = f"{pct(drop_ms, .95):.1f} ms"
        RESULTS["reconnect to in-sync p95 (kill -9, other process)"] = \
            f"{pct(crash_ms, .95):.0f} ms"
        RESULTS["snapshots needed on resume"] = str(resumed_with_snapshot)


# ---- abuse ------------------------------------------------------------------------------------


async def honest_tables(stack: Stack, tables: int, seconds: float) -> Stats:
    """`tables` two-seat tables with a spectator each, 1 move/s per table, for `seconds`."""
    stats = Stats()
    server = stack.servers[0]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        made = []
        for _ in range(tables):
            table = (await post(http, "/api/tables", {
                "rules": {"preset": "all-fives", "target": 250}, "players": 2}))["id"]
            tokens = [(await post(http, f"/api/tables/{table}/join",
                                  {"seat": s, "name": f"p{s}"}))["token"] for s in (0, 1)]
            made.append((table, tokens))
    boards = []
    for table_id, tokens in made:
        board = Table(table_id, stats)
        board.clients = [Client(board, t) for t in [*tokens, None]]
        boards.append(board)
    clients = [c for b in boards for c in b.clients]
    for client in clients:
        await client.connect(server.ws_url)
    readers = [asyncio.create_task(c.read()) for c in clients]
    await asyncio.gather(*(c.ready.wait() for c in clients))
    deadline = time.perf_counter() + seconds
    await asyncio.gather(*(b.play(1.0, deadline) for b in boards))
    for client in clients:
        await client.socket.close()
    for reader in readers:
        reader.cancel()
    return stats


async def abusers(url: str, table: str, stop_at: float) -> dict[str, int]:
    """Flooders, oversized frames, token guessers, never-reading readers and a crowd of
    sockets from one address, all at once, until `stop_at`. Returns close codes seen."""
    codes: dict[str, int] = {}

    def seen(code: object) -> None:
        codes[str(code)] = codes.get(str(code), 0) + 1

    async def hello(address: str, token: str | None) -> Any:
        ws = await websockets.connect(url, max_size=2**22, local_addr=(address, 0))
        await ws.send(msgpack.packb({"t": "hello", "proto": 1, "table": table,
                                     "token": token, "since": None}))
        return ws

    async def flooder(n: int) -> None:
        while time.perf_counter() < stop_at:
            ws = await hello(ADDRESSES[n], None)
            try:
                for k in range(5000):
                    await ws.send(msgpack.packb({"t": "ping", "n": k}))
                await ws.wait_closed()
            except websockets.ConnectionClosed:
                pass
            seen(ws.close_code)

    async def oversized(n: int) -> None:
        while time.perf_counter() < stop_at:
            ws = await hello(ADDRESSES[n], None)
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.send(b"\x80" + b"\x00" * 8000)
                await ws.wait_closed()
            seen(ws.close_code)
            await asyncio.sleep(0.05)

    async def guesser(n: int) -> None:
        k = 0
        while time.perf_counter() < stop_at:
            k += 1
            ws = await hello(ADDRESSES[n], f"guess-{n}-{k}-" + "x" * 30)
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.wait_closed()
            seen(ws.close_code)
            await asyncio.sleep(0.02)

    async def never_reads(n: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.bind((ADDRESSES[n], 0))
        host, port = url.split("//")[1].split("/")[0].split(":")
        sock.connect((host, int(port)))
        sock.setblocking(False)
        ws = await websockets.connect(url, sock=sock, max_queue=1, ping_interval=None)
        await ws.send(msgpack.packb({"t": "hello", "proto": 1, "table": table,
                                     "token": None, "since": None}))
        sync = msgpack.packb({"t": "sync", "since": 0})
        with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
            while time.perf_counter() < stop_at:
                await asyncio.wait_for(ws.send(sync), 2)
                await asyncio.sleep(0.12)
        ws.transport.abort()

    async def crowd(n: int) -> None:
        sockets = []
        with contextlib.suppress(OSError, websockets.WebSocketException):
            for _ in range(300):
                sockets.append(await hello(ADDRESSES[n], None))
        await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
        seen(f"crowd open {sum(1 for s in sockets if s.state.name == 'OPEN')}")
        for s in sockets:
            await s.close()

    jobs: list[Awaitable[None]] = [
        *(flooder(n) for n in range(0, 4)), *(oversized(n) for n in range(4, 6)),
        *(guesser(n) for n in range(6, 10)), *(never_reads(n) for n in range(10, 20)),
        crowd(20),
    ]
    await asyncio.gather(*jobs, return_exceptions=True)
    return codes


async def scenario_abuse(tables: int, seconds: float) -> None:
    env = {"RATE": "10/20", "SEND_QUEUE": "64"}
    async with Stack(1, env) as stack:
        calm = await honest_tables(stack, tables, seconds)
    async with Stack(1, env) as stack:
        server = stack.servers[0]
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            victim, _ = await table_with_bot(http)
        stop_at = time.perf_counter() + seconds + 5
        abuse = asyncio.create_task(abusers(server.ws_url, victim, stop_at))
        await asyncio.sleep(2)
        loaded = await honest_tables(stack, tables, seconds)
        codes = await abuse
    for name, stats in (("calm", calm), ("under abuse", loaded)):
        print(f"abuse: {tables} honest tables {name}: {stats.moves} moves, ack p50/p99 "
              f"{pct(stats.ack_ms, .5):.1f}/{pct(stats.ack_ms, .99):.1f} ms, all diffs p50/p99 "
              f"{pct(stats.fanout_ms, .5):.1f}/{pct(stats.fanout_ms, .99):.1f} ms, "
              f"errors {stats.errors}")
    print(f"abuse: close codes / outcomes of the abusers: {codes}")
    RESULTS["honest ack p99, calm / under abuse"] = (
        f"{pct(calm.ack_ms, .99):.1f} / {pct(loaded.ack_ms, .99):.1f} ms")
    RESULTS["honest fan-out p99, calm / under abuse"] = (
        f"{pct(calm.fanout_ms, .99):.1f} / {pct(loaded.fanout_ms, .99):.1f} ms")


# ---- entry point ------------------------------------------------------------------------------


def flood(tables: int, bots: int, seconds: float) -> Awaitable[None]:
    from bench.floods import scenario_flood  # bench.floods builds on this module

    return scenario_flood(tables, bots, seconds)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", nargs="*", default=["idle", "reconnect", "abuse"],
                        choices=["idle", "reconnect", "abuse", "flood"])
    parser.add_argument("--idle", type=int, default=10_000, help="idle connections")
    parser.add_argument("--tables", type=int, default=50, help="tables (reconnect, abuse)")
    parser.add_argument("--watchers", type=int, default=4, help="spectators per table")
    parser.add_argument("--seconds", type=float, default=20.0, help="abuse phase length")
    parser.add_argument("--bots", type=int, default=10, help="person-vs-bot tables (flood)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    runs: dict[str, Callable[[], Awaitable[None]]] = {
        "idle": lambda: scenario_idle(args.idle),
        "reconnect": lambda: scenario_reconnect(args.tables, args.watchers),
        "abuse": lambda: scenario_abuse(args.tables, args.seconds),
        "flood": lambda: flood(args.tables, args.bots, args.seconds),
    }
    for name in args.which:
        asyncio.run(runs[name]())
    print("\n| scenario | figure |\n|---|---|")
    for key, value in RESULTS.items():
        print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
