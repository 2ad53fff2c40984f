"""What post-game analysis costs live tables: honest tables' ack latency with and without
games being analysed at the same time, on one server process.

    python -m bench.analysis_load                 # 100 tables, 20 games analysed
    python -m bench.analysis_load --tables 50 --games 10 --seconds 30

Starts Redis, PostgreSQL (migrated) and one server process with its analysis worker
(ANALYSIS_WORKERS=1, the default), and keeps `--tables` tables of two websocket players (and one
spectator) moving once a second each. Three phases: quiet (`--seconds`, nothing to
analyse), busy (`--games` archived games queued for analysis -- played greedy against random, to
150, and written to the archive as the server writes them -- until every one is analysed) and
quiet again. Prints ack and
fan-out p50 / p99 (client side) per phase, how many games were analysed during the busy phase,
the analysis worker's CPU, and the ratio of busy to quiet ack p99 (the target: at most 1.2).
The load client runs on the same machine as the servers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import random
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

import engine
from bench.load import Client, Server, Stats, Table, pct, setup_table
from engine.bots import choose_move
from server.db import migrate
from server.pg_embedded import PgProcess
from server.redis_embedded import RedisProcess

INSERT_GAME = """
INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, sides, winner_side,
                   end_reason, scores, hands, private, created_at, ended_at, transcript)
VALUES ($1, 'bench', '"all-fives"', 'all-fives', 2, '{a,b}', '{NULL,NULL}', '[[0],[1]]', $2,
        'game_end', $3, $4, false, now(), now(), $5)
"""


def played(seed: int) -> dict[str, Any]:
    """A whole all-fives game, greedy against random."""
    rng = random.Random(seed)
    state = engine.new_game("all-fives", 2, seed)
    while not state.table.game_over:
        seat = state.turn
        if seat is None:
            state = engine.deal_next(state)[0]
            continue
        level = "greedy" if seat == 0 else "random"
        move = choose_move(level, engine.view(state, seat), rng.randrange(1 << 30))
        state = engine.apply_until_hand_end(state, seat, move)[0]
    return engine.to_transcript(state)


async def queue_games(db_url: str, count: int, tag: str) -> list[str]:
    """Archive `count` games; the archive's transaction queues each for analysis."""
    conn = await asyncpg.connect(db_url)
    ids = []
    try:
        for n in range(count):
            transcript = played(n)
            result = engine.replay(transcript)
            scores = result["rounds"][-1]["totals"]
            game_id = f"bench{tag}{n:03d}"
            async with conn.transaction():
                await conn.execute(INSERT_GAME, game_id, result["winner"], scores,
                                   len(transcript["rounds"]),
                                   gzip.compress(json.dumps(transcript).encode()))
                await conn.execute(
                    "INSERT INTO game_analysis (game_id, queued_at) VALUES ($1, now())", game_id)
            ids.append(game_id)
    finally:
        await conn.close()
    return ids


async def analysed(db_url: str, ids: list[str]) -> tuple[int, int]:
    """How many of `ids` are analysed, and the CPU ms they took."""
    conn = await asyncpg.connect(db_url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) AS n, coalesce(sum(cpu_ms), 0) AS cpu FROM game_analysis "
            "WHERE game_id = ANY($1::text[]) AND status = 'done'", ids)
        return int(row["n"]), int(row["cpu"])
    finally:
        await conn.close()


async def phase(tables: list[Table], seconds: float, stats: Stats | None = None) -> Stats:
    """The tables played for `seconds`, their figures added to `stats` (or new ones)."""
    stats = stats or Stats()
    for table in tables:
        table.stats = stats
    deadline = time.perf_counter() + seconds
    await asyncio.gather(*(t.play(1.0, deadline) for t in tables))
    return stats


def line(name: str, stats: Stats) -> str:
    return (f"{name:>6}: {stats.moves} moves, ack p50 {pct(stats.ack_ms, 0.5):.2f} ms "
            f"p99 {pct(stats.ack_ms, 0.99):.2f} ms; fan-out p50 {pct(stats.fanout_ms, 0.5):.2f} "
            f"ms p99 {pct(stats.fanout_ms, 0.99):.2f} ms; errors {stats.errors}")


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-analysis-bench-"))
    os.chmod(tmp, 0o755)  # PostgreSQL runs as its own user when this runs as root
    redis = RedisProcess(tmp / "redis", appendfsync="everysec")
    pg = PgProcess(tmp / "postgres")
    server: Server | None = None
    try:
        redis_url = await asyncio.to_thread(redis.start)
        db_url = await asyncio.to_thread(pg.start)
        conn = await asyncpg.connect(db_url)
        try:
            await migrate(conn)
        finally:
            await conn.close()
        server = Server(redis_url, {"DATABASE_URL": db_url, "RATE": "50/100",
                                    "ANALYSIS_WORKERS": "1"}, tmp / "server.log")
        await server.wait_healthy()
        shape = argparse.Namespace(preset="all-fives", target=1000, players=2)
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            made = [await setup_table(http, shape) for _ in range(args.tables)]
        tables = []
        for table_id, tokens in made:
            table = Table(table_id, Stats())
            table.clients = [Client(table, token) for token in [*tokens, None]]
            tables.append(table)
        clients = [c for t in tables for c in t.clients]
        for client in clients:
            await client.connect(server.ws_url)
        readers = [asyncio.create_task(c.read()) for c in clients]
        await asyncio.gather(*(c.ready.wait() for c in clients))
        print(f"{args.tables} tables, {len(clients)} sockets; {args.seconds:.0f} s per phase; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        await phase(tables, 15.0)  # warming up: not counted
        quiet = await phase(tables, args.seconds)
        print(line("quiet", quiet), flush=True)
        ids = await queue_games(db_url, args.games, "a")
        started = time.perf_counter()
        busy = Stats()
        done = cpu_ms = 0
        while done < args.games and time.perf_counter() - started < args.busy_max_s:
            await phase(tables, 10.0, busy)  # until every queued game is analysed
            done, cpu_ms = await analysed(db_url, ids)
        print(line("busy", busy), flush=True)
        took = time.perf_counter() - started
        print(f"        {done} of {args.games} games analysed in {took:.0f} s "
              f"({cpu_ms / max(1, done):.0f} ms of CPU each)", flush=True)
        again = await phase(tables, args.seconds)
        print(line("quiet", again), flush=True)
        for name, q in (("p50", 0.5), ("p99", 0.99)):
            busy_q = pct(busy.ack_ms, q)
            before, after = pct(quiet.ack_ms, q), pct(again.ack_ms, q)
            print(f"ack {name} busy / quiet: {busy_q / before:.2f} (first quiet phase), "
                  f"{busy_q / after:.2f} (second), {2 * busy_q / (before + after):.2f} (mean)")
        print(f"(target: p99 ratio <= 1.2); load average {os.getloadavg()[0]:.2f}")
        for client in clients:
            with contextlib.suppress(Exception):
                await client.socket.close()
        for reader in readers:
            reader.cancel()
    finally:
        if server is not None:
            server.stop()
        await asyncio.to_thread(pg.stop)
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tables", type=int, default=100)
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--seconds", type=float, default=60.0, help="length of a quiet phase")
    p.add_argument("--busy-max-s", type=float, default=600.0,
                   help="the busy phase lasts until every game is analysed, at most this")

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(1)

    signal.signal(signal.SIGTERM, stop)
    asyncio.run(run(p.parse_args(argv)))


if __name__ == "__main__":
    main()
