"""Quick play (docs/players.md "Quick play"): queues of players waiting for a game, shared by
every process through Redis, and the matcher that seats them together.

A **queue** is one (preset, players, rated) choice, named ``<preset>:<players>:<r|c>``. Its
entries are identity keys (server.identity: ``p:<id>`` or ``g:<hash>``) scored by rating; with
them, each entry's join time, its heartbeat (the last ``POST`` or poll) and what its seat will
show. Every key lives under the one hash tag ``{qp}`` (server.store's docstring lists them), so
each step below is one atomic Lua script, on Redis Cluster too:

- join (`JOIN`): an identity is in at most one queue; joining another leaves the first, joining
  the same one again refreshes it (the join time stays);
- take (`TAKE`): a matcher removes a whole group at once, or nobody if any of it left or moved
  meanwhile, and marks each "pending" until its seat is ready: two matchers never take the
  same player;
- a poll (`POLL`) refreshes the heartbeat; an entry without one for ``QUICKPLAY_STALE_S`` (the
  page closed, the connection dropped) is dropped (`DROP`).

The matcher (`Matcher.run`, one per process) looks at every queue each ``QUICKPLAY_TICK_S``;
only the process holding a queue's short lease (``SET NX PX``) matches it. The oldest entry
first: its window is ``QUICKPLAY_WINDOW`` + ``QUICKPLAY_WIDEN`` x seconds waited, and it is
matched with the nearest ratings whose own windows include it (every member of a group sees
every other within its window). A casual entry that has waited ``QUICKPLAY_BOT_AFTER_S`` with
nobody to complete its group is seated with whoever is in its window and bots (`BOT_LEVEL`) in
the other seats. A group's table is created through `TableService.create` and its seats taken
through `TableService.join` (random seats), each bound to its identity; each player's
``{"table", "seat", "token"}`` is kept for ``QUICKPLAY_MATCH_TTL_S`` for its next poll, and an
account is told ``{"t": "matched", "table", "seat"}`` in its inbox (server.inbox).

Imports the engine only for the preset names and families (server.table_config).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import engine
from server import inbox, players
from server.fairness import client_owner
from server.identity import Identity, Visitor, changing, pool
from server.identity import unavailable as unavailable_accounts
from server.lobby import charge_join, read_json
from server.ratings import DISPLAY_BASE
from server.rejected import Rejected
from server.seams import AppState, app_state
from server.settings import Settings
from server.store import player_of
from server.table_config import clean_player_name, family_of

log = logging.getLogger("server.matchmaking")

PREFIX = "qp:{qp}:"
"""Every quick-play key starts so (one hash tag: one cluster slot)."""
QUEUES = PREFIX + "queues"  # set: the names of the queues that may have entries
WHO = PREFIX + "who"  # hash identity -> the name of its queue
FIELDS = ("z", "since", "beat", "seat")  # per queue: zset rating, hashes ms, ms, seat JSON
REQUEST_FIELDS = frozenset({"preset", "players", "rated", "name"})
PLAYERS = (2, 4)
BOT_LEVEL = "greedy"
"""The level of the bots a casual queue seats after ``QUICKPLAY_BOT_AFTER_S``."""
CLOCK = {"kind": "realtime", "move_s": 30, "reserve_s": 120}
"""Every quick-play table's clock (a real-time game; a turn that runs out is played by a bot)."""
TABLE_NAME = "Quick play"
PENDING = b"pending"
LEASE_MS = 5000  # a queue's lease: longer than one pass over it takes

