"""CPU of one table commit on the committing process: redis-py's script call against the
store's pipelined hiredis link (server.redis_link), on a private Redis.

    python -m bench.commit_path [--commits 4000] [--tables 50] [--concurrency 20]

Commits versions of `--tables` tables with the commit script, `--concurrency` at a time, with
arguments of a move's sizes (a 1.6 KB state, three frames of 300-400 B), through each path in
turn, twice; then, through the link, the commits of moves within a hand (`link_move`:
the move appended to the stored state instead of the whole state, the client's move id
remembered, the mover's seat token checked, the lobby summary unchanged, the notice left
unpublished as for a process that is the table's only listener). Prints one JSON line: the
process's CPU per commit (µs) for each path and pass, and Redis' own CPU per commit. Checks
only that every commit lands (no figure is asserted).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
MOVE = os.urandom(30)  # an appended move (server.record.move_entry) is about this long
TOKEN = "t" * 43  # a seat token's hash as the store keeps it
MOVE_IDS = itertools.count()  # the clients' move ids, each used once


def cpu_s(pid: int) -> float:
    """The CPU time (user + system, seconds) process `pid` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(store: Store, tables: int, commits: int, concurrency: int,
              versions: dict[str, int], move: bool = False) -> None:
    """`commits` commits spread over the tables, `concurrency` callers at a time, each on
    tables of its own (so that every commit lands; `move`: shaped as a move within a hand)."""
    per_caller = commits // concurrency
    owned = max(1, tables // concurrency)  # caller k commits tables k, k + concurrency, ...

    async def caller(k: int) -> None:
        for i in range(per_caller):
            table = f"bench{k + concurrency * (i % owned):03d}"
            if move:
                result = await store.commit(
                    table, versions[table], MOVE, b"", FRAMES, append=True,
                    client=(k, f"{next(MOVE_IDS)}"), require=(0, TOKEN), lifetime_ms="keep",
                    due_ms="keep", subscribed=True)
            else:
                result = await store.commit(table, versions[table], STATE, META, FRAMES,
                                            lifetime_ms="keep", due_ms="keep")
            assert result.outcome == "ok", result
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
            versions = {f"bench{t:03d}": 0 for t in range(max(args.tables, args.concurrency))}
            for table in versions:
                versions[table] = (await linked.commit(table, 0, STATE, META, FRAMES,
                                                       token=("set", 0, TOKEN))).version
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
            for n in (1, 2):
                cpu, redis_cpu = time.process_time(), cpu_s(pid)
                await run(linked, args.tables, args.commits, args.concurrency, versions,
                          move=True)
                out[f"link_move_us_{n}"] = round(
                    (time.process_time() - cpu) / args.commits * 1e6, 1)
                out[f"link_move_redis_us_{n}"] = round(
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
