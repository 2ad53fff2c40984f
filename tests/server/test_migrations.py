"""Schema migrations (server/db.py, server/migrations/) on a real PostgreSQL, one empty
database per test, and `python -m server migrate`."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

import engine
from server import player_stats
from server.db import Migration, load_migrations, migrate, migrate_url
from tests.server.test_stats import played
from tests.support.old_stats import old_stats
from tests.support.stats_oracle import FIELDS, recompute

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(database_url)
    try:
        yield connection
    finally:
        await connection.close()


def test_the_migrations_are_numbered_in_order() -> None:
    found = load_migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert found[0].name == "players"


def test_badly_named_or_duplicate_migrations_are_refused(tmp_path: Path) -> None:
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0001_b.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="two migrations numbered 0001"):
        load_migrations(tmp_path)
    (tmp_path / "0001_b.sql").unlink()
    (tmp_path / "2_bad.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match=r"NNNN_name\.sql"):
        load_migrations(tmp_path)


async def test_migrations_apply_once(conn: asyncpg.Connection) -> None:
    versions = [m.version for m in load_migrations()]
    assert await migrate(conn) == versions
    assert await migrate(conn) == []
    rows = await conn.fetch("SELECT version, name FROM schema_migrations ORDER BY version")
    assert [(r["version"], r["name"]) for r in rows] == [
        (m.version, m.name) for m in load_migrations()]


async def test_two_concurrent_migrators_apply_each_migration_once(database_url: str) -> None:
    # A slow migration that fails if run twice (CREATE TABLE without IF NOT EXISTS).
    slow = [Migration(1, "slow", "SELECT pg_sleep(0.5); CREATE TABLE once (n int);"),
            Migration(2, "second", "INSERT INTO once VALUES (1);")]
    first = await asyncpg.connect(database_url)
    second = await asyncpg.connect(database_url)
    try:
        applied = await asyncio.gather(migrate(first, slow), migrate(second, slow))
        assert sorted(applied) == [[], [1, 2]]
        assert await first.fetchval("SELECT count(*) FROM once") == 1
        assert await first.fetchval("SELECT count(*) FROM schema_migrations") == 2
    finally:
        await first.close()
        await second.close()


async def test_a_failing_migration_leaves_nothing_behind(conn: asyncpg.Connection) -> None:
    broken = [Migration(1, "ok", "CREATE TABLE a (n int);"),
              Migration(2, "broken", "CREATE TABLE b (n int); SELECT no_such_function();")]
    with pytest.raises(asyncpg.UndefinedFunctionError):
        await migrate(conn, broken)
    assert await conn.fetchval("SELECT to_regclass('b')") is None  # its transaction rolled back
    assert await conn.fetchval("SELECT array_agg(version) FROM schema_migrations") == [1]
    # the lock was released: a fixed migration goes through later
    fixed = [broken[0], Migration(2, "fixed", "CREATE TABLE b (n int);")]
    assert await migrate(conn, fixed) == [2]


async def test_0001_players_and_sessions(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    player = await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ('Ada_1', 'h') RETURNING id")
    with pytest.raises(asyncpg.UniqueViolationError):  # unique without regard to case
        await conn.execute("INSERT INTO players (username, password_hash) VALUES ('ada_1', 'h')")
    for bad in ("ab", "x" * 21, "has space", "semi;colon"):
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute(
                "INSERT INTO players (username, password_hash) VALUES ($1, 'h')", bad)
    await conn.execute(
        "INSERT INTO sessions (id_hash, player_id, expires_at) "
        "VALUES ($1, $2, now() + interval '1 day')", b"\x01" * 32, player)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await conn.execute(
            "INSERT INTO sessions (id_hash, player_id, expires_at) VALUES ($1, -1, now())",
            b"\x02" * 32)
    await conn.execute("DELETE FROM players WHERE id = $1", player)
    assert await conn.fetchval("SELECT count(*) FROM sessions") == 0  # sessions go with it


async def _game(conn: asyncpg.Connection, game_id: str) -> None:
    await conn.execute(
        "INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, sides, "
        "end_reason, scores, hands, private, created_at, ended_at, transcript) VALUES "
        "($1, 'g', '\"all-fives\"', 'all-fives', 2, '{a,b}', '{NULL,NULL}', '[[0],[1]]', "
        "'game_end', '{150,20}', 3, false, now(), now(), '\\x00')", game_id)


async def test_0002_games(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    await _game(conn, "abcd")
    with pytest.raises(asyncpg.UniqueViolationError):  # one row per table id
        await _game(conn, "abcd")
    with pytest.raises(asyncpg.CheckViolationError):
        await conn.execute("UPDATE games SET players = 5 WHERE id = 'abcd'")


async def test_0003_ratings_and_seat_records(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    await _game(conn, "efgh")
    assert await conn.fetchval("SELECT rated FROM games WHERE id = 'efgh'") is False
    player = await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ('zoe', 'h') RETURNING id")
    seat = ("INSERT INTO game_players VALUES ('efgh', $1, $2, NULL, true, NULL, $1, 'fives', "
            "'all-fives', true, $3, now(), 3, 2, 1, 1, 40, 20, 15, 0)")
    await conn.execute(seat, 0, player, "win")
    with pytest.raises(asyncpg.CheckViolationError):  # an outcome is win, loss or draw
        await conn.execute(seat, 1, None, "won")
    await conn.execute(
        "INSERT INTO ratings VALUES ($1, 'fives', 27, 8, 1596, 1, now())", player)
    await conn.execute(
        "INSERT INTO rating_history VALUES ($1, 'fives', 'efgh', now(), 1596)", player)
    with pytest.raises(asyncpg.UniqueViolationError):  # one rating per player and family
        await conn.execute("INSERT INTO ratings VALUES ($1, 'fives', 25, 8, 1500, 0, now())",
                           player)
    await conn.execute("DELETE FROM players WHERE id = $1", player)
    # the seat's record stays, without its player; ratings and their history go with it
    assert await conn.fetchrow("SELECT player_id, account FROM game_players") == (None, True)
    assert await conn.fetchval("SELECT count(*) FROM ratings") == 0
    assert await conn.fetchval("SELECT count(*) FROM rating_history") == 0
    await conn.execute("DELETE FROM games WHERE id = 'efgh'")
    assert await conn.fetchval("SELECT count(*) FROM game_players") == 0


async def test_0004_boards(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    assert await conn.fetchval("SELECT ispopulated FROM pg_matviews WHERE matviewname = 'boards'")
    ids = {}
    for name, rating, games, days in (("a_1", 1500, 20, 1), ("b_2", 1700, 10, 29),
                                      ("c_3", 1500, 40, 0), ("d_4", 1900, 9, 1),
                                      ("e_5", 1800, 30, 31)):
        ids[name] = await conn.fetchval(
            "INSERT INTO players (username, password_hash) VALUES ($1, 'h') RETURNING id", name)
        await conn.execute(
            "INSERT INTO ratings (player_id, family, mu, sigma, rating, games, last_game_at) "
            "VALUES ($1, 'fives', 25, 3, $2, $3, now() - make_interval(days => $4))",
            ids[name], rating, games, days)
    assert await conn.fetchval("SELECT count(*) FROM boards") == 0  # a snapshot
    await conn.execute("REFRESH MATERIALIZED VIEW CONCURRENTLY boards")  # the unique index
    rows = await conn.fetch("SELECT player_id, rank FROM boards WHERE family = 'fives' "
                            "ORDER BY rank")
    assert [(r["player_id"], r["rank"]) for r in rows] == [
        (ids["b_2"], 1), (ids["a_1"], 2), (ids["c_3"], 3)]  # provisional, inactive: left out
    indexes = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'boards'")}
    assert "UNIQUE" in indexes["boards_player"] and "(family, player_id)" in indexes[
        "boards_player"]
    assert "(family, rank)" in indexes["boards_rank"]


async def test_migrate_url(database_url: str) -> None:
    assert await migrate_url(database_url) == [m.version for m in load_migrations()]
    assert await migrate_url(database_url) == []


def _migrate_command(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", "migrate"], cwd=REPO, capture_output=True, text=True,
        timeout=120, env={**os.environ, "LOG_LEVEL": "WARNING", **env},
    )


SHIPPED = (f"applied {len(load_migrations())} migration(s): "
           + ", ".join(f"{m.version:04d}" for m in load_migrations()))


async def test_python_m_server_migrate(database_url: str) -> None:
    first = await asyncio.to_thread(_migrate_command, {"DATABASE_URL": database_url})
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == SHIPPED
    again = await asyncio.to_thread(_migrate_command, {"DATABASE_URL": database_url})
    assert again.returncode == 0 and again.stdout.strip() == "applied 0 migration(s): none pending"
    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == len(
            load_migrations())
    finally:
        await conn.close()


def test_python_m_server_migrate_on_the_embedded_cluster(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    for parent in tmp_path.parents:  # pytest's temporary root is private to its user
        if parent == Path("/tmp"):
            break
        parent.chmod(parent.stat().st_mode | 0o111)
    result = _migrate_command({"DATABASE_URL": "", "DATA_DIR": str(tmp_path / "data")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == SHIPPED
    assert (tmp_path / "data" / "postgres" / "pgdata" / "PG_VERSION").exists()
    again = _migrate_command({"DATABASE_URL": "", "DATA_DIR": str(tmp_path / "data")})
    assert again.stdout.strip() == "applied 0 migration(s): none pending", again.stderr


async def test_0005_social(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    ann, bob, cat = [await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ($1, 'h') RETURNING id", name)
        for name in ("ann", "bob", "cat")]
    await conn.execute("INSERT INTO follows (follower, followee) VALUES ($1, $2), ($2, $1)",
                       ann, bob)
    with pytest.raises(asyncpg.UniqueViolationError):  # one follow per pair and direction
        await conn.execute("INSERT INTO follows (follower, followee) VALUES ($1, $2)", ann, bob)
    with pytest.raises(asyncpg.CheckViolationError):  # nobody follows or blocks themselves
        await conn.execute("INSERT INTO follows (follower, followee) VALUES ($1, $1)", ann)
    await conn.execute("INSERT INTO blocks (blocker, blocked) VALUES ($1, $2)", cat, ann)
    with pytest.raises(asyncpg.UniqueViolationError):
        await conn.execute("INSERT INTO blocks (blocker, blocked) VALUES ($1, $2)", cat, ann)
    with pytest.raises(asyncpg.CheckViolationError):
        await conn.execute("INSERT INTO blocks (blocker, blocked) VALUES ($1, $1)", cat)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await conn.execute("INSERT INTO follows (follower, followee) VALUES ($1, -1)", ann)
    first = await conn.fetchval("INSERT INTO messages (sender, recipient, body) "
                                "VALUES ($1, $2, 'hi') RETURNING id", ann, bob)
    second = await conn.fetchval("INSERT INTO messages (sender, recipient, body) "
                                 "VALUES ($1, $2, 'hello') RETURNING id", bob, ann)
    assert second > first  # ids grow: the order of a conversation
    for bad in ("", "x" * 1001):
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute("INSERT INTO messages (sender, recipient, body) "
                               "VALUES ($1, $2, $3)", ann, bob, bad)
    assert await conn.fetchval("SELECT read_at FROM messages WHERE id = $1", first) is None
    indexes = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages'")}
    assert "LEAST(sender, recipient), GREATEST(sender, recipient), id DESC" in indexes[
        "messages_pair"]
    assert "WHERE (read_at IS NULL)" in indexes["messages_unread"]
    # a deleted account takes its follows, blocks and messages with it, both ways
    await conn.execute("DELETE FROM players WHERE id = $1", ann)
    for table in ("follows", "blocks", "messages"):
        assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
    assert await conn.fetchval("SELECT count(*) FROM players") == 2


async def test_0006_seasons(conn: asyncpg.Connection) -> None:
    await migrate(conn)
    ann, bob = [await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ($1, 'h') RETURNING id", name)
        for name in ("s_ann", "s_bob")]
    row = "INSERT INTO season_scores VALUES ($1, 'fives', $2, $3, $4, $5, $6, now())"
    await conn.execute(row, "2026-12", ann, 7, 3, 3, 3)
    await conn.execute(row, "2026-12", bob, 2, 3, 1, 0)
    await conn.execute(row, "2026-11", ann, 1, 1, 0, 0)  # past seasons are rows like any other
    with pytest.raises(asyncpg.UniqueViolationError):  # one row per season, family and player
        await conn.execute(row, "2026-12", ann, 0, 0, 0, 0)
    for season, points, games, wins in (("2026-13", 0, 0, 0), ("26-12", 0, 0, 0),
                                        ("2026-10", -1, 0, 0), ("2026-10", 0, 1, 2)):
        with pytest.raises(asyncpg.CheckViolationError):
            await conn.execute(row, season, bob, points, games, wins, 0)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await conn.execute(row, "2026-10", -1, 0, 0, 0, 0)
    fresh = await conn.fetchrow(
        "INSERT INTO season_scores (season, family, player_id, updated_at) "
        "VALUES ('2026-10', 'threes', $1, now()) RETURNING points, games, wins, streak", bob)
    assert tuple(fresh) == (0, 0, 0, 0)
    indexes = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'season_scores'")}
    assert "(season, family, points DESC, wins DESC, games, player_id)" in indexes[
        "season_scores_board"]
    assert "(player_id)" in indexes["season_scores_player"]
    await conn.execute("DELETE FROM players WHERE id = $1", ann)  # its scores go with it
    assert await conn.fetchval("SELECT count(*) FROM season_scores WHERE player_id = $1",
                               ann) == 0
    assert await conn.fetchval("SELECT count(*) FROM season_scores") == 2


async def test_0007_analysis(conn: asyncpg.Connection) -> None:
    earlier = [m for m in load_migrations() if m.version < 7]
    await migrate(conn, earlier)
    await _game(conn, "old1")  # archived before the migration: queued by it
    await migrate(conn)
    row = await conn.fetchrow("SELECT * FROM game_analysis WHERE game_id = 'old1'")
    assert row is not None and row["status"] == "pending" and row["tries"] == 0
    assert row["analysis"] is None and row["lease_until"] is None
    with pytest.raises(asyncpg.CheckViolationError):  # done means an analysis is there
        await conn.execute("UPDATE game_analysis SET status = 'done' WHERE game_id = 'old1'")
    with pytest.raises(asyncpg.CheckViolationError):
        await conn.execute("UPDATE game_analysis SET status = 'later' WHERE game_id = 'old1'")
    with pytest.raises(asyncpg.ForeignKeyViolationError):  # only archived games
        await conn.execute("INSERT INTO game_analysis (game_id, queued_at) VALUES ('x', now())")
    await conn.execute("UPDATE game_analysis SET status = 'done', analysis = '\\x00' "
                       "WHERE game_id = 'old1'")
    indexes = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'game_analysis'")}
    assert "(queued_at DESC) WHERE (status = 'pending'::text)" in indexes[
        "game_analysis_pending"]
    await conn.execute("DELETE FROM games WHERE id = 'old1'")  # its analysis goes with it
    assert await conn.fetchval("SELECT count(*) FROM game_analysis") == 0


_OLD_SEAT = """INSERT INTO game_players (game_id, seat, player_id, guest, account, bot, side,
    family, preset, rated, outcome, ended_at, hands, hands_won, won_domino, won_block, play_points,
    bonus_points, best_play, big_plays)
