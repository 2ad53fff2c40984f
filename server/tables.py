"""`TableService`: the one write path of every table, and every read the socket layer needs.

A write loads the table (version + state), asks the engine, and commits atomically through the
store's Lua script (version check, new state, one diff frame per audience in the table's
stream, notice published). Moves, joins, bots and clocks all go through `_write`.
Imports engine, store, record; must not import the websocket or HTTP layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import itertools
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import msgpack
import redis.asyncio
from redis.exceptions import RedisError

import engine
from engine.state import twin
from server import protocol, replays
from server.diff import Bodies, Memo, diff
from server.processes import worker_pool
from server.record import (
    FINISHED,
    PLAYING,
    SPECTATORS,
    STANDIN_BOT,
    WAITING,
    Seat,
    TableRecord,
    audience_viewer,
    forfeit,
    game_result,
    hand_limit,
    keeps_hand,
    move_entry,
    stored_state,
    with_moves,
)
from server.rejected import Rejected
from server.settings import Settings
from server.store import (
    INVITE_FIELD,
    SEATED_KEEP_S,
    TABLE_ID,
    Frames,
    Store,
    TableKeys,
    as_bytes,
    player_of,
    publish_notice,
    rematch_key,
    rematch_lock_key,
    token_hash,
)
from server.table_config import TableConfig, parse_create_request

HINTS_KEPT = 1000
"""Hints remembered per process (by table, version and seat), the oldest dropped first."""

if TYPE_CHECKING:  # the scheduler imports this module: its type only
    from server.scheduler import Scheduler
    from server.seams import CommitListening

__all__ = ["SPECTATORS", "Rejected", "TableService", "token_hash"]

log = logging.getLogger("server.tables")

PUBLIC_LIST_LIMIT = 200
CACHE_TABLES = 1024
WRITE_ATTEMPTS = 20
REMATCH_TTL_S = 600  # a rematch's reserved seat tokens are kept this long for their claimers
REMATCH_LOCK_MS = 30_000  # one process makes a rematch table; its lock lasts at most this long

Notify = Callable[[int, Mapping[str, Any]], None]
"""Sends an inbox notice (server.inbox: a map with a string ``t``) to a player id."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """A table as read at one version, with its documents (built lazily, then cached)."""

    version: int
    record: TableRecord
    docs: dict[str, dict[str, Any] | None]  # None: before the table existed
    appended: int = 0  # moves appended to the stored state since it was last written whole


@dataclass(frozen=True, slots=True)
class Change:
    """What a write produces from a loaded table."""

    record: TableRecord
    events: list[dict[str, Any]]
    token: tuple[Literal["set", "del"], int | str, str] | None = None
    # A move that keeps its hand going, as it can be appended to the stored state
    # (server.record `move_entry`); None for any other change.
    move: bytes | None = None
    # The token change hands a seat to someone asking for it (a join, a resume): refused once
    # the table has had its seat changes (TableService ``max_seat_changes``).
    takes_seat: bool = False


_new = object.__new__
_LoadedSlots = twin(Loaded)
_ChangeSlots = twin(Change)


def new_loaded(version: int, record: TableRecord, docs: dict[str, dict[str, Any] | None],
               appended: int) -> Loaded:
    """`Loaded(...)`, fast (every commit): the slots filled on a twin class, then the class
    set (as engine.state builds its records)."""
    loaded = _new(_LoadedSlots)
    loaded.version = version
    loaded.record = record
    loaded.docs = docs
    loaded.appended = appended
    loaded.__class__ = Loaded
    made: Loaded = loaded
    return made


def new_change(record: TableRecord, events: list[dict[str, Any]],
               move: bytes | None) -> Change:
    """`Change(record, events, move=move)`, fast (every move), as `new_loaded`."""
    change = _new(_ChangeSlots)
    change.record = record
    change.events = events
    change.token = None
    change.move = move
    change.takes_seat = False
    change.__class__ = Change
    made: Change = change
    return made


def _from_notice(cached: Loaded | None, version: int, state: bytes | None,
                 moves: tuple[bytes, ...]) -> Loaded | None:
    """The table at ``version`` from what notices carried (`TableService.noticed`): the state
    they carried, or this process's copy of the version before the moves, with the moves
    played again; None when that copy is not at hand (the table is read from Redis then)."""
    if state is not None:
        record, appended = stored_state(state)
    elif cached is not None and cached.version == version - len(moves):
        record, appended = cached.record, cached.appended
    else:
        return None
    try:
        record, played = with_moves(record, b"".join(moves))
    except (ValueError, TypeError, engine.EngineError):
        return None
    return Loaded(version, record, {}, appended + played)


def unknown_table(table_id: str) -> Rejected:
    """The answer for a table that does not exist -- and, word for word, for a private table
    asked for without its invite, so that probing ids tells nothing."""
    return Rejected("unknown_table", f"no table {table_id!r}", status=404)


def seat_left() -> Rejected:
    return Rejected("seat_left", "this seat's token is no longer valid: the seat was left",
                    status=403)


def too_many_seat_changes(cap: int, version: int) -> Rejected:
    return Rejected("too_many_seat_changes",
                    f"this table has had its {cap} seat changes (joins, leaves, resumes) and "
                    "takes no more seats", status=409, version=version)


def seat_holders(record: TableRecord) -> set[str]:
    """The identities that hold a seat a person plays at the table (server.identity)."""
    return {seat.owner for seat in record.seats
            if seat.owner is not None and seat.taken and seat.bot is None}


def turn_started(before: TableRecord | None, after: TableRecord) -> int | None:
    """The seat whose turn the change from ``before`` to ``after`` started: the seat to move
    changed, or the same seat leads a new hand; None when nobody's turn began (a seat that
    drew and moves again, a pause between hands, a finished game)."""
    seat = after.seat_to_move
    if seat is None or after.next_hand is not None:
        return None
    if before is not None and before.seat_to_move == seat and before.next_hand is None \
            and before.game.round == after.game.round:
        return None
    return seat


def lobby_meta(before: TableRecord | None, record: TableRecord) -> bytes:
    """The lobby's summary of the table without its version (the store's ``meta``), or b""
    when it shows nothing new since ``before``: a move changes no status, seat or setting."""
    if before is not None and before.status == record.status \
            and before.seats == record.seats and before.config is record.config:
        return b""
    return bytes(msgpack.packb(record.listing()))


def rematch_people(record: TableRecord) -> list[int]:
    """The seats people played (every seat but the table's own bots): all of them must accept
    a rematch. A seat a stand-in bot took over (its player left) never accepts."""
    return [s for s in range(record.config.players) if s not in record.config.bots]


def rematch_agreed(record: TableRecord, seat: int | None = None) -> bool:
    """Whether every seat people played has accepted (counting ``seat`` as accepted too)."""
    accepted = set(record.rematch["accepted"]) if record.rematch is not None else set()
    if seat is not None:
        accepted.add(seat)
    people = rematch_people(record)
    return bool(people) and all(s in accepted for s in people)


class Notices:
    """`Notify` for the application: each notice is published by a background task, so that
    the commit that caused it never waits for it (fire and forget, as every inbox notice)."""

    def __init__(self, redis: redis.asyncio.Redis) -> None:
        self.redis = redis
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, player_id: int, notice: Mapping[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(self._send(player_id, dict(notice)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, player_id: int, notice: dict[str, Any]) -> None:
        try:
            await publish_notice(self.redis, player_id, notice)
        except (RedisError, OSError) as exc:
            log.warning("inbox notice lost: %s", exc)


def invite_matches(invite: object, invite_hash: str | None) -> bool:
    """True for a public table (no invite hash) or the right invite code."""
    if invite_hash is None:
        return True
    return isinstance(invite, str) and hmac.compare_digest(token_hash(invite), invite_hash)


class TableService:
    """Tables in Redis. ``redis`` must return bytes (``decode_responses=False``).

    ``history_limit``: versions kept in each table's stream (None = the whole game).
    ``bot_delay_ms``: how long a bot waits before it moves. ``clock``: seconds since the epoch.
    ``waiting_ttl_s``: a waiting table nobody joins for this long disappears.
    ``retention_s``: a finished table (transcript and replay included) is kept this long.
    ``notice_frames_max``: a commit's notice carries its frames and state when they total at
    most this many bytes (server.store).
    ``append_max``: a move that keeps its hand going is appended to the table's stored state
    (server.record `move_entry`) instead of rewriting it, up to this many moves after the state
    was last written whole; 0: every commit writes the whole state.
    ``max_hands``: a game still on after this many hands ends with the last one, the side
    ahead winning (`hand_limit`; None: no limit).
    ``seat_connect_s``: a waiting table's seat whose person has not been connected for this long
    (never, since taking it) is freed.
    ``max_seat_changes``: the seat changes a table takes over its life (joins, leaves, seats
    freed, new tokens: each a version); beyond them a join or resume is refused
    (too_many_seat_changes) and a change that keeps the table waiting no longer renews its
    ``waiting_ttl_s``.
    ``next_hand_s`` (``next_hand_turn_s`` at a table with a turn clock): after a hand ends the
    table stays on it, no clock running, until every connected person has sent ``ready`` or
    this long has passed; 0 deals the next hand at once (with the move that ended the last).
    ``archive``: finished games go to the PostgreSQL archive (server.archive): a finishing
    commit keeps the table without expiry and queues an archive job; the archive worker gives
    the table its ``retention_s`` once the game is archived. ``archived`` (set by the archive)
    answers a transcript or replay read of a table Redis no longer has.
    """

    def __init__(self, redis: redis.asyncio.Redis, *, history_limit: int | None = None,
                 bot_delay_ms: int = 600, clock: Callable[[], float] = time.time,
                 waiting_ttl_s: float = 3600.0, retention_s: float = 86400.0,
                 seat_connect_s: float = 60.0, archive: bool = False,
                 notice_frames_max: int = 16384, next_hand_s: float = 0.0,
                 next_hand_turn_s: float = 0.0, append_max: int = 64,
                 max_hands: int | None = None, max_seat_changes: int = 500) -> None:
        self.store = Store(redis, history_limit=history_limit,
                           notice_frames_max=notice_frames_max)
        self.bot_delay_ms = bot_delay_ms
        self.clock = clock
        self.seat_connect_ms = max(1, round(seat_connect_s * 1000))
        self.max_seat_changes = max(1, max_seat_changes)
        self.lifetime_ms = {WAITING: max(1, round(waiting_ttl_s * 1000)), PLAYING: 0,
                            FINISHED: max(1, round(retention_s * 1000))}
        self.retention_ms = self.lifetime_ms[FINISHED]
        # The pause between hands (0: the next hand is dealt with the move that ends one).
        self.next_hand_ms = round(next_hand_s * 1000)
        self.next_hand_turn_ms = round(next_hand_turn_s * 1000) if next_hand_s else 0
        self.append_max = append_max
        self.max_hands = max_hands
        self.archive = archive
        if archive:  # kept until archived (a finishing commit is the archive's pending mark)
            self.lifetime_ms[FINISHED] = 0
        self.archived: Callable[[str, str, str | None], Awaitable[bytes | None]] | None = None
        self.archive_wakeup = asyncio.Event()  # set after a game ended in this process
        # Told of every commit this process made, with its frames (table id, version,
        # audience -> frame, the seat or "invite" whose token it changed), before anything
        # else awaits: the fan-out delivers them to local sockets without reading them back.
        self.committed: Callable[[str, int, Mapping[str, bytes], str | None], None] | None = None
        # Whether this process's subscription to a table's notices is in effect, asked by each
        # commit (see Store.commit ``subscribed``); set by the hub (server.fanout.pubsub).
        self.listening: CommitListening | None = None
        # Inbox notices (`Notices` in the application; None: none are sent): "your_turn" to an
        # account whose turn a commit started, "rematch" when a rematch table is made.
        self.notify: Notify | None = None
        self.scheduler: Scheduler | None = None  # this process's, while `run_deadlines` runs
        self._hints: OrderedDict[tuple[str, int, int], dict[str, object]] = OrderedDict()
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        # What other processes' notices carried (table -> version, the state blob or None, the
        # moves appended since: to that state, or with None to this process's copy of the
        # version before them), read into the cache only if this process writes that version
        # next (`_cached`).
        self._noticed: OrderedDict[str, tuple[int, bytes | None, tuple[bytes, ...]]] = \
            OrderedDict()
        self._render_pool: ProcessPoolExecutor | None = None  # started on the first render
        self._render_slot = asyncio.Semaphore(1)
        self._rendering: dict[tuple[str, str], asyncio.Future[bytes]] = {}
        # Where each new game's seed comes from (tests replace it to replay the same deals).
        self.seed_source: Callable[[], int] = functools.partial(secrets.randbits, 62)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- reading ---------------------------------------------------------------------------
    async def load(self, table_id: str) -> Loaded:
        """The table at its current version (cached documents when the version is the one
        cached). Rejected unknown_table when there is none."""
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            raise unknown_table(str(table_id))
        loaded = await self.store.load(table_id)
        if loaded is None:
            raise unknown_table(table_id)
        version, blob = loaded
        cached = self._cache.get(table_id)
        if cached is not None and cached.version == version:
            self._cache.move_to_end(table_id)
            return cached
        record, appended = stored_state(blob)
        result = Loaded(version, record, {}, appended)
        self._remember(table_id, result)
        return result

    def _remember(self, table_id: str, loaded: Loaded) -> None:
        self._cache[table_id] = loaded
        self._cache.move_to_end(table_id)
        while len(self._cache) > CACHE_TABLES:
            self._cache.popitem(last=False)

    @staticmethod
    def _doc(loaded: Loaded, audience: str) -> dict[str, Any] | None:
        """One audience's document of a loaded table. A table read from Redis gets every
        audience's at once (they share their common parts, and the next commit diffs them all)."""
        if audience not in loaded.docs:
            audience_viewer(audience, loaded.record.config.players)  # ValueError: no audience
            loaded.docs.update(loaded.record.documents(loaded.version))
        return loaded.docs[audience]

    async def snapshot(self, table_id: str, audience: str) -> tuple[int, dict[str, Any]]:
        async with unavailable_on_redis_error():
            loaded = await self.load(table_id)
        self._check_audience(audience, loaded.record)
        doc = self._doc(loaded, audience)
        assert doc is not None
        return loaded.version, doc

    async def spectator_chat(self, table_id: str) -> bool | None:
        """The table's spectator chat option, as created (True on, False off, None auto)."""
        async with unavailable_on_redis_error():
            loaded = await self.load(table_id)
        return loaded.record.config.spectator_chat

    @staticmethod
    def _check_audience(audience: object, record: TableRecord) -> None:
        try:
            audience_viewer(str(audience), record.config.players)
        except ValueError as exc:
            raise Rejected("bad_request", str(exc), status=400) from exc

    async def frames_since(self, table_id: str, audience: str, since: int) -> Frames | None:
        return (await self.frames_since_many(table_id, {audience: since}))[audience]

    async def frames_since_many(
        self, table_id: str, sinces: Mapping[str, int]
    ) -> dict[str, Frames | None]:
        """audience -> the frames after its `since` (None: a snapshot is needed), from one read
        of the table's history however many audiences are asked for."""
        answers: dict[str, Frames | None] = {}
        wanted: dict[str, int] = {}
        for audience, since in sinces.items():
            if not isinstance(since, int) or isinstance(since, bool) or since < 0:
                answers[audience] = None
            else:
                wanted[audience] = since
        if not wanted:
            return answers
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            raise unknown_table(str(table_id))
        for audience in wanted:
            if audience != SPECTATORS and audience not in ("0", "1", "2", "3"):
                raise Rejected("bad_request", f"no audience {audience!r}", status=400)
        async with unavailable_on_redis_error():
            answers.update(await self.store.frames_since_many(table_id, wanted))
        return {audience: answers[audience] for audience in sinces}

    def notice_channel(self, table_id: str) -> str:
        return TableKeys(table_id).channel

    async def summary(self, table_id: str, invite: str | None = None,
                      token: str | None = None) -> dict[str, Any]:
        loaded = await self._readable(table_id, invite, token)
        return loaded.record.summary(loaded.version)

    async def _readable(self, table_id: str, invite: object, token: object) -> Loaded:
        """The table, for a reader who may see it: anyone for a public table; for a private
        one, whoever has its invite code or a seat token of it. Otherwise the table does not
        exist for them (unknown_table, as for an id that was never created)."""
        async with unavailable_on_redis_error():
            loaded = await self.load(table_id)
            invite_hash = loaded.record.invite_hash
            if invite_matches(invite, invite_hash):
                return loaded
            if isinstance(token, str) and token:
                _, hashes, _ = await self.store.access(table_id)
                if self._seat_of(token, hashes) is not None:
                    return loaded
        raise unknown_table(table_id)

    async def list_public(self) -> list[dict[str, Any]]:
        """Public tables for the lobby: the open ones (waiting for players) first, then those
        playing, newest first within each, at most PUBLIC_LIST_LIMIT. Finished and expired
        tables are never listed: an index entry whose table is gone or has moved on is mended
        here."""
        summaries: list[dict[str, Any]] = []
        async with unavailable_on_redis_error():
            for status in (WAITING, PLAYING):
                want = PUBLIC_LIST_LIMIT - len(summaries)
                if want <= 0:
                    break
                ids = await self.store.public_ids(status, want)
                found = await self.store.metas_and_versions(ids)
                for table_id, (meta, version) in zip(ids, found, strict=True):
                    summary = msgpack.unpackb(meta) if meta is not None else None
                    if summary is not None and summary["status"] == status:
                        summaries.append({**summary, "v": version})
                    else:
                        await self.store.index_public(
                            table_id, summary["created"] if summary else 0,
                            summary["status"] if summary else FINISHED)
        return summaries

    @staticmethod
    def _seat_of(token: str, hashes: Mapping[int, str]) -> int | None:
        wanted = token_hash(token)
        found = None
        for seat, stored in hashes.items():  # every comparison, in constant time each
            if hmac.compare_digest(wanted, stored):
                found = seat
        return found

    async def authenticate(self, table_id: str, token: str | None,
                           invite: str | None = None) -> tuple[int | None, int]:
        """(seat or None for a spectator, the version at which the token was checked).

        A private table answers unknown_table unless the token holds one of its seats or the
        invite is right; a bad token answers bad_token."""
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            raise unknown_table(str(table_id))
        async with unavailable_on_redis_error():
            version, hashes, invite_hash = await self.store.access(table_id)
        if version == 0:
            raise unknown_table(table_id)
        seat = self._seat_of(token, hashes) if isinstance(token, str) else None
        if seat is not None:
            return seat, version
        if not invite_matches(invite, invite_hash):
            raise unknown_table(table_id)
        if token is None:
            return None, version
        raise Rejected("bad_token", "that token holds no seat at this table", status=403)

    async def token_current(self, table_id: str, seat: int, hashed: str) -> bool:
        """Whether ``seat`` is still held by the token whose hash is ``hashed``."""
        async with unavailable_on_redis_error():
            stored = await self.store.token_hash(table_id, seat)
        return stored is not None and hmac.compare_digest(stored, hashed)

    async def transcript(self, table_id: str, invite: str | None = None,
                         token: str | None = None) -> bytes:
        """The finished game's transcript, as gzip-compressed JSON."""
        return await self._rendered(table_id, "transcript", invite, token)

    async def replay(self, table_id: str, invite: str | None = None,
                     token: str | None = None) -> bytes:
        """``{"views": [the spectator's view after each move]}``, as gzip-compressed JSON."""
        return await self._rendered(table_id, "replay", invite, token)

    async def _rendered(self, table_id: str, kind: str, invite: str | None,
                        token: str | None) -> bytes:
        """A finished game's transcript or replay: rendered once, in the render worker (never
        on the event loop, one game at a time), then kept with the table for as long as it is
        kept; once Redis no longer has the table, from the archive (invite only)."""
        try:
            loaded = await self._readable(table_id, invite, token)
        except Rejected as rej:
            if rej.code not in ("unknown_table", "unavailable") or self.archived is None:
                raise
            found = await self.archived(table_id, kind, invite)
            if found is None:
                raise
            return found
        if loaded.record.status != FINISHED:
            raise Rejected("game_not_over", f"the {kind} is ready when the game is over",
                           status=409, version=loaded.version)
        async with unavailable_on_redis_error():
            cached = await self.store.rendered(table_id, kind)
            if cached is not None:
                return cached
            job = self._rendering.get((table_id, kind))
            if job is None:
                job = asyncio.ensure_future(self.render_and_keep(table_id, kind, loaded.record))
                self._rendering[(table_id, kind)] = job
                job.add_done_callback(lambda _: self._rendering.pop((table_id, kind), None))
            return await asyncio.shield(job)

    async def render_and_keep(self, table_id: str, kind: str, record: TableRecord) -> bytes:
        """Render a finished game's transcript or replay and keep it with the table."""
        transcript = record.transcript()  # reveals the seed and salt: finished games only
        data = await self.render(kind, transcript)
        await self.store.keep_rendered(table_id, kind, data)
        return data

    async def render(self, kind: str, transcript: Mapping[str, Any]) -> bytes:
        """`replays.render` in the render worker (one game at a time, off the event loop)."""
        async with self._render_slot:
            if self._render_pool is None:
                self._render_pool = worker_pool(1)
            loop = asyncio.get_running_loop()
            pool = self._render_pool
            try:
                data: bytes = await loop.run_in_executor(pool, replays.render, kind,
                                                         dict(transcript))
            except BrokenProcessPool:
                if self._render_pool is pool:  # the next render starts a new worker
                    self._render_pool = None
                    pool.shutdown(wait=False, cancel_futures=True)
                raise
        return data

    def close(self) -> None:
        """Stop the render worker (if it was started) and the store's commit link."""
        self.store.close()
        pool, self._render_pool = self._render_pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # -- the write path --------------------------------------------------------------------
    async def write(self, table_id: str, change: Callable[[Loaded], Change], *,
                     expected: int | None = None, client: tuple[int, str] | None = None,
                     require: tuple[int, str] | None = None) -> int:
        """Load → change → atomic commit; returns the new version. With ``expected`` a stale
        version is refused; without it the change is recomputed on the newer version (joins,
        bots, clocks). A ``client`` (seat, id) already accepted returns its first version.
        With ``require`` (seat, token hash) the commit is refused (seat_left) unless that token
        still holds that seat when it lands."""
        cached = self._cached(table_id, expected)
        for _attempt in range(WRITE_ATTEMPTS):
            # The first attempt starts from this process's copy when it is at the expected
            # version (or, without one, at the last version this process saw): the commit's own
            # version check guards it, so the common case costs one round trip. A copy that
            # turns out stale costs only that attempt; a refusal is judged again on the table
            # as Redis has it.
            loaded = cached if cached is not None else await self.load(table_id)
            from_cache, cached = cached is not None, None
            if expected is not None and loaded.version != expected:
                return await self._accepted_or_stale(table_id, loaded.version, client)
            try:
                result = change(loaded)
            except Rejected as rej:
                if from_cache:
                    continue
                prior = await self._accepted(table_id, client)
                if prior is not None:
                    return prior
                if rej.version is None:  # refused at this version: say which
                    rej.version = loaded.version
                raise
            version = await self._commit(table_id, loaded, result, client, require)
            if version is not None:
                return version
            if expected is not None:
                return await self._accepted_or_stale(table_id, None, client)
        raise Rejected("busy", "the table changed too often; try again", status=409)

    def _cached(self, table_id: str, expected: int | None) -> Loaded | None:
        """This process's copy of the table, when it is at ``expected`` (any version if None):
        the last it read or wrote, or a newer state another process's notice carried."""
        cached = self._cache.get(table_id)
        noticed = self._noticed.get(table_id)
        if noticed is not None and cached is not None and noticed[0] <= cached.version:
            del self._noticed[table_id]  # this process has that version, or a newer one
        elif noticed is not None and expected in (None, noticed[0]):
            del self._noticed[table_id]
            cached = _from_notice(cached, *noticed)
        if cached is None or (expected is not None and cached.version != expected):
            return None
        self._remember(table_id, cached)
        return cached

    def noticed(self, table_id: str, version: int, state: bytes, move: bool = False) -> None:
        """Another process committed ``version`` of a table with this state (its notice), or
        (``move``) with this move appended to the version before: a move this process makes
        next starts from it instead of reading the table again."""
        cached = self._cache.get(table_id)
        known = self._noticed.get(table_id)
        if (cached is not None and cached.version >= version) \
                or (known is not None and known[0] >= version):
            return  # its own commit, or a notice that arrived late
        if not move:
            self._noticed[table_id] = (version, state, ())
        elif known is not None and known[0] == version - 1:  # the moves in a row
            self._noticed[table_id] = (version, known[1], (*known[2], state))
        else:
            self._noticed[table_id] = (version, None, (state,))
        self._noticed.move_to_end(table_id)
        while len(self._noticed) > CACHE_TABLES:
            self._noticed.popitem(last=False)

    async def _accepted(self, table_id: str, client: tuple[int, str] | None) -> int | None:
        if client is None:
            return None
        return await self.store.client_version(table_id, *client)

    async def _accepted_or_stale(self, table_id: str, current: int | None,
                                 client: tuple[int, str] | None) -> int:
        prior = await self._accepted(table_id, client)
        if prior is not None:
            return prior
        if current is None:
            current = await self.store.version(table_id)
        raise Rejected("stale_version", f"the table is at version {current}", status=409,
                       version=current)

    async def _commit(self, table_id: str, loaded: Loaded, change: Change,
                      client: tuple[int, str] | None,
                      require: tuple[int, str] | None = None) -> int | None:
        version = loaded.version + 1
        players = change.record.config.players
        # A table in play: the diffs from what the change changed, and the documents only
        # when somebody asks for one (a snapshot). Anything else: the documents and their
        # diffs.
        bodies: Bodies = {}  # the move's groups of ops, packed once for every audience
        groups_of = change.record.change_groups(loaded.record, version, bodies) \
            if loaded.version > 0 else None
        # A move that keeps its hand going is appended to the stored state (its notice carries
        # only the move too), up to `append_max` moves; anything else writes the whole state.
        entry = change.move if loaded.version > 0 and loaded.appended < self.append_max \
            else None
        appended = loaded.appended + 1 if entry is not None else 0
        packed: protocol.Packed = {}  # what the audiences' frames share is packed once
        if groups_of is not None:
            new = new_loaded(version, change.record, {}, appended)
            frames = {audience: protocol.pack_diff_groups(
                version, groups, engine.redact_events(change.events, audience_viewer(
                    audience, players)), packed, bodies) for audience, groups in groups_of.items()}
        else:
            before = self._doc(loaded, SPECTATORS)
            docs = change.record.documents(
                version, (loaded.record, before) if before is not None else None)
            new = Loaded(version, change.record, dict(docs), appended)
            shared: Memo = {}  # the audiences' documents share parts: each is compared once
            frames = {audience: protocol.pack_diff(
                version, diff(self._doc(loaded, audience), doc, shared),
                engine.redact_events(change.events, audience_viewer(audience, players)), packed)
                for audience, doc in docs.items()}
        now = self.now_ms()
        meta = lobby_meta(loaded.record if loaded.version > 0 else None, change.record)
        status = change.record.status
        due = self.due_ms(change.record, now)
        had_due = loaded.version > 0 and self.due_ms(loaded.record, now) is not None
        state = entry if entry is not None else change.record.to_blob()
        # a game going on keeps every key without expiry: set once, when it starts
        lifetime: int | Literal["keep"] = "keep" if status == PLAYING \
            and loaded.record.status == PLAYING and loaded.version > 0 \
            else self.lifetime_ms.get(status, 0)
        # A seat's token changing counts against the table's seat changes: past them, a seat
        # is handed to nobody, and a change that keeps the table waiting renews nothing.
        seat_changes: tuple[int, Literal["refuse", "keep", ""]] | None = None
        if change.token is not None and isinstance(change.token[1], int):
            seat_changes = (self.max_seat_changes, "refuse" if change.takes_seat
                            else "keep" if status == WAITING else "")
        listening = self.listening
        subscribed = listening.begin_commit(table_id) if listening is not None else None
        try:
            result = await self.store.commit(
                table_id, loaded.version, state, meta, frames, append=entry is not None,
                client=client, token=change.token, require=require, lifetime_ms=lifetime,
                # tables without bots or clocks leave the deadlines alone
                due_ms=due if due is not None or had_due else "keep", subscribed=subscribed,
                seat_changes=seat_changes)
        finally:
            if subscribed and listening is not None:
                listening.end_commit(table_id)
        if result.outcome == "dup":
            return result.version
        if result.outcome == "revoked":
            raise seat_left()
        if result.outcome == "closed":
            raise too_many_seat_changes(self.max_seat_changes, result.version)
        if result.outcome == "stale":
            return None
        self._remember(table_id, new)
        if self.committed is not None:
            self.committed(table_id, version, frames,
                           str(change.token[1]) if change.token else None)
        if self.notify is not None:
            self._your_turn(loaded.record if loaded.version > 0 else None, change.record)
        if self.archive and status == FINISHED and loaded.record.status != FINISHED:
            # The commit itself is the durable mark (a finished table without expiry, found by
            # the archive's sweep); the job only makes the archive prompt.
            with contextlib.suppress(RedisError):
                await self.store.queue_archive(f"{table_id} {now}")
            self.archive_wakeup.set()
        if loaded.version > 0 and status != loaded.record.status \
                and not change.record.config.private:
            # Not part of the commit (the lobby indexes are global keys, in other cluster
            # slots): a failure here is repaired when the lobby is next listed.
            with contextlib.suppress(RedisError):
                await self.store.index_public(table_id, change.record.created_ms, status)
        if loaded.version > 0 and loaded.record.status == WAITING:
            # A commit renews a waiting table's lifetime (a join may start its game): its
            # guests' lists of tables, kept as long as the table may wait, are kept with it
            # (`_seated_keep_s`).
            guests = [g for g in seat_holders(change.record) if player_of(g) is None]
            with contextlib.suppress(RedisError):
                await self.store.add_seated(guests, table_id, self.now_ms(),
                                            self._seated_keep_s(True, status))
        ended = status == FINISHED and loaded.record.status != FINISHED
        if loaded.version > 0 and (change.record.seats is not loaded.record.seats or ended):
            await self._unseat(table_id, version, loaded.record, change.record)
        return version

    async def _unseat(self, table_id: str, version: int, before: TableRecord,
                      after: TableRecord) -> None:
        """After a commit: take the table out of the list of tables (`Store.seated_tables`) of
        each identity that held a seat there and holds none now (left, freed for want of a
        connection, handed to a stand-in bot or to the guest's new account), and, when the
        game ended, of its guests' (an account's finished games stay listed until read: a
        log out everywhere revokes their tokens too). The lists are global keys, in other
        cluster slots: should the identity take a seat there again meanwhile, whose own
        listing this could undo, the table is read again and the seat listed again. Best
        effort, like the lobby index: an entry left behind is dropped when its list is read."""
        gone = seat_holders(before) - seat_holders(after)
        if after.status == FINISHED:
            gone |= {owner for owner in seat_holders(before) if player_of(owner) is None}
        if not gone:
            return
        try:
            for identity in gone:
                await self.store.drop_seated(identity, [table_id])
            if await self.store.version(table_id) == version:
                return
            record = (await self.load(table_id)).record
            if record.status != FINISHED:
                for identity in gone & seat_holders(record):
                    await self.store.add_seated(
                        [identity], table_id, self.now_ms(),
                        self._seated_keep_s(player_of(identity) is None, record.status))
        except (RedisError, OSError, Rejected) as exc:
            log.info("seat index of %s not updated: %r", table_id, exc)

    def _your_turn(self, before: TableRecord | None, after: TableRecord) -> None:
        """Tell the account whose turn this commit started ("your_turn", server.inbox)."""
        seat = turn_started(before, after)
        if seat is None or self.notify is None or after.seats[seat].bot is not None:
            return
        player = player_of(after.seats[seat].owner)
        if player is None:
            return
        self.notify(player, {"t": "your_turn", "table": after.id, "name": after.config.name,
                             "seat": seat, "deadline": seat_deadline(after, seat)})

    def due_ms(self, record: TableRecord, now_ms: int) -> int | None:
        """When the scheduler must look at the table next: a bot's move or a clock
        (TableRecord.due_ms), or, for a waiting table with people seated, whether each of them
        has connected (a seat nobody connects to for SEAT_CONNECT_S is freed)."""
        due = record.due_ms(now_ms, self.bot_delay_ms)
        if due is None and record.status == WAITING and any(
                seat.taken and seat.bot is None for seat in record.seats):
            return now_ms + self.seat_connect_ms
        return due

    # -- requests --------------------------------------------------------------------------
    async def create(self, request: Mapping[str, object],
                     owner: str | None = None) -> dict[str, Any]:
        """A new table; ``owner`` names who created it (server.fairness.owner_key), so that the
        scheduler can share bot time fairly between owners."""
        return await self._create(parse_create_request(request), owner)

    async def _create(self, config: TableConfig, owner: str | None) -> dict[str, Any]:
        invite = secrets.token_urlsafe(12) if config.private else None
        async with unavailable_on_redis_error():
            for _attempt in range(10):
                table_id = new_table_id()
                record = TableRecord.new(table_id, config, self.now_ms(),
                                         self.seed_source(),
                                         token_hash(invite) if invite else None)
                # Version 1 replaces the whole document: its frame fits any base.
                empty = Loaded(0, record, dict.fromkeys(record.documents(0)))
                change = Change(record, [{"type": "table", "status": WAITING}],
                                ("set", INVITE_FIELD, record.invite_hash)
                                if record.invite_hash else None)
                version = await self._commit(table_id, empty, change, None)
                if version is not None:
                    if owner is not None:
                        await self.store.set_owner(table_id, owner)
                    if not config.private:
                        # After the commit (another cluster slot): should this write fail,
                        # the table is unlisted and expires after WAITING_TTL.
                        await self.store.index_public(table_id, record.created_ms, WAITING)
                    return {"id": table_id, "invite": invite}
        raise Rejected("unavailable", "could not allocate a table id", status=503)

    async def join(self, table_id: str, seat: int | None, name: str,
                   invite: str | None, *, owner: str | None = None,
                   player: Mapping[str, Any] | None = None) -> tuple[int, str]:
        """Seat a person: ``seat`` a seat number or None (the first free one), ``name`` already
        checked and trimmed (server.table_config.clean_player_name, as the lobby reads a join),
        ``invite`` the private table's code or None; ``owner`` the identity taking the seat
        (server.identity) and ``player`` what the table shows of an account ({"name",
        "rating", "provisional"}; its name is the seat's name). A rated table seats accounts
        only, each once. Returns (seat, the seat's new token)."""
        token = secrets.token_urlsafe(32)
        hashed = token_hash(token)
        taken: list[int] = []
        if player is not None:
            name = str(player["name"])

        def change(loaded: Loaded) -> Change:
            record = loaded.record
            if not invite_matches(invite, record.invite_hash):
                raise unknown_table(table_id)
            if seat is not None and not 0 <= seat < record.config.players:
                raise Rejected("bad_request", f"no seat {seat} at this table", status=400)
            if record.config.rated and player is None:
                raise Rejected("account_required", "log in to sit at a rated table",
                               status=403)
            if record.status != WAITING:
                raise Rejected("table_full", "every seat is taken", status=409)
            if record.config.rated and any(st.owner == owner for st in record.seats):
                raise Rejected("already_seated", "you already sit at this rated table",
                               status=409)
            free = [s for s, st in enumerate(record.seats) if not st.taken]
            if seat is None:
                if not free:
                    raise Rejected("table_full", "every seat is taken", status=409)
                chosen = free[0]
            elif seat not in free:
                raise Rejected("seat_taken", f"seat {seat} is taken", status=409)
            else:
                chosen = seat
            taken[:] = [chosen]
            seats = list(record.seats)
            seats[chosen] = Seat(name=name, bot=None, taken=True, owner=owner, player=player)
            record = replace(record, seats=tuple(seats))
            events: list[dict[str, Any]] = [{"type": "seat", "seat": chosen, "name": name}]
            if all(s.taken for s in seats):
                record = self._start(record)
                events.append({"type": "table", "status": PLAYING})
            return Change(record, events, ("set", chosen, hashed), takes_seat=True)

        async with unavailable_on_redis_error():
            # The token's hash names this join, so a retried commit is recognised as done.
            await self.write(table_id, change, client=(-1, "join:" + hashed[:32]))
            # Until its person connects, the seat counts as last seen when it was taken.
            now = self.now_ms()
            await self.store.mark_seen(table_id, {taken[0]: now})
            if owner is not None and player_of(owner) is not None:  # (a guest's: `write`)
                await self.store.add_seated([owner], table_id, now)
        return taken[0], token

    def _seated_keep_s(self, guest: bool, status: str) -> float:
        """How long a seat at a table of ``status`` keeps its holder's list of tables: a
        guest's seat at a waiting table as long as the table may wait (`Store.add_seated`)."""
        if status == WAITING and guest:
            return self.lifetime_ms[WAITING] / 1000
        return SEATED_KEEP_S

    async def seated(self, owner: str) -> list[dict[str, Any]]:
        """The tables ``owner`` sits at now (waiting or in play, the seat not left), oldest
        first: each table's lobby summary with its ``seat``, whether it is that seat's ``turn``
        and, then, its clock's ``deadline`` (ms; None without a clock or when not its turn).
        Entries of tables left, finished or gone are dropped on the way."""
        async with unavailable_on_redis_error():
            table_ids = await self.store.seated_tables(owner)
            found: list[dict[str, Any]] = []
            stale: list[str] = []
            for table_id in table_ids:
                try:
                    loaded = await self.load(table_id)
                except Rejected:
                    stale.append(table_id)
                    continue
                record = loaded.record
                mine = [s for s, st in enumerate(record.seats)
                        if st.owner == owner and st.bot is None]
                if not mine or record.status == FINISHED:
                    stale.append(table_id)
                    continue
                for seat in mine:
                    found.append({**record.summary(loaded.version), "seat": seat,
                                  "turn": record.seat_to_move == seat,
                                  "deadline": seat_deadline(record, seat)})
            await self.store.drop_seated(owner, stale)
        return found

    async def revoke_tokens(self, owner: str, also: Sequence[str] = ()) -> int:
        """Every seat ``owner`` holds at the tables it sat at (and at ``also``: its finished
        games, which the list of tables it sits at forgets), waiting, in play or finished, gets a
        new token that nobody is given: every token of the seat stops working and its sockets
        are closed (4005), so a token taken by someone who was logged in as the account ends
        with their session -- a finished game's too, which could still accept and claim a
        rematch. The account's own pages take their live seats back with `resume`. Best
        effort, table by table: a table that cannot be written now (Redis down, too busy) is
        logged and the others are done. Returns how many seats."""
        revoked = 0
        try:
            tables = dict.fromkeys([*await self.store.seated_tables(owner), *also])
        except (RedisError, OSError) as exc:
            log.warning("seat tokens not revoked: %r", exc)
            return 0
        for table_id in tables:
            for nth in itertools.count():  # each seat of the owner's there (one, mostly)
                try:
                    await self._new_token(table_id, owner, nth, finished=True)
                except Rejected as rej:
                    if rej.code not in ("not_seated", "unknown_table"):
                        log.warning("seat tokens not revoked at %s: %s", table_id, rej.code)
                    break
                revoked += 1
        return revoked

    async def resume(self, table_id: str, owner: str) -> tuple[int, str]:
        """A new token for the seat ``owner`` holds at the table (the same person on another
        device); the seat's old token stops working and its sockets are closed."""
        return await self._new_token(table_id, owner, 0)

    async def _new_token(self, table_id: str, owner: str, nth: int,
                         finished: bool = False) -> tuple[int, str]:
        """(seat, its new token) for the ``nth`` seat (0 = the first) ``owner`` holds at the
        table, waiting or in play (or ``finished``); not_seated when there is no such seat."""
        token = secrets.token_urlsafe(32)
        hashed = token_hash(token)
        held: list[int] = []

        def change(loaded: Loaded) -> Change:
            record = loaded.record
            mine = [s for s, st in enumerate(record.seats)
                    if st.owner == owner and st.bot is None]
            if len(mine) <= nth or (record.status == FINISHED and not finished):
                raise Rejected("not_seated", "you hold no seat at this table", status=403)
            held[:] = mine[nth:nth + 1]
            # A revocation (``finished``: every token of an account whose sessions end) is
            # made whatever the table's seat changes; a resume is one more seat handed out.
            return Change(record, [], ("set", mine[nth], hashed), takes_seat=not finished)

        async with unavailable_on_redis_error():
            await self.write(table_id, change, client=(-1, "resume:" + hashed[:32]))
        return held[0], token

    async def claim_seats(self, guest: str, owner: str, player: Mapping[str, Any]) -> int:
        """A guest who registered: every seat ``guest`` still plays at a table waiting or in
        play becomes ``owner``'s, shown as ``player`` (a finished game's seats stay as they
        were: the archive's rows are claimed apart); returns how many tables changed hands."""
        moved = 0

        def held(record: TableRecord) -> list[int]:
            return [s for s, st in enumerate(record.seats)
                    if st.owner == guest and st.bot is None]

        def change(loaded: Loaded) -> Change:
            record = loaded.record
            seats = list(record.seats)
            events: list[dict[str, Any]] = []
            for s in held(record) if record.status != FINISHED else []:
                seats[s] = replace(seats[s], owner=owner, name=str(player["name"]),
                                   player=player)
                events.append({"type": "seat", "seat": s, "name": player["name"]})
            if not events:
                raise Rejected("not_seated", "the guest holds no seat here now", status=409)
            return Change(replace(record, seats=tuple(seats)), events)

        async with unavailable_on_redis_error():
            for table_id in await self.store.seated_tables(guest):
                try:
                    await self.write(table_id, change)
                except Rejected:
                    continue  # gone, finished or left meanwhile: nothing to move
                await self.store.add_seated([owner], table_id, self.now_ms())
                moved += 1
            await self.store.drop_seated(guest, await self.store.seated_tables(guest))
        return moved

    async def set_ratings(self, table_id: str, changes: Sequence[Mapping[str, Any]]) -> None:
        """Show a rated game's rating changes on its (finished) table: one more version."""

        def change(loaded: Loaded) -> Change:
            return Change(replace(loaded.record, ratings=tuple(changes)),
                          [{"type": "ratings"}])

        async with unavailable_on_redis_error():
            await self.write(table_id, change, client=(-1, "ratings"))

    # -- rematches ---------------------------------------------------------------------------
    async def rematch(self, table_id: str, token: str, *, creator: str | None = None,
                      before_make: Callable[[], Awaitable[None]] | None = None,
                      ) -> dict[str, Any]:
        """The seat of ``token`` accepts a rematch of the finished game; returns the table's
        ``rematch`` ({"accepted": [seats], "table": id or None}). Once every seat people
        played has accepted, the rematch table is made (`_make_rematch`), owned by ``creator``
        (server.fairness.owner_key of the client asking, as `create`'s ``owner``).

        ``before_make`` (the lobby's quotas) is awaited once before this request makes the
        table, and may refuse it (raise `Rejected`): when this acceptance completes the set,
        before it is recorded, so that nothing changes; when the set was completed by a
        request that could not make the table (another acceptance at the same moment), the
        acceptances stay and asking again makes the table."""
        async with unavailable_on_redis_error():
            seat, _ = await self.authenticate(table_id, token)
            if seat is None:
                raise Rejected("bad_token", "a seat token is needed to ask for a rematch",
                               status=403)
            hashed = token_hash(token)
            record = (await self.load(table_id)).record
            rematch_refusal(record)
            charged = False  # whether before_make has been awaited
            if before_make is not None and rematch_agreed(record, seat):
                await before_make()
                charged = True
            if record.rematch is None or seat not in record.rematch["accepted"]:
                lifetime = await self.store.lifetime_ms(table_id)

                def change(loaded: Loaded) -> Change:
                    current = loaded.record
                    rematch_refusal(current)
                    accepted = [] if current.rematch is None else current.rematch["accepted"]
                    found = {"accepted": sorted({*accepted, seat}), "table": None}
                    return Change(replace(current, rematch=found),
                                  [{"type": "rematch", "seat": seat}])

                await self.write(table_id, change, client=(seat, "rematch"),
                                 require=(seat, hashed))
                await self._keep_lifetime(table_id, lifetime)
                record = (await self.load(table_id)).record
            if rematch_agreed(record) and record.rematch is not None \
                    and record.rematch["table"] is None:
                if not charged and before_make is not None:
                    await before_make()
                record = await self._make_rematch(record, creator)
        assert record.rematch is not None
        return {"accepted": list(record.rematch["accepted"]), "table": record.rematch["table"]}

    async def _keep_lifetime(self, table_id: str, before_ms: int) -> None:
        """A finished table already archived keeps the lifetime it had (a commit on a finished
        table of an archiving service keeps it without expiry: the archive's pending mark)."""
        if self.archive and before_ms > 0:
            await self.store.archive_done(table_id, None, before_ms)

    async def _make_rematch(self, old: TableRecord, creator: str | None) -> TableRecord:
        """Make the rematch table of ``old`` (once, by one process: a lock), owned by
        ``creator`` (the scheduler's fair shares, as `create`'s ``owner``): the same config,
        every seat moved one on (seat s -> (s + 1) % players), bots included; each person's
        new seat taken for them (same owner, same account) and its token kept for
        REMATCH_TTL_S under ``{old id}:rematch`` until they claim it (`rematch_seat`). Then
        ``rematch.table`` names it and each account is told (inbox "rematch")."""
        redis_ = self.store.redis
        lock, nonce = rematch_lock_key(old.id), secrets.token_hex(8)
        if not await redis_.set(lock, nonce, nx=True, px=REMATCH_LOCK_MS):
            return old  # another request is making it: its version will say so
        try:
            current = (await self.load(old.id)).record
            if current.rematch is not None and current.rematch.get("table") is not None:
                return current  # made meanwhile, by a request that held the lock before
            config = old.config
            players = config.players
            rotated = replace(config, bots={(s + 1) % players: level
                                            for s, level in config.bots.items()})
            created = await self._create(rotated, creator)
            new_id, invite = str(created["id"]), created["invite"]
            tokens: dict[Any, Any] = {"table": new_id, "invite": invite or ""}
            for seat in rematch_people(old):
                held = old.seats[seat]
                _, tokens[str(seat)] = await self.join(
                    new_id, (seat + 1) % players, held.name or "Player", invite,
                    owner=held.owner, player=rematch_player(old, seat))
            key = rematch_key(old.id)
            async with redis_.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=tokens)
                pipe.expire(key, REMATCH_TTL_S)
                await pipe.execute()
            lifetime = await self.store.lifetime_ms(old.id)

            def change(loaded: Loaded) -> Change:
                current = loaded.record
                rematch_refusal(current)  # rematch_taken: made already, nothing to do
                assert current.rematch is not None
                return Change(replace(current, rematch={**current.rematch, "table": new_id}),
                              [{"type": "rematch", "table": new_id}])

            await self.write(old.id, change, client=(-1, "rematch:" + new_id))
            await self._keep_lifetime(old.id, lifetime)
        finally:
            with contextlib.suppress(RedisError):
                if as_bytes(await redis_.get(lock) or b"") == nonce.encode():
                    await redis_.delete(lock)
        if self.notify is not None:
            for seat in rematch_people(old):
                player = player_of(old.seats[seat].owner)
                if player is not None:
                    self.notify(player, {"t": "rematch", "table": new_id, "from": old.id})
        return (await self.load(old.id)).record

    async def rematch_seat(self, table_id: str, token: str) -> dict[str, Any]:
        """The rematch seat of the old seat ``token`` holds: {"table", "seat", "token",
        "invite"} (the same answer each time, for REMATCH_TTL_S after the table was made)."""
        async with unavailable_on_redis_error():
            seat, _ = await self.authenticate(table_id, token)
            if seat is None:
                raise Rejected("bad_token", "a seat token is needed to claim a rematch seat",
                               status=403)
            record = (await self.load(table_id)).record
            if record.status != FINISHED:
                raise Rejected("game_not_over", "a rematch comes when the game is over",
                               status=409)
            new_id = None if record.rematch is None else record.rematch["table"]
            if new_id is None:
                raise Rejected("rematch_not_ready",
                               "the rematch table is made once every player has accepted",
                               status=409)
            found, invite = await self.store.redis.hmget(rematch_key(table_id),
                                                         [str(seat), "invite"])
        if found is None:
            raise Rejected("rematch_expired", "the rematch seat was reserved for "
                           f"{REMATCH_TTL_S} s; resume it on the new table instead", status=409)
        code = as_bytes(invite).decode() if invite is not None else ""
        return {"table": new_id, "seat": (seat + 1) % record.config.players,
                "token": as_bytes(found).decode(), "invite": code or None}

    def _start(self, record: TableRecord) -> TableRecord:
        record = replace(record, status=PLAYING, started_ms=self.now_ms())
        return record.with_turn_clock(None, -1, self.now_ms())

    async def leave(self, table_id: str, token: str) -> None:
        async with unavailable_on_redis_error():
            seat, _ = await self.authenticate(table_id, token)
            if seat is None:
                raise Rejected("bad_token", "a seat token is needed to leave", status=403)
            hashed = token_hash(token)

            def change(loaded: Loaded) -> Change:
                record = loaded.record
                seats = list(record.seats)
                events: list[dict[str, Any]] = [{"type": "leave", "seat": seat}]
                if record.status == WAITING:
                    seats[seat] = Seat()
                elif record.status == PLAYING and record.config.rated:
                    # Leaving a rated game resigns it: the leaver's side loses.
                    record = forfeit(record, seat, "leave", self.now_ms())
                    return Change(record, events, ("del", seat, ""))
                elif record.status == PLAYING:
                    seats[seat] = replace(seats[seat], bot=STANDIN_BOT)
                    events[0]["bot"] = STANDIN_BOT
                record = replace(record, seats=tuple(seats))
                if record.status == PLAYING and record.seat_to_move == seat:
                    record = record.with_turn_clock(None, -1, self.now_ms())
                return Change(record, events, ("del", seat, ""))

            try:
                await self.write(table_id, change, client=(seat, "leave:" + hashed[:32]),
                                  require=(seat, hashed))
            except Rejected as rej:
                if rej.code == "seat_left":  # a concurrent leave with the same token won
                    raise Rejected("bad_token", "that token holds no seat at this table",
                                   status=403) from rej
                raise

    async def submit(self, table_id: str, seat: int, move: Mapping[str, object],
                     expected_version: int, client_id: str, *, token: str | None = None) -> int:
        """Play ``move`` for ``seat``, held by the token whose hash is ``token``: the commit
        is refused (seat_left) if that token no longer holds the seat when it lands. Only a
        caller that speaks for the seat itself (a test, a tool) passes ``token=None``.

        ``move``, ``expected_version`` and ``client_id`` are the fields of a decoded
        `server.protocol.Move`: a map with string keys, a version >= 0 and an id of 1 to 32
        characters (server.protocol.decode checks them; they are not checked again here)."""
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat <= 3:
            raise Rejected("not_seated", "only a seated player can move", status=403)
        parsed = parse_move(move)

        def change(loaded: Loaded) -> Change:
            seats = loaded.record.seats
            if seat < len(seats) and seats[seat].bot is not None:
                raise Rejected("not_seated", "a bot plays this seat now", status=403)
            return self.play(loaded.record, seat, parsed, None)

        async with unavailable_on_redis_error():
            return await self.write(table_id, change, expected=expected_version,
                                     client=(seat, "m:" + client_id),
                                     require=None if token is None else (seat, token))

    def play(self, record: TableRecord, seat: int, move: engine.Move,
              extra_event: dict[str, Any] | None) -> Change:
        if seat >= record.config.players:
            raise Rejected("not_seated", "no such seat at this table", status=403)
        if record.status == WAITING:
            raise Rejected("not_started", "the table is waiting for players", status=409)
        if record.status == FINISHED:
            raise Rejected("game_over", "the game is over", status=409)
        if record.next_hand is not None:
            raise Rejected("between_hands", "the next hand is not dealt yet", status=409)
        previous_turn, previous_round = record.game.turn, record.game.round
        pause = self._pause_ms(record)
        last_hand = self.max_hands is not None and previous_round + 1 >= self.max_hands
        try:
            if pause or last_hand:
                game, events = engine.apply_until_hand_end(record.game, seat, move)
            else:
                game, events = engine.apply(record.game, seat, move)
        except engine.EngineError as exc:
            raise Rejected(exc.code, exc.message, status=409) from exc
        now = self.now_ms()
        # A move that keeps its hand going is committed as itself, appended to the stored
        # state; `TableRecord.replayed` turns it into this same record again.
        entry = move_entry(seat, move, now) if keeps_hand(record.game, game) else None
        record = record.with_game(game)
        if extra_event is not None:
            events = [extra_event, *events]
        if game.game_over:
            record = replace(record, status=FINISHED)
            record = replace(record, result=game_result(record))
        elif game.turn is None and last_hand:
            record = hand_limit(record, now)
        elif game.turn is None:  # a hand ended: the pause before the next one
            record = replace(record, next_hand={"deadline": now + pause, "ready": []})
            if all(st.bot is not None for st in record.seats):
                return self.deal(record, events)  # nobody to wait for
        return new_change(record.with_turn_clock(previous_turn, previous_round, now), events,
                          entry)

    def _pause_ms(self, record: TableRecord) -> int:
        clock = record.config.clock
        return self.next_hand_turn_ms if clock is not None and clock.kind == "turn" \
            else self.next_hand_ms

    def deal(self, record: TableRecord, events: list[dict[str, Any]] | None = None) -> Change:
        """End the pause between hands: deal the next hand (its leader's clock starts)."""
        if record.status != PLAYING or record.next_hand is None:
            raise Rejected("not_between_hands", "no hand is waiting to be dealt", status=409)
        try:
            game, dealt = engine.deal_next(record.game)
        except engine.EngineError as exc:
            raise Rejected(exc.code, exc.message, status=409) from exc
        record = replace(record, game=game, next_hand=None)
        return Change(record.with_turn_clock(None, -1, self.now_ms()), [*(events or []), *dealt])

    async def ready(self, table_id: str, seat: int, token: str | None) -> int:
        """Seat ``seat`` (held by the token whose hash is ``token``) is ready for the next
        hand; the hand is dealt once every person connected to the table is. Returns the new
        version."""
        async with unavailable_on_redis_error():
            loaded = await self.load(table_id)
            online, _ = await self.store.seats_online(table_id, self.now_ms(),
                                                      loaded.record.config.players)
            online[seat] = True  # the seat saying so is here

            def change(current: Loaded) -> Change:
                record = current.record
                pause = record.next_hand
                if record.status != PLAYING or pause is None:
                    raise Rejected("not_between_hands", "no hand is waiting to be dealt",
                                   status=409)
                ready = sorted({*pause["ready"], seat})
                events: list[dict[str, Any]] = [{"type": "ready", "seat": seat}]
                waiting = [s for s, st in enumerate(record.seats)
                           if st.bot is None and online[s] and s not in ready]
                if not waiting:
                    return self.deal(record, events)
                return Change(replace(record, next_hand={**pause, "ready": ready}), events)

            return await self.write(table_id, change,
                                    client=(seat, f"ready:{loaded.record.game.round}"),
                                    require=None if token is None else (seat, token))

    async def hint(self, table_id: str, seat: int) -> tuple[int, dict[str, object]]:
        """A practice table's hint for ``seat``, the seat to move: the `strong` bot's move for
        that seat's own view (engine.view: its hand and what is public, nothing else), thought
        in the scheduler's worker processes. Returns (the version it is for, the move in the
        notation). Rejected unless the table has hints on and it is that seat's turn."""
        loaded = await self.load(table_id)
        record = loaded.record
        if not record.config.hints:
            raise Rejected("hints_off", "this table has no hints", status=409)
        if record.seat_to_move != seat or record.next_hand is not None:
            raise Rejected("not_your_turn", "a hint is for the seat to move", status=409)
        key = (table_id, loaded.version, seat)
        known = self._hints.get(key)
        if known is not None:  # asked again for the same position: thought of once
            return loaded.version, known
        scheduler = self.scheduler
        if scheduler is None:
            raise Rejected("unavailable", "no bot worker is running", status=503)
        from server.scheduler import bot_seed

        view = engine.view(record.game, seat)
        move = await scheduler.hint(view, bot_seed(record, loaded.version),
                                    record.seats[seat].owner or table_id)
        found = engine.move_to_data(move)
        self._hints[key] = found
        while len(self._hints) > HINTS_KEPT:
            self._hints.popitem(last=False)
        return loaded.version, found

    async def run_deadlines(self, stop: asyncio.Event, settings: Settings | None = None) -> None:
        from server.scheduler import Scheduler

        scheduler = Scheduler(self) if settings is None else Scheduler.from_settings(self, settings)
        self.scheduler = scheduler
        try:
            await scheduler.run(stop)
        finally:
            self.scheduler = None


