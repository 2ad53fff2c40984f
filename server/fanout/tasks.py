"""The fan-out's background jobs: one task group while the hub runs, and how a job's failure
or a Redis error is reported.

Owns: the jobs spawned by the other pieces (a pump, a coalesced sync, a presence broadcast, a
spectator slot's release). A job spawned when the hub is not running is dropped. A job's
failure is logged; it never takes the hub down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from server.logs import event
from server.metrics import Metrics

Job = Coroutine[Any, Any, None]


def redis_error(metrics: Metrics, exc: BaseException, table_id: str | None) -> None:
    """Count and log a failed Redis command (the caller carries on or tries again)."""
    metrics.redis_errors.inc()
    event("redis error", level=logging.WARNING, table=table_id, error=repr(exc))


async def guarded(coro: Job, what: str = "hub task") -> None:
    """A background job's failure is logged (as ``what`` failed); it never takes the hub, or
    whatever runs it, down."""
    try:
        await coro
    except asyncio.CancelledError:
        raise
    except Exception:
        event(f"{what} failed", level=logging.ERROR, exc=True)


class Background:
    """The jobs of one hub, in the task group of `Hub.run` while it runs."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._group: asyncio.TaskGroup | None = None

    def start(self, group: asyncio.TaskGroup) -> None:
        self._group = group

    def stop(self) -> None:
        """No more jobs (the task group has ended)."""
        self._group = None

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def spawn(self, coro: Job) -> None:
        if self._group is None:
            coro.close()
            return
        task = self._group.create_task(guarded(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
