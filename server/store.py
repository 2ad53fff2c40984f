"""Redis layout of the tables and the atomic commit; knows bytes and versions, not games.

Per table (every key shares the hash tag ``{<id>}``, so a table lives in one cluster slot):

- ``t:{id}:v``       version (integer, 0 = no table)
- ``t:{id}:state``   state blob (msgpack, written by server.tables), followed by the moves
                     appended to it since it was written whole (each one msgpack value)
- ``t:{id}:meta``    summary blob (msgpack) for the lobby, readable without the state; it has
                     no version (read the version key beside it): a commit that changes
                     nothing it shows leaves it alone
- ``t:{id}:tok``     hash seat -> sha256 hex of that seat's token (never the token); field
                     ``invite`` -> sha256 hex of a private table's invite code
- ``t:{id}:log``     stream, one entry per version with id ``0-<version>``; fields are
                     audience -> encoded diff frame, and ``!tok`` -> the seat (or ``invite``)
                     whose token that version changed
- ``t:{id}:cid``     hash ``<seat>:<client id>`` -> version accepted for that client message id;
                     field ``!seats`` -> the seat changes (joins, leaves, seats freed, new
                     tokens) the table has had (server.tables ``max_seat_changes``)
- ``t:{id}:lease``   short lease of the process acting on a deadline (own expiry, never the
                     table's lifetime: a lease left by a crashed process must still run out)
- ``t:{id}:seen``    hash seat -> ms up to which that seat is known to have had a connection
                     (its join, then the hub on attach, refresh and detach)
- ``t:{id}:owner``   who created the table (server.fairness.owner_key of the address)
- ``t:{id}:transcript``, ``t:{id}:replay``  the finished game's renderings (JSON, gzip),
                     computed once
- ``{id}:chat``      list of the recent chat frames (at most RECENT_CHAT)
- ``{id}:presence``  hash ``<process>:<connection>`` -> ``<seat>:<expiry ms>``, one field per
                     seat socket over every process (renewed by its hub)
- ``{id}:claim:<seat>``  counter: the number of the newest connection of that seat (an older
                     connection of the seat is replaced)
- ``{id}:watchers``  zset ``<process>:<connection>`` -> expiry ms of the table's spectator
                     sockets over every process (server.crowd; own expiry, renewed with
                     presence)
- ``{id}:chatbudget:p``, ``{id}:chatbudget:s``  hashes ``tokens``, ``stamp``: the chat token
                     buckets of the players and of the spectators (server.crowd; own expiry)
- ``{id}:rematch``   hash, own expiry (server.tables REMATCH_TTL_S, 10 minutes from when the
                     rematch table was made): ``table`` -> the rematch table's id, ``invite``
                     -> its invite code ("" for a public table), ``<seat>`` -> the token of
                     the seat reserved at the rematch table for this table's ``<seat>``
                     (handed to whoever holds this table's seat token, `rematch_seat`)
- ``{id}:rematch:lock``  short lock (30 s) of the one request making the rematch table
- channel ``t:{id}:n`` one notice per commit: msgpack ``[version, {audience: frame}, the seat
  or ``invite`` whose token it changed, or nil, the state blob or (frames and state over
  ``NOTICE_FRAMES_MAX`` bytes, or a commit that appended a move) nil]``, and after them, when
  the commit appended a move to the state, that move: ``[..., nil, move]`` (built by the
  commit script, whose msgpack writes
  strings and bytes alike as msgpack str: `committed_notice` reads it), or (frames over
  ``NOTICE_FRAMES_MAX`` bytes) the bare new version as ASCII digits
- channel ``{id}:live`` msgpack maps ``{"k": "chat", "f": frame}``, ``{"k": "presence"}``,
                     ``{"k": "claim", "seat": seat, "n": number}`` (no version)
  (Both channels carry the table's hash tag: on Redis Cluster they are shard channels of the
  table's slot, SPUBLISH / SSUBSCRIBE; on a single Redis classic PUBLISH / SUBSCRIBE.)

Lifetime: every key of a table gets the lifetime its commit gives it, all at once (the commit
script sets it on each): a waiting table expires if nobody joins for ``WAITING_TTL``, a playing
one is kept (set by the commit that starts the game; later moves leave it), a finished one is
kept for ``RETENTION`` and then disappears whole. The keys written outside a commit
(``TableKeys.companions``) take the version key's lifetime when written, in one script with
the check that the table still exists (nothing is written of a gone table, or what was is
deleted: `share_lifetime`); ``watchers``, ``chatbudget`` and ``lease`` have lifetimes of their
own.

Global keys, each touched by single-key commands only: ``lobby:open`` and ``lobby:playing``
(zsets id -> created ms of the public tables waiting for players and playing; a finished
table leaves both at once), ``deadlines`` (zset ``<id>:<version>`` -> due ms), the quota
counters ``quota:<name>`` (server.quotas: ``quota:create:<owner>``, ``quota:join:<owner>``)
and zsets ``quota:waiting:<owner>`` (the tables an owner created that may still wait for
players), and ``archive:pending`` (list of the finished games not yet in the PostgreSQL archive,
server.archive; a table whose game is waiting for the archive is kept without expiry and gets
its ``RETENTION`` once archived). Channel ``dominoes:processes`` (``PROCESS_CHANNEL``): every
process's hub subscribes to it first. ``seated:<identity>`` (zset id -> ms the seat was
taken): the tables an account (``p:<id>``) or guest (``g:<hash>``) sits at (server.identity;
a table is dropped when the identity's seat there is left or freed, a guest's when its game
ends (server.tables), and entries of tables left, finished or gone when read; emptied, the key
is gone, else it expires ``SEATED_KEEP_S``, 90 days,
after it was last written or read (a guest's: after its last seat taken at a game in play or
its game's start; while its tables all wait, with them, `add_seated`)).
Channel ``inbox:<player id>``: a player's notices (server.inbox). ``online:<player id>``
(hash process id -> expiry ms, the key expiring with its newest entry): the processes holding
a ``/ws/me`` socket of the player, each entry renewed while it does (server.inbox; "online" =
an entry not expired).
Fixed windows of server.social in ``quota:<name>`` (`Store.hit`): ``quota:msg:<player id>``,
``quota:invite:<player id>``, ``quota:follow:<player id>``. Counters of
server.accounts (fixed windows, own expiry): ``login:fail:a:<name>``,
``login:fail:ip:<address>``, ``register:ip:<address>``.

Quick play (server.matchmaking), every key under the one hash tag ``{qp}`` (one cluster slot,
so each of its scripts is atomic), per queue ``<q>`` = ``<preset>:<players>:<r|c>``:
``qp:{qp}:z:<q>`` (zset identity -> rating), ``qp:{qp}:since:<q>``, ``qp:{qp}:beat:<q>``
(hashes identity -> ms of the join, of the last POST or poll), ``qp:{qp}:seat:<q>`` (hash
identity -> JSON of what its seat will show); ``qp:{qp}:queues`` (set of the queues that may
have entries), ``qp:{qp}:who`` (hash identity -> its one queue), ``qp:{qp}:lease:<q>`` (the
matcher's short lease of a queue, ``SET NX PX``) and ``qp:{qp}:match:<identity>`` (``pending``
while its table is set up, then JSON ``{"table", "seat", "token", "since", "matched"}``, the
seat token kept only
here; expires after ``QUICKPLAY_MATCH_TTL_S``). Queue joins are counted in
``quota:quickplay:<identity>`` (`Store.hit`).

Imports no other project module; must not import engine.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import functools
import hashlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, ParamSpec, TypeVar

import msgpack
import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError

from server.redis_link import CommitLink

LOBBY = {"waiting": "lobby:open", "playing": "lobby:playing"}  # status -> index
DEADLINES = "deadlines"
ANNOUNCE_BATCH = 500  # tables announced per pipeline (Store.announce)
PROCESS_CHANNEL = "dominoes:processes"  # every hub subscribes to it (before any table)
SEATED_KEEP_S = 90 * 86400  # a seated:<identity> key nobody touches for this long expires
ARCHIVE_QUEUE = "archive:pending"  # list of "<id> <ended ms>" or "<id>" (server.archive)
TABLE_ID = re.compile(r"^[a-z0-9]{4,24}$")

_COMMIT_LUA = (Path(__file__).parent / "lua" / "commit.lua").read_text()
_RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_ACCESS_LUA = """
return {redis.call('GET', KEYS[1]) or '0', redis.call('HGETALL', KEYS[2])}
"""
_CHAT_LUA = """
-- KEYS: 1 seat-token hashes, 2 recent chat list, 3 version; ARGV: 1 seat ("" = a spectator),
-- 2 that seat's token hash, 3 chat frame, 4 lines kept, 5 live channel, 6 live message,
-- 7 "1" to publish it as a shard channel message (SPUBLISH: Redis Cluster)
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local ttl = redis.call('PTTL', KEYS[3])
if ttl == -2 or ttl == 0 then return 2 end  -- gone, or going within this millisecond
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call(ARGV[7] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[5], ARGV[6])
return 1
"""
_HIT_LUA = """
-- KEYS: 1 a counter; ARGV: 1 its window in seconds. Returns {count in the window, seconds left}
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1])) end
return {n, redis.call('TTL', KEYS[1])}
"""
_SHARE_LUA = """
-- KEYS: 1 version, 2.. keys that take its lifetime (no expiry when it has none; deleted when
-- there is no such table -- it expired, or expires within this millisecond (PTTL 0) -- and
-- what was written of it since goes with it)
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 or ttl == 0 then
  redis.call('DEL', unpack(KEYS, 2))
  return -2
