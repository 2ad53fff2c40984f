"""Players over HTTP (docs/players.md): profiles, a player's games, leaderboards, and what a
table shows of an account's seat. Everything is read from PostgreSQL (the archive's
``game_players``, ``ratings``, ``rating_history`` and the stats of server.player_stats, written
by server.archive).

Must not import the HTTP lobby (server.lobby imports this module).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import re
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server import leaderboard, player_stats, ratings, seasons
from server.archive import DELETED_PLAYER
from server.db import DB_DOWN, Postgres, Queries
from server.identity import Identity, identify, pool
from server.rejected import Rejected
from server.seams import app_state
from server.text import USERNAME, USERNAME_READING_SQL, account_reading, digits

RECENT = 10
PAGE_DEFAULT, PAGE_MAX = 20, 50
HISTORY_MAX = 200  # rating points per family on a profile (the newest)


def _ms(value: datetime.datetime | None) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


def meta() -> dict[str, Any]:
    """What `GET /api/meta` says of ratings: the families and the rating scale."""
    presets = ratings.family_presets()
    return {
        "families": [{"name": family, "label": label, "presets": presets.get(family, [])}
                     for family, label in ratings.FAMILY_LABELS.items()],
        "ratings": {"initial": ratings.display(ratings.Skill.new().mu),
                    "provisional_games": ratings.PROVISIONAL_GAMES},
    }


def unknown_player(name: str) -> Rejected:
    return Rejected("unknown_player", f"no player {name!r}", status=404)


async def shown_player(identity: Identity, family: str, conn: Queries) -> dict[str, Any]:
    """What a table shows of an account's seat: its name and its rating in ``family``."""
    row = await conn.fetchrow("SELECT rating, games FROM ratings "
                              "WHERE player_id = $1 AND family = $2", identity.player_id, family)
    games = 0 if row is None else int(row["games"])
    rating = ratings.display(ratings.Skill.new().mu) if row is None else int(row["rating"])
    return {"name": identity.username, "rating": rating,
            "provisional": ratings.provisional(games)}


async def not_an_accounts_name(postgres: Postgres, name: str) -> None:
    """400 ``bad_request`` when a guest's seat ``name`` reads as an account's username (in any
    case, or in letters drawn alike: `taken_by_a_lookalike`): the seat would pass for that
    player. Not checked while PostgreSQL is down (an account's seat shows its rating, a guest's
    none)."""
    db = postgres.pool
    if db is None:
        return
    try:
        taken = await taken_by_a_lookalike(db, name)
    except DB_DOWN:
        return
    if taken:
        raise Rejected("bad_request", "that name is an account's: log in to use it, or choose "
                       "another")


async def taken_by_a_lookalike(conn: Queries, name: str) -> bool:
    """True when an account's username reads as ``name`` does (``account_reading``: "Ian" as
    "lan", "alice" as "\u0430lice" with a Cyrillic a), by the index of migration 0010."""
    reading = account_reading(name)
    return reading is not None and bool(await conn.fetchval(
        f"SELECT true FROM players WHERE {USERNAME_READING_SQL} = $1 LIMIT 1", reading))


async def player_row(conn: Queries, name: str) -> Any:
    """The account named ``name`` (any case): its id, username and creation time, else 404
    ``unknown_player`` (an asyncpg Record)."""
    if not USERNAME.fullmatch(name):
        raise unknown_player(name)
    row = await conn.fetchrow("SELECT id, username, created_at FROM players "
                              "WHERE lower(username) = lower($1)", name)
    if row is None:
        raise unknown_player(name)
    return row


# ---- games -----------------------------------------------------------------------------------

