"""Bot farms: an honest table's bot reply time, idle and next to many hostile bot tables.

    python -m bench.bots_farm                        # 100 strong-bot farm tables, 20 s a phase
    python -m bench.bots_farm --farm 300 --level greedy --seconds 30
    python -m bench.bots_farm --delay-ms 0           # bots answer at once (no BOT_DELAY_MS)

One server process on a fresh Redis (bench.load's `Server`), the service's default settings
unless told otherwise. Two honest tables, created and played from 127.0.0.3 -- a person against
a greedy bot and a person against a strong one -- are timed for `--seconds`: each bot move from
the version that made it the bot's turn to the diff of its move. Then `--farm` hostile tables
are made from 127.0.0.2 (create, join, leave: bots play every seat and nobody is connected) and
the honest tables are timed again while the farm runs. Printed: reply times (p50 / p90 / max and
count) per phase, the server's and its bot workers' CPU, and Redis memory growth. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import msgpack
import redis.asyncio
import websockets

from bench.load import Server, pct, post
from server.diff import apply_ops
from server.redis_embedded import RedisProcess

FARM_ADDRESS = "127.0.0.2"
HONEST_ADDRESS = "127.0.0.3"
BOT_SEAT = 1
# The farm is made from one address: the per-address table quotas would stop it long before it
# is big (a farm of many addresses is what this measures).
QUOTAS_OFF = {"CREATE_RATE": "1000000", "JOIN_RATE": "1000000", "MAX_WAITING_TABLES": "1000000"}


def children_cpu_s(pid: int) -> float:
    """User + system CPU seconds of `pid`'s child processes (the bot workers) so far."""
    total = 0.0
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    for child in children:
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return total


class HonestPlayer:
    """A person playing seat 0 as fast as the bot answers; a reader notes when each version
    arrived and times every bot move, from the version that made it the bot's turn."""

    def __init__(self, table: str, token: str, level: str) -> None:
        self.table, self.token, self.level = table, token, level
        self.doc: dict[str, Any] | None = None
        self.v = -1
        self.socket: Any = None
        self.arrived: dict[int, float] = {}
        self.replies: list[tuple[float, float]] = []  # (when the bot's turn began, ms)
        self.changed = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None
        self.n = 0

    async def open(self, ws_url: str) -> None:
        self.socket = await websockets.connect(ws_url, max_size=2**22, open_timeout=30,
                                               local_addr=(HONEST_ADDRESS, 0))
        await self.socket.send(msgpack.packb({"t": "hello", "proto": 1, "table": self.table,
                                              "token": self.token, "since": None}))
        self.reader = asyncio.create_task(self.read())
        while self.doc is None:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)

    async def read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for data in self.socket:
                now = time.perf_counter()
                if self.apply(msgpack.unpackb(data, raw=False), now) \
                        and self.v - 1 in self.arrived:
                    began = self.arrived[self.v - 1]
                    self.replies.append((began, (now - began) * 1000))
                self.changed.set()

    def apply(self, message: dict[str, Any], now: float) -> bool:
        """Apply one message; True when it was the diff of a bot move."""
        if message["t"] == "snapshot":
            self.doc, self.v = message["doc"], message["v"]
            self.arrived[self.v] = now
        elif message["t"] == "diff" and self.doc is not None and message["v"] == self.v + 1:
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]
            self.arrived.setdefault(self.v, now)
            return any(e.get("seat") == BOT_SEAT and e.get("type") in ("play", "draw", "pass")
                       for e in message["ev"])
        elif message["t"] == "accepted":
            self.arrived.setdefault(message["v"], now)
        return False

    async def play(self, seconds: float) -> list[float]:
        """Play for `seconds`; the milliseconds of every bot move whose turn began then."""
        started = time.perf_counter()
        until = started + seconds
        moved_at = -1
        while time.perf_counter() < until:
            assert self.doc is not None
            game = self.doc["game"]
            if game is None or game["game_over"]:
                break
            self.changed.clear()
            if game["turn"] == 0 and game["legal"] and moved_at != self.v:
                moved_at = self.v
                self.n += 1
                await self.socket.send(msgpack.packb({
                    "t": "move", "id": f"h{self.n}", "v": self.v, "move": game["legal"][0]}))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), max(0.01, until - time.perf_counter()))
        return [ms for began, ms in self.replies if started <= began < until]


async def honest_table(http: httpx.AsyncClient, level: str, ws_url: str) -> HonestPlayer:
    table = (await post(http, "/api/tables", {
        "rules": {"preset": "all-fives", "target": 1000}, "players": 2,
        "bots": {str(BOT_SEAT): level}}))["id"]
    token = (await post(http, f"/api/tables/{table}/join", {"seat": 0, "name": "honest"}))["token"]
    player = HonestPlayer(table, token, level)
    await player.open(ws_url)
    return player