end
for i = 2, #KEYS do
  if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
end
return ttl
"""
_SEATED_LUA = """
-- KEYS: 1 a seated:<identity> list; ARGV: 1 the table (listed unless it is: its time kept),
-- 2 the ms its seat was taken, 3 the least lifetime (ms) the list now needs: it is lengthened
-- to that, never shortened
redis.call('ZADD', KEYS[1], 'NX', ARGV[2], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
"""
_KEEP_LUA = """
-- KEYS: 1 version, 2 a key of the table written outside a commit; ARGV: 1 its value. Only for
-- a table that exists: the key takes its lifetime. Returns 0 when there is no such table (or
-- it expires within this millisecond: PTTL 0).
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 or ttl == 0 then return 0 end
if ttl > 0 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
else
  redis.call('SET', KEYS[2], ARGV[1])
end
return 1
"""
_SEEN_LUA = """
-- KEYS: 1 version, 2 seen hash; ARGV: seat, ms pairs. Only for a table that exists; the hash
-- takes the table's lifetime (a table expiring within this millisecond, PTTL 0, is gone).
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 or ttl == 0 then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV))
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) else redis.call('PERSIST', KEYS[2]) end
return 1
"""
_REFRESH_LUA = """
-- KEYS: 1 version, 2 presence hash, 3 seen hash; ARGV: 1 number of presence fields n, then n
-- field, value pairs, then seat, ms pairs. Only for a table that exists: both hashes take its
-- lifetime. Returns 0 when there is no such table, or it expires within this millisecond
-- (PTTL 0): nothing written.
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 or ttl == 0 then return 0 end
local n = tonumber(ARGV[1])
local written = {}
if n > 0 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 2, 1 + 2 * n))
  written[#written + 1] = KEYS[2]
end
if #ARGV > 1 + 2 * n then
  redis.call('HSET', KEYS[3], unpack(ARGV, 2 + 2 * n))
  written[#written + 1] = KEYS[3]
end
for _, key in ipairs(written) do
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) else redis.call('PERSIST', key) end
end
return 1
"""
_RETAIN_LUA = """
-- KEYS: every key of a table; ARGV: 1 lifetime in ms. Only for a table kept without expiry
-- (a finished game waiting for its archive): each key gets the lifetime, once.
if redis.call('PTTL', KEYS[1]) ~= -1 then return 0 end
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1])) end
return 1
"""
_ANNOUNCE_LUA = """
-- KEYS: 1 version; ARGV: 1 notice channel. Publish the version, if the table exists
local v = redis.call('GET', KEYS[1])
if v then redis.call('PUBLISH', ARGV[1], v) end
return v and 1 or 0
"""
_RESCHEDULE_LUA = """
-- move a deadline member from one version to the next in the one zset
if ARGV[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
if ARGV[2] ~= '' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2]) end
return 1
"""


P = ParamSpec("P")
R = TypeVar("R")


def reconnecting(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Run once more after a connection error: a restarted Redis leaves dead connections in the
    pool, and the first command on each fails. Safe for the commit too: a commit that did land
    answers "stale" or "dup" the second time, never applies twice."""

    @functools.wraps(method)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except RedisConnectionError:
            await asyncio.sleep(0.05)
            return await method(*args, **kwargs)

    return wrapper


