"""A profile's stats as server/players.py computed them on every read before migration 0008
(server/player_stats.py keeps them up to date now): aggregates and window sorts over every
``game_players`` row of the player. The tests hold the kept-up-to-date stats to it.

Its streaks order a player's rows by (ended_at, game_id): two seats of one game held by the
same account tie, so games like that are left out of what is compared with it."""

from __future__ import annotations

from typing import Any

import asyncpg

_STATS = """
SELECT family, count(*) AS games,
       count(*) FILTER (WHERE outcome = 'win') AS wins,
       count(*) FILTER (WHERE outcome = 'loss') AS losses,
       count(*) FILTER (WHERE outcome = 'draw') AS draws,
       sum(hands) AS hands, sum(hands_won) AS hands_won, sum(won_domino) AS won_domino,
       sum(won_block) AS won_block, sum(play_points) AS play_points,
       sum(bonus_points) AS bonus_points, max(best_play) AS best_play,
       sum(big_plays) AS big_plays
FROM game_players WHERE player_id = $1 GROUP BY family
"""
_STREAKS = """
WITH ordered AS (
    SELECT family, outcome,
           row_number() OVER (PARTITION BY family ORDER BY ended_at, game_id)
           - row_number() OVER (PARTITION BY family, outcome = 'win'
                                ORDER BY ended_at, game_id) AS run,
           row_number() OVER (PARTITION BY family ORDER BY ended_at DESC, game_id DESC) AS back
    FROM game_players WHERE player_id = $1
)
SELECT family, run, count(*) AS length, min(back) AS newest
FROM ordered WHERE outcome = 'win' GROUP BY family, run
"""
_TOP_PRESET = """
SELECT DISTINCT ON (family) family, preset
FROM game_players WHERE player_id = $1
GROUP BY family, preset ORDER BY family, count(*) DESC, preset
"""


async def old_stats(conn: asyncpg.Connection, player_id: int) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in await conn.fetch(_STATS, player_id):
        games, hands = int(row["games"]), int(row["hands"])
        points = int(row["play_points"]) + int(row["bonus_points"])
        found[row["family"]] = {
            "games": games, "wins": int(row["wins"]), "losses": int(row["losses"]),
            "draws": int(row["draws"]), "win_rate": round(int(row["wins"]) / games, 4),
            "hands": hands, "hands_won": int(row["hands_won"]),
            "won_domino": int(row["won_domino"]), "won_block": int(row["won_block"]),
            "play_points": int(row["play_points"]), "bonus_points": int(row["bonus_points"]),
            "points_per_hand": round(points / hands, 2) if hands else 0.0,
            "best_play": int(row["best_play"]), "big_plays": int(row["big_plays"]),
            "longest_streak": 0, "current_streak": 0, "top_preset": None,
        }
    for row in await conn.fetch(_STREAKS, player_id):
        family = found[row["family"]]
        family["longest_streak"] = max(family["longest_streak"], int(row["length"]))
        if int(row["newest"]) == 1:
            family["current_streak"] = int(row["length"])
    for row in await conn.fetch(_TOP_PRESET, player_id):
        found[row["family"]]["top_preset"] = row["preset"]
    return found
