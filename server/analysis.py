"""Post-game analysis of archived games (engine.analysis), computed off the live path.

Queue. The archive's transaction that writes a game also writes its ``game_analysis`` row,
``pending`` (server/migrations/0007_analysis.sql), so every archived game is analysed once,
whatever happens to the process afterwards. The queue is that table: `Analyst.run` (one per
process, in the app lifespan, with ``ANALYSIS_WORKERS`` > 0) takes a pending game under a lease
(``FOR UPDATE SKIP LOCKED``: several processes share the queue, each job taken by one), so a
worker that dies mid-game leaves a job another takes when the lease ends. It takes the newest
game of the owner (the address that created the table, migration 0009) with the fewest games
waiting: one client archiving games in bulk keeps nobody else's waiting. A job whose lease
was taken ``MAX_TRIES`` times without finishing is marked ``failed`` instead of being retried for
ever.

Work. The analysis runs in ``ANALYSIS_WORKERS`` spawned worker processes of its own
(server.bot_worker `analyse_game`), in the idle scheduling class (`bot_worker.lower_priority`:
they run only on CPU time the server, its bot workers and Redis leave), each within
``ANALYSIS_BUDGET_MS`` of CPU per game and ``ANALYSIS_DEALS`` sampled deals per move: live
tables never wait for it.

Reads. `Analyst.read` answers ``GET /api/games/{id}/analysis`` (a private game needs its
invite, as for the game itself). Must not import the HTTP layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from server import bot_worker
from server.archive import PG_ERRORS, ArchiveUnavailable, unavailable, unknown_game
from server.db import Pool, Postgres
from server.metrics import Metrics
from server.processes import worker_pool
from server.store import TABLE_ID
from server.tables import invite_matches

log = logging.getLogger("server.analysis")

MAX_TRIES = 3
"""Leases a job may take before it is marked failed."""

POLL_S = 5.0
"""How often the queue is looked at when no archived game woke the worker."""

# The owner with the fewest games waiting first, then its newest game: one client archiving
# games in bulk waits behind everyone who has fewer waiting, and keeps nobody's waiting.
_TAKE = """
UPDATE game_analysis SET tries = tries + 1, lease_until = now() + $1 * interval '1 second'
WHERE game_id = (
    SELECT a.game_id FROM game_analysis a
    JOIN (SELECT owner, count(*) AS waiting FROM game_analysis WHERE status = 'pending'
          GROUP BY owner) w ON w.owner = a.owner
    WHERE a.status = 'pending' AND (a.lease_until IS NULL OR a.lease_until < now())
    ORDER BY w.waiting, a.queued_at DESC LIMIT 1 FOR UPDATE OF a SKIP LOCKED)
RETURNING game_id, tries
"""
_RELEASE = """
UPDATE game_analysis SET tries = tries - 1, lease_until = NULL
WHERE game_id = $1 AND status = 'pending' AND tries > 0
"""
_DONE = """
UPDATE game_analysis SET status = 'done', analysis = $2, cpu_ms = $3, done_at = now(),
    lease_until = NULL
