"""Deadlines: bots that move by themselves, clocks that run out, tables nobody is at.

Each table version that needs an action later has an entry ``<id>:<version>`` in the Redis zset
``deadlines`` (written after every commit), so deadlines survive restarts. `Scheduler.run` polls
the due entries and acts on each table on its own, so a slow table never holds another up: it
takes the table's lease (SET NX PX, so one process acts), re-checks the version, and acts through
the table's one write path: a table none of whose people has been connected for ABANDON_AFTER
ends as abandoned; otherwise a bot seat plays its move, and an expired clock is played by a bot
or forfeits the game.

Fair shares. Due tables wait in a queue served round-robin over their owners (who created them,
server.fairness): at most ``in_flight`` tables are acted on at once, at most a quarter of them
for one owner. Searching bots think in a pool of worker processes, again round-robin over
owners, and within a CPU budget: each worker thinks at most ``cpu_share`` of wall time; when
that is spent, thinks wait their turn.

Timing. A bot's move is committed a fixed time after its think began -- the level's think budget
(`reply_slot_ms`) -- whether it had one legal move or many, so how long a bot takes says
nothing about its hand. Imports engine and the table service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

import engine
from engine.bots import BUDGETS, choose_move
from server import bot_worker
from server.fairness import CpuBudget, FairQueue
from server.processes import worker_pool
from server.record import (
    FINISHED,
    PLAYING,
    STANDIN_BOT,
    WAITING,
    Seat,
    TableRecord,
    forfeit,
    stopped,
)
from server.rejected import Rejected
from server.tables import Change, Loaded

if TYPE_CHECKING:
    from server.seams import DeadlineTables
    from server.settings import Settings

log = logging.getLogger("server.scheduler")

POLL_S = 0.1
MIN_WAIT_S = 0.01
RETRY_MS = 5_000
LEASE_MS = 10_000
BATCH = 50  # new due entries looked at per poll
FETCH_MAX = 1_000  # due entries read per poll at most
BUSY_RETRY_S = 1.0  # an entry another process holds (or Redis failed on) is left alone this long
REARM_PAGE = 500
REARM_S = 300.0  # how often lost deadline entries (and abandoned tables) are looked for
STOP_GRACE_S = 2.0  # actions in flight when the process stops get this long to finish
OWNER_CACHE = 10_000
SEARCHING_LEVELS = ("strong", "strong-fast")
SLOT_MARGIN_MS = 20  # past the think budget: the worker's round trip (greedy needs ~1 ms)
BUDGET_BURST_S = 1.0  # CPU seconds per worker that the budget may save up
ABANDONED = "abandoned"


def reply_slot_ms(level: str) -> int:
    """How long after its think began a bot's move is committed: the level's think budget
    (none for the levels that do not search) plus SLOT_MARGIN_MS."""
    return (BUDGETS[level][0] if level in BUDGETS else 0) + SLOT_MARGIN_MS


def abandon_at(record: TableRecord, seen: Mapping[int, int], after_ms: int,
               fallback_ms: int) -> int:
    """When a table in play counts as abandoned, given when each seat last had a connection
    (``seen``; ``fallback_ms`` when none of the seats that count has an entry).

    The seats that count are those people play; when bots play every seat, every seat that
    has an entry. The table is abandoned ``after_ms`` after the last of those times -- or, at a
    table with a turn clock and people seated, after the longest turn the clock allows
    (``max_h``), and never before the running turn's deadline."""
    people = [s for s, seat in enumerate(record.seats) if seat.bot is None]
    times = [seen[s] for s in people if s in seen] if people else list(seen.values())
    last = max(times, default=fallback_ms)
    clock = record.config.clock
    if people and clock is not None and clock.kind == "turn":
        deadline = record.clock.deadline_ms if record.clock is not None else None
        return max(last + clock.max_ms, deadline or 0)
    return last + after_ms


def abandoned(record: TableRecord, now_ms: int) -> TableRecord:
    """The game ends with nobody winning: nobody was there to play it."""
    return stopped(record, {"winner": None, "reason": ABANDONED, "seat": None}, now_ms)


@dataclass(eq=False)
class Think:
    """One searching bot's move waiting for a worker."""

    level: str
    view: dict[str, Any]
    seed: int
    future: asyncio.Future[engine.Move]
    slot: bool = True  # handed back `reply_slot_ms` after the think began (a hint: at once)