_JOIN_LUA = """
-- KEYS: 1 who, 2 queues, 3 zset, 4 since, 5 beat, 6 seat, 7 the identity's match record
-- ARGV: 1 identity, 2 queue, 3 rating, 4 now ms, 5 seat JSON, 6 key prefix,
--       7 join time to keep ('' = now), 8 '1' = a requeue (only if it is in no queue)
-- Returns the entry's join time, -1 while its table is being set up, -2 a requeue not done.
local id, queue = ARGV[1], ARGV[2]
local match = redis.call('GET', KEYS[7])
if match == 'pending' and ARGV[8] ~= '1' then return -1 end
local old = redis.call('HGET', KEYS[1], id)
if ARGV[8] == '1' and old then return -2 end
if old and old ~= queue then
  redis.call('ZREM', ARGV[6] .. 'z:' .. old, id)
  redis.call('HDEL', ARGV[6] .. 'since:' .. old, id)
  redis.call('HDEL', ARGV[6] .. 'beat:' .. old, id)
  redis.call('HDEL', ARGV[6] .. 'seat:' .. old, id)
end
redis.call('ZADD', KEYS[3], ARGV[3], id)
local since = ARGV[7] ~= '' and ARGV[7] or ARGV[4]
if old == queue then
  redis.call('HSETNX', KEYS[4], id, since)
else
  redis.call('HSET', KEYS[4], id, since)
end
redis.call('HSET', KEYS[5], id, ARGV[4])
redis.call('HSET', KEYS[6], id, ARGV[5])
redis.call('HSET', KEYS[1], id, queue)
redis.call('SADD', KEYS[2], queue)
redis.call('DEL', KEYS[7])
return tonumber(redis.call('HGET', KEYS[4], id))
"""
_LEAVE_LUA = """
-- KEYS: 1 who; ARGV: 1 identity, 2 key prefix. Returns 1 if it was queued.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 0 end
redis.call('ZREM', ARGV[2] .. 'z:' .. old, ARGV[1])
redis.call('HDEL', ARGV[2] .. 'since:' .. old, ARGV[1])
redis.call('HDEL', ARGV[2] .. 'beat:' .. old, ARGV[1])
redis.call('HDEL', ARGV[2] .. 'seat:' .. old, ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""
_POLL_LUA = """
-- KEYS: 1 who, 2 the identity's match record; ARGV: 1 identity, 2 now ms, 3 key prefix
-- Returns {'q', queue, join ms} (heartbeat refreshed), {'m', match record} or {'i'}.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  redis.call('HSET', ARGV[3] .. 'beat:' .. old, ARGV[1], ARGV[2])
  return {'q', old, redis.call('HGET', ARGV[3] .. 'since:' .. old, ARGV[1]) or ARGV[2]}
end
local match = redis.call('GET', KEYS[2])
if match then return {'m', match} end
return {'i'}
"""
_TAKE_LUA = """
-- KEYS: 1 who, 2 zset, 3 since, 4 beat, 5 seat, 6.. each member's match record
-- ARGV: 1 queue, 2 pending lifetime ms, 3.. the members. All of them or none.
local n = #ARGV - 2
for i = 1, n do
  if redis.call('HGET', KEYS[1], ARGV[i + 2]) ~= ARGV[1] then return 0 end
end
for i = 1, n do
  local id = ARGV[i + 2]
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  redis.call('HDEL', KEYS[5], id)
  redis.call('HDEL', KEYS[1], id)
  redis.call('SET', KEYS[5 + i], 'pending', 'PX', tonumber(ARGV[2]))
end
return 1
"""
_DROP_LUA = """
-- KEYS: 1 who, 2 zset, 3 since, 4 beat, 5 seat, 6 queues; ARGV: 1 queue, 2 cutoff ms,
-- 3.. members. Drops each member whose heartbeat is still older than the cutoff; forgets the
-- queue once it is empty. Returns how many were dropped.
local dropped = 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local beat = tonumber(redis.call('HGET', KEYS[4], id) or '0')
  local mine = redis.call('HGET', KEYS[1], id) == ARGV[1]
  if beat < tonumber(ARGV[2]) then
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    redis.call('HDEL', KEYS[5], id)
    if mine then redis.call('HDEL', KEYS[1], id) end
    dropped = dropped + 1
  end
