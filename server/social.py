"""Friends, blocks, private messages and invitations over HTTP (docs/players.md "Friends,
messages and invitations"), stored in PostgreSQL (migration 0005_social: ``follows``,
``blocks``, ``messages``); live notices go through server.inbox.

Owns: who may reach whom. Two accounts that follow each other are **friends**; a friend's
presence (an open ``/ws/me`` page, server.inbox) and public table are shown to friends only.
A block removes the follows both ways, and to the blocked player the blocker looks like a name
that does not exist: following, messaging or inviting them answers ``404 unknown_player``,
word for word the answer for an unknown name. Every route is for accounts only; every change
is cookie-authenticated (server.identity.changing) and rate limited per account (fixed
windows in Redis, `Store.hit`). A refused request changes nothing. Must not import the engine.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Sequence
from typing import Any

import msgpack
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server import inbox
from server.accounts import players_api
from server.db import Queries
from server.identity import changing, current_player, pool
from server.lobby import read_json
from server.players import player_row, unknown_player  # also the answer to a blocked player
from server.protocol import MAX_CHAT
from server.rejected import Rejected
from server.seams import AppState, app_state
from server.store import Store, player_key
from server.text import chat_text, digits

WINDOW_S = 60  # the rate limits count per minute
MAX_FOLLOWING = 200  # players one account may follow at once
PAGE_DEFAULT, PAGE_MAX = 20, 50  # messages of a conversation per page
MAX_CONVERSATIONS = 100  # conversations listed (the newest)
MAX_ID = 2**63 - 1  # a message id is a bigint


class BadText(Exception):
    """A message text the chat rules refuse (server.text.chat_text)."""


def not_allowed(message: str) -> Rejected:
    return Rejected("not_allowed", message, status=403)


def _ms(value: datetime.datetime) -> int:
    return round(value.timestamp() * 1000)


def _state(request: Request) -> AppState:
    return app_state(request.app)


async def _me(request: Request, *, change: bool = False) -> dict[str, Any]:
    """The logged-in account (401 otherwise); for a change, first the CSRF rules."""
    if change:
        changing(request)
    player, _ = await current_player(request)
    return player


async def _spend(request: Request, kind: str, player_id: int, limit: int) -> None:
    """Count one more ``kind`` for the player this minute; over ``limit``: 429."""
    count, left = await _state(request).service.store.hit(f"{kind}:{player_id}", WINDOW_S)
    if count > limit:
        raise Rejected("rate_limited", "too many requests; try again later", status=429,
                       retry_after=left)


async def _blocks(db: Queries, me: int, other: int) -> tuple[bool, bool]:
    """(whether ``me`` blocked ``other``, whether ``other`` blocked ``me``)."""
    rows = await db.fetch("SELECT blocker FROM blocks WHERE (blocker = $1 AND blocked = $2) "
                          "OR (blocker = $2 AND blocked = $1)", me, other)
    blockers = {row["blocker"] for row in rows}
    return me in blockers, other in blockers


async def _reachable(db: Queries, me: dict[str, Any], name: str, what: str) -> Any:
    """The account ``name`` that ``me`` may follow, message or invite (``what``): 404 for an
    unknown name and for a player who blocked ``me``; 403 for one ``me`` blocked."""
    other = await player_row(db, name)
    if other["id"] == me["id"]:
        raise Rejected("bad_request", f"you cannot {what} yourself", status=400)
    mine, theirs = await _blocks(db, me["id"], other["id"])
    if theirs:
        raise unknown_player(name)
    if mine:
        raise not_allowed(f"you blocked {other['username']}; unblock them first")
    return other


_NOT_BLOCKED = ("NOT EXISTS (SELECT 1 FROM blocks WHERE (blocker = $1 AND blocked = $2) "
                "OR (blocker = $2 AND blocked = $1))")


# ---- follows ---------------------------------------------------------------------------------

async def _below_cap(conn: Queries, table: str, mine: str, theirs: str, me: int, other: int,
                     cap: int, code: str, sentence: str) -> None:
    """Refuse (409 ``code``) a new row of ``me`` in ``table`` (follows or blocks) when ``me``
    has ``cap`` rows already, not counting one with ``other``. Takes the account's row lock
    first: one such change of an account at a time, so the count stays true."""
    await conn.execute("SELECT 1 FROM players WHERE id = $1 FOR UPDATE", me)
    count = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE {mine} = $1 "  # names: ours
                                f"AND {theirs} <> $2", me, other)
    if count >= cap:
        raise Rejected(code, sentence.format(cap) + " first", status=409)


@players_api
async def follow(request: Request) -> Response:
    """``PUT /api/me/follows/{name}``."""
    me = await _me(request, change=True)
    await _spend(request, "follow", me["id"], _state(request).settings.follow_rate)
    db = pool(_state(request))
    other = await _reachable(db, me, request.path_params["name"], "follow")
    async with db.acquire() as conn, conn.transaction():
        await _below_cap(conn, "follows", "follower", "followee", me["id"], other["id"],
                         MAX_FOLLOWING, "too_many_follows", "you follow {} players; unfollow one")
        done = await conn.fetchval(
            "INSERT INTO follows (follower, followee) SELECT $1, $2 WHERE " + _NOT_BLOCKED
            + " ON CONFLICT DO NOTHING RETURNING 1", me["id"], other["id"])
        if done is None and not await conn.fetchval(
                "SELECT true FROM follows WHERE follower = $1 AND followee = $2",
                me["id"], other["id"]):
            raise unknown_player(request.path_params["name"])  # a block landed meanwhile
    return Response(status_code=204)


@players_api
async def unfollow(request: Request) -> Response:
    """``DELETE /api/me/follows/{name}``."""
    me = await _me(request, change=True)
    await _spend(request, "follow", me["id"], _state(request).settings.follow_rate)
    db = pool(_state(request))
    other = await player_row(db, request.path_params["name"])
    await db.execute("DELETE FROM follows WHERE follower = $1 AND followee = $2",
                     me["id"], other["id"])
    return Response(status_code=204)


async def _public_tables(store: Store, friends: Sequence[Any]) -> list[str | None]:
    """Each friend's public table (in play first, else waiting; the seat taken first), read
    from the lobby summaries of the tables they took a seat at (two pipelined reads: the
    friends' lists of tables, then the summaries), never by loading the tables themselves (a
    friend list of 200 sitting at 20 tables each would load 4,000). A seat the friend no
    longer holds (left, or a bot took it) shows no longer their name there."""
    seated = await store.seated_tables_of([player_key(row["id"]) for row in friends])
    wanted = sorted({table for tables in seated for table in tables})
    summaries = {table: msgpack.unpackb(meta)
                 for table, meta in zip(wanted, await store.metas(wanted), strict=True)
                 if meta is not None}
    found: list[str | None] = []
    for row, tables in zip(friends, seated, strict=True):
        best: str | None = None
        for table in tables:
            summary = summaries.get(table)
            if summary is None or summary.get("private") \
                    or summary.get("status") not in ("playing", "waiting") \
                    or not any(seat.get("bot") is None and seat.get("player")
                               and seat["player"].get("name") == row["username"]
                               for seat in summary.get("seats", ())):
                continue
            if summary["status"] == "playing":
                best = table
                break
            best = best or table
        found.append(best)
    return found


@players_api
async def follows(request: Request) -> Response:
    """``GET /api/me/follows``: whom the player follows, who follows them, and their friends
    (mutual follows) with presence and public table."""
    me = await _me(request)
    state = _state(request)
    rows = await pool(state).fetch(
        "SELECT p.id, p.username, "
        "EXISTS (SELECT 1 FROM follows f WHERE f.follower = $1 AND f.followee = p.id) AS out, "
        "EXISTS (SELECT 1 FROM follows f WHERE f.follower = p.id AND f.followee = $1) AS inc "
        "FROM players p WHERE p.id IN (SELECT followee FROM follows WHERE follower = $1 "
        "UNION SELECT follower FROM follows WHERE followee = $1) "
        "AND NOT EXISTS (SELECT 1 FROM blocks b WHERE (b.blocker = $1 AND b.blocked = p.id) "
        "OR (b.blocker = p.id AND b.blocked = $1)) "
        "ORDER BY lower(p.username)", me["id"])
    friends = [row for row in rows if row["out"] and row["inc"]]
    present = await inbox.online(state.redis, [row["id"] for row in friends])
    tables = await _public_tables(state.service.store, friends)
    return JSONResponse({
        "following": [row["username"] for row in rows if row["out"]],
        "followers": [row["username"] for row in rows if row["inc"]],
        "friends": [{"name": row["username"], "online": row["id"] in present, "table": table}
                    for row, table in zip(friends, tables, strict=True)],
    })


# ---- blocks ----------------------------------------------------------------------------------

@players_api
async def block(request: Request) -> Response:
    """``PUT /api/me/blocks/{name}``: also ends the follows both ways."""
    me = await _me(request, change=True)
    await _spend(request, "follow", me["id"], _state(request).settings.follow_rate)
    db = pool(_state(request))
    other = await player_row(db, request.path_params["name"])
    if other["id"] == me["id"]:
        raise Rejected("bad_request", "you cannot block yourself", status=400)
    async with db.acquire() as conn, conn.transaction():
        await _below_cap(conn, "blocks", "blocker", "blocked", me["id"], other["id"],
                         _state(request).settings.max_blocks, "too_many_blocks",
                         "you block {} players; unblock one")
        await conn.execute("INSERT INTO blocks (blocker, blocked) VALUES ($1, $2) "
                           "ON CONFLICT DO NOTHING", me["id"], other["id"])
        await conn.execute("DELETE FROM follows WHERE (follower = $1 AND followee = $2) "
                           "OR (follower = $2 AND followee = $1)", me["id"], other["id"])
    return Response(status_code=204)


@players_api
async def unblock(request: Request) -> Response:
    """``DELETE /api/me/blocks/{name}`` (the follows it ended stay ended)."""
    me = await _me(request, change=True)
    await _spend(request, "follow", me["id"], _state(request).settings.follow_rate)
    db = pool(_state(request))
    other = await player_row(db, request.path_params["name"])
    await db.execute("DELETE FROM blocks WHERE blocker = $1 AND blocked = $2",
                     me["id"], other["id"])
    return Response(status_code=204)


@players_api
async def blocks(request: Request) -> Response:
    """``GET /api/me/blocks``."""
    me = await _me(request)
    rows = await pool(_state(request)).fetch(
        "SELECT p.username FROM blocks b JOIN players p ON p.id = b.blocked "
        "WHERE b.blocker = $1 ORDER BY lower(p.username)", me["id"])
    return JSONResponse({"blocked": [row["username"] for row in rows]})


# ---- messages --------------------------------------------------------------------------------

def _message(row: Any, names: dict[int, str]) -> dict[str, Any]:
    return {"id": row["id"], "from": names[row["sender"]], "text": row["body"],
            "sent": _ms(row["sent_at"])}


def _text(body: dict[str, Any]) -> str:
    value = body.get("text")
    if not isinstance(value, str):
        raise Rejected("bad_request", '"text" must be a string', status=400)
    try:
        return chat_text(value, MAX_CHAT, BadText)
    except BadText as exc:
        raise Rejected("bad_text", str(exc), status=400) from None


async def _publish(request: Request, player_id: int, notice: dict[str, Any]) -> None:
    """A notice to the player's open pages; lost (never an error) while Redis is down."""
    with contextlib.suppress(RedisError, OSError):
        await inbox.publish(_state(request).redis, player_id, notice)


