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
import hashlib
import hmac
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import msgpack
import redis.asyncio
from redis.exceptions import RedisError

import engine
from server.diff import diff
from server.record import (
    FINISHED,
    PLAYING,
    SPECTATORS,
    STANDIN_BOT,
    WAITING,
    Seat,
    TableRecord,
    audience_viewer,
    game_result,
)
from server.rejected import Rejected
from server.store import TABLE_ID, Store
from server.table_config import MAX_PLAYER_NAME, clean_name, parse_create_request

__all__ = ["SPECTATORS", "Rejected", "TableService"]

log = logging.getLogger("server.tables")

MAX_CLIENT_ID = 32
PUBLIC_LIST_LIMIT = 200
CACHE_TABLES = 1024
WRITE_ATTEMPTS = 20
STATUS_ORDER = {WAITING: 0, PLAYING: 1, FINISHED: 2}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Loaded:
    """A table as read at one version, with its documents (built lazily, then cached)."""

    version: int
    record: TableRecord
    docs: dict[str, dict[str, Any] | None]  # None: before the table existed


@dataclass(frozen=True, slots=True)
class Change:
    """What a write produces from a loaded table."""

    record: TableRecord
    events: list[dict[str, Any]]
    token: tuple[Literal["set", "del"], int, str] | None = None


def unknown_table(table_id: str) -> Rejected:
    return Rejected("unknown_table", f"no table {table_id!r}", status=404)