end
if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SREM', KEYS[6], ARGV[1]) end
return dropped
"""
_RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


# ---- names and keys ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Queue:
    preset: str
    players: int
    rated: bool

    @property
    def name(self) -> str:
        return f"{self.preset}:{self.players}:{'r' if self.rated else 'c'}"

    @classmethod
    def parse(cls, name: str) -> Queue | None:
        preset, _, rest = name.partition(":")
        count, _, kind = rest.partition(":")
        if preset not in engine.PRESETS or count not in ("2", "3", "4") or kind not in "rc" \
                or len(kind) != 1:
            return None
        return cls(preset, int(count), kind == "r")

    def key(self, field: str) -> str:
        return f"{PREFIX}{field}:{self.name}"

    @property
    def keys(self) -> list[str]:
        """zset, since, beat, seat."""
        return [self.key(field) for field in FIELDS]


def match_key(identity: str) -> str:
    """The identity's match record: ``pending``, then ``{"table", "seat", "token"}`` JSON."""
    return f"{PREFIX}match:{identity}"


def lease_key(queue: str) -> str:
    return f"{PREFIX}lease:{queue}"


def window(settings: Settings, waited_ms: float) -> int:
    """The rating window of an entry that has waited ``waited_ms``: points either side."""
    return round(settings.quickplay_window
                 + settings.quickplay_widen * max(0.0, waited_ms) / 1000)


def guest_name(identity: str) -> str:
    """The name a guest's quick-play seat shows when it gave none: "Guest 0042", stable per
    guest (from its key, which never leaves the server: four digits cannot be traced back)."""
    return f"Guest {int(identity[2:10] or '0', 16) % 10000:04d}"


def now_ms() -> int:
    return int(time.time() * 1000)


# ---- the scripts ------------------------------------------------------------------------------

class Scripts:
    """The Lua scripts above, registered on one client."""

    def __init__(self, client: redis.asyncio.Redis) -> None:
        self.redis = client
        self.join = client.register_script(_JOIN_LUA)
        self.leave = client.register_script(_LEAVE_LUA)
        self.poll = client.register_script(_POLL_LUA)
        self.take = client.register_script(_TAKE_LUA)
        self.drop = client.register_script(_DROP_LUA)
        self.release = client.register_script(_RELEASE_LUA)


_SCRIPTS: dict[int, Scripts] = {}


def scripts(client: redis.asyncio.Redis) -> Scripts:
    found = _SCRIPTS.get(id(client))
    if found is None or found.redis is not client:
        found = _SCRIPTS[id(client)] = Scripts(client)
    return found


async def enqueue(client: redis.asyncio.Redis, queue: Queue, identity: str, rating: int,
                  seat: Mapping[str, Any], *, since: int | None = None,
                  requeue: bool = False) -> int:
    """Put ``identity`` in ``queue`` (leaving any other): its join time, -1 while a table is
    being set up for it, -2 a requeue refused (it joined a queue meanwhile)."""
    s = scripts(client)
    result = await s.join(
        keys=[WHO, QUEUES, *queue.keys, match_key(identity)],
        args=[identity, queue.name, rating, now_ms(), json.dumps(dict(seat)), PREFIX,
              "" if since is None else since, "1" if requeue else "0"])
    return int(result)


# ---- HTTP ---------------------------------------------------------------------------------------

def _bad(message: str) -> Rejected:
    return Rejected("bad_request", message, status=400)