@players_api
async def send_message(request: Request) -> Response:
    """``POST /api/messages/{name}`` ``{"text"}`` -> 201 ``{"id", "sent"}``."""
    me = await _me(request, change=True)
    text = _text(await read_json(request))
    state = _state(request)
    await _spend(request, "msg", me["id"], state.settings.message_rate)
    db = pool(state)
    name = request.path_params["name"]
    other = await _reachable(db, me, name, "message")
    settings = state.settings
    async with db.acquire() as conn, conn.transaction():
        # One message of a sender at a time: the count below stays true. Counted since the
        # recipient's last message to the sender, which the sender sees: whether they have
        # read anything stays theirs to know.
        await conn.execute("SELECT 1 FROM players WHERE id = $1 FOR UPDATE", me["id"])
        waiting = await conn.fetchval(
            "SELECT count(*) FROM messages WHERE sender = $1 AND recipient = $2 AND id > "
            "coalesce((SELECT max(id) FROM messages WHERE sender = $2 AND recipient = $1), 0)",
            me["id"], other["id"])
        if waiting >= settings.max_unanswered:
            raise Rejected("too_many_unanswered", f"you sent {other['username']} "
                           f"{settings.max_unanswered} messages without an answer; wait for one",
                           status=429)
        row = await conn.fetchrow(
            "INSERT INTO messages (sender, recipient, body) SELECT $1, $2, $3 WHERE "
            + _NOT_BLOCKED + " RETURNING id, sender, body, sent_at", me["id"], other["id"], text)
        if row is None:
            raise unknown_player(name)  # a block landed meanwhile
        # The conversation keeps its newest `messages_kept`, both ways together.
        await conn.execute(
            "DELETE FROM messages WHERE id IN (SELECT id FROM messages "
            "WHERE least(sender, recipient) = least($1::bigint, $2::bigint) "
            "AND greatest(sender, recipient) = greatest($1::bigint, $2::bigint) "
            "ORDER BY id DESC OFFSET $3)", me["id"], other["id"], settings.messages_kept)
        unread = await inbox.unread_total(conn, other["id"])
    message = _message(row, {me["id"]: me["username"]})
    await _publish(request, other["id"], {"t": "message", **message, "unread": unread})
    return JSONResponse({"id": message["id"], "sent": message["sent"]}, status_code=201)


