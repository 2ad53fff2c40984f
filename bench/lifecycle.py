"""Server CPU of a table's life outside its moves: what a service pays for every game it starts.

    python -m bench.lifecycle [--tables 300] [--concurrency 20] [--players 2] [--preset P]

Starts a private Redis (appendfsync everysec) and one server process (bench.load's `Server`: the
per-address quotas lifted, as the load client needs). Each lifecycle creates a table and takes
every seat over HTTP (as bench.load sets its tables up), opens a websocket for each seat and
says hello (until its snapshot arrives), then closes the sockets: no move is played. 20
lifecycles warm the server up, then
``--tables`` lifecycles run, ``--concurrency`` at a time. Prints one JSON line: the server
process's CPU per lifecycle (ms, user + system, the second after the last one included), the
wall time, and the Redis commands per lifecycle by name (`INFO commandstats`, reset before the
measured lifecycles: commands a script runs are counted as well as the script's call). Asserts
nothing.
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
import msgpack
import redis.asyncio
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.load import Server, setup_table
from server.redis_embedded import RedisProcess


async def hello(ws_url: str, table: str, token: str) -> websockets.ClientConnection:
    """A seat's socket once its snapshot has arrived."""
    socket = await websockets.connect(ws_url, ping_interval=None, open_timeout=60)
    await socket.send(msgpack.packb({"t": "hello", "proto": 1, "table": table, "token": token}))
    while msgpack.unpackb(await socket.recv(), raw=False)["t"] != "snapshot":
        pass
    return socket


async def lifecycle(http: httpx.AsyncClient, ws_url: str, args: argparse.Namespace) -> None:
    table, tokens = await setup_table(http, args)
    sockets = [await hello(ws_url, table, token) for token in tokens]
    for socket in sockets:
        await socket.close()


async def run(args: argparse.Namespace) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-lifecycle-"))
    redis_process = RedisProcess(tmp / "redis", appendfsync="everysec")
    redis_url = redis_process.start()
    server = Server(redis_url, {"RATE": "1000/2000"}, tmp / "server.log")
    try:
        await server.wait_healthy()
        limit = asyncio.Semaphore(args.concurrency)

        async def bounded(http: httpx.AsyncClient) -> None:
            async with limit:
                await lifecycle(http, server.ws_url, args)

        client = redis.asyncio.Redis.from_url(redis_url)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            await asyncio.gather(*(bounded(http) for _ in range(20)))
            await asyncio.sleep(1.0)  # the closes settle
            await client.config_resetstat()
            cpu_before, started = server.cpu_s(), time.monotonic()
            await asyncio.gather(*(bounded(http) for _ in range(args.tables)))
            wall_s = time.monotonic() - started
            await asyncio.sleep(1.0)
            cpu_s = server.cpu_s() - cpu_before
        stats = await client.info("commandstats")
        await client.aclose()
    finally:
        server.stop()
        redis_process.stop()
    commands = {name.removeprefix("cmdstat_"): round(value["calls"] / args.tables, 2)
                for name, value in stats.items() if name != "cmdstat_config|resetstat"}
    return {"bench": "lifecycle", "tables": args.tables, "players": args.players,
            "concurrency": args.concurrency,
            "server_cpu_ms_per_table": round(cpu_s / args.tables * 1000, 2),
            "wall_s": round(wall_s, 2),
            "redis_commands_per_table": dict(sorted(commands.items(), key=lambda kv: -kv[1]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    parser.add_argument("--preset", default="all-fives")
    parser.add_argument("--target", type=int, default=150, help="points to win")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()