def parse_request(body: Mapping[str, Any]) -> tuple[Queue, str | None]:
    """The queue a ``POST /api/quickplay`` body asks for, and its optional seat name."""
    unknown = sorted(str(k) for k in body if k not in REQUEST_FIELDS)
    if unknown:
        raise _bad(f"unknown field {unknown[0]!r}")
    preset = body.get("preset")
    if not isinstance(preset, str):
        raise _bad('"preset" must be a preset name')
    if preset not in engine.PRESETS:
        raise Rejected("unknown_preset", f"no preset {preset!r}", status=400)
    count = body.get("players")
    if not isinstance(count, int) or isinstance(count, bool) \
            or not PLAYERS[0] <= count <= PLAYERS[1]:
        raise _bad('"players" must be 2, 3 or 4')
    rated = body.get("rated", False)
    if not isinstance(rated, bool):
        raise _bad('"rated" must be true or false')
    try:
        family_of(preset, count)
    except engine.EngineError as exc:
        raise Rejected("invalid_option", exc.message, status=400) from exc
    name = body.get("name")
    return Queue(preset, count, rated), None if name is None else clean_player_name(name)


def busy(tables: Sequence[Mapping[str, Any]]) -> bool:
    """Whether one of ``tables`` (`TableService.seated`) is in play with a real-time clock."""
    for table in tables:
        clock = table.get("clock")
        if table.get("status") == "playing" and isinstance(clock, Mapping) \
                and clock.get("kind") == "realtime":
            return True
    return False


async def _seat_of(state: AppState, identity: Identity, queue: Queue,
                   name: str | None) -> tuple[int, dict[str, Any]]:
    """(the entry's rating, what its seat will show): an account's rating in the family
    (1500 without one), a guest's 1500 and the name it gave (or `guest_name`)."""
    if identity.guest:
        return DISPLAY_BASE, {"name": name or guest_name(identity.key), "player": None}
    family = family_of(queue.preset, queue.players)
    shown = await players.shown_player(identity, family, pool(state))
    return int(shown["rating"]), {"name": shown["name"], "player": shown}


async def join_queue(request: Request) -> Response:
    """``POST /api/quickplay``: join (or refresh) a queue."""
    changing(request)
    queue, name = parse_request(await read_json(request))
    state = app_state(request.app)
    settings = state.settings
    visitor = await Visitor.of(request)
    identity = visitor.identity
    if name is not None and identity.guest:
        await players.not_an_accounts_name(state.postgres, name)
    if queue.rated and identity.guest:
        if identity.unchecked:
            raise unavailable_accounts()
        raise Rejected("account_required", "log in to play rated games", status=403)
    count, left = await state.service.store.hit(f"quickplay:{identity.key}", 60)
    if count > settings.quickplay_rate:
        raise Rejected("rate_limited", "too many quick-play requests; try again later",
                       status=429, retry_after=left)
    await charge_join(request, client_owner(request.client))  # each entry may become a seat
    tables = await state.service.seated(identity.key)
    if busy(tables):
        raise Rejected("busy_elsewhere", "you are playing a real-time game already",
                       status=409)
    limit = settings.max_tables_per_player
    if len(tables) >= limit:
        raise Rejected("too_many_tables", f"you already sit at {limit} tables", status=429)
    rating, seat = await _seat_of(state, identity, queue, name)
    since = await enqueue(state.redis, queue, identity.key, rating, seat)
    if since == -1:
        raise Rejected("busy_elsewhere", "a quick-play table is being set up for you",
                       status=409)
    body = {"queued": True, "since": since, "window": window(settings, now_ms() - since)}
    return visitor.respond(request, JSONResponse(body, status_code=202))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def poll_queue(request: Request) -> Response:
    """``GET /api/quickplay``: queued, matched or idle; refreshes the entry's heartbeat."""
    state = app_state(request.app)
    visitor = await Visitor.of(request)
    key = visitor.identity.key
    answer = await scripts(state.redis).poll(keys=[WHO, match_key(key)],
                                             args=[key, now_ms(), PREFIX])
    kind = _text(answer[0])
    body: dict[str, Any]
    if kind == "q":
        queue = Queue.parse(_text(answer[1]))
        since = int(_text(answer[2]))
        body = {"status": "queued", "since": since,
                "window": window(state.settings, now_ms() - since)}
        if queue is not None:
            body.update(preset=queue.preset, players=queue.players, rated=queue.rated)
    elif kind == "m" and answer[1] == PENDING:
        body = {"status": "matching"}
    elif kind == "m":
        match = json.loads(_text(answer[1]))
        body = {"status": "matched", "table": match["table"], "seat": match["seat"],
                "token": match["token"], "since": match["since"], "matched": match["matched"]}
    else:
        body = {"status": "idle"}
    return visitor.respond(request, JSONResponse(body))


