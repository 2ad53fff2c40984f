"""Replays of finished games never slow the tables in play.

    python -m bench.replays [--tables 20] [--games 16] [--seconds 10]

One server process on a fresh Redis. Long finished games are made first (four bot seats,
target 500: several hundred versions each). Then honest tables (two people each, one move a
second; new ones for each phase) play through two phases of the same length: calm, and while
`--games` clients (in a process of their own) fetch the replay of a different finished game
each, all at once, over and over (the first fetch of each game renders it, the later ones read
what was stored). Prints the honest tables' ack
p50 / p99 and the replay answers' times in each phase; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.load import Client, Server, Stats, Table, pct, post
from server.redis_embedded import RedisProcess

ENV = {"RATE": "50/100", "ABANDON_AFTER": "3600"}


async def finished_game(http: httpx.AsyncClient) -> str:
    """A four-seat game of bots, to 500 points; its id once it is over."""
    body = {"players": 4, "rules": {"preset": "all-fives", "target": 500},
            "bots": {"1": "random", "2": "random", "3": "random"}}
    table = (await post(http, "/api/tables", body))["id"]
    token = (await post(http, f"/api/tables/{table}/join", {"seat": 0, "name": "p"}))["token"]
    await post(http, f"/api/tables/{table}/leave", {"token": token})  # a bot plays it out
    while (await http.get(f"/api/tables/{table}")).json()["status"] != "finished":  # noqa: ASYNC110 - polling a server over HTTP
        await asyncio.sleep(0.5)
    return str(table)


READERS: list[asyncio.Task[None]] = []


async def honest_tables(http: httpx.AsyncClient, ws_url: str, count: int,
                        stats: Stats) -> list[Table]:
    tables = []
    for _ in range(count):
        body = {"players": 2, "rules": {"preset": "all-fives", "target": 1000}}
        table = Table((await post(http, "/api/tables", body))["id"], stats)
        for seat in (0, 1):
            joined = await post(http, f"/api/tables/{table.id}/join",
                                {"seat": seat, "name": f"p{seat}"})
            client = Client(table, joined["token"])
            await client.connect(ws_url)
            READERS.append(asyncio.create_task(client.read()))
            table.clients.append(client)
        for client in table.clients:
            await asyncio.wait_for(client.ready.wait(), 30)
        tables.append(table)
    return tables


async def phase(tables: list[Table], seconds: float, stats: Stats) -> None:
    deadline = time.perf_counter() + seconds
    await asyncio.gather(*(table.play(1.0, deadline) for table in tables))


async def fetch_replays(http: httpx.AsyncClient, games: list[str], seconds: float,
                        first: list[float], later: list[float]) -> None:
    deadline = time.perf_counter() + seconds

    async def one(game: str) -> None:
        fetched = 0
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            # Read the body as sent (gzip), without decoding it: the fetchers must not starve
            # the honest players sharing this process.
            async with http.stream("GET", f"/api/tables/{game}/replay", timeout=120) as response:
                response.raise_for_status()
                async for _ in response.aiter_raw():
                    pass
            (first if fetched == 0 else later).append((time.perf_counter() - started) * 1000)
            fetched += 1

    await asyncio.gather(*(one(game) for game in games))


async def fetch_elsewhere(url: str, games: list[str], seconds: float,
                          first: list[float], later: list[float]) -> None:
    """`fetch_replays` in a process of its own, so that the honest players' client here is not
    starved by the fetchers' work."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.replays", "--fetch", url, "--seconds", str(seconds),
        *games, stdout=asyncio.subprocess.PIPE)
    out, _ = await child.communicate()
    got = json.loads(out)
    first += got["first"]
    later += got["later"]


async def fetch_main(args: argparse.Namespace) -> None:
    first: list[float] = []
    later: list[float] = []
    async with httpx.AsyncClient(base_url=args.fetch, timeout=120) as http:
        await fetch_replays(http, args.games_ids, args.seconds, first, later)
    print(json.dumps({"first": first, "later": later}))


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-bench-"))
    redis = RedisProcess(tmp / "redis")
    server = Server(redis.start(), ENV, tmp / "server.log")
    try:
        await server.wait_healthy()
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            games = await asyncio.gather(*(finished_game(http) for _ in range(args.games)))
            calm, attacked = Stats(), Stats()
            tables = await honest_tables(http, server.ws_url, args.tables, calm)
            await phase(tables, args.seconds, calm)
            tables = await honest_tables(http, server.ws_url, args.tables, attacked)
            first: list[float] = []
            later: list[float] = []
            await asyncio.gather(phase(tables, args.seconds, attacked),
                                 fetch_elsewhere(server.url, list(games), args.seconds, first,
                                                 later))
        versions = 0
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            versions = (await http.get(f"/api/tables/{games[0]}")).json()["v"]
        print(f"{args.tables} honest tables at 1 move/s; {args.games} finished games of about "
              f"{versions} versions each")
        print("| phase | moves | ack p50 | ack p99 | move -> every seat p99 | refused, errors |")
        for name, stats in (("calm", calm), (f"{args.games} clients fetching replays", attacked)):
            print(f"| {name} | {stats.moves} | {pct(stats.ack_ms, 0.5):.1f} ms | "
                  f"{pct(stats.ack_ms, 0.99):.1f} ms | {pct(stats.fanout_ms, 0.99):.1f} ms | "
                  f"{stats.rejected or 0}, {stats.errors} |")
        print(f"replay answers: first fetch of each game (rendered) p50 / max "
              f"{pct(first, 0.5):.0f} / {max(first, default=float('nan')):.0f} ms; "
              f"{len(later)} later fetches (stored) p50 / p99 {pct(later, 0.5):.1f} / "
              f"{pct(later, 0.99):.1f} ms")
    finally:
        server.stop()
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fetch", help=argparse.SUPPRESS)  # the fetchers' own process
    parser.add_argument("games_ids", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    asyncio.run(fetch_main(args) if args.fetch else run(args))


if __name__ == "__main__":
    main()