def rematch_refusal(record: TableRecord) -> None:
    """Rejected unless the game is over and its rematch table not made yet."""
    if record.status != FINISHED:
        raise Rejected("game_not_over", "a rematch can be asked for once the game is over",
                       status=409)
    if record.rematch is not None and record.rematch["table"] is not None:
        raise Rejected("rematch_taken", "the rematch table is made: claim your seat there",
                       status=409)


def rematch_player(record: TableRecord, seat: int) -> Mapping[str, Any] | None:
    """What the rematch table shows of ``seat``'s account: as before, with its rating after
    this game once the game was rated."""
    player = record.seats[seat].player
    if player is None:
        return None
    for changed in record.ratings or ():
        if changed.get("seat") == seat:
            return {**player, "rating": changed["after"], "provisional": changed["provisional"]}
    return player


def seat_deadline(record: TableRecord, seat: int) -> int | None:
    """When ``seat``'s clock runs out (ms), while it is that seat's turn; else None."""
    clock = record.clock
    if record.seat_to_move != seat or clock is None or clock.seat != seat:
        return None
    return clock.deadline_ms


_PLAYS: dict[tuple[str, str | None], engine.Move] = {}
"""The plays parsed so far, by their tiles as written ({"play": T, "on": U}): bounded by the
notation itself (the tiles of the double-six set, either half first)."""