async def leave_queue(request: Request) -> Response:
    """``DELETE /api/quickplay``: leave the queue (nothing to leave is fine)."""
    changing(request)
    state = app_state(request.app)
    visitor = await Visitor.of(request)
    await scripts(state.redis).leave(keys=[WHO], args=[visitor.identity.key, PREFIX])
    return visitor.respond(request, Response(status_code=204))


# ---- the matcher --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Entry:
    identity: str
    rating: float
    since: int
    beat: int
    seat: dict[str, Any]


def _group_fits(group: Sequence[Entry], windows: Mapping[str, int]) -> bool:
    """Every member sees every other within its own window."""
    low = min(e.rating for e in group)
    high = max(e.rating for e in group)
    return all(max(e.rating - low, high - e.rating) <= windows[e.identity] for e in group)


def find_groups(entries: Sequence[Entry], size: int, settings: Settings, now: int, *,
                bots: bool) -> list[list[Entry]]:
    """The groups to seat now, oldest entry first: each a full group of ``size`` whose members
    all fit each other's windows, or (``bots``: a casual queue) the entry that has waited
    ``QUICKPLAY_BOT_AFTER_S`` with whoever fits it, the other seats to be bots."""
    windows = {e.identity: window(settings, now - e.since) for e in entries}
    by_rating = sorted(entries, key=lambda e: e.rating)
    ratings = [e.rating for e in by_rating]
    taken: set[str] = set()
    groups: list[list[Entry]] = []
    bot_after_ms = settings.quickplay_bot_after_s * 1000
    for oldest in sorted(entries, key=lambda e: (e.since, e.identity)):
        if oldest.identity in taken:
            continue
        reach = windows[oldest.identity]
        low = bisect.bisect_left(ratings, oldest.rating - reach)
        high = bisect.bisect_right(ratings, oldest.rating + reach)
        near = [e for e in by_rating[low:high] if e.identity not in taken
                and e.identity != oldest.identity
                and abs(e.rating - oldest.rating) <= windows[e.identity]]
        near.sort(key=lambda e: (abs(e.rating - oldest.rating), e.since))
        group = [oldest]
        for candidate in near:
            if len(group) == size:
                break
            if _group_fits([*group, candidate], windows):
                group.append(candidate)
        if len(group) == size or (bots and now - oldest.since >= bot_after_ms):
            groups.append(group)
            taken.update(e.identity for e in group)
    return groups


