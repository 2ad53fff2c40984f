"""A profile's statistics (docs/players.md "Profiles"), kept up to date rather than recomputed
on each read: ``player_stats`` (one row per account and rating family) and ``player_presets``
(its games of each preset, for ``top_preset``), server/migrations/0008_player_stats.sql.

Every ``game_players`` row of an account counts (private games too), as one game. Streaks
follow the order (ended_at, game_id, seat): `add_games` goes on from the newest game counted
when the new one ends after it, and recounts the family from ``game_players`` when it does not
(a game archived late, after a newer one), so the row always says what the rows it counts say.

Writers: server.archive (`add_games`, in the transaction that writes the game's seats) and
registration (`recount`, in the transaction that gives a guest's archived games to the new
account). Reader: server.players. Must not import the HTTP layer.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from server.db import Queries

COUNTED = ("games", "wins", "losses", "draws", "hands", "hands_won", "won_domino", "won_block",
           "play_points", "bonus_points", "best_play", "big_plays", "longest_streak",
           "current_streak")


@dataclass(frozen=True, slots=True)
class Seat:
    """One account seat of an archived game: what ``game_players`` holds of it."""
    player_id: int
    game_id: str
    seat: int
    family: str
    preset: str
    outcome: str  # win, loss, draw
    ended: datetime.datetime
    numbers: tuple[int, ...]
    """The seat's statistics (server.stats `SeatStats`), in `_ADD`'s order: hands, hands won,
    won by domino, won blocked, play points, bonus points, best play, big plays."""


# The game goes on from the newest one counted (the row is locked by `add_games` first).
_ADD = """
UPDATE player_stats SET
    games = games + 1, wins = wins + ($3 = 'win')::int, losses = losses + ($3 = 'loss')::int,
    draws = draws + ($3 = 'draw')::int, hands = hands + $4, hands_won = hands_won + $5,
    won_domino = won_domino + $6, won_block = won_block + $7, play_points = play_points + $8,
    bonus_points = bonus_points + $9, best_play = greatest(best_play, $10),
    big_plays = big_plays + $11,
    current_streak = CASE WHEN $3 = 'win' THEN current_streak + 1 ELSE 0 END,
    longest_streak = greatest(longest_streak,
                              CASE WHEN $3 = 'win' THEN current_streak + 1 ELSE 0 END),
    last_ended_at = $12, last_game_id = $13, last_seat = $14
WHERE player_id = $1 AND family = $2
  AND (last_ended_at IS NULL OR (last_ended_at, last_game_id, last_seat) < ($12, $13, $14))
"""

# Everything recounted from game_players for one account ($1), in every family or in one ($2).
# The same query as the backfill of server/migrations/0008_player_stats.sql.
_RECOUNT = """
WITH ordered AS (
    SELECT player_id, family, outcome, ended_at, game_id, seat, hands, hands_won, won_domino,
           won_block, play_points, bonus_points, best_play, big_plays,
           row_number() OVER (PARTITION BY player_id, family ORDER BY ended_at, game_id, seat)
           - row_number() OVER (PARTITION BY player_id, family, outcome = 'win'
                                ORDER BY ended_at, game_id, seat) AS run,
           row_number() OVER (PARTITION BY player_id, family
                              ORDER BY ended_at DESC, game_id DESC, seat DESC) AS back
    FROM game_players WHERE player_id = $1 AND ($2::text IS NULL OR family = $2::text)
), runs AS (
    SELECT player_id, family, count(*) AS length, min(back) AS newest
    FROM ordered WHERE outcome = 'win' GROUP BY player_id, family, run
), streaks AS (
    SELECT player_id, family, max(length) AS longest,
           coalesce(max(length) FILTER (WHERE newest = 1), 0) AS current
    FROM runs GROUP BY player_id, family
), totals AS (
    SELECT player_id, family, count(*) AS games,
           count(*) FILTER (WHERE outcome = 'win') AS wins,
           count(*) FILTER (WHERE outcome = 'loss') AS losses,
           count(*) FILTER (WHERE outcome = 'draw') AS draws,
           sum(hands) AS hands, sum(hands_won) AS hands_won, sum(won_domino) AS won_domino,
           sum(won_block) AS won_block, sum(play_points) AS play_points,
           sum(bonus_points) AS bonus_points, max(best_play) AS best_play,
           sum(big_plays) AS big_plays
    FROM ordered GROUP BY player_id, family
)
INSERT INTO player_stats (player_id, family, games, wins, losses, draws, hands, hands_won,
                          won_domino, won_block, play_points, bonus_points, best_play,
                          big_plays, longest_streak, current_streak, last_ended_at,
                          last_game_id, last_seat)
SELECT t.player_id, t.family, t.games, t.wins, t.losses, t.draws, t.hands, t.hands_won,
       t.won_domino, t.won_block, t.play_points, t.bonus_points, t.best_play, t.big_plays,
       coalesce(s.longest, 0), coalesce(s.current, 0), o.ended_at, o.game_id, o.seat