async def sleep_until(when: float) -> None:
    """Sleep until the event loop's clock reads ``when``."""
    delay = when - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


def bot_seed(record: TableRecord, version: int) -> int:
    """The bot's random seed for its move at `version`: from the table's bot secret, never from
    the deal seed (a bot's choices must not hint at the deal). Tables stored before bot secrets
    existed get a fresh random seed for every move."""
    if record.bot_secret is None:
        return secrets.randbits(62)
    return (record.bot_secret * 1_000_003 + version) % (1 << 62)


class Scheduler:
    """Acts on due deadlines for one table service (`server.seams.DeadlineTables`).

    ``workers`` bot processes think, each for at most ``cpu_share`` of wall time; at most
    ``in_flight`` tables are acted on at once; a table none of whose people has had a
    connection for ``abandon_after_ms`` ends as abandoned (see `abandon_at`)."""

    def __init__(self, service: DeadlineTables, *, workers: int = 1, cpu_share: float = 1.0,
                 in_flight: int = 64, abandon_after_ms: int = 600_000) -> None:
        self.service = service
        self.store = service.store
        self.owner = secrets.token_hex(8)  # this scheduler's name in table leases
        self.workers = max(1, workers)
        self.in_flight = max(1, in_flight)
        self.per_owner = max(1, self.in_flight // 4)
        self.abandon_after_ms = abandon_after_ms
        self.started_ms = service.now_ms()
        self.pool: ProcessPoolExecutor | None = None
        self.stopping = False
        # Due tables not started yet, round-robin over owners; the version each waits with.
        self.pending: FairQueue[str] = FairQueue()
        self.pending_version: dict[str, int] = {}
        self.active: dict[str, asyncio.Task[None]] = {}  # table -> the action in flight
        self.active_owners: Counter[str] = Counter()
        self.busy_until: dict[tuple[str, int], float] = {}  # entry -> loop time to look again
        self.table_owners: OrderedDict[str, str] = OrderedDict()
        # Searching bots' moves waiting for a worker, round-robin over owners.
        self.thinks: FairQueue[Think] = FairQueue()
        self.thinking = 0
        self.budget = CpuBudget(self.workers * cpu_share, self.workers * BUDGET_BURST_S)
        self._budget_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[Any]] = set()

    @classmethod
    def from_settings(cls, service: DeadlineTables, settings: Settings) -> Scheduler:
        return cls(service, workers=settings.bot_workers, cpu_share=settings.bot_cpu_share,
                   in_flight=settings.deadlines_in_flight,
                   abandon_after_ms=round(settings.abandon_after_s * 1000))

    # -- the loop --------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set: re-arm missing deadlines now and then, act on due ones."""
        self.pool = self._new_pool()
        loop = asyncio.get_running_loop()
        for _ in range(self.workers):  # start the worker processes before the first think
            self._keep(loop.run_in_executor(self.pool, bot_worker.warm))
        try:
            await self._run(stop)
        finally:
            self.stopping = True
            await self._finish_actions()
            pool, self.pool = self.pool, None
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _new_pool(self) -> ProcessPoolExecutor:
        return worker_pool(self.workers)

    def _keep(self, awaitable: Awaitable[object]) -> None:
        """Run ``awaitable`` in the background; its failure is only logged."""

        async def guarded() -> None:
            try:
                await awaitable
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("background scheduler job failed: %r", exc)

        task = asyncio.ensure_future(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _finish_actions(self) -> None:
        tasks = list(self.active.values())
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def _run(self, stop: asyncio.Event) -> None:
        next_rearm = 0.0
        loop = asyncio.get_running_loop()
        rearming: asyncio.Task[int] | None = None
        while not stop.is_set():
            if rearming is not None and rearming.done():
                if not rearming.cancelled() and rearming.exception() is not None:
                    log.warning("could not re-arm deadlines: %s", rearming.exception())
                    next_rearm = loop.time() + 1.0
                rearming = None
            if rearming is None and loop.time() >= next_rearm:
                rearming = asyncio.create_task(self.rearm())
                next_rearm = loop.time() + REARM_S
            try:
                wait = await self.poll()
            except RedisError as exc:
                log.warning("deadline loop: redis error: %s", exc)
                wait = 1.0
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
        if rearming is not None and not rearming.done():
            rearming.cancel()
            await asyncio.gather(rearming, return_exceptions=True)

    async def poll(self) -> float:
        """Queue the entries due now that are not queued yet and start what may start; returns
        how long to wait before the next poll."""
        now = self.service.now_ms()
        clock = asyncio.get_running_loop().time()
        for entry, until in list(self.busy_until.items()):
            if until <= clock:
                del self.busy_until[entry]
        known = len(self.pending_version) + len(self.active) + len(self.busy_until)
        limit = min(FETCH_MAX, known + BATCH)
        due = await self.store.due(now, limit)
        if len(due) >= limit:  # a backlog: make sure the entries that fell due last are seen
            due += await self.store.due_newest(now, BATCH)
        added = await self._enqueue(due)
        self._start_actions()
        if added and len(due) >= limit:
            return MIN_WAIT_S
        upcoming = await self.store.next_due_after(now)
        if upcoming is None:
            return POLL_S
        # At least MIN_WAIT_S: an entry due now may be leased by another process.
        return min(POLL_S, max(MIN_WAIT_S, (upcoming - now) / 1000))

    async def run_once(self) -> int:
        """Act on every entry due now (up to FETCH_MAX) and wait until those actions are done;
        returns how many were due."""
        self.busy_until.clear()
        due = await self.store.due(self.service.now_ms(), FETCH_MAX)
        await self._enqueue(due)
        self._start_actions()
        while self.active:
            await asyncio.wait(list(self.active.values()))
        return len(due)

    async def _enqueue(self, due: list[tuple[str, int]]) -> int:
        """Queue the due entries this scheduler is not already busy with; how many were new."""
        clock = asyncio.get_running_loop().time()
        fresh: dict[str, int] = {}
        for table_id, version in due:
            if table_id in self.active or self.busy_until.get((table_id, version), 0) > clock:
                continue
            fresh[table_id] = max(version, fresh.get(table_id, 0))
        unknown = [t for t in fresh if t not in self.table_owners]
        if unknown:
            for table_id, owner in zip(unknown, await self.store.owners(unknown), strict=True):
                self._remember_owner(table_id, owner or f"t:{table_id}")
        added = 0
        for table_id, version in fresh.items():
            if table_id in self.pending_version:
                self.pending_version[table_id] = max(version, self.pending_version[table_id])
                continue
            self.pending_version[table_id] = version
            self.pending.push(self.table_owners.get(table_id, f"t:{table_id}"), table_id)
            added += 1
        return added

    def _remember_owner(self, table_id: str, owner: str) -> None:
        self.table_owners[table_id] = owner
        self.table_owners.move_to_end(table_id)
        while len(self.table_owners) > OWNER_CACHE:
            self.table_owners.popitem(last=False)

    def _start_actions(self) -> None:
        """Start queued actions while fewer than ``in_flight`` run, round-robin over owners,
        passing over owners that already hold ``per_owner`` of them."""
        while not self.stopping and len(self.active) < self.in_flight:
            got = self.pending.pop(lambda owner: self.active_owners[owner] >= self.per_owner)
            if got is None:
                return
            owner, table_id = got
            version = self.pending_version.pop(table_id)
            self.active_owners[owner] += 1
            self.active[table_id] = asyncio.create_task(self._action(table_id, version, owner))

    async def _action(self, table_id: str, version: int, owner: str) -> None:
        try:
            await self.act(table_id, version, owner)
        except RedisError as exc:
            log.warning("deadline of table %s v%d: redis error: %s", table_id, version, exc)
            self._busy(table_id, version)
        except Exception as exc:
            log.error("deadline of table %s v%d failed", table_id, version, exc_info=exc)
            # Try again a little later instead of spinning on a broken table.
            with contextlib.suppress(RedisError):
                await self.store.schedule(table_id, version, version,
                                          self.service.now_ms() + RETRY_MS)
        finally:
            self.active.pop(table_id, None)
            self.active_owners[owner] -= 1
            if self.active_owners[owner] <= 0:
                del self.active_owners[owner]
            self._start_actions()

    def _busy(self, table_id: str, version: int) -> None:
        self.busy_until[(table_id, version)] = asyncio.get_running_loop().time() + BUSY_RETRY_S

    # -- one table -------------------------------------------------------------------------
    async def act(self, table_id: str, version: int, owner: str | None = None) -> None:
        if not await self.store.acquire_lease(table_id, self.owner, LEASE_MS):
            self._busy(table_id, version)  # another process acts on it
            return
        try:
            await self._act(table_id, version, owner or f"t:{table_id}")
        finally:
            await self.store.release_lease(table_id, self.owner)

    async def _act(self, table_id: str, version: int, owner: str) -> None:
        try:
            loaded = await self.service.load(table_id)
        except Rejected:
            await self.store.unschedule(table_id, version)
            return
        if loaded.version != version:
            await self.store.unschedule(table_id, version)  # a later version has its own entry
            return
        record = loaded.record
        seat = record.seat_to_move
        now = self.service.now_ms()
        if record.status == WAITING:
            await self._free_unconnected_seat(table_id, version, record, now)
            return
        if record.next_hand is not None:  # the pause between hands
            dealt_at = int(record.next_hand["deadline"])
            if dealt_at > now:
                await self.store.schedule(table_id, version, version, dealt_at)
                return
            await self._commit(table_id, version,
                               lambda current: self.service.deal(current.record))
            return
        if seat is None:
            await self.store.unschedule(table_id, version)
            return
        if await self.is_abandoned(table_id, record, now):
            await self._end_abandoned(table_id, version)
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
                ended = forfeit(current.record, seat, "time", self.service.now_ms())
                return Change(ended, [timeout_event] if timeout_event else [])
        else:
            view = engine.view(record.game, seat)
            move = await self.choose(level or STANDIN_BOT, view, bot_seed(record, version),
                                     owner)

            def change(current: Loaded) -> Change:
                return self.service.play(current.record, seat, move, event)
        await self._commit(table_id, version, change)

    async def _commit(self, table_id: str, version: int,
                      change: Callable[[Loaded], Change]) -> None:
        try:
            await self.service.write(table_id, change, expected=version,
                                      client=(-1, f"deadline:{version}"))
        except Rejected as rej:
            if rej.code != "stale_version":
                raise
            await self.store.unschedule(table_id, version)

    # -- seats nobody connects to ----------------------------------------------------------
    async def _free_unconnected_seat(self, table_id: str, version: int, record: TableRecord,
                                     now_ms: int) -> None:
        """A waiting table: free a seat whose person has had no connection for
        SEAT_CONNECT_S (taking a seat counts as a connection at that moment), so that a
        script cannot hold an open table's seats without playing; else look again when the
        first seat could run out."""
        limit = self.service.seat_connect_ms
        seen = await self.store.seen(table_id)
        people = [s for s, st in enumerate(record.seats) if st.taken and st.bot is None]
        last = {s: seen.get(s, record.created_ms) for s in people}
        stale = [s for s in people if now_ms - last[s] >= limit]
        if not stale:
            if people:
                await self.store.schedule(table_id, version, version,
                                          min(last.values()) + limit)
            else:
                await self.store.unschedule(table_id, version)
            return
        gone = stale[0]

        def change(current: Loaded) -> Change:
            seats = list(current.record.seats)
            if current.record.status != WAITING or not seats[gone].taken:
                raise Rejected("stale_version", "the table moved on", status=409)
            seats[gone] = Seat()
            return Change(replace(current.record, seats=tuple(seats)),
                          [{"type": "leave", "seat": gone, "reason": "not_connected"}],
                          ("del", gone, ""))

        await self._commit(table_id, version, change)

    # -- abandoned tables ------------------------------------------------------------------
    async def is_abandoned(self, table_id: str, record: TableRecord, now_ms: int) -> bool:
        """Whether a table in play has been without its people long enough (`abandon_at`)."""
        if record.status != PLAYING:
            return False
        fallback = max(record.created_ms, self.started_ms)
        # Every seat's time is at least the table's creation: no read needed before then.
        earliest = {s: record.created_ms for s in range(len(record.seats))}
        if abandon_at(record, earliest, self.abandon_after_ms, fallback) > now_ms:
            return False
        seen = await self.store.seen(table_id)
        return abandon_at(record, seen, self.abandon_after_ms, fallback) <= now_ms

    async def _end_abandoned(self, table_id: str, version: int) -> None:
        def change(current: Loaded) -> Change:
            ended = abandoned(current.record, self.service.now_ms())
            return Change(ended, [{"type": "table", "status": FINISHED}])

        await self._commit(table_id, version, change)

    # -- bots ------------------------------------------------------------------------------
    async def choose(self, level: str, view: dict[str, Any], seed: int,
                     owner: str = "") -> engine.Move:
        """A bot's move, handed back `reply_slot_ms` after its think began (later only if the
        think overran). Searching levels think in a worker process, so the loop keeps serving
        while they do, and wait their turn for one (round-robin over owners, within the CPU
        budget) -- a forced move too, so that waiting says nothing about the hand either."""
        if level in SEARCHING_LEVELS:
            future: asyncio.Future[engine.Move] = asyncio.get_running_loop().create_future()
            self.thinks.push(owner, Think(level, view, seed, future))
            self._start_thinks()
            return await future
        started = asyncio.get_running_loop().time()
        move = choose_move(level, view, seed)
        await sleep_until(started + reply_slot_ms(level) / 1000)
        return move

    async def hint(self, view: dict[str, Any], seed: int, owner: str = "") -> engine.Move:
        """The `strong` bot's move for a seat's own `view` (a practice table's hint). It thinks
        in a worker process like a bot's move, in the same queue and CPU budget, and is
        answered as soon as it is found."""
        future: asyncio.Future[engine.Move] = asyncio.get_running_loop().create_future()
        self.thinks.push(owner, Think("strong", view, seed, future, slot=False))
        self._start_thinks()
        return await future

    def _start_thinks(self) -> None:
        while self.thinking < self.workers and len(self.thinks):
            if not self.budget.available():
                if self._budget_timer is None:
                    self._budget_timer = asyncio.get_running_loop().call_later(
                        self.budget.wait_s() + 0.001, self._budget_refilled)
                return
            got = self.thinks.pop()
            assert got is not None
            job = got[1]
            if job.future.done():  # its action was cancelled
                continue
            estimate = reply_slot_ms(job.level) / 1000
            self.thinking += 1
            self.budget.take(estimate)
            self._keep(self._think(job, estimate))

    def _budget_refilled(self) -> None:
        self._budget_timer = None
        self._start_thinks()

    async def _think(self, job: Think, estimate: float) -> None:
        started = asyncio.get_running_loop().time()
        cost = 0.0
        try:
            if self.pool is None or len(job.view.get("legal") or []) <= 1:
                # A forced move needs no search; without a pool (run_once alone) think here.
                move, cost = bot_worker.think(job.level, job.view, job.seed)
            else:
                move, cost = await self._in_worker(job)
        except Exception as exc:
            if not job.future.done():
                job.future.set_exception(exc)
            return
        finally:
            self.thinking -= 1
            self.budget.settle(estimate, cost)
            self._start_thinks()
        if job.slot:
            await sleep_until(started + reply_slot_ms(job.level) / 1000)
        if not job.future.done():
            job.future.set_result(move)

    async def _in_worker(self, job: Think) -> tuple[Any, float]:
        loop = asyncio.get_running_loop()
        assert self.pool is not None
        try:
            result: tuple[Any, float] = await loop.run_in_executor(
                self.pool, bot_worker.think, job.level, job.view, job.seed)
            return result
        except (BrokenProcessPool, OSError) as exc:
            log.warning("bot worker process unavailable, starting another: %s", exc)
            broken, self.pool = self.pool, self._new_pool()
            broken.shutdown(wait=False, cancel_futures=True)
            return await asyncio.to_thread(bot_worker.think, job.level, job.view, job.seed)

    # -- the sweep -------------------------------------------------------------------------
    async def rearm(self) -> int:
        """Give every playing table its deadline entry again (lost if a process died between
        a commit and its deadline write), and end the ones nobody has been at for too long.
        Returns how many playing tables were looked at."""
        seen = 0
        async for table_id in self.store.playing_tables(page=REARM_PAGE):
            seen += 1
            try:
                loaded = await self.service.load(table_id)
            except Rejected:
                continue
            now = self.service.now_ms()
            if await self.is_abandoned(table_id, loaded.record, now):
                await self._end_abandoned(table_id, loaded.version)
                continue
            due = loaded.record.due_ms(now, self.service.bot_delay_ms)
            if due is not None:
                await self.store.arm_deadline(table_id, loaded.version, due)
        return seen

