"""Deadlines: bots that move by themselves and clocks that run out.

Each table version that needs an action later has an entry ``<id>:<version>`` in the Redis zset
``deadlines`` (written after every commit), so deadlines survive restarts. `Scheduler.run` polls
the due entries; for each it takes the table's lease (SET NX PX, so one process acts), re-checks
the version, and acts through the table's one write path: a bot seat plays its move, an expired
clock is played by a bot or forfeits the game. Imports engine and the table service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any

import msgpack
from redis.exceptions import RedisError

import engine
from engine.bots import choose_move
from server.record import FINISHED, PLAYING, STANDIN_BOT, TableRecord
from server.rejected import Rejected
from server.store import DEADLINES, as_bytes, deadline_member
from server.tables import Change, Loaded

if TYPE_CHECKING:
    from server.tables import TableService

log = logging.getLogger("server.scheduler")

POLL_S = 0.1
MIN_WAIT_S = 0.01
RETRY_MS = 5_000
LEASE_MS = 10_000
BATCH = 50
REARM_PAGE = 500
REARM_S = 300.0  # how often lost deadline entries are looked for
SEARCHING_LEVELS = ("strong", "strong-fast")


def bot_seed(record: TableRecord, version: int) -> int:
    return (record.seed * 1_000_003 + version) % (1 << 62)


class Scheduler:
    """Acts on due deadlines for one `TableService`."""

    def __init__(self, service: TableService) -> None:
        self.service = service
        self.store = service.store
        self.owner = secrets.token_hex(8)
        self.pool: ProcessPoolExecutor | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set: re-arm missing deadlines once, then act on due ones."""
        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
        try:
            await self._run(stop)
        finally:
            pool, self.pool = self.pool, None
            pool.shutdown(wait=True, cancel_futures=True)

    async def _run(self, stop: asyncio.Event) -> None:
        next_rearm = 0.0
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            if loop.time() >= next_rearm:
                try:
                    await self.rearm()
                    next_rearm = loop.time() + REARM_S
                except RedisError as exc:
                    log.warning("could not re-arm deadlines: %s", exc)
                    next_rearm = loop.time() + 1.0
            try:
                acted = await self.run_once()
                wait = 0.0 if acted >= BATCH else await self._idle_wait()
            except RedisError as exc:
                log.warning("deadline loop: redis error: %s", exc)
                wait = 1.0
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)

    async def _idle_wait(self) -> float:
        first = await self.store.next_due_ms()
        if first is None:
            return POLL_S
        # At least MIN_WAIT_S: an entry due now may be leased by another process.
        return min(POLL_S, max(MIN_WAIT_S, (first - self.service.now_ms()) / 1000))

    async def run_once(self) -> int:
        """Act on every entry due now (up to a batch); returns how many were due."""
        due = await self.store.due(self.service.now_ms(), BATCH)
        results = await asyncio.gather(*(self.act(t, v) for t, v in due), return_exceptions=True)
        for (table_id, version), result in zip(due, results, strict=True):
            if isinstance(result, RedisError):
                raise result
            if isinstance(result, Exception):
                log.error("deadline of table %s v%d failed", table_id, version, exc_info=result)
                # Try again a little later instead of spinning on a broken table.
                await self.store.schedule(table_id, version, version,
                                          self.service.now_ms() + RETRY_MS)
        return len(due)

    async def act(self, table_id: str, version: int) -> None:
        if not await self.store.acquire_lease(table_id, self.owner, LEASE_MS):
            return
        try:
            await self._act(table_id, version)
        finally:
            await self.store.release_lease(table_id, self.owner)

    async def _act(self, table_id: str, version: int) -> None:
        try:
            loaded = await self.service._load(table_id)
        except Rejected:
            await self.store.unschedule(table_id, version)
            return
        if loaded.version != version:
            await self.store.unschedule(table_id, version)  # a later version has its own entry
            return
        record = loaded.record
        seat = record.seat_to_move
        now = self.service.now_ms()
        if seat is None:
            await self.store.unschedule(table_id, version)
            return
        level = record.bot_level(seat)
        if level is None:
            deadline = record.clock.deadline_ms if record.clock else None
            if deadline is None:
                await self.store.unschedule(table_id, version)
                return
            if deadline > now:
                await self.store.schedule(table_id, version, version, deadline)
                return
        event: dict[str, Any] | None = None
        if level is None:
            event = {"type": "timeout", "seat": seat, "action": record.config.on_timeout}
        if level is None and record.config.on_timeout == "forfeit":
            timeout_event = event

            def change(current: Loaded) -> Change:
                ended = forfeit(current.record, seat, self.service.now_ms())
                return Change(ended, [timeout_event] if timeout_event else [])
        else:
            view = engine.view(record.game, seat)
            move = await self.choose(level or STANDIN_BOT, view, bot_seed(record, version))

            def change(current: Loaded) -> Change:
                return self.service._play(current.record, seat, move, event)
        try:
            await self.service._write(table_id, change, expected=version,
                                      client=(-1, f"deadline:{version}"))
        except Rejected as rej:
            if rej.code != "stale_version":
                raise
            await self.store.unschedule(table_id, version)

    async def choose(self, level: str, view: dict[str, Any], seed: int) -> Any:
        """A bot's move; searching levels think in a worker process so the loop keeps
        serving while they do."""
        if self.pool is not None and level in SEARCHING_LEVELS:
            loop = asyncio.get_running_loop()
            try:
                return await loop.run_in_executor(self.pool, choose_move, level, view, seed)
            except (BrokenProcessPool, OSError) as exc:
                log.warning("bot worker process unavailable, thinking in-process: %s", exc)
        return choose_move(level, view, seed)

    async def rearm(self) -> int:
        """Give every playing table its deadline entry again (lost if a process died between
        a commit and its deadline write). Returns how many playing tables were looked at."""
        seen = 0
        redis = self.store.redis
        async for key in redis.scan_iter(match="t:{*}:meta", count=REARM_PAGE):
            table_id = as_bytes(key).decode()[3:-6]
            meta = await self.store.meta(table_id)
            if meta is None or msgpack.unpackb(meta).get("status") != PLAYING:
                continue
            seen += 1
            try:
                loaded = await self.service._load(table_id)
            except Rejected:
                continue
            due = loaded.record.due_ms(self.service.now_ms(), self.service.bot_delay_ms)
            if due is not None:
                await redis.zadd(DEADLINES, {deadline_member(table_id, loaded.version): due},
                                 nx=True)
        return seen


def forfeit(record: TableRecord, seat: int, now_ms: int) -> TableRecord:
    """The game ends with ``seat``'s side losing: the other side wins (with three or more
    sides, the best-scoring other side; nobody on a tie)."""
    sides = [list(side) for side in record.game.sides]
    losing = next(i for i, side in enumerate(sides) if seat in side)
    scores = record.game.scores
    others = [i for i in range(len(sides)) if i != losing]
    best = max(scores[i] for i in others)
    leaders = [i for i in others if scores[i] == best]
    winner = leaders[0] if len(leaders) == 1 else None
    record = replace(record, status=FINISHED,
                     result={"winner": winner, "reason": "forfeit", "seat": seat})
    return record.with_turn_clock(seat, record.game.round, now_ms)