FROM totals t
JOIN ordered o ON o.player_id = t.player_id AND o.family = t.family AND o.back = 1
LEFT JOIN streaks s ON s.player_id = t.player_id AND s.family = t.family
ON CONFLICT (player_id, family) DO UPDATE SET
    games = EXCLUDED.games, wins = EXCLUDED.wins, losses = EXCLUDED.losses,
    draws = EXCLUDED.draws, hands = EXCLUDED.hands, hands_won = EXCLUDED.hands_won,
    won_domino = EXCLUDED.won_domino, won_block = EXCLUDED.won_block,
    play_points = EXCLUDED.play_points, bonus_points = EXCLUDED.bonus_points,
    best_play = EXCLUDED.best_play, big_plays = EXCLUDED.big_plays,
    longest_streak = EXCLUDED.longest_streak, current_streak = EXCLUDED.current_streak,
    last_ended_at = EXCLUDED.last_ended_at, last_game_id = EXCLUDED.last_game_id,
    last_seat = EXCLUDED.last_seat
"""
_RECOUNT_PRESETS = """
INSERT INTO player_presets (player_id, family, preset, games)
SELECT player_id, family, preset, count(*) FROM game_players WHERE player_id = $1
GROUP BY player_id, family, preset
ON CONFLICT (player_id, family, preset) DO UPDATE SET games = EXCLUDED.games
"""


async def add_games(conn: Queries, seats: Sequence[Seat]) -> None:
    """Count the account seats of one archived game (whose ``game_players`` rows this
    transaction has just written), in the caller's transaction."""
    if not seats:
        return
    family = seats[0].family
    players = sorted({seat.player_id for seat in seats})
    # Rows created first, then locked in id order: concurrent games of one player queue up,
    # and a recount below reads after the lock, so it sees every game counted before.
    await conn.execute(
        "INSERT INTO player_stats (player_id, family) SELECT id, $2 "
        "FROM unnest($1::bigint[]) AS id ON CONFLICT (player_id, family) DO NOTHING",
        players, family)
    await conn.execute(
        "SELECT 1 FROM player_stats WHERE family = $2 AND player_id = ANY($1::bigint[]) "
        "ORDER BY player_id FOR UPDATE", players, family)
    # What the rows say against what was counted: a game_players row written without being
    # counted (by a process of a version before these tables, during a rolling upgrade) shows
    # here, and that player's stats are recounted instead (one index-only count a player).
    drifted = set()
    for player in players:
        new = sum(1 for seat in seats if seat.player_id == player)
        rows = await conn.fetchval("SELECT count(*) FROM game_players WHERE player_id = $1",
                                   player)
        counted = await conn.fetchval("SELECT coalesce(sum(games), 0) FROM player_stats "
                                      "WHERE player_id = $1", player)
        if rows != counted + new:
            drifted.add(player)
            await recount(conn, player)
    for seat in sorted(seats, key=lambda s: (s.player_id, s.seat)):
        if seat.player_id in drifted:
            continue
        status = await conn.execute(
            _ADD, seat.player_id, family, seat.outcome, *seat.numbers, seat.ended,
            seat.game_id, seat.seat)
        if status == "UPDATE 0":  # older than a game counted already: streaks recounted
            await conn.execute(_RECOUNT, seat.player_id, family)
        await conn.execute(
            "INSERT INTO player_presets (player_id, family, preset, games) "
            "VALUES ($1, $2, $3, 1) ON CONFLICT (player_id, family, preset) "
            "DO UPDATE SET games = player_presets.games + 1",
            seat.player_id, family, seat.preset)


async def recount(conn: Queries, player_id: int) -> None:
    """Count every ``game_players`` row of the account afresh (a guest's archived games that
    just became the account's; rows written without being counted), in the caller's
    transaction."""
    await conn.execute(_RECOUNT, player_id, None)
    await conn.execute(_RECOUNT_PRESETS, player_id)


async def stats(conn: Queries, player_id: int) -> dict[str, dict[str, Any]]:
    """A player's statistics per family, over every archived game they played (the
    profile's ``stats``)."""
    found: dict[str, dict[str, Any]] = {}
    for row in await conn.fetch(f"SELECT family, {', '.join(COUNTED)} FROM player_stats "
                                "WHERE player_id = $1 AND games > 0 ORDER BY family",
                                player_id):
        games, hands, wins = int(row["games"]), int(row["hands"]), int(row["wins"])
        points = int(row["play_points"]) + int(row["bonus_points"])
        found[row["family"]] = {
            "games": games, "wins": wins, "losses": int(row["losses"]),
            "draws": int(row["draws"]), "win_rate": round(wins / games, 4),
            "hands": hands, "hands_won": int(row["hands_won"]),
            "won_domino": int(row["won_domino"]), "won_block": int(row["won_block"]),
            "play_points": int(row["play_points"]), "bonus_points": int(row["bonus_points"]),
            "points_per_hand": round(points / hands, 2) if hands else 0.0,
            "best_play": int(row["best_play"]), "big_plays": int(row["big_plays"]),
            "longest_streak": int(row["longest_streak"]),
            "current_streak": int(row["current_streak"]), "top_preset": None,
        }
    for row in await conn.fetch(
            "SELECT DISTINCT ON (family) family, preset FROM player_presets "
            "WHERE player_id = $1 AND games > 0 ORDER BY family, games DESC, preset",
            player_id):
        if row["family"] in found:
            found[row["family"]]["top_preset"] = row["preset"]
    return found
