"""A real redis-server for tests: free loopback port, temporary directory, AOF on.

Usage::

    server = RedisServer()          # picks a free port and a fresh temporary directory
    url = server.start()            # "redis://127.0.0.1:<port>/0"
    server.kill()                   # SIGKILL (crash); server.start() brings it back from the AOF
    server.restart()                # clean stop + start: data kept, script cache emptied
    server.stop()                   # clean shutdown (keeps the directory)
    server.close()                  # stop and remove the temporary directory

The `redis_server` / `redis_url` fixtures in tests/conftest.py wrap one shared instance.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from server.redis_embedded import RedisProcess, free_port


class RedisServer(RedisProcess):
    """A RedisProcess on a free TCP port in its own temporary directory (appendfsync always)."""

    def __init__(self, directory: str | Path | None = None, *, appendfsync: str = "always") -> None:
        self._own_dir = directory is None
        if directory is None:
            directory = tempfile.mkdtemp(prefix="redis-test-")
        path = Path(directory)
        super().__init__(path, port=free_port(), appendfsync=appendfsync)

    def flush(self) -> None:
        """Empty every database (used between tests)."""
        import redis

        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()

    def close(self) -> None:
        """Stop the server and delete its directory if this object created it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
