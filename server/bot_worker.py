"""What a bot worker process runs: one bot move and the CPU time it cost, or one game's
post-game analysis.

Runs in the scheduler's worker processes and the analysis workers (server.analysis), spawned,
so this module keeps its imports to the engine and the standard library.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Mapping
from typing import Any

from engine.analysis import analyse
from engine.bots import choose_move

ANALYSIS_NICENESS = 19
"""How much lower than the server's the analysis workers' CPU priority is (os.nice), where
the idle scheduling class is not available."""


def warm() -> int:
    """Nothing: a first job that makes the pool start its process (and import the engine)."""
    return os.getpid()


def think(level: str, view: Mapping[str, Any], seed: int) -> tuple[Any, float]:
    """The bot's move for ``view`` and the CPU seconds this thread spent choosing it."""
    started = time.thread_time()
    move = choose_move(level, view, seed)
    return move, time.thread_time() - started


def lower_priority() -> None:
    """Start-up of an analysis worker: run only on CPU time nothing else wants -- Linux's idle
    scheduling class (SCHED_IDLE), else the lowest niceness -- so that analysing never takes a
    core from the server, its bot workers or Redis."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or not allowed
        os.nice(ANALYSIS_NICENESS)


def analyse_game(transcript_gz: bytes, deals: int, budget_ms: int) -> tuple[bytes, int]:
    """The analysis of an archived game (its gzip-compressed transcript), gzip-compressed, and
    the CPU milliseconds it cost."""
    result = analyse(json.loads(gzip.decompress(transcript_gz)), deals=deals,
                     budget_ms=budget_ms)
    body = json.dumps(result, separators=(",", ":")).encode()
    return gzip.compress(body, 6), int(result["cpu_ms"])