_CONVERSATIONS = """
WITH last AS (
    SELECT DISTINCT ON (other) other, id, sender, body, sent_at
    FROM (SELECT CASE WHEN sender = $1 THEN recipient ELSE sender END AS other,
                 id, sender, body, sent_at
          FROM messages WHERE sender = $1 OR recipient = $1) m
    ORDER BY other, id DESC
)
SELECT last.*, p.username,
       (SELECT count(*) FROM messages u
         WHERE u.recipient = $1 AND u.sender = last.other AND u.read_at IS NULL) AS unread
FROM last JOIN players p ON p.id = last.other
WHERE NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = $1 AND b.blocked = last.other)
ORDER BY last.id DESC
LIMIT $2
"""


@players_api
async def conversations(request: Request) -> Response:
    """``GET /api/messages``: the newest message of each conversation and its unread count,
    newest first (not those with players the account blocked)."""
    me = await _me(request)
    rows = await pool(_state(request)).fetch(_CONVERSATIONS, me["id"], MAX_CONVERSATIONS)
    found = []
    for row in rows:
        names = {me["id"]: me["username"], row["other"]: row["username"]}
        found.append({"name": row["username"], "last": _message(row, names),
                      "unread": int(row["unread"])})
    return JSONResponse({"conversations": found})