WHERE game_id = $1 AND status = 'pending'
"""


class Analyst:
    """The analysis workers of one process, and the reader of finished analyses."""

    def __init__(self, postgres: Postgres, wakeup: asyncio.Event, *, workers: int = 1,
                 budget_ms: int = 20_000, deals: int = 300, poll_s: float = POLL_S,
                 metrics: Metrics | None = None) -> None:
        self.postgres = postgres
        self.metrics = metrics
        self.wakeup = wakeup  # set when a game was archived (Archive.analysis_wakeup)
        self.workers = workers
        self.budget_ms = budget_ms
        self.deals = deals
        self.poll_s = poll_s
        self.pool: ProcessPoolExecutor | None = None
        self.analysed = 0  # games this process analysed (for tests and logs)

    @property
    def lease_s(self) -> float:
        """How long a job is held: time for the whole budget on a busy machine."""
        return max(60.0, 3 * self.budget_ms / 1000)

    def _pg(self) -> Pool:
        pool = self.postgres.pool
        if pool is None:
            raise ArchiveUnavailable
        return pool

    def _new_pool(self) -> ProcessPoolExecutor:
        return worker_pool(self.workers, bot_worker.lower_priority)

    async def run(self, stop: asyncio.Event) -> None:
        """Analyse queued games until `stop` is set (nothing to do with no workers). Stopping
        does not wait for a game being analysed: its worker process is ended and the game's
        lease given back, so the next start (of any process) analyses it again."""
        if self.workers < 1:
            return
        self.pool = self._new_pool()
        workers = [asyncio.create_task(self._work(stop)) for _ in range(self.workers)]
        try:
            await stop.wait()
        finally:
            for worker in workers:  # each gives its game's lease back
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            pool, self.pool = self.pool, None
            # A running analysis is not waited for (the executor has no public way to end it).
            for process in list(pool._processes.values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)

    async def _work(self, stop: asyncio.Event) -> None:
        delay = 0.0
        while not stop.is_set():
            self.wakeup.clear()
            try:
                found = await self.run_once()
                delay = 0.0
            except ArchiveUnavailable:
                found, delay = False, min(30.0, max(1.0, delay * 2))
            except PG_ERRORS as exc:
                log.warning("analysis: %s: %s", type(exc).__name__, exc)
                found, delay = False, min(30.0, max(1.0, delay * 2))
            if found:
                continue
            waiters = [asyncio.ensure_future(stop.wait())]
            if not delay:
                waiters.append(asyncio.ensure_future(self.wakeup.wait()))
            try:
                await asyncio.wait(waiters, timeout=delay or self.poll_s,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()

    async def run_once(self) -> bool:
        """Take a pending game (`_TAKE`) and analyse it; False when none is waiting."""
        pg = self._pg()
        taken = await pg.fetchrow(_TAKE, self.lease_s)
        if taken is None:
            return False
        game_id, tries = taken["game_id"], taken["tries"]
        if tries > MAX_TRIES:
            await pg.execute("UPDATE game_analysis SET status = 'failed', lease_until = NULL "
                             "WHERE game_id = $1 AND status = 'pending'", game_id)
            log.warning("analysis failed for good: %s", game_id)
            if self.metrics is not None:
                self.metrics.analyses.labels(status="failed").inc()
            return True
        transcript_gz = await pg.fetchval("SELECT transcript FROM games WHERE id = $1", game_id)
        try:
            body, cpu_ms = await self._analyse(bytes(transcript_gz))
        except asyncio.CancelledError:  # stopping: the lease goes back, the try is not counted
            with contextlib.suppress(*PG_ERRORS):
                await pg.execute(_RELEASE, game_id)
            raise
        except ArchiveUnavailable:
            raise
        except Exception:  # kept under its lease, then taken again (MAX_TRIES in all)
            log.exception("analysis of %s failed", game_id)
            return True
        await pg.execute(_DONE, game_id, body, cpu_ms)
        self.analysed += 1
        if self.metrics is not None:
            self.metrics.analyses.labels(status="done").inc()
            self.metrics.analysis_cpu.inc(cpu_ms / 1000)
        log.info("game analysed: %s (%d ms of CPU)", game_id, cpu_ms)
        return True

    async def _analyse(self, transcript_gz: bytes) -> tuple[bytes, int]:
        loop = asyncio.get_running_loop()
        args = (transcript_gz, self.deals, self.budget_ms)
        if self.pool is None:  # run_once alone (tests): in a thread
            return await asyncio.to_thread(bot_worker.analyse_game, *args)
        try:
            result: tuple[bytes, int] = await loop.run_in_executor(
                self.pool, bot_worker.analyse_game, *args)
            return result
        except BrokenProcessPool as exc:
            log.warning("analysis worker process unavailable, starting another: %s", exc)
            broken, self.pool = self.pool, self._new_pool()
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            raise ArchiveUnavailable from exc  # the job is taken again after a pause

    async def read(self, game_id: str, invite: str | None) -> dict[str, Any]:
        """``GET /api/games/{id}/analysis``: the game's analysis, or how far it is."""
        if not isinstance(game_id, str) or not TABLE_ID.match(game_id):
            raise unknown_game(str(game_id))
        try:
            row = await self._pg().fetchrow(
                "SELECT g.invite_hash, a.status, a.analysis FROM games g "
                "LEFT JOIN game_analysis a ON a.game_id = g.id WHERE g.id = $1", game_id)
        except (ArchiveUnavailable, *PG_ERRORS) as exc:
            raise unavailable() from exc
        if row is None or not invite_matches(invite, row["invite_hash"]):
            raise unknown_game(game_id)
        status = row["status"] or "pending"  # (a row is written with every archived game)
        analysis = None
        if row["analysis"] is not None:
            analysis = json.loads(await asyncio.to_thread(gzip.decompress, row["analysis"]))
        return {"id": game_id, "status": status, "analysis": analysis}
