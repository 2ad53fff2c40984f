"""Seasons (docs/players.md "Seasons"): every rated game also scores in the current season.

A season is ``SEASON_MONTHS`` calendar months (UTC) starting in January -- 1 (the default):
monthly; 3: quarterly; any divisor of 12 -- named by its first month, ``"2026-12"``. A game
belongs to the season of its end. Each rated player of the game gets, in the game's rating
family (`season_points`): 2 points for a win, 1 for a draw, 0 for a loss, and 1 more for a win
when they have already won at least the last 2 rated games of the family in that season (their
``streak``: consecutive wins in the season, reset by a draw or a loss and by a new season).

The scores live in ``season_scores`` (server/migrations/0006_seasons.sql), written by the
archive in the transaction that rates the game (`score_game`), so a game counts once; past
seasons are never deleted. A board ranks by points, then more wins, then fewer games, then the
older account. The pure functions here need no database. Must not import the HTTP layer.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from server.db import Queries

SEASON_MONTHS = (1, 2, 3, 4, 6, 12)  # the lengths a season may have: divisors of a year
POINTS = {"win": 2, "draw": 1, "loss": 0}
STREAK_BONUS = 1  # for a win when the streak before it is at least STREAK_FROM
STREAK_FROM = 2
BOARD_SIZE = 100
PROFILE_RANKS = 10  # a past season's finish is on the profile when in this top
_SEASON = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")
_ORDER = "points DESC, wins DESC, games, player_id"


def check_months(months: int) -> int:
    if months not in SEASON_MONTHS:
        raise ValueError(f"SEASON_MONTHS must be one of {', '.join(map(str, SEASON_MONTHS))}")
    return months


def season_of(when: datetime.datetime, months: int = 1) -> str:
    """The season of a moment: its UTC year and the first month of its ``months``-month
    season counted from January ("2026-12" monthly; "2026-10" quarterly for December)."""
    check_months(months)
    utc = when.astimezone(datetime.UTC) if when.tzinfo is not None \
        else when.replace(tzinfo=datetime.UTC)
    first = (utc.month - 1) // months * months + 1
    return f"{utc.year:04d}-{first:02d}"


def parse_season(text: object, months: int = 1) -> str | None:
    """``text`` when it names a season of ``months`` months ("YYYY-MM", MM its first month),
    else None."""
    if not isinstance(text, str):
        return None
    match = _SEASON.fullmatch(text)
    if match is None or (int(match.group(2)) - 1) % check_months(months):
        return None
    return text


def season_points(outcome: str, streak: int) -> tuple[int, int]:
    """(points earned, streak after) for a game's ``outcome`` (win, draw, loss) given the
    player's season ``streak`` before it."""
    if outcome == "win":
        return POINTS["win"] + (STREAK_BONUS if streak >= STREAK_FROM else 0), streak + 1
    return POINTS[outcome], 0


async def score_game(conn: Queries, season: str, family: str, outcomes: Mapping[int, str],
                     at: datetime.datetime) -> dict[int, tuple[int, int]]:
    """Add one rated game to its players' season scores (in the caller's transaction):
    ``outcomes`` player id -> win, draw or loss. Returns player id -> (points earned, streak
    after)."""
    players = sorted(outcomes)
    if not players:
        return {}
    # Rows created first, then locked in id order: concurrent games of one player queue up.
    await conn.execute(
        "INSERT INTO season_scores (season, family, player_id, updated_at) "
        "SELECT $1, $2, id, $4 FROM unnest($3::bigint[]) AS id "
        "ON CONFLICT (season, family, player_id) DO NOTHING", season, family, players, at)
    rows = await conn.fetch(
        "SELECT player_id, streak FROM season_scores WHERE season = $1 AND family = $2 "
        "AND player_id = ANY($3::bigint[]) ORDER BY player_id FOR UPDATE",
        season, family, players)
    earned: dict[int, tuple[int, int]] = {}
    for row in rows:
        player = int(row["player_id"])
        outcome = outcomes[player]
        points, streak = season_points(outcome, int(row["streak"]))
        await conn.execute(
            "UPDATE season_scores SET points = points + $4, games = games + 1, "
            "wins = wins + $5, streak = $6, updated_at = $7 "
            "WHERE season = $1 AND family = $2 AND player_id = $3",
            season, family, player, points, int(outcome == "win"), streak, at)
        earned[player] = (points, streak)
    return earned


async def board(conn: Queries, season: str, family: str,
                limit: int = BOARD_SIZE) -> list[dict[str, Any]]:
    """The first ``limit`` players of a season's board: {"rank", "name", "points", "games",
    "wins"}, ranked 1..n (ties broken as the module says)."""
    rows = await conn.fetch(
        f"SELECT p.username, s.points, s.games, s.wins FROM season_scores s "
        f"JOIN players p ON p.id = s.player_id WHERE s.season = $1 AND s.family = $2 "
        f"ORDER BY {_ORDER} LIMIT $3", season, family, limit)
    return [{"rank": rank, "name": row["username"], "points": int(row["points"]),
             "games": int(row["games"]), "wins": int(row["wins"])}
            for rank, row in enumerate(rows, start=1)]


async def standing(conn: Queries, season: str, family: str,
                   player_id: int) -> dict[str, Any] | None:
    """A player's {"rank", "points", "games", "wins", "streak"} in a season, None if they
    played no rated game of the family in it."""
    row = await conn.fetchrow(
        f"SELECT rank, points, games, wins, streak FROM (SELECT player_id, points, games, wins, "
        f"streak, row_number() OVER (ORDER BY {_ORDER}) AS rank FROM season_scores "
        f"WHERE season = $1 AND family = $2) ranked WHERE player_id = $3",
        season, family, player_id)
    if row is None:
        return None
    return {key: int(row[key]) for key in ("rank", "points", "games", "wins", "streak")}


async def past_finishes(conn: Queries, player_id: int, current: str) -> list[dict[str, Any]]:
    """A player's top-PROFILE_RANKS finishes in seasons before ``current``, newest first:
    [{"season", "family", "rank", "points"}]."""
    rows = await conn.fetch(
        f"WITH mine AS (SELECT season, family FROM season_scores "
        f"WHERE player_id = $1 AND season < $2), "
        f"ranked AS (SELECT s.season, s.family, s.player_id, s.points, row_number() OVER "
        f"(PARTITION BY s.season, s.family ORDER BY {_ORDER}) AS rank "
        f"FROM season_scores s JOIN mine USING (season, family)) "
        f"SELECT season, family, rank, points FROM ranked WHERE player_id = $1 AND rank <= $3 "
        f"ORDER BY season DESC, family", player_id, current, PROFILE_RANKS)
    return [{"season": row["season"], "family": row["family"], "rank": int(row["rank"]),
             "points": int(row["points"])} for row in rows]