def _page(request: Request) -> tuple[int, int]:
    """(``before``, ``limit``) of a conversation's page; 400 bad_request when malformed."""
    raw_limit = request.query_params.get("limit")
    limit = PAGE_DEFAULT
    if raw_limit is not None:
        if not digits(raw_limit) or len(raw_limit) > 3 or not 1 <= int(raw_limit) <= PAGE_MAX:
            raise Rejected("bad_request", f"limit must be 1 to {PAGE_MAX}", status=400)
        limit = int(raw_limit)
    raw_before = request.query_params.get("before")
    before = MAX_ID
    if raw_before is not None:
        if not digits(raw_before) or len(raw_before) > 19 or not 1 <= int(raw_before) <= MAX_ID:
            raise Rejected("bad_request", "before must be a message id", status=400)
        before = int(raw_before)
    return before, limit


@players_api
async def conversation(request: Request) -> Response:
    """``GET /api/messages/{name}?before=<id>&limit=N``: newest first."""
    me = await _me(request)
    before, limit = _page(request)
    db = pool(_state(request))
    other = await player_row(db, request.path_params["name"])
    low, high = sorted((me["id"], other["id"]))
    rows = await db.fetch(
        "SELECT id, sender, body, sent_at FROM messages "
        "WHERE least(sender, recipient) = $1 AND greatest(sender, recipient) = $2 AND id < $3 "
        "ORDER BY id DESC LIMIT $4", low, high, before, limit + 1)
    names = {me["id"]: me["username"], other["id"]: other["username"]}
    page = [_message(row, names) for row in rows[:limit]]
    more = len(rows) > limit
    return JSONResponse({"messages": page, "next": page[-1]["id"] if more else None})


