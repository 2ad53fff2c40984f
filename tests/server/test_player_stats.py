"""Profile stats kept up to date at archive time (server/player_stats.py) on a real
PostgreSQL: games counted in whatever order they are archived (a game archived late recounts
the streaks), concurrent archives of one player's games, two seats of one game, and the
account's deletion -- always what the old per-read aggregates (tests/support/old_stats.py)
say of the same game_players rows."""

from __future__ import annotations

import asyncio
import datetime
import random
from typing import Any

import asyncpg
import pytest

from server import player_stats
from server.archive import _INSERT_SEAT, counted_seats
from tests.support.old_stats import old_stats

T0 = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
FIELDS = ("hands", "hands_won", "won_domino", "won_block", "play_points", "bonus_points",
          "best_play", "big_plays")


async def players(conn: asyncpg.Connection, *names: str) -> list[int]:
    return [await conn.fetchval("INSERT INTO players (username, password_hash) "
                                "VALUES ($1, 'h') RETURNING id", name) for name in names]


Seat = tuple[int | None, str, dict[str, int]]  # (account, outcome, stats)


async def archive_game(conn: asyncpg.Connection, game_id: str, ended: datetime.datetime,
                       family: str, preset: str, seats: list[Seat], *,
                       private: bool = False) -> None:
    """What server.archive writes of a game, in one transaction: the game, its seats (in
    ``_INSERT_SEAT``'s order) and the stats of its account seats."""
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, sides, "
            "end_reason, scores, hands, private, created_at, ended_at, transcript, family) "
            "VALUES ($1, 'g', '\"all-fives\"', $2, $3, $4, $5, '[]', 'game_end', '{}', 1, $6, "
            "$7, $7, '\\x00', $8)", game_id, preset, len(seats), ["n"] * len(seats),
            [None] * len(seats), private, ended, family)
        rows = [[game_id, seat, player, None, player is not None, None, seat, family, preset,
                 False, outcome, ended, *(numbers[f] for f in FIELDS), private]
                for seat, (player, outcome, numbers) in enumerate(seats)]
        await conn.executemany(_INSERT_SEAT, rows)
        await player_stats.add_games(conn, counted_seats(rows))


