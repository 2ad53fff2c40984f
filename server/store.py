"""Redis layout of the tables and the atomic commit; knows bytes and versions, not games.

Per table (every key shares the hash tag ``{<id>}``, so a table lives in one cluster slot):

- ``t:{id}:v``       version (integer, 0 = no table)
- ``t:{id}:state``   state blob (msgpack, written by server.tables)
- ``t:{id}:meta``    summary blob (msgpack) for the lobby, readable without the state
- ``t:{id}:tok``     hash seat -> sha256 hex of that seat's token (never the token)
- ``t:{id}:log``     stream, one entry per version with id ``0-<version>``; fields are
                     audience -> encoded diff frame
- ``t:{id}:c:<seat>:<client id>``  version accepted for that client message id (with a TTL)
- ``t:{id}:lease``   short lease of the process acting on a deadline
- channel ``t:{id}:n`` one notice per commit, the new version as ASCII digits

Global keys, each touched by single-key commands only: ``lobby:public`` (zset id -> created ms)
and ``deadlines`` (zset ``<id>:<version>`` -> due ms).

Imports no other project module; must not import engine.
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, ParamSpec, TypeVar

import redis.asyncio
from redis.exceptions import ConnectionError as RedisConnectionError

PUBLIC_INDEX = "lobby:public"
DEADLINES = "deadlines"
TABLE_ID = re.compile(r"^[a-z0-9]{4,24}$")
CLIENT_ID_TTL_MS = 7 * 24 * 3600 * 1000

_COMMIT_LUA = (Path(__file__).parent / "lua" / "commit.lua").read_text()
_RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
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

    def client(self, seat: int, client_id: str) -> str:
        return self._key(f"c:{seat}:{client_id}")


class CommitResult(NamedTuple):
    """``ok``: committed as ``version``; ``stale``: the table is at ``version``;
    ``dup``: that client id was already accepted as ``version``."""

    outcome: Literal["ok", "stale", "dup"]
    version: int


def as_bytes(value: Any) -> bytes:
    """A reply as bytes (replies are bytes; str only if the client decodes)."""
    return value.encode() if isinstance(value, str) else bytes(value)


def deadline_member(table_id: str, version: int) -> str:
    return f"{table_id}:{version}"


def parse_deadline_member(member: bytes | str) -> tuple[str, int] | None:
    text = member.decode() if isinstance(member, bytes) else member
    table_id, _, version = text.rpartition(":")
    if not TABLE_ID.match(table_id) or not version.isdigit():
        return None
    return table_id, int(version)


class Store:
    """Thin async access to the layout above. The client must return bytes (the redis-py
    default, ``decode_responses=False``)."""

    def __init__(self, client: redis.asyncio.Redis, *, history_limit: int | None = None) -> None:
        if client.get_connection_kwargs().get("decode_responses"):  # type: ignore[no-untyped-call]
            raise ValueError("the Redis client must be created with decode_responses=False")
        self.redis = client
        self.history_limit = history_limit
        self._commit = client.register_script(_COMMIT_LUA)
        self._release = client.register_script(_RELEASE_LUA)
        self._reschedule = client.register_script(_RESCHEDULE_LUA)

    @reconnecting
    async def commit(
        self,
        table_id: str,
        expected: int,
        state: bytes,
        meta: bytes,
        frames: Mapping[str, bytes],
        *,
        client: tuple[int, str] | None = None,
        token: tuple[Literal["set", "del"], int, str] | None = None,
    ) -> CommitResult:
        """Atomically: check the version is ``expected``, store state and meta, apply the
        token change, append the frames as stream entry ``0-<expected+1>``, remember the client
        id, publish the new version. ``expected=0`` creates the table."""
        keys = TableKeys(table_id)
        client_key = keys.client(*client) if client else keys.client(0, "-")
        token_op, token_seat, token_hash = token if token else ("", 0, "")
        args: list[Any] = [
            expected, state, meta, keys.channel, self.history_limit or 0,
            CLIENT_ID_TTL_MS if client else 0, token_op, token_seat, token_hash, len(frames),
        ]
        for audience, frame in frames.items():
            args += [audience, frame]
        result = await self._commit(
            keys=[keys.version, keys.state, keys.stream, keys.tokens, keys.meta, client_key],
            args=args,
        )
        outcome = result[0].decode() if isinstance(result[0], bytes) else str(result[0])
        assert outcome in ("ok", "stale", "dup")
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
    async def token_hashes(self, table_id: str) -> dict[int, str]:
        raw = await self.redis.hgetall(TableKeys(table_id).tokens)
        return {int(seat): as_bytes(value).decode() for seat, value in raw.items()}

    @reconnecting
    async def client_version(self, table_id: str, seat: int, client_id: str) -> int | None:
        value = await self.redis.get(TableKeys(table_id).client(seat, client_id))
        return int(value) if value is not None else None

    async def frames_since(
        self, table_id: str, audience: str, since: int
    ) -> list[tuple[int, bytes]] | None:
        """The frames of ``audience`` for versions since+1..current, or None when part of that
        history is gone (trimmed) or ``since`` is not a version of this table."""
        return (await self.frames_since_many(table_id, {audience: since}))[audience]

    @reconnecting
    async def frames_since_many(
        self, table_id: str, sinces: Mapping[str, int]
    ) -> dict[str, list[tuple[int, bytes]] | None]:
        """For each audience -> since, what ``frames_since`` answers, from ONE read of the
        stream (every audience's frame of a version is in the same entry)."""
        if not sinces:
            return {}
        keys = TableKeys(table_id)
        low = max(0, min(sinces.values()))
        # Two single-key reads in order (no MULTI, so Redis Cluster pipelines work too): the
        # stream is read after the version, so it reaches at least that version.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(keys.version)
            pipe.xrange(keys.stream, min=f"0-{low + 1}", max="+")
            version_raw, entries = await pipe.execute()
        current = int(version_raw) if version_raw is not None else 0
        versions = [int(as_bytes(entry_id).split(b"-", 1)[1]) for entry_id, _ in entries]
        return {
            audience: self._frames_of(audience, since, current, versions, entries)
            for audience, since in sinces.items()
        }

    @staticmethod
    def _frames_of(
        audience: str, since: int, current: int, versions: list[int], entries: list[Any]
    ) -> list[tuple[int, bytes]] | None:
        """One audience's frames since+1..current out of the entries read, or None."""
        if since < 0 or since > current or current == 0:
            return None
        frames: list[tuple[int, bytes]] = []
        expected = since + 1
        wanted = audience.encode()
        for index in range(bisect.bisect_left(versions, expected), len(entries)):
            version = versions[index]
            frame = entries[index][1].get(wanted)
            if version != expected or frame is None:
                return None
            frames.append((version, as_bytes(frame)))
            expected += 1
        if expected <= current:
            return None
        return frames

    @reconnecting
    async def index_public(self, table_id: str, created_ms: int) -> None:
        await self.redis.zadd(PUBLIC_INDEX, {table_id: created_ms})

    @reconnecting
    async def unindex_public(self, table_id: str) -> None:
        await self.redis.zrem(PUBLIC_INDEX, table_id)

    @reconnecting
    async def public_ids(self, limit: int) -> list[str]:
        """Newest first."""
        raw = await self.redis.zrevrange(PUBLIC_INDEX, 0, limit - 1)
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