@players_api
async def mark_read(request: Request) -> Response:
    """``POST /api/messages/{name}/read``: their messages to the account are read."""
    me = await _me(request, change=True)
    db = pool(_state(request))
    other = await player_row(db, request.path_params["name"])
    async with db.acquire() as conn:
        changed = await conn.execute(
            "UPDATE messages SET read_at = now() WHERE recipient = $1 AND sender = $2 "
            "AND read_at IS NULL", me["id"], other["id"])
        if changed != "UPDATE 0":  # the account's other pages update their counts
            unread = await inbox.unread_total(conn, me["id"])
            await _publish(request, me["id"], {"t": "read", "name": other["username"],
                                               "unread": unread})
    return Response(status_code=204)


# ---- invitations -----------------------------------------------------------------------------

@players_api
async def invite(request: Request) -> Response:
    """``POST /api/tables/{id}/invite`` ``{"name", "invite"}``: a friend is told of the table
    the account sits at (with its invite code, for a private table)."""
    me = await _me(request, change=True)
    body = await read_json(request)
    name, code = body.get("name"), body.get("invite")
    if not isinstance(name, str):
        raise Rejected("bad_request", '"name" must be a string', status=400)
    if code is not None and not isinstance(code, str):
        raise Rejected("bad_request", '"invite" must be a string or null', status=400)
    state = _state(request)
    await _spend(request, "invite", me["id"], state.settings.invite_rate)
    table_id = request.path_params["table_id"]
    service = state.service
    mine = [t for t in await service.seated(player_key(me["id"])) if t["id"] == table_id]
    if not mine:
        await service.summary(table_id)  # a private or unknown table: 404 unknown_table
        raise not_allowed("you do not sit at that table")
    db = pool(state)
    other = await _reachable(db, me, name, "invite")
    friends = await db.fetchval(
        "SELECT count(*) FROM follows WHERE (follower = $1 AND followee = $2) "
        "OR (follower = $2 AND followee = $1)", me["id"], other["id"])
    if friends != 2:
        raise not_allowed(f"{other['username']} is not your friend (you follow each other)")
    private = bool(mine[0].get("private"))
    if private:
        await service.summary(table_id, code)  # a wrong or missing code: 404 unknown_table
    await _publish(request, other["id"], {
        "t": "invite", "from": me["username"], "table": table_id,
        "name": mine[0].get("name"), "invite": code if private else None})
    return Response(status_code=204)