def random_numbers(rng: random.Random) -> dict[str, int]:
    hands = rng.randint(1, 9)
    won_domino = rng.randint(0, hands // 2)
    won_block = rng.randint(0, hands - won_domino)
    best = rng.choice([0, 5, 10, 25, 30, 45])
    return {"hands": hands, "hands_won": won_domino + won_block, "won_domino": won_domino,
            "won_block": won_block, "play_points": best * rng.randint(1, 4),
            "bonus_points": rng.randint(0, 60), "best_play": best, "big_plays": int(best >= 30)}


def random_games(rng: random.Random, ids: list[int], count: int) -> list[dict[str, Any]]:
    """Games of 2 seats (accounts from ``ids`` or guests, never one account twice), ending at
    whole minutes (some at the same instant) in two families and three presets."""
    games = []
    for n in range(count):
        holders = rng.sample([*ids, None, None], 2)
        outcome = rng.choice(["win", "loss", "draw"])
        other = {"win": "loss", "loss": "win", "draw": "draw"}[outcome]
        family = rng.choice(["fives", "fives", "block"])
        preset = rng.choice({"fives": ["all-fives", "muggins"], "block": ["block"]}[family])
        games.append({
            "game_id": f"g{rng.randrange(10 ** 6):06d}x{n}",
            "ended": T0 + datetime.timedelta(minutes=rng.randrange(count // 2)),
            "family": family, "preset": preset, "private": rng.random() < 0.2,
            "seats": [(holders[0], outcome, random_numbers(rng)),
                      (holders[1], other, random_numbers(rng))]})
    return games


async def test_games_archived_in_any_order_give_the_old_stats(
        conn: asyncpg.Connection) -> None:
    rng = random.Random(8)
    ids = await players(conn, "ann", "bob", "cat")
    games = random_games(rng, ids, 60)
    rng.shuffle(games)  # archived in no particular order: late ones recount the streaks
    for game in games:
        await archive_game(conn, game["game_id"], game["ended"], game["family"],
                           game["preset"], game["seats"], private=game["private"])
        for player in ids:
            assert await player_stats.stats(conn, player) == await old_stats(conn, player)
    found = await player_stats.stats(conn, ids[0])
    assert found and all(f["games"] > 0 for f in found.values())
    every = [await player_stats.stats(conn, player) for player in ids]
    assert any(f["longest_streak"] > 1 for shown in every for f in shown.values())
    # private games are counted in stats but stay out of the listed index
    assert await conn.fetchval("SELECT count(*) FROM game_players WHERE private") == sum(
        2 for game in games if game["private"])


async def test_games_archived_without_being_counted_are_counted_by_the_next_one(
        conn: asyncpg.Connection) -> None:
    """During a rolling upgrade a process of an earlier version archives games without these
    tables: its game_players rows are not counted. The next game archived for that player
    notices (the rows and the count disagree) and recounts, so nothing stays missing."""
    rng = random.Random(3)
    ids = await players(conn, "ann", "bob", "cat")
    games = random_games(rng, ids, 12)
    for game in games[:4]:
        await archive_game(conn, game["game_id"], game["ended"], game["family"],
                           game["preset"], game["seats"])
    for game in games[4:8]:  # as the earlier version writes them: seats only
        rows = [[game["game_id"], seat, player, None, player is not None, None, seat,
                 game["family"], game["preset"], False, outcome, game["ended"],
                 *(numbers[f] for f in FIELDS), False]
                for seat, (player, outcome, numbers) in enumerate(game["seats"])]
        await conn.execute(
            "INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, sides, "
            "end_reason, scores, hands, private, created_at, ended_at, transcript, family) "
            "VALUES ($1, 'g', '\"all-fives\"', $2, 2, $3, $4, '[]', 'game_end', '{}', 1, false, "
            "$5, $5, '\\x00', $6)", game["game_id"], game["preset"], ["n", "n"], [None, None],
            game["ended"], game["family"])
        await conn.executemany(_INSERT_SEAT, rows)
    for game in games[8:]:
        await archive_game(conn, game["game_id"], game["ended"], game["family"],
                           game["preset"], game["seats"])
    for player in ids:
        if any(seat[0] == player for game in games[8:] for seat in game["seats"]):
            assert await player_stats.stats(conn, player) == await old_stats(conn, player)


async def test_streaks_run_in_order_of_the_games_end(conn: asyncpg.Connection) -> None:
    ann, bob = await players(conn, "ann", "bob")
    numbers = dict.fromkeys(FIELDS, 1)

    async def play(minute: int, outcome: str) -> None:
        other = {"win": "loss", "loss": "win", "draw": "draw"}[outcome]
        await archive_game(conn, f"m{minute:03d}", T0 + datetime.timedelta(minutes=minute),
                           "fives", "all-fives", [(ann, outcome, numbers), (bob, other, numbers)])

    for minute, outcome in ((1, "win"), (2, "win"), (3, "loss"), (5, "win"), (6, "win")):
        await play(minute, outcome)
    shown = (await player_stats.stats(conn, ann))["fives"]
    assert (shown["longest_streak"], shown["current_streak"]) == (2, 2)
    await play(4, "win")  # archived late: it joins the run after the loss
    shown = (await player_stats.stats(conn, ann))["fives"]
    assert (shown["games"], shown["wins"], shown["longest_streak"],
            shown["current_streak"]) == (6, 5, 3, 3)
    await play(0, "draw")  # older than everything: a draw before the first win changes nothing
    shown = (await player_stats.stats(conn, ann))["fives"]
    assert (shown["games"], shown["draws"], shown["longest_streak"],
            shown["current_streak"]) == (7, 1, 3, 3)
    await play(7, "draw")  # a draw ends the current run
    shown = (await player_stats.stats(conn, ann))["fives"]
    assert (shown["longest_streak"], shown["current_streak"]) == (3, 0)
    bobs = (await player_stats.stats(conn, bob))["fives"]
    assert (bobs["wins"], bobs["losses"], bobs["draws"], bobs["longest_streak"]) == (1, 5, 2, 1)
    for player in (ann, bob):
        assert await player_stats.stats(conn, player) == await old_stats(conn, player)


@pytest.mark.parametrize("first", ["older", "newer"])
async def test_concurrent_archives_of_one_players_games(database_url: str,
                                                       conn: asyncpg.Connection,
                                                       first: str) -> None:
    """Two processes archive two games of ann at once: the second waits for the first's lock
    and then counts on top of it -- whether its game is newer (counted on) or older (the
    streaks recounted, from a read that sees the first's game)."""
    ann, bob, cat = await players(conn, "ann", "bob", "cat")
    numbers = dict.fromkeys(FIELDS, 2)
    older = ("a0", T0, [(ann, "win", numbers), (bob, "loss", numbers)])
    newer = ("a1", T0 + datetime.timedelta(minutes=1),
             [(cat, "loss", numbers), (ann, "win", numbers)])
    one, two = (older, newer) if first == "older" else (newer, older)
    holder = await asyncpg.connect(database_url)
    waiter = await asyncpg.connect(database_url)
    try:
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute(
            "INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, "
            "sides, end_reason, scores, hands, private, created_at, ended_at, transcript, "
            "family) VALUES ($1, 'g', '\"all-fives\"', 'all-fives', 2, '{a,b}', '{NULL,NULL}', "
            "'[]', 'game_end', '{}', 1, false, $2, $2, '\\x00', 'fives')", one[0], one[1])
        rows = [[one[0], seat, player, None, True, None, seat, "fives", "all-fives", False,
                 outcome, one[1], *(numbers[f] for f in FIELDS), False]
                for seat, (player, outcome, numbers) in enumerate(one[2])]
        await holder.executemany(_INSERT_SEAT, rows)
        await player_stats.add_games(holder, counted_seats(rows))  # holds ann's row
        second = asyncio.create_task(archive_game(waiter, two[0], two[1], "fives", "all-fives",
                                                  two[2]))
        await asyncio.sleep(0.3)
        assert not second.done()  # waiting for ann's row
        await transaction.commit()
        await asyncio.wait_for(second, 10)
    finally:
        await holder.close()
        await waiter.close()
    shown = (await player_stats.stats(conn, ann))["fives"]
    assert (shown["games"], shown["wins"], shown["longest_streak"],
            shown["current_streak"], shown["hands"]) == (2, 2, 2, 2, 4)
    for player in (ann, bob, cat):
        assert await player_stats.stats(conn, player) == await old_stats(conn, player)


async def test_two_seats_of_one_game_count_as_two_games_in_seat_order(
        conn: asyncpg.Connection) -> None:
    """A casual table lets one account take two seats: each seat counts, as it always did,
    and the streaks take the seats in order (seat 1's loss after seat 0's win)."""
    (dora,) = await players(conn, "dora")
    numbers = dict.fromkeys(FIELDS, 1)
    await archive_game(conn, "d1", T0, "fives", "all-fives",
                       [(dora, "win", numbers), (dora, "loss", numbers)])
    shown = (await player_stats.stats(conn, dora))["fives"]
    assert (shown["games"], shown["wins"], shown["losses"], shown["longest_streak"],
            shown["current_streak"]) == (2, 1, 1, 1, 0)
    await archive_game(conn, "d0", T0 - datetime.timedelta(minutes=1), "fives", "muggins",
                       [(None, "loss", numbers), (dora, "win", numbers)])  # archived late
    shown = (await player_stats.stats(conn, dora))["fives"]
    assert (shown["games"], shown["wins"], shown["longest_streak"],
            shown["current_streak"], shown["top_preset"]) == (3, 2, 2, 0, "all-fives")


async def test_recount_gives_a_new_account_its_claimed_games(conn: asyncpg.Connection) -> None:
    """Registration gives a guest's archived seats to the new account (server/accounts.py),
    then recounts its stats from them."""
    rng = random.Random(3)
    (ann,) = await players(conn, "ann")
    for game in random_games(rng, [ann], 20):
        await archive_game(conn, game["game_id"], game["ended"], game["family"],
                           game["preset"], game["seats"], private=game["private"])
    (newcomer,) = await players(conn, "newcomer")
    await conn.execute("UPDATE game_players SET player_id = $1 WHERE player_id = $2",
                       newcomer, ann)  # as if ann's seats had been a guest's
    assert await player_stats.stats(conn, newcomer) == {}
    async with conn.transaction():
        await player_stats.recount(conn, newcomer)
    assert await player_stats.stats(conn, newcomer) == await old_stats(conn, newcomer) != {}


async def test_a_deleted_accounts_stats_go_with_it(conn: asyncpg.Connection) -> None:
    ann, bob = await players(conn, "ann", "bob")
    numbers = dict.fromkeys(FIELDS, 1)
    await archive_game(conn, "x1", T0, "fives", "all-fives",
                       [(ann, "win", numbers), (bob, "loss", numbers)])
    await conn.execute("DELETE FROM players WHERE id = $1", ann)
    for table in ("player_stats", "player_presets"):
        assert await conn.fetchval(f"SELECT count(*) FROM {table} WHERE player_id = $1",
                                   ann) == 0, table
    assert (await player_stats.stats(conn, bob))["fives"]["losses"] == 1
    # a later game of the deleted account's seat (player_id NULL) counts for nobody
    await archive_game(conn, "x2", T0 + datetime.timedelta(minutes=1), "fives", "all-fives",
                       [(None, "win", numbers), (bob, "loss", numbers)])
    assert await player_stats.stats(conn, bob) == await old_stats(conn, bob)
