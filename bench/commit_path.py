"""CPU of one table commit on the committing process: redis-py's script call against the
store's pipelined hiredis link (server.redis_link), on a private Redis.

    python -m bench.commit_path [--commits 4000] [--tables 50] [--concurrency 20]

Commits versions of `--tables` tables with the commit script, `--concurrency` at a time, with
arguments of a move's sizes (a 1.6 KB state, three frames of 300-400 B), through each path in
turn, twice. Prints one JSON line: the process's CPU per commit (µs) for each path and pass,
and Redis' own CPU per commit. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis.asyncio

from server.redis_embedded import RedisProcess
from server.store import Store

STATE = os.urandom(1600)
META = os.urandom(200)
FRAMES = {"0": os.urandom(380), "1": os.urandom(380), "s": os.urandom(300)}


def cpu_s(pid: int) -> float:
    """The CPU time (user + system, seconds) process `pid` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(store: Store, tables: int, commits: int, concurrency: int,
              versions: dict[str, int]) -> None:
    """`commits` commits spread over the tables, `concurrency` callers at a time."""
    per_caller = commits // concurrency

    async def caller(k: int) -> None:
        for i in range(per_caller):
            table = f"bench{(k + i * concurrency) % tables:03d}"
            result = await store.commit(table, versions[table], STATE, META, FRAMES,
                                        lifetime_ms="keep", due_ms="keep")
            versions[table] = result.version

    await asyncio.gather(*(caller(k) for k in range(concurrency)))


async def main(args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisProcess(Path(tmp) / "redis", appendfsync="everysec")
        url = server.start()
        try:
            client = redis.asyncio.Redis.from_url(url)
            linked = Store(client)
            plain = Store(client)
            plain.close()
            plain._link = None  # the redis-py path the store takes on a cluster
            versions = {f"bench{t:03d}": 0 for t in range(args.tables)}
            for table in versions:
                versions[table] = (await linked.commit(table, 0, STATE, META, FRAMES)).version
            out: dict[str, object] = {"bench": "commit_path", "commits": args.commits,
                                      "tables": args.tables, "concurrency": args.concurrency}
            pid = int((await client.info("server"))["process_id"])
            for n in (1, 2):
                for name, store in (("redis_py", plain), ("link", linked)):
                    cpu, redis_cpu = time.process_time(), cpu_s(pid)
                    await run(store, args.tables, args.commits, args.concurrency, versions)
                    out[f"{name}_us_{n}"] = round(
                        (time.process_time() - cpu) / args.commits * 1e6, 1)
                    out[f"{name}_redis_us_{n}"] = round(
                        (cpu_s(pid) - redis_cpu) / args.commits * 1e6, 1)
            linked.close()
            await client.aclose()
            return out
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=4000)
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=20)
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