class Matcher:
    """One process's matcher: every ``QUICKPLAY_TICK_S`` each queue whose lease it wins."""

    def __init__(self, state: AppState, process_id: str) -> None:
        self.state = state
        self.settings = state.settings
        self.redis = state.redis
        self.service = state.service
        self.process_id = process_id
        self.scripts = scripts(state.redis)
        self.rng = random.SystemRandom()

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except (RedisError, OSError, Rejected) as exc:
                log.warning("quick play: %s", exc)
            except Exception:  # a bug here must not take the process's other loops down
                log.exception("quick play: the matcher failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.quickplay_tick_s)

    async def tick(self) -> int:
        """One look at every queue; returns how many groups were seated."""
        names = [_text(name) for name in await self.redis.smembers(QUEUES)]
        self.rng.shuffle(names)
        seated = 0
        for name in names:
            queue = Queue.parse(name)
            if queue is None:
                await self.redis.srem(QUEUES, name)
                continue
            lease = lease_key(name)
            if not await self.redis.set(lease, self.process_id, nx=True, px=LEASE_MS):
                continue
            try:
                seated += await self.match(queue)
            finally:
                await self.scripts.release(keys=[lease], args=[self.process_id])
        return seated

    async def entries(self, queue: Queue) -> list[Entry]:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrange(queue.key("z"), 0, -1, withscores=True)
            for field in FIELDS[1:]:
                pipe.hgetall(queue.key(field))
            members, since, beat, seat = await pipe.execute()
        found = []
        for member, score in members:
            if member not in since:
                continue
            try:
                shown = json.loads(_text(seat.get(member, b"{}")))
            except ValueError:
                shown = {}
            found.append(Entry(_text(member), float(score), int(since[member]),
                               int(beat.get(member, 0)), shown))
        return found

    async def match(self, queue: Queue) -> int:
        now = now_ms()
        entries = await self.entries(queue)
        cutoff = now - round(self.settings.quickplay_stale_s * 1000)
        stale = [e.identity for e in entries if e.beat < cutoff]
        await self.scripts.drop(keys=[WHO, *queue.keys, QUEUES],
                                args=[queue.name, cutoff, *stale])
        live = [e for e in entries if e.beat >= cutoff]
        groups = find_groups(live, queue.players, self.settings, now, bots=not queue.rated)
        taken = []
        pending_ms = round(self.settings.quickplay_match_ttl_s * 1000)
        for group in groups:
            ids = [e.identity for e in group]
            ok = await self.scripts.take(keys=[WHO, *queue.keys, *map(match_key, ids)],
                                         args=[queue.name, pending_ms, *ids])
            if ok:
                taken.append(group)
        results = await asyncio.gather(*(self.seat(queue, group) for group in taken),
                                       return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.warning("quick play: seating failed: %r", result)
        return sum(1 for result in results if result is True)

    async def seat(self, queue: Queue, group: Sequence[Entry]) -> bool:
        """Create the group's table, seat every member (random seats; bots in the seats
        left) and leave each its match record. Members not seated go back to the queue."""
        seats = list(range(queue.players))
        self.rng.shuffle(seats)
        request: dict[str, Any] = {"rules": queue.preset, "players": queue.players,
                                   "rated": queue.rated, "name": TABLE_NAME, "clock": CLOCK}
        bot_seats = seats[len(group):]
        if bot_seats:
            request["bots"] = {str(s): BOT_LEVEL for s in bot_seats}
        done: list[str] = []
        try:
            table_id = str((await self.service.create(request))["id"])
            for entry, seat in zip(group, seats, strict=False):
                player = entry.seat.get("player")
                name = str(entry.seat.get("name") or guest_name(entry.identity))
                _, token = await self.service.join(table_id, seat, name, None,
                                                   owner=entry.identity, player=player)
                record = json.dumps({"table": table_id, "seat": seat, "token": token,
                                     "since": entry.since, "matched": now_ms()})
                await self.redis.set(match_key(entry.identity), record,
                                     px=round(self.settings.quickplay_match_ttl_s * 1000))
                done.append(entry.identity)
                player_id = player_of(entry.identity)
                if player_id is not None:
                    with contextlib.suppress(RedisError):
                        await inbox.publish(self.redis, player_id,
                                            {"t": "matched", "table": table_id, "seat": seat})
        except (Rejected, RedisError, OSError):
            for entry in group:
                if entry.identity not in done:
                    with contextlib.suppress(RedisError, OSError):
                        await self.redis.delete(match_key(entry.identity))
                        await enqueue(self.redis, queue, entry.identity, round(entry.rating),
                                      entry.seat, since=entry.since, requeue=True)
            raise
        return True


async def run(state: AppState, process_id: str, stop: asyncio.Event) -> None:
    """The matcher loop of one process (server.app's lifespan)."""
    await Matcher(state, process_id).run(stop)