@dataclass(frozen=True, slots=True)
class TableKeys:
    """The Redis key names of one table."""

    table_id: str

    def _key(self, name: str) -> str:
        return f"t:{{{self.table_id}}}:{name}"

    @property
    def version(self) -> str:
        return self._key("v")

    @property
    def state(self) -> str:
        return self._key("state")

    @property
    def meta(self) -> str:
        return self._key("meta")

    @property
    def tokens(self) -> str:
        return self._key("tok")

    @property
    def stream(self) -> str:
        return self._key("log")

    @property
    def lease(self) -> str:
        return self._key("lease")

    @property
    def channel(self) -> str:
        return self._key("n")

    @property
    def chat(self) -> str:
        """List of the recent chat frames."""
        return f"{{{self.table_id}}}:chat"

    @property
    def live(self) -> str:
        """Channel of chat, presence and seat claims (no version)."""
        return f"{{{self.table_id}}}:live"

    @property
    def seen(self) -> str:
        return self._key("seen")

    @property
    def owner(self) -> str:
        return self._key("owner")

    @property
    def clients(self) -> str:
        """Hash ``<seat>:<client id>`` -> the version that client message was accepted as."""
        return self._key("cid")

    @property
    def presence(self) -> str:
        return f"{{{self.table_id}}}:presence"

    def claim(self, seat: int) -> str:
        return f"{{{self.table_id}}}:claim:{seat}"

    @property
    def watchers(self) -> str:
        """Zset of the table's spectator sockets over every process (server.crowd)."""
        return f"{{{self.table_id}}}:watchers"

    def chat_budget(self, spectators: bool) -> str:
        """Token bucket of the spectators' (or the players') chat lines (server.crowd)."""
        return f"{{{self.table_id}}}:chatbudget:{'s' if spectators else 'p'}"

    @property
    def transcript(self) -> str:
        """The finished game's transcript, JSON, computed once."""
        return self._key("transcript")

    @property
    def replay(self) -> str:
        """The finished game's replay views, JSON, computed once."""
        return self._key("replay")

    @property
    def written(self) -> list[str]:
        """The keys a commit may write, in the order the commit script takes them."""
        return [self.version, self.state, self.stream, self.tokens, self.meta, self.clients]

    @property
    def every(self) -> list[str]:
        """Every key of the table, in the order the commit script takes them."""
        return [*self.written, *self.companions]

    @property
    def companions(self) -> list[str]:
        """The table's keys besides those its commit writes: they share its lifetime."""
        return [self.chat, self.presence, *(self.claim(seat) for seat in range(4)), self.seen,
                self.owner, self.transcript, self.replay]


@functools.lru_cache(maxsize=4096)
def _commit_keys(table_id: str) -> tuple[tuple[str, ...], str]:
    """(`TableKeys.written`, `TableKeys.channel`) of a table, named once for its commits."""
    keys = TableKeys(table_id)
    return tuple(keys.written), keys.channel


INVITE_FIELD = "invite"
SEAT_CHANGES_FIELD = "!seats"  # of a table's client ids: the seat changes it has had
TOKEN_MARK = b"!tok"
_META_MATCH = TableKeys("*").meta  # every table's meta key, for SCAN
_META_PREFIX, _, _META_SUFFIX = _META_MATCH.partition("*")


class CommitResult(NamedTuple):
    """``ok``: committed as ``version``; ``stale``: the table is at ``version``;
    ``dup``: that client id was already accepted as ``version``; ``revoked``: the seat's token
    is no longer the one required; ``closed``: the table has had the seat changes it takes
    (`Store.commit` ``seat_changes``). Besides ``ok`` and ``dup``, nothing was written and the
    table is at ``version``."""

    outcome: Literal["ok", "stale", "dup", "revoked", "closed"]
    version: int


class Frames(list[tuple[int, bytes]]):
    """One audience's frames, in version order. ``revoked_at``: the last of these versions that
    changed this audience's seat token (a socket that authenticated before it must not be
    shown it), or None."""

    revoked_at: int | None = None


async def sharded_pubsub(client: redis.asyncio.Redis) -> bool:
    """Whether a table's notices should be shard channel messages: on a Redis Cluster whose
    every primary runs Redis 7 or newer (SPUBLISH and SSUBSCRIBE came with 7.0). A single
    Redis, an older cluster or one whose versions cannot be read: classic pub/sub, which a
    cluster broadcasts to every node."""
    if not isinstance(client, RedisCluster):
        return False
    try:
        found = await client.info("server", target_nodes=RedisCluster.PRIMARIES)
    except (RedisError, OSError):
        return False
    infos = list(found.values()) if isinstance(found, dict) and "redis_version" not in found \
        else [found]
    versions = [str(info.get("redis_version", "0")) for info in infos if isinstance(info, dict)]
    return bool(versions) and all(int(v.split(".")[0]) >= 7 for v in versions)


def token_hash(token: str) -> str:
    """What is stored of a seat token or invite code: its SHA-256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def as_bytes(value: Any) -> bytes:
    """A reply as bytes (replies are bytes; str only if the client decodes)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def quota_key(name: str) -> str:
    """A fixed-window quota counter (server.quotas names them ``create:<owner>`` ...)."""
    return f"quota:{name}"


def player_key(player_id: int) -> str:
    """The identity key of an account (server.identity): ``p:<id>``."""
    return f"p:{player_id}"


def player_of(key: str | None) -> int | None:
    """The account id of an identity key, or None for a guest's (``g:<hash>``) or no key."""
    if key is None or not key.startswith("p:") or not key[2:].isdigit():
        return None
    return int(key[2:])


def inbox_channel(player_id: int) -> str:
    """The channel of a player's inbox (server.inbox)."""
    return f"inbox:{player_id}"


def online_key(player_id: int) -> str:
    """The hash of the processes holding a player's ``/ws/me`` sockets (server.inbox)."""
    return f"online:{player_id}"


def rematch_key(table_id: str) -> str:
    """The hash of a finished table's rematch: the new table and its reserved seat tokens."""
    return f"{{{table_id}}}:rematch"


def rematch_lock_key(table_id: str) -> str:
    return f"{{{table_id}}}:rematch:lock"