VALUES ($1, $2, $3, $4, $5, NULL, $2, $6, $7, false, $8, $9, $10, $11, $12, $13, $14, $15, $16,
        $17)"""


async def test_0008_player_stats_backfills_the_archived_games(
        conn: asyncpg.Connection) -> None:
    """Games archived before 0008 (the seat rows the archive wrote then, with statistics
    from the transcripts) are counted by it: the stats read from player_stats are those of
    the independent oracle and of the aggregates the profile ran on each read before."""
    earlier = [m for m in load_migrations() if m.version < 8]
    await migrate(conn, earlier)
    ann, bob, gone = [await conn.fetchval(
        "INSERT INTO players (username, password_hash) VALUES ($1, 'h') RETURNING id", name)
        for name in ("ann", "bob", "gone")]
    rng = random.Random(0)
    presets = {"all-fives": "fives", "muggins": "fives", "block": "block"}
    minutes = rng.sample(range(1000), 24)  # the games end in no particular order
    expected: dict[int, dict[str, list[tuple[int, str, str, dict[str, int]]]]] = {
        ann: {}, bob: {}}
    for n, minute in enumerate(minutes):
        preset = list(presets)[n % 3]
        transcript = played(json.dumps(preset), 2, n)
        numbers = recompute(transcript)
        winner = engine.replay(transcript)["winner"]
        outcomes = ["draw" if winner is None else "win" if winner == seat else "loss"
                    for seat in (0, 1)]
        holders = [ann, rng.choice([bob, gone, None])]
        if n % 5 == 0:
            holders.reverse()
        private = n % 4 == 0
        ended = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC) + datetime.timedelta(
            minutes=minute)
        game_id = f"old{n:02d}"
        await conn.execute(
            "INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, "
            "sides, end_reason, scores, hands, private, created_at, ended_at, transcript, "
            "family) VALUES ($1, 'g', $2, $3, 2, '{a,b}', '{NULL,NULL}', '[[0],[1]]', "
            "'game_end', '{0,0}', 1, $4, $5, $5, '\\x00', $6)",
            game_id, json.dumps(preset), preset, private, ended, presets[preset])
        for seat, player in enumerate(holders):
            stats = numbers[seat]
            await conn.execute(
                _OLD_SEAT, game_id, seat, player, None if player else "guest-x",
                player is not None, presets[preset], preset, outcomes[seat], ended,
                *(stats[field] for field in FIELDS))
            if player in expected:
                expected[player].setdefault(presets[preset], []).append(
                    (minute, preset, outcomes[seat], stats))
    await conn.execute("DELETE FROM players WHERE id = $1", gone)  # its seats: player_id NULL
    assert (await migrate(conn))[0] == 8  # (and whatever migrations follow it)
    for player, families in expected.items():
        shown = await player_stats.stats(conn, player)
        assert shown == await old_stats(conn, player)
        assert set(shown) == set(families)
        for family, games in families.items():
            games.sort()
            outcomes = [outcome for _, _, outcome, _ in games]
            totals = {field: sum(stats[field] for *_, stats in games) for field in FIELDS}
            longest = run = 0
            for outcome in outcomes:
                run = run + 1 if outcome == "win" else 0
                longest = max(longest, run)
            counts = Counter(preset for _, preset, _, _ in games)
            top = min(counts, key=lambda preset: (-counts[preset], preset))
            assert shown[family] == {
                "games": len(games), "wins": outcomes.count("win"),
                "losses": outcomes.count("loss"), "draws": outcomes.count("draw"),
                "win_rate": round(outcomes.count("win") / len(games), 4),
                "hands": totals["hands"], "hands_won": totals["hands_won"],
                "won_domino": totals["won_domino"], "won_block": totals["won_block"],
                "play_points": totals["play_points"], "bonus_points": totals["bonus_points"],
                "points_per_hand": round((totals["play_points"] + totals["bonus_points"])
                                         / totals["hands"], 2) if totals["hands"] else 0.0,
                "best_play": max(stats["best_play"] for *_, stats in games),
                "big_plays": totals["big_plays"], "longest_streak": longest,
                "current_streak": run, "top_preset": top,
            }, (player, family)
    assert await conn.fetchval("SELECT count(*) FROM player_stats") == sum(
        len(families) for families in expected.values())  # nobody counts the deleted seats
    # each seat says whether its game is private, and the listed index holds no private game
    assert await conn.fetchval("SELECT count(*) FROM game_players gp JOIN games g "
                               "ON g.id = gp.game_id WHERE gp.private <> g.private") == 0
    assert await conn.fetchval("SELECT count(*) FROM game_players WHERE private") == 12
    indexes = {r["indexname"]: r["indexdef"] for r in await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'game_players'")}
    assert "(player_id, ended_at DESC, game_id) WHERE ((player_id IS NOT NULL) AND " \
        "(NOT private))" in indexes["game_players_listed"]
    await conn.execute("DELETE FROM players WHERE id = $1", ann)  # its stats go with it
    assert await conn.fetchval("SELECT count(*) FROM player_stats WHERE player_id = $1",
                               ann) == 0
    assert await conn.fetchval("SELECT count(*) FROM player_presets WHERE player_id = $1",
                               ann) == 0
