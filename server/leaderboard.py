"""Leaderboards: the top of a rating family and one player's place on it (asyncpg).

The board of a family is its players with at least ``min_games`` rated games (not provisional,
server/ratings.py) who played one within ``active_days``, ordered by rating (highest first),
then by player id. Both queries read the ``ratings_board`` index of
server/migrations/0003_ratings.sql (family, rating DESC, player_id) INCLUDE (games,
last_game_at): ``top`` walks it from the top until it has ``limit`` players (about a
millisecond), ``rank_of`` counts the board players ahead of one player, both from the index
alone. That count is exact and grows with the rank: roughly 0.3 us per player ahead on the
bench's 2-vCPU machine, so ~30 ms for the last of a 100,000-player board (bench/leaderboard.py).
"""

from __future__ import annotations

from typing import Any

from server.ratings import PROVISIONAL_GAMES

ACTIVE_DAYS = 30

# The activity cutoff is a scalar subquery: computed once per statement (an InitPlan), where
# the bare expression in a filter would be computed again for every row scanned.
_CUTOFF = "(SELECT now() - make_interval(days => {days}))"

_TOP = f"""
SELECT r.rating, r.games, p.username
FROM ratings r JOIN players p ON p.id = r.player_id
WHERE r.family = $1 AND r.games >= $2 AND r.last_game_at >= {_CUTOFF.format(days="$3")}
ORDER BY r.rating DESC, r.player_id
LIMIT $4
"""

# The board players ahead of one: those of a higher rating (the index walked from the top of
# the family down to the player's rating) plus those of the same rating and a lower id.
_RANK = f"""
WITH me AS (
    SELECT player_id, rating, games
    FROM ratings
    WHERE player_id = $1 AND family = $2 AND games >= $3
      AND last_game_at >= {_CUTOFF.format(days="$4")}
)
SELECT me.rating, me.games, 1 + (
    SELECT count(*) FROM ratings r
    WHERE r.family = $2 AND r.rating > me.rating
      AND r.games >= $3 AND r.last_game_at >= {_CUTOFF.format(days="$4")}
) + (
    SELECT count(*) FROM ratings r
    WHERE r.family = $2 AND r.rating = me.rating AND r.player_id < me.player_id
      AND r.games >= $3 AND r.last_game_at >= {_CUTOFF.format(days="$4")}
) AS rank
FROM me
"""


async def top(conn: Any, family: str, *, limit: int = 100, active_days: int = ACTIVE_DAYS,
              min_games: int = PROVISIONAL_GAMES) -> list[dict[str, Any]]:
    """The first ``limit`` players of ``family``'s board, each {"rank", "name", "rating",
    "games"}, ranked 1..n in board order (equal ratings still get consecutive ranks, the lower
    player id first)."""
    rows = await conn.fetch(_TOP, family, min_games, active_days, limit)
    return [{"rank": rank, "name": row["username"], "rating": row["rating"],
             "games": row["games"]} for rank, row in enumerate(rows, start=1)]


async def rank_of(conn: Any, family: str, player_id: int, *, active_days: int = ACTIVE_DAYS,
                  min_games: int = PROVISIONAL_GAMES) -> dict[str, Any] | None:
    """``player_id``'s {"rank", "rating", "games"} on ``family``'s board (the rank `top` gives
    them), or None when they are not on it: unrated in the family, provisional or inactive."""
    row = await conn.fetchrow(_RANK, player_id, family, min_games, active_days)
    if row is None:
        return None
    return {"rank": int(row["rank"]), "rating": row["rating"], "games": row["games"]}