async def farm_table(http: httpx.AsyncClient, level: str) -> None:
    table = (await post(http, "/api/tables", {
        "rules": {"preset": "all-fives", "target": 1000}, "players": 2,
        "bots": {str(BOT_SEAT): level}}))["id"]
    token = (await post(http, f"/api/tables/{table}/join", {"seat": 0, "name": "gone"}))["token"]
    await post(http, f"/api/tables/{table}/leave", {"token": token})


def summary(values: list[float]) -> str:
    if not values:
        return "no reply"
    return (f"{statistics.median(values):,.0f} / {pct(values, 0.9):,.0f} / "
            f"{max(values):,.0f} ms (n={len(values)})")


async def phase(name: str, players: list[HonestPlayer], server: Server,
                client: redis.asyncio.Redis, seconds: float) -> dict[str, Any]:
    cpu, workers = server.cpu_s(), children_cpu_s(server.proc.pid)
    memory = int((await client.info("memory"))["used_memory"])
    started = time.perf_counter()
    results = await asyncio.gather(*(p.play(seconds) for p in players))
    took = time.perf_counter() - started
    grown = int((await client.info("memory"))["used_memory"]) - memory
    figures = {
        "replies": {p.level: r for p, r in zip(players, results, strict=True)},
        "server_cpu": (server.cpu_s() - cpu) / took,
        "worker_cpu": (children_cpu_s(server.proc.pid) - workers) / took,
        "redis_kb_s": grown / 1024 / took,
    }
    print(f"{name}: " + "; ".join(f"{level} {summary(r)}"
                                  for level, r in figures["replies"].items())
          + f"; server CPU {figures['server_cpu']:.0%}, bot workers "
          f"{figures['worker_cpu']:.0%} of a core; Redis {figures['redis_kb_s']:+,.0f} KB/s",
          flush=True)
    return figures


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-botfarm-"))
    store = RedisProcess(tmp / "redis", appendfsync="everysec")
    url = await asyncio.to_thread(store.start)
    env = {"RATE": "50/100", "BOT_DELAY_MS": str(args.delay_ms), **QUOTAS_OFF,
           **dict(args.env)}
    server = Server(url, env, tmp / "server.log")
    client = redis.asyncio.Redis.from_url(url)
    try:
        await server.wait_healthy()
        print(f"one server, BOT_DELAY_MS={args.delay_ms}, farm: {args.farm} {args.level}-bot "
              f"tables, {args.seconds:.0f} s a phase; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
        honest_http = httpx.AsyncClient(
            base_url=server.url, timeout=30,
            transport=httpx.AsyncHTTPTransport(local_address=HONEST_ADDRESS))
        async with honest_http:
            players = [await honest_table(honest_http, level, server.ws_url)
                       for level in ("greedy", "strong")]
        idle = await phase("idle", players, server, client, args.seconds)
        farm_http = httpx.AsyncClient(
            base_url=server.url, timeout=30, limits=httpx.Limits(max_connections=20),
            transport=httpx.AsyncHTTPTransport(local_address=FARM_ADDRESS))
        started = time.perf_counter()
        async with farm_http:
            sem = asyncio.Semaphore(20)

            async def one() -> None:
                async with sem:
                    await farm_table(farm_http, args.level)

            await asyncio.gather(*(one() for _ in range(args.farm)))
        print(f"farm of {args.farm} tables made in {time.perf_counter() - started:.2f} s of "
              "requests", flush=True)
        await asyncio.sleep(2.0)
        attacked = await phase(f"with the farm ({args.farm} {args.level})", players, server,
                               client, args.seconds)
        print()
        print(f"| honest table's bot | idle p50 / p90 / max | next to {args.farm} "
              f"{args.level}-bot tables | p50 ratio |")
        print("|---|---|---|---|")
        for level in ("greedy", "strong"):
            calm, busy = idle["replies"][level], attacked["replies"][level]
            ratio = (f"{statistics.median(busy) / statistics.median(calm):.2f}x"
                     if calm and busy else "—")
            print(f"| {level} | {summary(calm)} | {summary(busy)} | {ratio} |")
        print(f"| server CPU | {idle['server_cpu']:.0%} | {attacked['server_cpu']:.0%} | |")
        print(f"| bot workers' CPU | {idle['worker_cpu']:.0%} | {attacked['worker_cpu']:.0%} | |")
        print(f"| Redis memory growth | {idle['redis_kb_s']:+,.0f} KB/s | "
              f"{attacked['redis_kb_s']:+,.0f} KB/s | |")
        for player in players:
            with contextlib.suppress(Exception):
                await player.socket.close()
            if player.reader is not None:
                await asyncio.gather(player.reader, return_exceptions=True)
    finally:
        await client.aclose()
        await asyncio.to_thread(server.stop)
        await asyncio.to_thread(store.stop)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--farm", type=int, default=100, help="hostile tables")
    parser.add_argument("--level", default="strong", help="bot level of the farm's tables")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--delay-ms", type=int, default=600, help="BOT_DELAY_MS of the server")
    parser.add_argument("--env", action="append", default=[], type=lambda s: s.split("=", 1),
                        help="more server environment, NAME=VALUE (repeatable)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    main()