# Read from game_players_listed, which holds no private game (server/migrations/0008): a page
# costs the same however many private games the player has. (games.private is checked too.)
_GAMES = """
SELECT gp.game_id, gp.seat, gp.outcome, gp.ended_at, g.name, g.preset, g.family, g.rated,
       g.seat_names, g.seat_bots, g.sides, g.scores, g.winner_side, g.end_reason, g.end_seat,
       g.rating_changes,
       (SELECT array_agg(x.account AND x.player_id IS NULL ORDER BY x.seat)
          FROM game_players x WHERE x.game_id = g.id) AS deleted
FROM game_players gp JOIN games g ON g.id = gp.game_id
WHERE gp.player_id = $1 AND NOT gp.private AND NOT g.private
  AND (gp.ended_at, gp.game_id) < ($2, $3)
ORDER BY gp.ended_at DESC, gp.game_id DESC
LIMIT $4
"""
_FAR_FUTURE = datetime.datetime(9999, 1, 1, tzinfo=datetime.UTC)


def _summary(row: Mapping[str, Any]) -> dict[str, Any]:
    sides = json.loads(row["sides"])
    side_of = {seat: i for i, side in enumerate(sides) for seat in side}
    deleted = row["deleted"] or []
    seats = [{"seat": seat,
              "name": DELETED_PLAYER if seat < len(deleted) and deleted[seat] else name,
              "bot": bot, "side": side_of.get(seat)}
             for seat, (name, bot) in enumerate(zip(row["seat_names"], row["seat_bots"],
                                                     strict=True))]
    changes = json.loads(row["rating_changes"]) if row["rating_changes"] else None
    change = changes[row["seat"]] if changes else None
    return {
        "id": row["game_id"], "name": row["name"], "preset": row["preset"],
        "family": row["family"], "rated": row["rated"], "ended": _ms(row["ended_at"]),
        "seats": seats, "scores": list(row["scores"]),
        "result": {"winner": row["winner_side"], "reason": row["end_reason"],
                   "seat": row["end_seat"]},
        "seat": row["seat"], "outcome": row["outcome"],
        "rating": None if change is None else {"before": change["before"],
                                               "after": change["after"]},
    }