class TableService:
    """Tables in Redis. ``redis`` must return bytes (``decode_responses=False``).

    ``history_limit``: versions kept in each table's stream (None = the whole game).
    ``bot_delay_ms``: how long a bot waits before it moves. ``clock``: seconds since the epoch.
    """

    def __init__(self, redis: redis.asyncio.Redis, *, history_limit: int | None = None,
                 bot_delay_ms: int = 600, clock: Callable[[], float] = time.time) -> None:
        self.store = Store(redis, history_limit=history_limit)
        self.bot_delay_ms = bot_delay_ms
        self.clock = clock
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        # Where each new game's seed comes from (tests replace it to replay the same deals).
        self.seed_source: Callable[[], int] = functools.partial(secrets.randbits, 62)

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- reading ---------------------------------------------------------------------------
    async def _load(self, table_id: str) -> Loaded:
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
        result = Loaded(version, TableRecord.from_blob(blob), {})
        self._remember(table_id, result)
        return result

    def _remember(self, table_id: str, loaded: Loaded) -> None:
        self._cache[table_id] = loaded
        self._cache.move_to_end(table_id)
        while len(self._cache) > CACHE_TABLES:
            self._cache.popitem(last=False)

    @staticmethod
    def _doc(loaded: Loaded, audience: str) -> dict[str, Any] | None:
        if audience not in loaded.docs:
            loaded.docs[audience] = loaded.record.document(audience, loaded.version)
        return loaded.docs[audience]

    async def snapshot(self, table_id: str, audience: str) -> tuple[int, dict[str, Any]]:
        async with unavailable_on_redis_error():
            loaded = await self._load(table_id)
        self._check_audience(audience, loaded.record)
        doc = self._doc(loaded, audience)
        assert doc is not None
        return loaded.version, doc

    @staticmethod
    def _check_audience(audience: object, record: TableRecord) -> None:
        try:
            audience_viewer(str(audience), record.config.players)
        except ValueError as exc:
            raise Rejected("bad_request", str(exc), status=400) from exc

    async def frames_since(self, table_id: str, audience: str,
                           since: int) -> list[tuple[int, bytes]] | None:
        return (await self.frames_since_many(table_id, {audience: since}))[audience]

    async def frames_since_many(
        self, table_id: str, sinces: Mapping[str, int]
    ) -> dict[str, list[tuple[int, bytes]] | None]:
        """audience -> the frames after its `since` (None: a snapshot is needed), from one read
        of the table's history however many audiences are asked for."""
        answers: dict[str, list[tuple[int, bytes]] | None] = {}
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
        return f"t:{{{table_id}}}:n"

    async def summary(self, table_id: str, invite: str | None = None) -> dict[str, Any]:
        async with unavailable_on_redis_error():
            loaded = await self._load(table_id)
        self._check_invite(loaded.record, invite)
        return loaded.record.summary(loaded.version)

    async def list_public(self) -> list[dict[str, Any]]:
        async with unavailable_on_redis_error():
            ids = await self.store.public_ids(PUBLIC_LIST_LIMIT)
            metas = await self.store.metas(ids)
        summaries = [msgpack.unpackb(meta) for meta in metas if meta is not None]
        # Newest first within each status; open tables first.
        summaries.sort(key=lambda s: (STATUS_ORDER.get(s["status"], 3), -s["created"]))
        return summaries

    @staticmethod
    def _check_invite(record: TableRecord, invite: object) -> None:
        if record.invite_hash is None:
            return
        if not isinstance(invite, str) or not hmac.compare_digest(
                token_hash(invite), record.invite_hash):
            raise Rejected("bad_invite", "this private table needs its invite code", status=403)

    async def authenticate(self, table_id: str, token: str | None) -> int | None:
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            raise unknown_table(str(table_id))
        async with unavailable_on_redis_error():
            if await self.store.version(table_id) == 0:
                raise unknown_table(table_id)
            if token is None:
                return None
            hashes = await self.store.token_hashes(table_id)
        if not isinstance(token, str):
            raise Rejected("bad_token", "that is not a seat token", status=403)
        wanted = token_hash(token)
        for seat, stored in hashes.items():
            if hmac.compare_digest(wanted, stored):
                return seat
        raise Rejected("bad_token", "that token holds no seat at this table", status=403)

    async def transcript(self, table_id: str) -> dict[str, Any]:
        async with unavailable_on_redis_error():
            loaded = await self._load(table_id)
        if loaded.record.status != FINISHED:
            raise Rejected("game_not_over", "the transcript is ready when the game is over",
                           status=409, version=loaded.version)
        transcript: dict[str, Any] = engine.to_transcript(loaded.record.game)
        return transcript

    async def replay(self, table_id: str) -> list[dict[str, Any]]:
        views: list[dict[str, Any]] = engine.replay_views(await self.transcript(table_id))
        return views

    # -- the write path --------------------------------------------------------------------
    async def _write(self, table_id: str, change: Callable[[Loaded], Change], *,
                     expected: int | None = None, client: tuple[int, str] | None = None) -> int:
        """Load → change → atomic commit; returns the new version. With ``expected`` a stale
        version is refused; without it the change is recomputed on the newer version (joins,
        bots, clocks). A ``client`` (seat, id) already accepted returns its first version."""
        for _attempt in range(WRITE_ATTEMPTS):
            loaded = await self._load(table_id)
            if expected is not None and loaded.version != expected:
                return await self._accepted_or_stale(table_id, loaded.version, client)
            try:
                result = change(loaded)
            except Rejected:
                prior = await self._accepted(table_id, client)
                if prior is not None:
                    return prior
                raise
            version = await self._commit(table_id, loaded, result, client)
            if version is not None:
                return version
            if expected is not None:
                return await self._accepted_or_stale(table_id, None, client)
        raise Rejected("busy", "the table changed too often; try again", status=409)

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
                      client: tuple[int, str] | None) -> int | None:
        version = loaded.version + 1
        docs = change.record.documents(version)
        new = Loaded(version, change.record, dict(docs))
        frames: dict[str, bytes] = {}
        for audience, doc in docs.items():
            viewer = audience_viewer(audience, change.record.config.players)
            frame = {"t": "diff", "v": version, "ops": diff(self._doc(loaded, audience), doc),
                     "ev": engine.redact_events(change.events, viewer)}
            frames[audience] = bytes(msgpack.packb(frame))
        now = self.now_ms()
        meta = bytes(msgpack.packb(change.record.summary(version)))
        result = await self.store.commit(
            table_id, loaded.version, change.record.to_blob(), meta, frames,
            client=client, token=change.token)
        if result.outcome == "dup":
            return result.version
        if result.outcome == "stale":
            return None
        self._remember(table_id, new)
        due = change.record.due_ms(now, self.bot_delay_ms)
        had_due = loaded.version > 0 and loaded.record.due_ms(now, self.bot_delay_ms) is not None
        if due is not None or had_due:  # tables without bots or clocks skip this round trip
            await self.store.schedule(table_id, loaded.version, version, due)
        return version

    # -- requests --------------------------------------------------------------------------
    async def create(self, request: Mapping[str, object]) -> dict[str, Any]:
        config = parse_create_request(request)
        invite = secrets.token_urlsafe(12) if config.private else None
        async with unavailable_on_redis_error():
            for _attempt in range(10):
                table_id = new_table_id()
                record = TableRecord.new(table_id, config, self.now_ms(),
                                         self.seed_source(),
                                         token_hash(invite) if invite else None)
                # Version 1 replaces the whole document: its frame fits any base.
                empty = Loaded(0, record, dict.fromkeys(record.documents(0)))
                change = Change(record, [{"type": "table", "status": WAITING}])
                version = await self._commit(table_id, empty, change, None)
                if version is not None:
                    if not config.private:
                        await self.store.index_public(table_id, record.created_ms)
                    return {"id": table_id, "invite": invite}
        raise Rejected("unavailable", "could not allocate a table id", status=503)

    async def join(self, table_id: str, seat: int | None, name: str,
                   invite: str | None) -> tuple[int, str]:
        player = clean_name(name, "name", MAX_PLAYER_NAME)
        if seat is not None and (not isinstance(seat, int) or isinstance(seat, bool)):
            raise Rejected("bad_request", "seat must be a seat number or null", status=400)
        token = secrets.token_urlsafe(32)
        hashed = token_hash(token)
        taken: list[int] = []

        def change(loaded: Loaded) -> Change:
            record = loaded.record
            self._check_invite(record, invite)
            if seat is not None and not 0 <= seat < record.config.players:
                raise Rejected("bad_request", f"no seat {seat} at this table", status=400)
            if record.status != WAITING:
                raise Rejected("table_full", "every seat is taken", status=409)
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
            seats[chosen] = Seat(name=player, bot=None, taken=True)
            record = replace(record, seats=tuple(seats))
            events: list[dict[str, Any]] = [{"type": "seat", "seat": chosen, "name": player}]
            if all(s.taken for s in seats):
                record = self._start(record)
                events.append({"type": "table", "status": PLAYING})
            return Change(record, events, ("set", chosen, hashed))

        async with unavailable_on_redis_error():
            # The token's hash names this join, so a retried commit is recognised as done.
            await self._write(table_id, change, client=(-1, "join:" + hashed[:32]))
        return taken[0], token

    def _start(self, record: TableRecord) -> TableRecord:
        record = replace(record, status=PLAYING)
        return record.with_turn_clock(None, -1, self.now_ms())

    async def leave(self, table_id: str, token: str) -> None:
        async with unavailable_on_redis_error():
            seat = await self.authenticate(table_id, token)
            if seat is None:
                raise Rejected("bad_token", "a seat token is needed to leave", status=403)

            def change(loaded: Loaded) -> Change:
                record = loaded.record
                seats = list(record.seats)
                events: list[dict[str, Any]] = [{"type": "leave", "seat": seat}]
                if record.status == WAITING:
                    seats[seat] = Seat()
                elif record.status == PLAYING:
                    seats[seat] = replace(seats[seat], bot=STANDIN_BOT)
                    events[0]["bot"] = STANDIN_BOT
                record = replace(record, seats=tuple(seats))
                if record.status == PLAYING and record.seat_to_move == seat:
                    record = record.with_turn_clock(None, -1, self.now_ms())
                return Change(record, events, ("del", seat, ""))

            await self._write(table_id, change, client=(seat, "leave:" + token_hash(token)[:32]))

    async def submit(self, table_id: str, seat: int, move: Mapping[str, object],
                     expected_version: int, client_id: str) -> int:
        if not isinstance(client_id, str) or not 1 <= len(client_id) <= MAX_CLIENT_ID:
            raise Rejected("bad_message", "a move id is a string of 1 to 32 characters")
        if not isinstance(expected_version, int) or isinstance(expected_version, bool) \
                or expected_version < 0:
            raise Rejected("bad_message", "v must be the version the move was made against")
        if not isinstance(seat, int) or isinstance(seat, bool) or not 0 <= seat <= 3:
            raise Rejected("not_seated", "only a seated player can move", status=403)
        parsed = parse_move(move)

        def change(loaded: Loaded) -> Change:
            seats = loaded.record.seats
            if seat < len(seats) and seats[seat].bot is not None:
                raise Rejected("not_seated", "a bot plays this seat now", status=403)
            return self._play(loaded.record, seat, parsed, None)

        async with unavailable_on_redis_error():
            return await self._write(table_id, change, expected=expected_version,
                                     client=(seat, "m:" + client_id))

    def _play(self, record: TableRecord, seat: int, move: Any,
              extra_event: dict[str, Any] | None) -> Change:
        if seat >= record.config.players:
            raise Rejected("not_seated", "no such seat at this table", status=403)
        if record.status == WAITING:
            raise Rejected("not_started", "the table is waiting for players", status=409)
        if record.status == FINISHED:
            raise Rejected("game_over", "the game is over", status=409)
        previous_turn, previous_round = record.game.turn, record.game.round
        try:
            game, events = engine.apply(record.game, seat, move)
        except engine.EngineError as exc:
            raise Rejected(exc.code, exc.message, status=409) from exc
        record = replace(record, game=game)
        if extra_event is not None:
            events = [extra_event, *events]
        if game.game_over:
            record = replace(record, status=FINISHED)
            record = replace(record, result=game_result(record))
        return Change(record.with_turn_clock(previous_turn, previous_round, self.now_ms()),
                      events)

    async def run_deadlines(self, stop: asyncio.Event) -> None:
        from server.scheduler import Scheduler

        await Scheduler(self).run(stop)


def parse_move(move: object) -> Any:
    """The engine move of a move payload, or Rejected(bad_move) for anything malformed."""
    if not isinstance(move, Mapping):
        raise Rejected("bad_move", 'a move is an object such as {"play": "5-3", "on": "5-5"}')
    try:
        return engine.move_from_data(dict(move))
    except engine.EngineError as exc:
        raise Rejected(exc.code, exc.message) from exc
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise Rejected("bad_move", "that is not a move") from exc


def new_table_id() -> str:
    alphabet = "abcdefghijkmnopqrstuvwxyz23456789"
    return "".join(secrets.choice(alphabet) for _ in range(8))


@contextlib.asynccontextmanager
async def unavailable_on_redis_error() -> AsyncIterator[None]:
    try:
        yield
    except RedisError as exc:
        log.warning("redis error: %s", exc)
        raise Rejected("unavailable", "storage is unavailable; try again", status=503) from exc
