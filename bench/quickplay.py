"""Quick-play benchmark: simulated players join the quick-play queues of two server processes
sharing one Redis and one PostgreSQL, poll as the browser client does, and are seated.

    python -m bench.quickplay                       # 1,000 players joining over 60 s
    python -m bench.quickplay --players 200 --seconds 20 --poll 2

A private Redis and PostgreSQL (tests/support/pg_server.py, fsync off), two ``python -m
server`` processes (bench.load.Server) with the default quick-play settings unless
``--window``, ``--widen``, ``--bot-after`` are given. The accounts (about 70 % of the players)
are written straight into PostgreSQL -- a player row, a rating in the fives family drawn from
normal(1500, 200), and a session whose cookie the simulated browser sends (no argon2 at all) --
the guests (the rest) are a random ``guest`` cookie. The players arrive uniformly over
``--seconds``, each on one of the two processes (alternately), into one of four queues of
all-fives: rated 2 players (accounts), rated 4 players (accounts), casual 2 players (accounts
and guests), casual 4 players (guests). The rated queues get a multiple of their size (a rated
queue never offers bots, so a remainder could never be seated). Each player then polls ``GET
/api/quickplay`` every ``--poll`` seconds until matched (then stops: its page would open the
table).

Prints how many were seated (and by bots), the wait (``POST`` -> the poll that read
``matched``; the poll interval bounds how soon it can be seen) median / p90 / max, overall and
per queue, and the rating spread per match (max - min of the people's ratings at a table,
bots left out) median / p90 / max per queue. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from bench.load import Server, pct
from server import db
from server.redis_embedded import RedisProcess
from server.settings import Settings
from tests.support.pg_server import PgServer

PRESET = "all-fives"
QUEUES = {  # name -> (players, rated)
    "rated-2": (2, True), "rated-4": (4, True), "casual-2": (2, False), "casual-4": (4, False),
}


@dataclass
class Player:
    number: int
    queue: str
    rating: int  # what the queue scores it by: an account's rating, 1500 for a guest
    session: str | None  # the session cookie of an account
    arrive_s: float
    server: int
    waited_s: float | None = None  # POST -> the poll that read "matched" (client side)
    matched_s: float | None = None  # joined -> matched as the server recorded them
    table: str | None = None
    errors: list[str] = field(default_factory=list)


def population(count: int, seconds: float, rng: random.Random) -> list[Player]:
    """The players: ~30 % rated 2p, ~16 % rated 4p (both accounts, a multiple of their size),
    ~30 % casual 2p (two thirds accounts), the rest casual 4p guests."""
    rated_2 = int(count * 0.30) // 2 * 2
    rated_4 = int(count * 0.16) // 4 * 4
    casual_2 = int(count * 0.30)
    casual_4 = count - rated_2 - rated_4 - casual_2
    kinds: list[tuple[str, bool]] = (
        [("rated-2", True)] * rated_2 + [("rated-4", True)] * rated_4
        + [("casual-2", i % 3 != 0) for i in range(casual_2)] + [("casual-4", False)] * casual_4)
    rng.shuffle(kinds)
    arrivals = sorted(rng.uniform(0, seconds) for _ in kinds)
    players = []
    for number, ((queue, is_account), arrive) in enumerate(zip(kinds, arrivals, strict=True)):
        rating = round(min(2400, max(700, rng.gauss(1500, 200)))) if is_account else 1500
        players.append(Player(number, queue, rating,
                              secrets.token_urlsafe(32) if is_account else None, arrive,
                              number % 2))
    return players


async def insert_accounts(url: str, players: list[Player]) -> None:
    """Each account straight into PostgreSQL: its row, its fives rating, its session."""
    conn = await asyncpg.connect(url)
    try:
        await db.migrate(conn)
        accounts = [p for p in players if p.session is not None]
        await conn.copy_records_to_table(
            "players", columns=["username", "password_hash"],
            records=[(f"qp{p.number:05d}", "x") for p in accounts])
        ids = {row["username"]: row["id"] for row in await conn.fetch(
            "SELECT id, username FROM players")}
        now = datetime.now(UTC)
        await conn.copy_records_to_table(
            "ratings", columns=["player_id", "family", "mu", "sigma", "rating", "games",
                                "last_game_at"],
            records=[(ids[f"qp{p.number:05d}"], "fives", 25 + (p.rating - 1500) / 48, 2.0,
                      p.rating, 30, now) for p in accounts])
        await conn.copy_records_to_table(
            "sessions", columns=["id_hash", "player_id", "expires_at"],
            records=[(hashlib.sha256(str(p.session).encode()).digest(),
                      ids[f"qp{p.number:05d}"], now + timedelta(days=1)) for p in accounts])
    finally:
        await conn.close()


async def play(player: Player, servers: list[Server], transports: list[Any], started: float,
               poll_s: float, give_up_s: float) -> None:
    """One simulated browser: wait for its arrival, queue, poll until matched. Its client
    shares its server's transport (connection pool): making an httpx client of its own costs
    an SSL context, tens of ms of CPU each, which would stall a thousand of them."""
    await asyncio.sleep(max(0.0, started + player.arrive_s - time.perf_counter()))
    server = servers[player.server]
    cookies = {"session": player.session} if player.session else \
        {"guest": secrets.token_urlsafe(32)}
    players, rated = QUEUES[player.queue]
    web = httpx.AsyncClient(base_url=server.url, cookies=cookies, timeout=30,
                            headers={"Origin": server.url},
                            transport=transports[player.server])
    body = {"preset": PRESET, "players": players, "rated": rated}
    joined = time.perf_counter()
    for _attempt in range(5):
        try:
            answer = await web.post("/api/quickplay", json=body)
        except httpx.HTTPError as exc:
            player.errors.append(f"post {exc!r}")
            await asyncio.sleep(0.5)
            continue
        if answer.status_code == 202:
            break
        player.errors.append(f"post {answer.status_code} {answer.text[:80]}")
        await asyncio.sleep(0.5)
    else:
        return
    deadline = joined + give_up_s
    while time.perf_counter() < deadline:
        await asyncio.sleep(poll_s)
        try:
            found = (await web.get("/api/quickplay")).json()
        except (httpx.HTTPError, ValueError) as exc:
            player.errors.append(f"poll {exc!r}")
            continue
        if found.get("status") == "matched":
            player.waited_s = time.perf_counter() - joined
            player.matched_s = (found["matched"] - found["since"]) / 1000
            player.table = found["table"]
            return
        if found.get("status") == "idle":  # dropped (should not happen): queue again
            player.errors.append("idle")
            with contextlib.suppress(httpx.HTTPError):
                await web.post("/api/quickplay", json=body)


async def loop_lag(found: list[float]) -> None:
    """How late a 0.1 s sleep wakes, every 0.1 s (the client's own CPU starvation)."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0.1)
        found.append(time.perf_counter() - before - 0.1)


def quantiles(values: list[float], unit: str, digits: int = 1) -> str:
    if not values:
        return "-"
    return (f"median {statistics.median(values):.{digits}f}{unit}  "
            f"p90 {pct(values, 0.9):.{digits}f}{unit}  max {max(values):.{digits}f}{unit}")


async def bot_seats(url: str, tables: set[str]) -> dict[str, int]:
    """Table id -> its bot seats (read from the lobby summary)."""
    found: dict[str, int] = {}
    async with httpx.AsyncClient(base_url=url, timeout=30) as web:
        for table in tables:
            summary = (await web.get(f"/api/tables/{table}")).json()
            found[table] = sum(1 for seat in summary.get("seats", []) if seat.get("bot"))
    return found


def report(players: list[Player], bots: dict[str, int], seconds: float, took_s: float) -> None:
    seated = [p for p in players if p.table is not None]
    print(f"\n{len(players)} players joined over {seconds:.0f} s across 2 processes; "
          f"{len(seated)} seated ({len(players) - len(seated)} not) in {took_s:.0f} s")
    errors = [e for p in players for e in p.errors]
    if errors:
        print(f"  {len(errors)} errors, e.g. {errors[:3]}")
    print(f"  wait (POST -> matched read): {quantiles([p.waited_s or 0 for p in seated], ' s')}")
    print(f"  wait (server: joined -> matched): "
          f"{quantiles([p.matched_s or 0 for p in seated], ' s')}")
    print(f"  {'queue':<9} {'players':>7} {'seated':>6} {'tables':>6} {'w/ bots':>7}  "
          "server wait  |  rating spread per table (people only)")
    for name in QUEUES:
        mine = [p for p in players if p.queue == name]
        done = [p for p in mine if p.table is not None]
        tables: dict[str, list[int]] = {}
        for p in done:
            tables.setdefault(str(p.table), []).append(p.rating)
        spreads = [float(max(r) - min(r)) for r in tables.values() if len(r) > 1]
        with_bots = sum(1 for t in tables if bots.get(t, 0))
        print(f"  {name:<9} {len(mine):>7} {len(done):>6} {len(tables):>6} {with_bots:>7}  "
              f"{quantiles([p.matched_s or 0 for p in done], ' s')}  |  "
              f"{quantiles(spreads, '', 0)}")


async def run(count: int, seconds: float, poll_s: float, env: dict[str, str], seed: int) -> None:
    rng = random.Random(seed)
    players = population(count, seconds, rng)
    logs = Path(tempfile.mkdtemp(prefix="bench-quickplay-"))
    redis = RedisProcess(logs / "redis")
    redis_url = await asyncio.to_thread(redis.start)
    pg = PgServer()
    servers: list[Server] = []
    try:
        pg_url = await asyncio.to_thread(pg.start)
        database = await asyncio.to_thread(pg.fresh_database)
        await insert_accounts(database, players)
        print(f"{sum(1 for p in players if p.session)} accounts, "
              f"{sum(1 for p in players if not p.session)} guests; "
              f"settings: window {env.get('QUICKPLAY_WINDOW', Settings().quickplay_window)}, "
              f"widen {env.get('QUICKPLAY_WIDEN', Settings().quickplay_widen)}/s, "
              f"bots after {env.get('QUICKPLAY_BOT_AFTER_S', Settings().quickplay_bot_after_s)} s"
              f"; polls every {poll_s} s (pg {pg_url.rsplit('@', 1)[-1]})")
        server_env = {"DATABASE_URL": database, "QUICKPLAY_RATE": "1000", **env}
        servers = [Server(redis_url, server_env, logs / f"server{i}.log") for i in range(2)]
        await asyncio.gather(*(s.wait_healthy() for s in servers))
        started = time.perf_counter()
        give_up = seconds + 120
        transports = [httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=400))
                      for _ in servers]
        tasks = [asyncio.create_task(play(p, servers, transports, started, poll_s, give_up))
                 for p in players]
        lag: list[float] = []
        watch = asyncio.create_task(loop_lag(lag))
        while not all(task.done() for task in tasks):
            await asyncio.wait(tasks, timeout=10)
            print(f"  {time.perf_counter() - started:5.0f} s: "
                  f"{sum(1 for p in players if p.table)} seated, "
                  f"{sum(1 for t in tasks if not t.done())} still going", flush=True)
        for task in tasks:
            if task.exception() is not None:
                print(f"  a player failed: {task.exception()!r}")
        took = time.perf_counter() - started
        watch.cancel()
        print(f"  the load client's own event loop lagged up to {max(lag, default=0):.1f} s "
              f"(median {statistics.median(lag) if lag else 0:.2f} s): polls and posts go out "
              "that much late on a busy machine")
        for transport in transports:
            await transport.aclose()
        tables = {str(p.table) for p in players if p.table is not None}
        report(players, await bot_seats(servers[0].url, tables), seconds, took)
        cpu = ", ".join(f"{s.cpu_s():.1f}" for s in servers)
        print(f"  server CPU seconds: {cpu}; logs in {logs}")
    finally:
        for server in servers:
            server.stop()
        await asyncio.to_thread(pg.close)
        await asyncio.to_thread(redis.stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls")
    parser.add_argument("--window", type=float, help="QUICKPLAY_WINDOW")
    parser.add_argument("--widen", type=float, help="QUICKPLAY_WIDEN")
    parser.add_argument("--bot-after", type=float, help="QUICKPLAY_BOT_AFTER_S")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    env = {name: str(value) for name, value in (
        ("QUICKPLAY_WINDOW", args.window), ("QUICKPLAY_WIDEN", args.widen),
        ("QUICKPLAY_BOT_AFTER_S", args.bot_after)) if value is not None}
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    started = time.monotonic()
    asyncio.run(run(args.players, args.seconds, args.poll, env, args.seed))
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
