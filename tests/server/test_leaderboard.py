"""Leaderboards (server/leaderboard.py) on a real PostgreSQL: one empty, migrated database per
test. The boards are a snapshot: every test refreshes it (`refresh`) before reading."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]  # ships no type hints

from server import leaderboard
from server.db import Postgres
from server.leaderboard import rank_of, refresh, top


async def player(conn: asyncpg.Connection, name: str) -> int:
    return int(await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ($1, 'x') RETURNING id", name))


async def rated(conn: asyncpg.Connection, name: str, rating: int, games: int = 20,
                days_ago: float = 1.0, family: str = "fives") -> int:
    """A new player with one rating; its id."""
    player_id = await player(conn, name)
    await rate(conn, player_id, rating, games, days_ago, family)
    return player_id


async def rate(conn: asyncpg.Connection, player_id: int, rating: int, games: int = 20,
               days_ago: float = 1.0, family: str = "fives") -> None:
    await conn.execute(
        "INSERT INTO ratings (player_id, family, mu, sigma, rating, games, last_game_at) "
        "VALUES ($1, $2, 25, 3, $3, $4, $5)",
        player_id, family, rating, games, datetime.now(UTC) - timedelta(days=days_ago))


async def test_the_board_is_ordered_by_rating_then_player_id(conn: asyncpg.Connection) -> None:
    await rated(conn, "mid", 1500)
    await rated(conn, "best", 1800)
    tie_a = await rated(conn, "tie_a", 1600)
    tie_b = await rated(conn, "tie_b", 1600)
    await rated(conn, "low", 900, games=2000)
    assert tie_a < tie_b
    await refresh(conn)
    assert await top(conn, "fives") == [
        {"rank": 1, "name": "best", "rating": 1800, "games": 20},
        {"rank": 2, "name": "tie_a", "rating": 1600, "games": 20},
        {"rank": 3, "name": "tie_b", "rating": 1600, "games": 20},
        {"rank": 4, "name": "mid", "rating": 1500, "games": 20},
        {"rank": 5, "name": "low", "rating": 900, "games": 2000},
    ]
    assert [row["name"] for row in await top(conn, "fives", limit=2)] == ["best", "tie_a"]
    assert await rank_of(conn, "fives", tie_a) == {"rank": 2, "rating": 1600, "games": 20}
    assert await rank_of(conn, "fives", tie_b) == {"rank": 3, "rating": 1600, "games": 20}


async def test_provisional_players_are_not_on_the_board(conn: asyncpg.Connection) -> None:
    nine = await rated(conn, "nine", 2000, games=9)
    ten = await rated(conn, "ten", 1400, games=10)
    await refresh(conn)
    assert [row["name"] for row in await top(conn, "fives")] == ["ten"]
    assert await rank_of(conn, "fives", nine) is None
    assert await rank_of(conn, "fives", ten) == {"rank": 1, "rating": 1400, "games": 10}
    # a tenth game puts "nine" on the board at the next refresh
    await conn.execute("UPDATE ratings SET games = 10 WHERE player_id = $1", nine)
    assert await rank_of(conn, "fives", nine) is None
    await refresh(conn)
    assert [row["name"] for row in await top(conn, "fives")] == ["nine", "ten"]
    assert await rank_of(conn, "fives", ten) == {"rank": 2, "rating": 1400, "games": 10}


async def test_players_inactive_for_30_days_are_not_on_the_board(
        conn: asyncpg.Connection) -> None:
    recent = await rated(conn, "recent", 1500, days_ago=29)
    gone = await rated(conn, "gone", 1700, days_ago=31)
    today = await rated(conn, "today", 1400, days_ago=0)
    await refresh(conn)
    assert [row["name"] for row in await top(conn, "fives")] == ["recent", "today"]
    assert await rank_of(conn, "fives", gone) is None
    assert await rank_of(conn, "fives", today) == {"rank": 2, "rating": 1400, "games": 20}
    assert await rank_of(conn, "fives", recent) == {"rank": 1, "rating": 1500, "games": 20}
    # a game played again brings "gone" back at the next refresh
    await conn.execute("UPDATE ratings SET last_game_at = now() WHERE player_id = $1", gone)
    await refresh(conn)
    assert [row["name"] for row in await top(conn, "fives")] == ["gone", "recent", "today"]
    assert (await rank_of(conn, "fives", today) or {})["rank"] == 3


async def test_the_view_applies_the_documented_board_rules() -> None:
    text = (Path(leaderboard.__file__).parent / "migrations" / "0004_boards.sql").read_text()
    assert f"games >= {leaderboard.MIN_GAMES} " in text
    assert f"interval '{leaderboard.ACTIVE_DAYS} days'" in text


async def test_each_family_has_its_own_board(conn: asyncpg.Connection) -> None:
    both = await rated(conn, "both", 1500)
    await rate(conn, both, 1900, family="bergen")
    other = await rated(conn, "other", 1700, family="bergen")
    only_fives = await rated(conn, "fiver", 1600)
    await refresh(conn)
    assert [row["name"] for row in await top(conn, "fives")] == ["fiver", "both"]
    assert [(row["name"], row["rating"]) for row in await top(conn, "bergen")] == [
        ("both", 1900), ("other", 1700)]
    assert await rank_of(conn, "bergen", both) == {"rank": 1, "rating": 1900, "games": 20}
    assert await rank_of(conn, "fives", both) == {"rank": 2, "rating": 1500, "games": 20}
    assert await rank_of(conn, "bergen", only_fives) is None
    assert await rank_of(conn, "fives", other) is None
    assert await top(conn, "block") == []


async def test_unknown_players_have_no_rank(conn: asyncpg.Connection) -> None:
    unrated = await player(conn, "unrated")
    await refresh(conn)
    assert await rank_of(conn, "fives", unrated) is None
    assert await rank_of(conn, "fives", 987654321) is None


async def test_rank_of_agrees_with_top_for_every_player(conn: asyncpg.Connection) -> None:
    rng = random.Random(7)
    ids = []
    for i in range(40):
        games = rng.choice([3, 9, 10, 11, 50, 400])
        days = rng.choice([0.5, 5, 29, 31, 90])
        rating = rng.choice([1300, 1450, 1500, 1500, 1500, 1620, 1700, 1880])  # many ties
        ids.append(await rated(conn, f"p{i:02d}", rating, games=games, days_ago=days))
    names = {f"p{i:02d}": player_id for i, player_id in enumerate(ids)}
    await refresh(conn)
    board = await top(conn, "fives")
    assert 15 <= len(board) <= 35
    assert [row["rank"] for row in board] == list(range(1, len(board) + 1))
    keys = [(-row["rating"], names[row["name"]]) for row in board]
    assert keys == sorted(keys)
    on_board = {names[row["name"]]: row for row in board}
    for player_id in ids:
        found = await rank_of(conn, "fives", player_id)
        if player_id in on_board:
            row = on_board[player_id]
            assert found == {"rank": row["rank"], "rating": row["rating"], "games": row["games"]}
        else:
            assert found is None
    # a limited board is the top of the full one
    assert await top(conn, "fives", limit=5) == board[:5]


async def test_both_queries_are_one_index_read_of_the_view(conn: asyncpg.Connection) -> None:
    for i in range(50):
        await rated(conn, f"q{i:02d}", 1000 + 10 * i)
    await refresh(conn)
    await conn.execute("ANALYZE boards")
    await conn.execute("SET enable_seqscan = off")
    await conn.execute("SET enable_bitmapscan = off")
    for sql, args, index in ((leaderboard._TOP, ("fives", 100), "boards_rank"),
                             (leaderboard._RANK, ("fives", 1), "boards_player")):
        plan = "\n".join(row[0] for row in await conn.fetch("EXPLAIN " + sql, *args))
        assert f"using {index} on boards" in plan, plan


async def test_a_view_never_populated_is_refreshed_plainly(conn: asyncpg.Connection) -> None:
    ann = await rated(conn, "ann", 1500)
    await conn.execute("REFRESH MATERIALIZED VIEW boards WITH NO DATA")
    await refresh(conn)
    assert await rank_of(conn, "fives", ann) == {"rank": 1, "rating": 1500, "games": 20}
    await refresh(conn)  # populated now: concurrently
    assert [row["name"] for row in await top(conn, "fives")] == ["ann"]


async def test_run_refresh_refreshes_in_one_process_at_a_time(
        conn: asyncpg.Connection, database_url: str) -> None:
    ann = await rated(conn, "ann", 1500)
    postgres = Postgres(database_url)
    await postgres.start()
    stop = asyncio.Event()
    try:
        assert await leaderboard.refresh_once(postgres)
        # another process holds the lock: this one skips its turn
        await conn.execute("SELECT pg_advisory_lock($1)", leaderboard.REFRESH_LOCK)
        await rated(conn, "bob", 1600)
        assert not await leaderboard.refresh_once(postgres)
        assert await rank_of(conn, "fives", ann) == {"rank": 1, "rating": 1500, "games": 20}
        await conn.execute("SELECT pg_advisory_unlock($1)", leaderboard.REFRESH_LOCK)
        task = asyncio.create_task(leaderboard.run_refresh(postgres, stop, 0.05))
        for _ in range(100):
            if (await rank_of(conn, "fives", ann) or {}).get("rank") == 2:
                break
            await asyncio.sleep(0.05)
        assert await rank_of(conn, "fives", ann) == {"rank": 2, "rating": 1500, "games": 20}
        stop.set()
        await asyncio.wait_for(task, 2.0)
    finally:
        stop.set()
        await postgres.close()


async def test_run_refresh_without_postgres_waits_and_stops() -> None:
    postgres = Postgres(None)  # pool None: every turn is skipped
    stop = asyncio.Event()
    task = asyncio.create_task(leaderboard.run_refresh(postgres, stop, 0.01))
    await asyncio.sleep(0.05)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 1.0)


async def test_run_refresh_survives_a_failing_refresh(
        conn: asyncpg.Connection, database_url: str) -> None:
    postgres = Postgres(database_url)
    await postgres.start()
    stop = asyncio.Event()
    try:
        await conn.execute("ALTER MATERIALIZED VIEW boards RENAME TO boards_gone")
        task = asyncio.create_task(leaderboard.run_refresh(postgres, stop, 0.05))
        await asyncio.sleep(0.2)  # each turn fails (no such view), logged
        assert not task.done()
        await conn.execute("ALTER MATERIALIZED VIEW boards_gone RENAME TO boards")
        ann = await rated(conn, "ann", 1500)
        for _ in range(100):
            if await rank_of(conn, "fives", ann) is not None:
                break
            await asyncio.sleep(0.05)
        assert await rank_of(conn, "fives", ann) == {"rank": 1, "rating": 1500, "games": 20}
        stop.set()
        await asyncio.wait_for(task, 2.0)
    finally:
        stop.set()
        await postgres.close()


async def test_a_refresh_is_skipped_while_nothing_changed(
        conn: asyncpg.Connection, database_url: str) -> None:
    await rated(conn, "ann", 1500)
    postgres = Postgres(database_url)
    await postgres.start()
    try:
        mark = await leaderboard.refresh_once(postgres)
        assert mark is not None
        assert await leaderboard.refresh_once(postgres, mark) is None  # no rated game since
        bob = await rated(conn, "bob", 1600)
        assert await leaderboard.refresh_once(postgres, mark) is not None
        assert await rank_of(conn, "fives", bob) == {"rank": 1, "rating": 1600, "games": 20}
    finally:
        await postgres.close()