class CommitNotice(NamedTuple):
    """What a commit's notice carries besides its version: every audience's frame, the seat
    (or ``invite``) whose token it changed, and the new state blob (None from a process that
    did not send it)."""

    version: int
    frames: dict[str, bytes]
    token_field: str | None
    state: bytes | None
    move: bytes | None = None  # the move appended to the version before's state, if so


def committed_notice(data: object) -> CommitNotice | None:
    """The `CommitNotice` of a notice that carries its frames, or None for a bare version (or
    anything unreadable)."""
    if not isinstance(data, bytes) or data[:1].isdigit():
        return None
    try:
        version, frames, field, *rest = msgpack.unpackb(data, raw=True)
        state = rest[0] if rest else None
        move = rest[1] if len(rest) > 1 else None
        if not isinstance(version, int) or isinstance(version, bool) \
                or not isinstance(frames, dict) \
                or not all(isinstance(k, bytes) and isinstance(f, bytes)
                           for k, f in frames.items()) \
                or not (field is None or isinstance(field, bytes)) \
                or not (state is None or isinstance(state, bytes)) \
                or not (move is None or isinstance(move, bytes)):
            return None
        return CommitNotice(version, {k.decode("ascii"): f for k, f in frames.items()},
                            None if field is None else field.decode("ascii"), state, move)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None


# The inbox's own notice, never relayed to a socket: some session of the player ended.
SESSIONS_ENDED = bytes(msgpack.packb({"t": "sessions_ended"}))


async def publish_sessions_ended(redis: redis.asyncio.Redis, player_id: int) -> None:
    """Tell the player's inbox on every process that sessions of the player ended."""
    await redis.publish(inbox_channel(player_id), SESSIONS_ENDED)


async def publish_notice(redis: redis.asyncio.Redis, player_id: int,
                         notice: Mapping[str, Any]) -> None:
    """Publish ``notice`` (a map with a string 't') on the player's inbox channel."""
    if not isinstance(notice.get("t"), str):
        raise ValueError("a notice is a map with a string 't'")
    await redis.publish(inbox_channel(player_id), bytes(msgpack.packb(dict(notice))))


def seated_key(identity: str) -> str:
    return f"seated:{identity}"


def waiting_key(owner: str) -> str:
    """Zset of the tables ``owner`` created that may still wait for players."""
    return f"quota:waiting:{owner}"


def deadline_member(table_id: str, version: int) -> str:
    return f"{table_id}:{version}"


def parse_deadline_member(member: bytes | str) -> tuple[str, int] | None:
    text = member.decode() if isinstance(member, bytes) else member
    table_id, _, version = text.rpartition(":")
    if not TABLE_ID.match(table_id) or not version.isdigit():
        return None
    return table_id, int(version)


def frames_of(
    audience: str, since: int, current: int, versions: list[int], entries: list[Any]
) -> Frames | None:
    """One audience's frames since+1..current out of the entries read, or None."""
    if since < 0 or since > current or current == 0:
        return None
    frames = Frames()
    expected = since + 1
    wanted = audience.encode()
    for index in range(bisect.bisect_left(versions, expected), len(entries)):
        version = versions[index]
        fields = entries[index][1]
        frame = fields.get(wanted)
        if version != expected or frame is None:
            return None
        frames.append((version, as_bytes(frame)))
        if fields.get(TOKEN_MARK) == wanted:
            frames.revoked_at = version
        expected += 1
    if expected <= current:
        return None
    return frames