def parse_move(move: Mapping[str, object]) -> engine.Move:
    """The engine move of a `server.protocol.Move`'s payload (a map with string keys), or
    Rejected with the engine's code (bad_move, bad_tile) when it is not a move."""
    written: tuple[str, str | None] | None = None
    if type(move) is dict:  # (a caller's payload may be anything: the engine names it)
        play, on = move.get("play"), move.get("on")
        if type(play) is str and (on is None or type(on) is str) \
                and len(move) == 1 + ("on" in move):
            written = (play, on)
            known = _PLAYS.get(written)
            if known is not None:
                return known
    try:
        parsed = engine.move_from_data(move)
    except engine.EngineError as exc:
        raise Rejected(exc.code, exc.message) from exc
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise Rejected("bad_move", "that is not a move") from exc
    if written is not None:
        _PLAYS[written] = parsed
    return parsed


def new_table_id() -> str:
    alphabet = "abcdefghijkmnopqrstuvwxyz23456789"
    return "".join(secrets.choice(alphabet) for _ in range(8))


class _UnavailableOnRedisError:
    """A Redis error inside becomes Rejected unavailable (503). A class rather than a
    generator-based context manager: it is entered on every move, and costs a tenth."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if isinstance(exc, RedisError):
            log.warning("redis error: %s", exc)
            raise Rejected("unavailable", "storage is unavailable; try again",
                           status=503) from exc


_UNAVAILABLE_ON_REDIS_ERROR = _UnavailableOnRedisError()  # it keeps no state


def unavailable_on_redis_error() -> _UnavailableOnRedisError:
    return _UNAVAILABLE_ON_REDIS_ERROR
