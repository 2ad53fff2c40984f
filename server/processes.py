"""What the server knows about the processes it runs: for the embedded servers
(server.redis_embedded, server.pg_embedded) a free loopback port and whether a pid is still a
running process; for its worker pools (bots, analysis, rendering) how they are started, so that
they end with the server. Imports nothing from the project."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, exited but not reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return True


def worker_pool(workers: int, initializer: Callable[[], object] | None = None
                ) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes that end with this one. A server process killed
    with SIGKILL (or by the kernel's OOM killer) cannot shut its pools down, and a worker waiting
    for its next job would wait, holding its memory, forever; these exit as soon as their
    server is gone. ``initializer`` runs in each worker after that."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(initializer,))


def _start_worker(initializer: Callable[[], object] | None) -> None:
    exit_with_parent()
    if initializer is not None:
        initializer()


def exit_with_parent() -> None:
    """End this process (a multiprocessing child) as soon as the process that started it is
    gone: a thread waits on the parent's sentinel, which becomes readable when the parent exits
    however it exits."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
