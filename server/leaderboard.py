"""Leaderboards: the top of a rating family and one player's place on it (asyncpg).

The board of a family is its players with at least ``PROVISIONAL_GAMES`` rated games (not
provisional, server/ratings.py) who played one within ``ACTIVE_DAYS``, ordered by rating
(highest first), then by player id. It is read from ``boards``, a materialized view
(server/migrations/0004_boards.sql) holding every board player's rank: ``top`` reads the
(family, rank) index from rank 1, ``rank_of`` the unique (family, player_id) one, each a single
index read whatever the rank. The view is a snapshot: ``run_refresh`` rebuilds it every
LEADERBOARD_REFRESH_S in one process at a time (an advisory lock), so a board is up to that old.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # ships no type hints

from server.db import Postgres, Queries
from server.ratings import PROVISIONAL_GAMES

log = logging.getLogger(__name__)

# The board's rules, written into the view of server/migrations/0004_boards.sql: keep the
# view's "games >= 10" and "interval '30 days'" equal to these.
ACTIVE_DAYS = 30
MIN_GAMES = PROVISIONAL_GAMES

# pg_try_advisory_lock key held while refreshing: any 64-bit number no other code uses.
REFRESH_LOCK = 0x626F61726473  # "boards"

_PG_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)

_TOP = """
SELECT b.rank, b.rating, b.games, p.username
FROM boards b JOIN players p ON p.id = b.player_id
WHERE b.family = $1 AND b.rank <= $2
ORDER BY b.rank
"""

_RANK = """
SELECT rank, rating, games FROM boards WHERE family = $1 AND player_id = $2
"""


async def top(conn: Queries, family: str, *, limit: int = 100) -> list[dict[str, Any]]:
    """The first ``limit`` players of ``family``'s board, each {"rank", "name", "rating",
    "games"}, ranked 1..n in board order (equal ratings still get consecutive ranks, the lower
    player id first), as of the last refresh. A player deleted since then is left out (their
    rank is not given to anyone else until the next refresh)."""
    rows = await conn.fetch(_TOP, family, limit)
    return [{"rank": int(row["rank"]), "name": row["username"], "rating": row["rating"],
             "games": row["games"]} for row in rows]


async def rank_of(conn: Queries, family: str, player_id: int) -> dict[str, Any] | None:
    """``player_id``'s {"rank", "rating", "games"} on ``family``'s board (the rank `top` gives
    them) as of the last refresh, or None when they are not on it: unrated in the family,
    provisional or inactive."""
    row = await conn.fetchrow(_RANK, family, player_id)
    if row is None:
        return None
    return {"rank": int(row["rank"]), "rating": row["rating"], "games": row["games"]}


async def refresh(conn: Queries) -> None:
    """Rebuild the boards snapshot without blocking its readers (CONCURRENTLY); a view never
    populated (created WITH NO DATA) cannot be refreshed so and is refreshed plainly."""
    populated = await conn.fetchval(
        "SELECT ispopulated FROM pg_matviews WHERE schemaname = current_schema() "
        "AND matviewname = 'boards'")
    if populated:
        await conn.execute("REFRESH MATERIALIZED VIEW CONCURRENTLY boards")
    else:  # never populated (or missing: then the plain REFRESH raises the error)
        await conn.execute("REFRESH MATERIALIZED VIEW boards")


# What a refresh depends on: every rating change (however late a game was archived), the
# accounts (a deleted one leaves its board), and the hour (the 30-day window moves).
_MARK = ("SELECT (SELECT count(*) FROM rating_history), (SELECT count(*) FROM players), "
         "date_trunc('hour', now())")


async def refresh_once(postgres: Postgres, since: tuple[Any, ...] | None = None
                       ) -> tuple[Any, ...] | None:
    """Refresh the boards unless another process is refreshing them or nothing changed since
    the refresh that returned ``since`` (no rating change, no account gone, the same hour).
    Returns the mark of this refresh, or None when it skipped. Raises the PostgreSQL errors
    (none while the pool is down: then None)."""
    pool = postgres.pool
    if pool is None:
        return None
    async with pool.acquire() as conn:
        mark = tuple(await conn.fetchrow(_MARK))
        if mark == since:
            return None
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", REFRESH_LOCK):
            return None
        try:
            await refresh(conn)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", REFRESH_LOCK)
    return mark


async def run_refresh(postgres: Postgres, stop: asyncio.Event, every_s: float) -> None:
    """Every ``every_s`` until ``stop``: refresh the boards in at most one process at a time
    (the others skip that round), and only when a rating or an account changed, or the hour
    turned, since this process's last refresh; a PostgreSQL down or failing is logged and
    tried next time."""
    mark: tuple[Any, ...] | None = None
    while not stop.is_set():
        try:
            mark = await refresh_once(postgres, mark) or mark
        except _PG_ERRORS as exc:
            log.warning("leaderboard refresh: %s: %s", type(exc).__name__, exc)
        except Exception:
            log.exception("leaderboard refresh failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every_s)
