"""A real PostgreSQL server for tests: free loopback port, temporary directory.

Usage::

    server = PgServer()             # a free port and a fresh temporary directory
    url = server.start()            # postgresql://dominoes:...@127.0.0.1:<port>/dominoes
    url = server.fresh_database()   # a new empty database on it, for one test
    server.kill()                   # SIGKILL (crash); server.start() recovers from the WAL
    server.stop()                   # fast clean shutdown (keeps the directory)
    server.close()                  # stop and remove the temporary directory

``shared()`` is the one server of a test session (started on first use, stopped at exit): the
``pg_server`` / ``database_url`` fixtures of tests/conftest.py and ``ServiceProcess`` use it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
from pathlib import Path

from server.pg_embedded import PgProcess, free_port


class PgServer(PgProcess):
    """A PgProcess on a free TCP port in its own temporary directory (fsync off: tests only)."""

    _numbers = itertools.count(1)

    def __init__(self, directory: str | Path | None = None, *, fsync: bool = False) -> None:
        self._own_dir = directory is None
        if directory is None:
            # The cluster lives one level down so that, run by root, PostgreSQL's unprivileged
            # user can reach it: the temporary parent is made searchable (not listable).
            parent = Path(tempfile.mkdtemp(prefix="pg-test-"))
            parent.chmod(0o711)
            directory = parent / "pg"
        self._tmp_parent = Path(directory).parent if self._own_dir else None
        super().__init__(directory, port=free_port(), fsync=fsync)

    def fresh_database(self) -> str:
        """Create an empty database and return its URL."""
        name = f"t{os.getpid()}_{next(self._numbers)}"
        self._psql(f"CREATE DATABASE {name}")
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        if self.running:
            self._psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        self.stop()
        if self._tmp_parent is not None:
            shutil.rmtree(self._tmp_parent, ignore_errors=True)

    def __enter__(self) -> PgServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_shared: PgServer | None = None
_lock = threading.Lock()


def shared() -> PgServer:
    """The test session's PostgreSQL server, started on first use and stopped at exit."""
    global _shared
    with _lock:
        if _shared is None:
            server = PgServer()
            server.start()
            atexit.register(server.close)
            _shared = server
        elif not _shared.running:
            _shared.start()
        return _shared