def encode_cursor(ended: datetime.datetime, game_id: str) -> str:
    raw = f"{_ms(ended)}:{game_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime.datetime, str]:
    bad = Rejected("bad_cursor", "that cursor is not one this server gave", status=400)
    if len(cursor) > 64:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad from None
    ms, _, game_id = raw.partition(":")
    if not digits(ms) or not re.fullmatch(r"[a-z0-9]{4,24}", game_id):
        raise bad
    try:
        ended = datetime.datetime.fromtimestamp(int(ms) / 1000, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        raise bad from None
    return ended, game_id


async def _games(conn: Queries, player_id: int, limit: int,
                 after: tuple[datetime.datetime, str] | None) -> tuple[list[dict[str, Any]],
                                                                      str | None]:
    ended, game_id = after if after is not None else (_FAR_FUTURE, "")
    rows = await conn.fetch(_GAMES, player_id, ended, game_id, limit + 1)
    page = [_summary(row) for row in rows[:limit]]
    more = len(rows) > limit
    last = rows[limit - 1] if more else None
    return page, None if last is None else encode_cursor(last["ended_at"], last["game_id"])


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return PAGE_DEFAULT
    if not digits(raw) or not 1 <= int(raw) <= PAGE_MAX:
        raise Rejected("bad_request", f"limit must be 1 to {PAGE_MAX}", status=400)
    return int(raw)


async def player_games(request: Request) -> Response:
    """``GET /api/players/{name}/games?limit=N&cursor=C``: newest first."""
    limit = _limit(request)
    cursor = request.query_params.get("cursor")
    after = decode_cursor(cursor) if cursor else None
    db = pool(app_state(request.app))
    player = await player_row(db, request.path_params["name"])
    games, following = await _games(db, player["id"], limit, after)
    return JSONResponse({"games": games, "next": following})


# ---- profiles --------------------------------------------------------------------------------

async def _ratings(conn: Queries, player_id: int) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for row in await conn.fetch("SELECT family, rating, games FROM ratings "
                                "WHERE player_id = $1 ORDER BY family", player_id):
        found[row["family"]] = {"rating": int(row["rating"]), "games": int(row["games"]),
                                "provisional": ratings.provisional(int(row["games"])),
                                "history": []}
    # A private game counts in the rating but has no point of its own: the same instant on two
    # public profiles would say who played whom, privately, and who won.
    # The newest points of each family, read backwards from rating_history_time: a read costs
    # the same however many rated games the player has.
    rows = await conn.fetch(
        "SELECT r.family, h.at, h.rating FROM ratings r CROSS JOIN LATERAL ("
        "SELECT h.at, h.rating, h.game_id FROM rating_history h JOIN games g "
        "ON g.id = h.game_id WHERE h.player_id = r.player_id AND h.family = r.family "
        "AND NOT g.private ORDER BY h.at DESC, h.game_id DESC LIMIT $2) h "
        "WHERE r.player_id = $1 ORDER BY r.family, h.at, h.game_id", player_id, HISTORY_MAX)
    for row in rows:
        if row["family"] in found:
            found[row["family"]]["history"].append({"at": _ms(row["at"]),
                                                    "rating": int(row["rating"])})
    return found


async def profile(request: Request) -> Response:
    """``GET /api/players/{name}``."""
    db = pool(app_state(request.app))
    player = await player_row(db, request.path_params["name"])
    async with db.acquire() as conn:
        recent, _ = await _games(conn, player["id"], RECENT, None)
        body = {"name": player["username"], "joined": _ms(player["created_at"]),
                "ratings": await _ratings(conn, player["id"]),
                "stats": await player_stats.stats(conn, player["id"]), "recent": recent,
                "seasons": await seasons.past_finishes(conn, player["id"],
                                                       _current_season(request))}
    return JSONResponse(body)


def _current_season(request: Request) -> str:
    months: int = app_state(request.app).settings.season_months
    return seasons.season_of(datetime.datetime.now(datetime.UTC), months)


# ---- leaderboards ----------------------------------------------------------------------------

async def leaderboard_of(request: Request) -> Response:
    """``GET /api/leaderboards/{family}``: the top 100 and the viewer's own rank."""
    family = request.path_params["family"]
    if family not in ratings.FAMILY_LABELS:
        raise Rejected("unknown_family", f"no rating family {family!r}", status=404)
    db = pool(app_state(request.app))
    identity = await identify(request)
    async with db.acquire() as conn:
        top = await leaderboard.top(conn, family)
        me = None
        if identity is not None and identity.player_id is not None:
            me = await leaderboard.rank_of(conn, family, identity.player_id)
    return JSONResponse({"family": family, "label": ratings.FAMILY_LABELS[family],
                         "players": top, "me": me})


async def season_board(request: Request) -> Response:
    """``GET /api/seasons/{family}?season=YYYY-MM``: a season's top 100 (the current season
    by default) and the viewer's own standing."""
    family = request.path_params["family"]
    if family not in ratings.FAMILY_LABELS:
        raise Rejected("unknown_family", f"no rating family {family!r}", status=404)
    months: int = app_state(request.app).settings.season_months
    asked = request.query_params.get("season")
    season = _current_season(request) if asked is None else seasons.parse_season(asked, months)
    if season is None:
        raise Rejected("bad_season", f"season must be YYYY-MM, the first month of a season of "
                       f"{months} month(s)", status=400)
    db = pool(app_state(request.app))
    identity = await identify(request)
    async with db.acquire() as conn:
        top = await seasons.board(conn, season, family)
        me = None
        if identity is not None and identity.player_id is not None:
            me = await seasons.standing(conn, season, family, identity.player_id)
    return JSONResponse({"season": season, "family": family,
                         "label": ratings.FAMILY_LABELS[family], "players": top, "me": me})
