"""What a bot worker process runs: one bot move, and the CPU time it cost.

Runs in the scheduler's worker processes (spawned, so this module keeps its imports to the
engine). Imports only `engine.bots`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from engine.bots import choose_move


def warm() -> int:
    """Nothing: a first job that makes the pool start its process (and import the engine)."""
    return os.getpid()


def think(level: str, view: Mapping[str, Any], seed: int) -> tuple[Any, float]:
    """The bot's move for ``view`` and the CPU seconds this thread spent choosing it."""
    started = time.thread_time()
    move = choose_move(level, view, seed)
    return move, time.thread_time() - started
