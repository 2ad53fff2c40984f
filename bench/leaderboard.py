"""Leaderboard queries stay fast with 100,000 rated players in a family.

    python -m bench.leaderboard [--players 100000] [--runs 500] [--churn 10000] [--explain]

A private PostgreSQL (tests/support/pg_server.py, fsync off), migrated. `--players` synthetic
players rated in the "fives" family (ratings spread like a real board; 5 % provisional, 5 %
inactive for over 30 days) plus a quarter as many in "threes", loaded with COPY, then VACUUM
ANALYZE, then the ``boards`` snapshot refreshed (`server.leaderboard.refresh`, timed). Then
`server.leaderboard.top` (the top 100) and `rank_of` (a random player of the family each time,
from the top to the bottom of the board) `--runs` times each, one after the other on one
connection; prints their p50 / p99 in ms. Then `--churn` ratings are updated (as rated games
do, without a VACUUM after them), the snapshot refreshed again (REFRESH ... CONCURRENTLY, as
the service does every LEADERBOARD_REFRESH_S; timed, `--refreshes` times) and both are
measured again. The target is p99 <= 20 ms; nothing is asserted. `--explain` prints EXPLAIN
(ANALYZE, BUFFERS) of both queries for the last player.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from bench.load import pct
from server import db, leaderboard
from server.ratings import display
from tests.support.pg_server import PgServer

FAMILY = "fives"
TARGET_P99_MS = 20.0


def rating_rows(ids: list[int], family: str, rng: random.Random, now: datetime) -> list[tuple[
        Any, ...]]:
    """One ``ratings`` row per player: mu around 25, 5 % provisional, 5 % inactive."""
    rows = []
    for player_id in ids:
        mu = rng.gauss(25.0, 4.0)
        games = rng.randint(1, 9) if rng.random() < 0.05 else rng.randint(10, 2000)
        days = rng.uniform(31, 400) if rng.random() < 0.05 else rng.uniform(0, 29)
        sigma = max(0.8, 8.33 * (10 / (10 + games)) ** 0.5)
        rows.append((player_id, family, mu, sigma, display(mu), games,
                     now - timedelta(days=days)))
    return rows


async def load(conn: Any, players: int, rng: random.Random) -> list[int]:
    """Insert the players and their ratings; the ids of the players rated in FAMILY."""
    started = time.perf_counter()
    await conn.copy_records_to_table(
        "players", columns=["username", "password_hash"],
        records=((f"p{i:07d}", "x") for i in range(players + players // 4)))
    ids = [row["id"] for row in await conn.fetch("SELECT id FROM players ORDER BY id")]
    now = datetime.now(UTC)
    board, others = ids[:players], ids[players:]
    await conn.copy_records_to_table(
        "ratings", columns=["player_id", "family", "mu", "sigma", "rating", "games",
                            "last_game_at"],
        records=rating_rows(board, FAMILY, rng, now) + rating_rows(others, "threes", rng, now))
    await conn.execute("VACUUM ANALYZE players")
    await conn.execute("VACUUM ANALYZE ratings")
    print(f"loaded {len(board)} + {len(others)} rated players in "
          f"{time.perf_counter() - started:.1f} s")
    return board


async def churn(conn: Any, ids: list[int], count: int, rng: random.Random) -> None:
    """``count`` rating updates of random players, as rated games make them (no VACUUM)."""
    started = time.perf_counter()
    changes = []
    for player_id in rng.sample(ids, min(count, len(ids))):
        mu = rng.gauss(25.0, 4.0)
        changes.append((player_id, mu, display(mu)))
    await conn.executemany(
        "UPDATE ratings SET mu = $2, rating = $3, games = games + 1, last_game_at = now() "
        "WHERE player_id = $1 AND family = 'fives'", changes)
    await conn.execute("ANALYZE ratings")
    print(f"updated {len(changes)} ratings in {time.perf_counter() - started:.1f} s "
          "(no VACUUM since)")


async def timed_refresh(conn: Any, label: str, times: int = 1) -> None:
    """Refresh the boards snapshot ``times`` times; prints how long each took."""
    took = []
    for _ in range(times):
        concurrently = await conn.fetchval(
            "SELECT ispopulated FROM pg_matviews WHERE matviewname = 'boards'")
        started = time.perf_counter()
        await leaderboard.refresh(conn)
        took.append((time.perf_counter() - started) * 1000)
    how = "CONCURRENTLY" if concurrently else "(plain)"
    print(f"{label:>10}  REFRESH {how} boards: "
          + ", ".join(f"{ms:.0f}" for ms in took) + " ms")
    await conn.execute("VACUUM ANALYZE boards")


async def measure(conn: Any, ids: list[int], runs: int, rng: random.Random, label: str) -> None:
    tops: list[float] = []
    ranks: list[float] = []
    by_rank: list[tuple[int, float]] = []  # (rank, ms) of the players on the board
    for _ in range(runs):
        started = time.perf_counter()
        board = await leaderboard.top(conn, FAMILY)
        tops.append((time.perf_counter() - started) * 1000)
        assert len(board) == 100
    for _ in range(runs):
        player = rng.choice(ids)
        started = time.perf_counter()
        found = await leaderboard.rank_of(conn, FAMILY, player)
        ranks.append((time.perf_counter() - started) * 1000)
        if found is not None:
            by_rank.append((found["rank"], ranks[-1]))
    for name, times in (("top 100", tops), ("rank_of", ranks)):
        p99 = pct(times, 0.99)
        verdict = "ok" if p99 <= TARGET_P99_MS else f"OVER {TARGET_P99_MS:.0f} ms"
        print(f"{label:>10}  {name:8} p50 {pct(times, 0.5):6.2f} ms  p99 {p99:6.2f} ms  "
              f"max {max(times):6.2f} ms  ({verdict})")
    print(f"{'':>10}  rank_of: {len(by_rank)} of {runs} players asked were on the board; "
          "p50 by rank:", end="")
    if by_rank:
        deepest = max(rank for rank, _ in by_rank)
        for low in range(0, 10, 3):
            band = [ms for rank, ms in by_rank
                    if low / 10 * deepest < rank <= (low + 1) / 10 * deepest]
            print(f"  {low * 10}-{low * 10 + 10} %: {pct(band, 0.5):.1f} ms", end="")
    print()


async def explain(conn: Any, ids: list[int]) -> None:
    last = await conn.fetchrow(
        "SELECT player_id FROM boards WHERE family = $1 ORDER BY rank DESC LIMIT 1", FAMILY)
    found = await leaderboard.rank_of(conn, FAMILY, last["player_id"])
    print(f"last player on the board: {found}")
    for title, sql, params in (
            ("top", leaderboard._TOP, (FAMILY, 100)),
            ("rank_of (last player)", leaderboard._RANK, (FAMILY, last["player_id"]))):
        plan = await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *params)
        print(f"--- {title}")
        for row in plan:
            print("   ", row[0])


async def run(players: int, runs: int, churn_count: int, show_plans: bool, seed: int,
              refreshes: int) -> None:
    rng = random.Random(seed)
    with PgServer() as server:
        conn = await asyncpg.connect(server.url)
        try:
            await db.migrate(conn)
            ids = await load(conn, players, rng)
            await timed_refresh(conn, "loaded")
            await measure(conn, ids, runs, rng, "vacuumed")
            if show_plans:
                await explain(conn, ids)
            if churn_count:
                await churn(conn, ids, churn_count, rng)
                await timed_refresh(conn, "churned", refreshes)
                await measure(conn, ids, runs, rng, "churned")
                if show_plans:
                    await explain(conn, ids)
        finally:
            await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--churn", type=int, default=10_000,
                        help="rating updates before the second measurement (0: none)")
    parser.add_argument("--refreshes", type=int, default=3,
                        help="REFRESH CONCURRENTLY runs timed after the churn")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    asyncio.run(run(args.players, args.runs, args.churn, args.explain, args.seed,
                    args.refreshes))
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
