"""Redis bytes a table costs: live, per version, once finished, and after its retention.

    python -m bench.redis_memory [--tables 50] [--retention 2]

Starts its own redis-server, plays games through TableService (random legal moves for every
seat), and reads ``MEMORY USAGE`` of every key of each table
(the keys all carry the table's hash tag). Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time

import redis.asyncio

from server.redis_embedded import RedisProcess
from server.tables import TableService
from tests.support.tables import new_table, play_random


async def table_bytes(client: redis.asyncio.Redis, table_id: str) -> tuple[int, int]:
    """(bytes, keys) of every key of one table."""
    total, count = 0, 0
    async for key in client.scan_iter(match=f"*{{{table_id}}}*", count=1000):
        total += int(await client.memory_usage(key, samples=0) or 0)
        count += 1
    return total, count


async def finish(service: TableService, table_id: str, rng: random.Random) -> int:
    """Play random legal moves for every seat to the end; the last version."""
    moves = 0
    while True:
        version, doc = await service.snapshot(table_id, "s")
        if doc["game"]["game_over"]:
            return version
        await play_random(service, table_id, rng, f"m{moves}")
        moves += 1


async def run(tables: int, retention_s: float) -> None:
    with tempfile.TemporaryDirectory() as data:
        server = RedisProcess(data)
        url = server.start()
        client = redis.asyncio.Redis.from_url(url)
        try:
            service = TableService(client, bot_delay_ms=0, retention_s=retention_s)
            rng = random.Random(7)
            waiting = [(await service.create({"players": 2}))["id"] for _ in range(tables)]
            per_waiting = statistics.median([(await table_bytes(client, t))[0] for t in waiting])
            rows: list[tuple[str, float, float, float]] = []
            ended: list[str] = []
            for players in (2, 4):
                finished: list[tuple[int, int]] = []
                live: list[float] = []
                for _ in range(tables):
                    table_id, _ = await new_table(service, players)
                    started, _ = await table_bytes(client, table_id)
                    version = await finish(service, table_id, rng)
                    size, _ = await table_bytes(client, table_id)
                    finished.append((size, version))
                    ended.append(table_id)
                    live.append((size - started) / max(1, version - players - 1))
                rows.append((f"{players} players", statistics.median(live),
                             statistics.median(s for s, _ in finished),
                             statistics.median(v for _, v in finished)))
            await asyncio.sleep(retention_s + 0.5)
            left = sum([(await table_bytes(client, t))[1] for t in ended])
            print(f"Redis memory per table ({tables} tables each; MEMORY USAGE of every key)")
            print(f"  waiting table, just created: {per_waiting:,.0f} B")
            print("  | game | bytes per version (live) | finished game | versions |")
            for name, per_version, size, versions in rows:
                print(f"  | {name} | {per_version:,.0f} B | {size:,.0f} B | {versions:,.0f} |")
            print(f"  keys of the finished tables left {retention_s:g} s after they ended "
                  f"(RETENTION): {left}")
        finally:
            await client.aclose()
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--retention", type=float, default=2.0)
    args = parser.parse_args()
    started = time.monotonic()
    asyncio.run(run(args.tables, args.retention))
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
