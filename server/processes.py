"""What the embedded servers (server.redis_embedded, server.pg_embedded) share about the
processes they run: a free loopback port, and whether a pid is still a running process.
Imports nothing from the project."""

from __future__ import annotations

import os
import socket
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