class Store:
    """Thin async access to the layout above. The client must return bytes (the redis-py
    default, ``decode_responses=False``)."""

    def __init__(self, client: redis.asyncio.Redis, *, history_limit: int | None = None,
                 notice_frames_max: int = 16384) -> None:
        if client.get_connection_kwargs().get("decode_responses"):  # type: ignore[no-untyped-call]
            raise ValueError("the Redis client must be created with decode_responses=False")
        self.redis = client
        self.history_limit = history_limit
        self.cluster = isinstance(client, RedisCluster)
        # On a cluster a table's notices are shard channel messages (SPUBLISH), kept on the
        # primary of the table's slot instead of broadcast to every node (server.fanout.pubsub);
        # `sharded_pubsub` turns that off for a cluster older than Redis 7.
        self.sharded = self.cluster
        self.notice_frames_max = notice_frames_max
        self._commit = client.register_script(_COMMIT_LUA)
        # the move path's one command, on a pipelined link of its own (server.redis_link)
        self._link = CommitLink.of(client)
        self._release = client.register_script(_RELEASE_LUA)
        self._reschedule = client.register_script(_RESCHEDULE_LUA)
        self._access = client.register_script(_ACCESS_LUA)
        self._chat = client.register_script(_CHAT_LUA)
        self._share = client.register_script(_SHARE_LUA)
        self._seen = client.register_script(_SEEN_LUA)
        self._keep = client.register_script(_KEEP_LUA)
        self._seated = client.register_script(_SEATED_LUA)
        self._refresh = client.register_script(_REFRESH_LUA)
        self._hit = client.register_script(_HIT_LUA)
        self._retain = client.register_script(_RETAIN_LUA)
        self._announce = client.register_script(_ANNOUNCE_LUA)

    async def commit(
        self,
        table_id: str,
        expected: int,
        state: bytes,
        meta: bytes,
        frames: Mapping[str, bytes],
        *,
        client: tuple[int, str] | None = None,
        token: tuple[Literal["set", "del"], int | str, str] | None = None,
        require: tuple[int, str] | None = None,
        lifetime_ms: int | Literal["keep"] = 0,
        due_ms: int | Literal["keep"] | None = "keep",
        subscribed: bool | None = None,
        append: bool = False,
        seat_changes: tuple[int, Literal["refuse", "keep", ""]] | None = None,
    ) -> CommitResult:
        """Atomically: check that ``require`` (seat, token hash) still holds its seat and that
        the version is ``expected``, store state (with ``append``: append it to the stored
        state instead, a move of server.record `move_entry`) and meta (``b""``: unchanged), apply
        the token change (seat or ``INVITE_FIELD``), append the frames as stream entry
        ``0-<expected+1>``, remember the client id, give every key of the table
        ``lifetime_ms`` from now (0: no expiry; ``"keep"``: leave every key's lifetime as it
        is), publish the new version.
        ``expected=0`` creates the table.

        ``due_ms``: the new version's deadline entry (`schedule`) replaces the expected
        version's: due then, or none when None; ``"keep"`` leaves the deadlines alone. On a
        single Redis this is part of the same atomic step; on a cluster (the deadlines live in
        another slot) it follows a commit that landed, as a command of its own.

        ``subscribed``: on a single Redis, whether this process's own subscription to the
        table's notice channel is in effect (server.fanout.pubsub `Subscriber.begin_commit`); the
        notice is then published only if some other subscriber would read it. None (a cluster,
        or a caller that cannot tell): always published.

        ``seat_changes`` (cap, past): the commit changes a seat's token, and counts as one of
        the table's seat changes (``SEAT_CHANGES_FIELD`` of its client ids); once the table
        has had ``cap`` of them, ``past`` says what becomes of it: "refuse" (nothing written,
        outcome ``closed``), "keep" (made, every key's lifetime left as it is: the change
        renews nothing), "" (made as asked)."""
        written, channel = _commit_keys(table_id)
        token_op, token_seat, token_hash = token if token else ("", 0, "")
        required_seat, required_hash = require if require else ("", "")
        args: list[Any] = [
            expected, state, meta, channel, self.history_limit or 0,
            f"{client[0]}:{client[1]}" if client else "", token_op, token_seat, token_hash,
            required_seat, required_hash, -1 if lifetime_ms == "keep" else lifetime_ms,
            len(frames),
        ]
        for audience, frame in frames.items():
            args += [audience, frame]
        # the other keys are named only when their lifetimes are set
        table_keys = written if lifetime_ms == "keep" else TableKeys(table_id).every
        folded = due_ms != "keep" and not self.cluster
        if folded:
            old = deadline_member(table_id, expected) if expected else ""
            new = deadline_member(table_id, expected + 1) if isinstance(due_ms, int) else ""
            args += ["1", old, new, due_ms or 0]
            table_keys = [*table_keys, DEADLINES]
        else:
            args += ["0", "", "", 0]
        size = sum(map(len, frames.values()))
        carried = "" if size > self.notice_frames_max \
            else "2" if size + len(state) <= self.notice_frames_max else "1"
        args += [carried, "1" if self.sharded else "0",
                 "" if subscribed is None or self.cluster else int(subscribed),
                 "1" if append else ""]
        if seat_changes is not None:
            args += [seat_changes[0], seat_changes[1]]
        committed = await self._run_commit(table_keys, args)
        if committed.outcome == "ok" and due_ms != "keep" and not folded:
            await self.schedule(table_id, expected or None, expected + 1,
                                due_ms if isinstance(due_ms, int) else None)
        return committed

    def close(self) -> None:
        """Close the commit link (the client's own connections are the client's)."""
        if self._link is not None:
            self._link.close()

    @reconnecting
    async def _run_commit(self, keys: Sequence[str], args: list[Any]) -> CommitResult:
        if self._link is not None:
            result = await self._link.evalsha(self._commit.sha, _COMMIT_LUA, keys, args)
        else:
            result = await self._commit(keys=list(keys), args=args)
        outcome = result[0].decode() if isinstance(result[0], bytes) else str(result[0])
        assert outcome in ("ok", "stale", "dup", "revoked", "closed")
        return CommitResult(outcome, int(result[1]))  # type: ignore[arg-type]

    @reconnecting
    async def load(self, table_id: str) -> tuple[int, bytes] | None:
        """(version, state blob), read atomically; None when there is no such table."""
        keys = TableKeys(table_id)
        version, state = await self.redis.mget([keys.version, keys.state])
        if version is None or state is None:
            return None
        return int(version), as_bytes(state)

    @reconnecting
    async def version(self, table_id: str) -> int:
        value = await self.redis.get(TableKeys(table_id).version)
        return int(value) if value is not None else 0

    @reconnecting
    async def meta(self, table_id: str) -> bytes | None:
        value = await self.redis.get(TableKeys(table_id).meta)
        return as_bytes(value) if value is not None else None

    @reconnecting
    async def metas(self, table_ids: Sequence[str]) -> list[bytes | None]:
        """Meta blobs of many tables (one single-key GET each, pipelined)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.get(TableKeys(table_id).meta)
            return [as_bytes(v) if v is not None else None for v in await pipe.execute()]

    @reconnecting
    async def metas_and_versions(self, table_ids: Sequence[str]
                                 ) -> list[tuple[bytes | None, int]]:
        """(meta blob, version) of many tables (single-key GETs, pipelined); a table that is
        gone: (None, 0)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                keys = TableKeys(table_id)
                pipe.get(keys.meta)
                pipe.get(keys.version)
            found = await pipe.execute()
        return [(as_bytes(meta) if meta is not None else None, int(version or 0))
                for meta, version in zip(found[::2], found[1::2], strict=True)]

    @reconnecting
    async def access(self, table_id: str) -> tuple[int, dict[int, str], str | None]:
        """(version, seat -> token hash, invite hash or None), read atomically (one slot)."""
        keys = TableKeys(table_id)
        version, flat = await self._access(keys=[keys.version, keys.tokens])
        hashes: dict[int, str] = {}
        invite: str | None = None
        for field, value in zip(flat[::2], flat[1::2], strict=True):
            name, text = as_bytes(field).decode(), as_bytes(value).decode()
            if name == INVITE_FIELD:
                invite = text
            elif name.isdigit():
                hashes[int(name)] = text
        return int(version), hashes, invite

    @reconnecting
    async def token_hash(self, table_id: str, seat: int) -> str | None:
        """The current token hash of ``seat`` (None: nobody holds it by token)."""
        value = await self.redis.hget(TableKeys(table_id).tokens, str(seat))
        return as_bytes(value).decode() if value is not None else None

    @reconnecting
    async def post_chat(self, table_id: str, frame: bytes, live_message: bytes, *, keep: int,
                        seat: tuple[int, str] | None) -> bool:
        """Atomically: unless ``seat`` (seat, token hash) no longer holds its seat, append the
        chat frame to the recent lines (keeping ``keep``) and publish ``live_message`` on the
        table's live channel. False (nothing written) when the seat's token changed; True also
        when the table is gone (nothing written either: nobody is left to read it)."""
        keys = TableKeys(table_id)
        seat_arg, hash_arg = seat if seat else ("", "")
        done = await self._chat(keys=[keys.tokens, keys.chat, keys.version],
                                args=[seat_arg, hash_arg, frame, keep, keys.live, live_message,
                                      "1" if self.sharded else "0"])
        return bool(done != 0)

    @reconnecting
    async def client_version(self, table_id: str, seat: int, client_id: str) -> int | None:
        value = await self.redis.hget(TableKeys(table_id).clients, f"{seat}:{client_id}")
        return int(value) if value is not None else None

    @reconnecting
    async def rendered(self, table_id: str, kind: str) -> bytes | None:
        """A finished game's stored ``transcript`` or ``replay`` (JSON), if rendered yet."""
        keys = TableKeys(table_id)
        value = await self.redis.get(keys.transcript if kind == "transcript" else keys.replay)
        return as_bytes(value) if value is not None else None

    @reconnecting
    async def keep_rendered(self, table_id: str, kind: str, data: bytes) -> bool:
        """Store a rendering with the table's lifetime, in one step; False (nothing stored)
        when the table is gone."""
        keys = TableKeys(table_id)
        return await self._keep_with_table(
            table_id, keys.transcript if kind == "transcript" else keys.replay, data)

    async def _keep_with_table(self, table_id: str, key: str, value: bytes | str) -> bool:
        done = await self._keep(keys=[TableKeys(table_id).version, key], args=[value])
        return bool(done)

    @reconnecting
    async def share_lifetime(self, table_id: str) -> None:
        """Give the table's other keys the lifetime of its version key (after writing one of
        them outside a commit: a claim, presence); when the table is gone (expired meanwhile),
        delete them instead."""
        keys = TableKeys(table_id)
        await self._share(keys=[keys.version, *keys.companions])

    @reconnecting
    async def announce(self, table_ids: Sequence[str]) -> None:
        """Publish each table's current version as a bare notice (single Redis): after this
        process's subscriptions were lost, for the notices its commits left unpublished while
        it still counted itself a subscriber (`commit` ``subscribed``)."""
        for start in range(0, len(table_ids), ANNOUNCE_BATCH):
            pipe = self.redis.pipeline(transaction=False)
            for table_id in table_ids[start:start + ANNOUNCE_BATCH]:
                keys = TableKeys(table_id)
                await self._announce(keys=[keys.version], args=[keys.channel], client=pipe)
            await pipe.execute()

    async def frames_since(
        self, table_id: str, audience: str, since: int
    ) -> Frames | None:
        """The frames of ``audience`` for versions since+1..current, or None when part of that
        history is gone (trimmed) or ``since`` is not a version of this table."""
        return (await self.frames_since_many(table_id, {audience: since}))[audience]

    @reconnecting
    async def frames_since_many(
        self, table_id: str, sinces: Mapping[str, int]
    ) -> dict[str, Frames | None]:
        """For each audience -> since, what ``frames_since`` answers, from ONE read of the
        stream (every audience's frame of a version is in the same entry)."""
        if not sinces:
            return {}
        keys = TableKeys(table_id)
        # A since beyond the table's version gets None from _frames_of; the cap keeps the
        # stream id below in range (its parts are 64-bit) for a since near 2**64.
        low = min(max(0, min(sinces.values())), 2**62)
        # Two single-key reads in order (no MULTI, so Redis Cluster pipelines work too): the
        # stream is read after the version, so it reaches at least that version.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(keys.version)
            pipe.xrange(keys.stream, min=f"0-{low + 1}", max="+")
            version_raw, entries = await pipe.execute()
        current = int(version_raw) if version_raw is not None else 0
        versions = [int(as_bytes(entry_id).split(b"-", 1)[1]) for entry_id, _ in entries]
        return {
            audience: frames_of(audience, since, current, versions, entries)
            for audience, since in sinces.items()
        }

    @reconnecting
    async def queue_archive(self, job: str) -> None:
        """Append an archive job (``<id>`` or ``<id> <ended ms>``) to ``ARCHIVE_QUEUE``."""
        await self.redis.rpush(ARCHIVE_QUEUE, job)

    @reconnecting
    async def archive_jobs(self, limit: int) -> list[str]:
        """The first ``limit`` pending archive jobs (they stay queued until `archive_done`)."""
        raw = await self.redis.lrange(ARCHIVE_QUEUE, 0, limit - 1)
        return [as_bytes(job).decode() for job in raw]

    @reconnecting
    async def archive_done(self, table_id: str, job: str | None, lifetime_ms: int) -> None:
        """After a table's game is in the archive: give every key of the table (kept without
        expiry until now) ``lifetime_ms`` from now, then drop the job (every copy of it)."""
        await self._retain(keys=TableKeys(table_id).every, args=[lifetime_ms])
        if job is not None:
            await self.redis.lrem(ARCHIVE_QUEUE, 0, job)

    @reconnecting
    async def lifetime_ms(self, table_id: str) -> int:
        """PTTL of the table's version key: -1 kept without expiry, -2 no such table."""
        return int(await self.redis.pttl(TableKeys(table_id).version))

    @reconnecting
    async def index_public(self, table_id: str, created_ms: int, status: str) -> None:
        """List a public table in the lobby index of ``status`` (waiting or playing) and in no
        other; any other status (finished) takes it out of the lobby."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for indexed, key in LOBBY.items():
                if indexed == status:
                    pipe.zadd(key, {table_id: created_ms})
                else:
                    pipe.zrem(key, table_id)
            await pipe.execute()

    @reconnecting
    async def hit(self, name: str, window_s: int) -> tuple[int, int]:
        """Count one more event in the fixed window ``quota:<name>`` of ``window_s`` seconds:
        (events in the window so far, seconds until it ends)."""
        count, left = await self._hit(keys=[quota_key(name)], args=[window_s])
        return int(count), max(1, int(left))

    @reconnecting
    async def waiting_tables(self, owner: str) -> list[str]:
        """The tables ``owner`` created that may still wait for players (see add_waiting)."""
        raw = await self.redis.zrange(waiting_key(owner), 0, -1)
        return [as_bytes(member).decode() for member in raw]

    @reconnecting
    async def add_waiting(self, owner: str, table_id: str, lifetime_s: int) -> None:
        key = waiting_key(owner)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {table_id: 0})
            pipe.expire(key, lifetime_s)
            await pipe.execute()

    @reconnecting
    async def drop_waiting(self, owner: str, table_ids: Sequence[str]) -> None:
        if table_ids:
            await self.redis.zrem(waiting_key(owner), *table_ids)

    @reconnecting
    async def seated_tables(self, identity: str) -> list[str]:
        """The tables ``identity`` took a seat at (oldest first), whatever became of them. An
        account's list read is kept SEATED_KEEP_S more; a guest's keeps the lifetime its seats
        gave it (`add_seated`)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrange(seated_key(identity), 0, -1)
            if player_of(identity) is not None:
                pipe.expire(seated_key(identity), SEATED_KEEP_S)
            raw = (await pipe.execute())[0]
        return [as_bytes(member).decode() for member in raw]

    @reconnecting
    async def seated_tables_of(self, identities: Sequence[str]) -> list[list[str]]:
        """`seated_tables` of many identities in one pipelined read, leaving their lifetimes
        alone (someone else's list read)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for identity in identities:
                pipe.zrange(seated_key(identity), 0, -1)
            found = await pipe.execute()
        return [[as_bytes(member).decode() for member in raw] for raw in found]

    @reconnecting
    async def add_seated(self, identities: Sequence[str], table_id: str, taken_ms: int,
                         keep_s: float = SEATED_KEEP_S) -> None:
        """Note a seat taken at ``table_id`` by each of ``identities`` (a table listed already
        keeps its time), in one round trip; each key lasts at least ``keep_s`` from now (never
        less than it had): SEATED_KEEP_S for an account, or a seat at a game in play; a
        guest's seat at a waiting table only as long as that table may wait, so that a list of
        tables that never started goes with them."""
        if not identities:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for identity in identities:
                await self._seated(keys=[seated_key(identity)],
                                   args=[table_id, taken_ms, max(1, round(keep_s * 1000))],
                                   client=pipe)
            await pipe.execute()

    @reconnecting
    async def drop_seated(self, identity: str, table_ids: Sequence[str]) -> None:
        if table_ids:
            await self.redis.zrem(seated_key(identity), *table_ids)

    @reconnecting
    async def public_ids(self, status: str, limit: int) -> list[str]:
        """The public tables of ``status`` in the lobby, newest first."""
        raw = await self.redis.zrevrange(LOBBY[status], 0, limit - 1)
        return [as_bytes(member).decode() for member in raw]

    @reconnecting
    async def schedule(
        self, table_id: str, previous_version: int | None, version: int, due_ms: int | None
    ) -> None:
        """Replace the deadline entry of ``previous_version`` by one for ``version`` due at
        ``due_ms`` (none when ``due_ms`` is None). One atomic single-key step."""
        old = deadline_member(table_id, previous_version) if previous_version else ""
        new = deadline_member(table_id, version) if due_ms is not None else ""
        await self._reschedule(keys=[DEADLINES], args=[old, new, due_ms or 0])

    @reconnecting
    async def due(self, now_ms: int, limit: int = 50) -> list[tuple[str, int]]:
        """Deadline entries due at ``now_ms`` as (table id, version); malformed ones dropped."""
        raw = await self.redis.zrangebyscore(DEADLINES, "-inf", now_ms, start=0, num=limit)
        result: list[tuple[str, int]] = []
        for member in raw:
            parsed = parse_deadline_member(as_bytes(member))
            if parsed is None:
                await self.redis.zrem(DEADLINES, as_bytes(member))
            else:
                result.append(parsed)
        return result

    @reconnecting
    async def due_newest(self, now_ms: int, limit: int) -> list[tuple[str, int]]:
        """The ``limit`` deadline entries that fell due last (at ``now_ms`` or before), newest
        first, as (table id, version); malformed ones are skipped (`due` drops them)."""
        raw = await self.redis.zrevrangebyscore(DEADLINES, now_ms, "-inf", start=0, num=limit)
        parsed = (parse_deadline_member(as_bytes(member)) for member in raw)
        return [entry for entry in parsed if entry is not None]

    @reconnecting
    async def next_due_after(self, now_ms: int) -> int | None:
        """When the first deadline entry later than ``now_ms`` falls due (None: there is none)."""
        first = await self.redis.zrangebyscore(DEADLINES, f"({now_ms}", "+inf", start=0, num=1,
                                               withscores=True)
        return int(first[0][1]) if first else None

    @reconnecting
    async def next_due_ms(self) -> int | None:
        first = await self.redis.zrange(DEADLINES, 0, 0, withscores=True)
        return int(first[0][1]) if first else None

    @reconnecting
    async def unschedule(self, table_id: str, version: int) -> None:
        await self.redis.zrem(DEADLINES, deadline_member(table_id, version))

    @reconnecting
    async def acquire_lease(self, table_id: str, owner: str, ttl_ms: int) -> bool:
        return bool(await self.redis.set(TableKeys(table_id).lease, owner, nx=True, px=ttl_ms))

    @reconnecting
    async def release_lease(self, table_id: str, owner: str) -> None:
        await self._release(keys=[TableKeys(table_id).lease], args=[owner])

    @reconnecting
    async def mark_seen(self, table_id: str, seats: Mapping[int, int]) -> None:
        """Seat -> the time (ms) up to which that seat is known to have had a connection, for a
        table that exists (the entry takes the table's lifetime)."""
        if not seats:
            return
        keys = TableKeys(table_id)
        args = [x for seat, ms in seats.items() for x in (str(seat), ms)]
        await self._seen(keys=[keys.version, keys.seen], args=args)

    @reconnecting
    async def seen(self, table_id: str) -> dict[int, int]:
        """Seat -> the last time (ms) that seat is known to have had a connection."""
        raw = await self.redis.hgetall(TableKeys(table_id).seen)
        result: dict[int, int] = {}
        for seat, ms in raw.items():
            with contextlib.suppress(ValueError):
                result[int(seat)] = int(ms)
        return result

    @reconnecting
    async def set_owner(self, table_id: str, owner: str) -> None:
        """Record who created the table (with its lifetime; nothing if it is gone)."""
        await self._keep_with_table(table_id, TableKeys(table_id).owner, owner)

    @reconnecting
    async def owners(self, table_ids: Sequence[str]) -> list[str | None]:
        """The owner of each table (None: not recorded), one single-key GET each, pipelined."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.get(TableKeys(table_id).owner)
            return [as_bytes(v).decode() if v is not None else None for v in await pipe.execute()]

    # ---- sweeps ----------------------------------------------------------------------------

    async def tables_with_status(self, status: str, *, page: int = 500) -> AsyncIterator[str]:
        """The id of every table whose meta says ``status`` (a SCAN of the meta keys, ``page``
        keys a step, then one GET each): the sweeps that mend what a dead process left."""
        async for key in self.redis.scan_iter(match=_META_MATCH, count=page):
            name = as_bytes(key).decode()
            table_id = name[len(_META_PREFIX):-len(_META_SUFFIX)]
            meta = await self.meta(table_id)
            if meta is not None and msgpack.unpackb(meta).get("status") == status:
                yield table_id

    def playing_tables(self, *, page: int = 500) -> AsyncIterator[str]:
        """Every table in play (`tables_with_status`)."""
        return self.tables_with_status("playing", page=page)

    @reconnecting
    async def arm_deadline(self, table_id: str, version: int, due_ms: int) -> None:
        """Give ``version`` of the table a deadline entry due at ``due_ms`` unless it has one
        (a lost entry written again; an existing one keeps its time)."""
        await self.redis.zadd(DEADLINES, {deadline_member(table_id, version): due_ms}, nx=True)

    # ---- the hub: presence, claims, recent chat, the live channel --------------------------
    # Not retried here: the hub counts each failure and tries again on its own schedule.

    async def publish_live(self, table_id: str, message: bytes) -> None:
        """Publish a msgpack map on the table's live channel (chat, presence, claims); a shard
        channel message on a cluster."""
        if self.sharded:
            await self.redis.spublish(TableKeys(table_id).live, message)
        else:
            await self.redis.publish(TableKeys(table_id).live, message)

    async def claim_seat(self, table_id: str, seat: int, field: str, presence: str) -> int:
        """Take the next claim number of ``seat`` and set the socket's presence ``field`` to
        ``presence`` (one pipeline); returns the claim number."""
        keys = TableKeys(table_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(keys.claim(seat))
            pipe.hset(keys.presence, field, presence)
            number, *_ = await pipe.execute()
        return int(number)

    async def presence(self, table_id: str) -> dict[bytes, bytes]:
        """Every presence field of the table and its ``<seat>:<expiry ms>``."""
        raw = await self.redis.hgetall(TableKeys(table_id).presence)
        return {as_bytes(name): as_bytes(value) for name, value in raw.items()}

    async def seats_online(self, table_id: str, now_ms: int, players: int
                           ) -> tuple[list[bool], list[bytes]]:
        """Whether each seat has a live socket (a presence field not yet expired), and the
        expired fields."""
        online = [False] * players
        stale: list[bytes] = []
        for key, value in (await self.presence(table_id)).items():
            seat_s, _, expiry_s = value.decode().partition(":")
            try:
                seat, expiry = int(seat_s), int(expiry_s)
            except ValueError:
                stale.append(key)
                continue
            if expiry < now_ms:
                stale.append(key)
            elif 0 <= seat < players:
                online[seat] = True
        return online, stale

    async def drop_presence(self, table_id: str, *fields: str | bytes) -> None:
        if fields:
            await self.redis.hdel(TableKeys(table_id).presence, *fields)

    async def refresh_presence(self, presence: Mapping[str, Mapping[str, str]],
                               seen: Mapping[str, Mapping[int, int]],
                               watchers: Mapping[str, Sequence[str]], expiry_ms: int) -> set[str]:
        """Renew, in one pipeline, the presence fields (table -> field -> ``<seat>:<expiry>``)
        and the seats' ``seen`` times (table -> seat -> ms) of one process's seat sockets, each
        table's in one script that writes them only while the table exists and gives them its
        lifetime, and its spectator slots (table -> members, each expiring at ``expiry_ms``,
        the zset with them). Returns the tables found gone (nothing of theirs written but the
        spectator slots, which expire by themselves)."""
        scripted = sorted(set(presence) | set(seen))
        calls: list[tuple[list[str], list[Any]]] = []
        for table_id in scripted:
            keys = TableKeys(table_id)
            fields = presence.get(table_id, {})
            args: list[Any] = [len(fields)]
            for field, value in fields.items():
                args += [field, value]
            for seat, ms in seen.get(table_id, {}).items():
                args += [str(seat), ms]
            calls.append(([keys.version, keys.presence, keys.seen], args))
        try:
            found = await self._refresh_pipeline(calls, watchers, expiry_ms)
        except NoScriptError:
            # A Redis that forgot its scripts (restarted): load it (on every primary of a
            # cluster) and send the pipeline again; what it writes can be written twice.
            await self.redis.script_load(_REFRESH_LUA)
            found = await self._refresh_pipeline(calls, watchers, expiry_ms)
        done = found[len(found) - len(calls):]
        return {table_id for table_id, ok in zip(scripted, done, strict=True) if not ok}

    async def _refresh_pipeline(self, calls: Sequence[tuple[list[str], list[Any]]],
                                watchers: Mapping[str, Sequence[str]],
                                expiry_ms: int) -> list[Any]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for table_id, members in watchers.items():
                if members:
                    key = TableKeys(table_id).watchers
                    pipe.zadd(key, dict.fromkeys(members, expiry_ms))
                    pipe.pexpireat(key, expiry_ms)
            for keys, args in calls:
                pipe.evalsha(self._refresh.sha, len(keys), *keys, *args)
            return list(await pipe.execute())

    async def recent_chat(self, table_id: str) -> list[bytes]:
        """The recent chat frames of the table, oldest first."""
        return [as_bytes(frame) for frame in await self.redis.lrange(TableKeys(table_id).chat,
                                                                      0, -1)]

    async def watcher_count(self, table_id: str, now_ms: int) -> int:
        """The table's spectator sockets over every process (slots not yet expired)."""
        return int(await self.redis.zcount(TableKeys(table_id).watchers, now_ms, "+inf"))

    async def release_watcher(self, table_id: str, member: str) -> None:
        """Free a spectator's slot at the table (server.crowd)."""
        await self.redis.zrem(TableKeys(table_id).watchers, member)

    async def history_window(self, table_id: str, since: int,
                             count: int) -> tuple[int, list[Any]]:
        """(the table's version, at most ``count`` stream entries after ``since``): the version
        first, then the stream (two single-key reads, as `frames_since_many`), not retried
        here (server.backlog's callers answer a failure)."""
        keys = TableKeys(table_id)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(keys.version)
            pipe.xrange(keys.stream, min=f"0-{min(since, 2**62) + 1}", max="+",
                        count=max(1, count))
            version_raw, entries = await pipe.execute()
        return (int(version_raw) if version_raw is not None else 0), list(entries)
