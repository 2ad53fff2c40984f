"""Runs a private PostgreSQL cluster: the embedded database used when DATABASE_URL is unset.

Uses Debian's `postgresql` package (initdb and postgres in /usr/lib/postgresql/<version>/bin,
the newest version found, or on PATH). The directory holds the cluster (``pgdata/``), its log
and, when the path is short enough, its unix socket; otherwise the cluster listens on a free
loopback port with a password of its own. PostgreSQL refuses to run as root, so a root process
runs initdb and postgres as an unprivileged system user (``postgres``, which the Debian package
creates, else ``nobody``) that owns the directory. Imports only server.processes from the rest of
the project.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

from server.processes import alive, free_port

# The kernel limits a unix socket path (108 bytes); PostgreSQL adds "/.s.PGSQL.<port>".
_MAX_SOCKET_DIR = 90
SUPERUSER = "dominoes"
DATABASE = "dominoes"
UNPRIVILEGED_USERS = ("postgres", "nobody")
_PG_ROOT = Path("/usr/lib/postgresql")


class PgStartError(RuntimeError):
    """PostgreSQL could not be found or did not come up."""


def find_pg_bin() -> Path:
    """The directory holding initdb and postgres: the newest /usr/lib/postgresql/<ver>/bin,
    else the one of ``initdb`` on PATH."""
    versions: list[tuple[int, Path]] = []
    if _PG_ROOT.is_dir():
        for child in _PG_ROOT.iterdir():
            if re.fullmatch(r"\d+", child.name) and (child / "bin" / "initdb").exists():
                versions.append((int(child.name), child / "bin"))
    if versions:
        return max(versions)[1]
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise PgStartError(
        "no PostgreSQL found (install Debian's postgresql package or set DATABASE_URL)")



def unprivileged_user() -> pwd.struct_passwd:
    """The account a root process runs PostgreSQL as."""
    for name in UNPRIVILEGED_USERS:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid != 0:
            return entry
    raise PgStartError("running as root and no unprivileged user (postgres, nobody) exists")


class PgProcess:
    """One postgres server on a directory, initialised on first start.

    ``port=None`` listens on a unix socket inside the directory only (a free loopback port when
    the path would be too long); an int listens on that loopback port (password required).
    ``start()`` returns the URL of the ``dominoes`` database; ``stop()`` is a fast shutdown
    (clean: committed data is kept); ``kill()`` is a SIGKILL of every server process (a crash).
    Either may be followed by ``start()`` again on the same directory.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        port: int | None = None,
        bin_dir: str | os.PathLike[str] | None = None,
        fsync: bool = True,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.bin_dir = Path(bin_dir) if bin_dir is not None else find_pg_bin()
        self.fsync = fsync
        self.unix_socket = port is None and len(str(self.data_dir)) <= _MAX_SOCKET_DIR
        if port is None:
            port = 5432 if self.unix_socket else (self._saved_port() or free_port())
        self.port: int = port
        self.run_as: pwd.struct_passwd | None = unprivileged_user() if os.geteuid() == 0 else None
        self._process: subprocess.Popen[bytes] | None = None
        self._adopted: int | None = None  # pid of a postmaster left running by an earlier owner

    # ---- layout ------------------------------------------------------------------------------

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    @property
    def _logfile(self) -> Path:
        return self.data_dir / "postgres.log"

    @property
    def _pwfile(self) -> Path:
        return self.data_dir / "password"

    @property
    def _portfile(self) -> Path:
        return self.data_dir / "port"

    def _saved_port(self) -> int | None:
        try:
            return int(self._portfile.read_text().strip())
        except (OSError, ValueError):
            return None

    @property
    def password(self) -> str:
        return self._pwfile.read_text().strip()

    @property
    def url(self) -> str:
        return self.database_url(DATABASE)

    def database_url(self, database: str) -> str:
        if self.unix_socket:
            return (f"postgresql://{SUPERUSER}@/{database}"
                    f"?host={quote(str(self.data_dir))}&port={self.port}")
        return (f"postgresql://{SUPERUSER}:{quote(self.password, safe='')}"
                f"@127.0.0.1:{self.port}/{database}")

    @property
    def running(self) -> bool:
        if self._adopted is not None:
            return alive(self._adopted)
        return self._process is not None and self._process.poll() is None

    # ---- start ------------------------------------------------------------------------------

    def _own(self, path: Path) -> None:
        if self.run_as is not None:
            os.chown(path, self.run_as.pw_uid, self.run_as.pw_gid)

    def _popen_user(self) -> dict[str, object]:
        if self.run_as is None:
            return {}
        return {"user": self.run_as.pw_uid, "group": self.run_as.pw_gid, "extra_groups": []}

    def _check_reachable(self) -> None:
        """The unprivileged user must be able to walk down to the directory."""
        if self.run_as is None:
            return
        for parent in self.data_dir.parents:
            mode = parent.stat()
            if mode.st_uid == self.run_as.pw_uid or mode.st_mode & stat.S_IXOTH:
                continue
            if mode.st_gid == self.run_as.pw_gid and mode.st_mode & stat.S_IXGRP:
                continue
            raise PgStartError(
                f"{parent} is not searchable by {self.run_as.pw_name}, which runs PostgreSQL "
                f"for a root process: choose another DATA_DIR or chmod o+x {parent}")

    def _initdb(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._check_reachable()
        self.data_dir.chmod(0o700)
        self._own(self.data_dir)
        if self.pgdata.exists():  # a half-made cluster from an interrupted initdb
            shutil.rmtree(self.pgdata)
        self._pwfile.write_text(secrets.token_urlsafe(24) + "\n")
        self._pwfile.chmod(0o600)
        self._own(self._pwfile)
        result = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(self.pgdata), "-U", SUPERUSER,
             "--pwfile", str(self._pwfile), "--auth-local=trust",
             "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"]
            + ([] if self.fsync else ["--no-sync"]),
            cwd=self.data_dir, stdin=subprocess.DEVNULL, capture_output=True,
            **self._popen_user(),  # type: ignore[call-overload]  # user/group are Popen args
        )
        if result.returncode != 0:
            raise PgStartError("initdb failed: " + result.stderr.decode(errors="replace")[-2000:])

    def _args(self) -> list[str]:
        args = [str(self.bin_dir / "postgres"), "-D", str(self.pgdata), "-p", str(self.port),
                "-c", "max_connections=200", "-c", "shared_buffers=32MB"]
        if self.unix_socket:
            args += ["-c", f"unix_socket_directories={self.data_dir}",
                     "-c", "listen_addresses="]
        else:
            args += ["-c", "unix_socket_directories=", "-c", "listen_addresses=127.0.0.1"]
        if not self.fsync:
            # Safe against a crash of postgres (the WAL is written), not of the machine.
            args += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        return args

    def _previous_server(self) -> int | None:
        """The pid of a postmaster still running on this directory (its owner was killed)."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
        except (OSError, ValueError, IndexError):
            return None
        if not alive(pid) or port != self.port:
            return None
        return pid

    def start(self, timeout: float = 30.0) -> str:
        """Initialise (first time), start and wait until the database accepts connections."""
        if self.running:
            return self.url
        self._initdb()
        previous = self._previous_server()
        if previous is not None:
            self._adopted = previous
        else:
            log = self._logfile.open("ab")
            try:
                self._process = subprocess.Popen(
                    self._args(), cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=log, start_new_session=True,
                    **self._popen_user(),  # type: ignore[call-overload]  # Popen args
                )
            finally:
                log.close()
            self._portfile.write_text(f"{self.port}\n")
        self._wait_ready(timeout)
        self._ensure_database()
        return self.url

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        host = str(self.data_dir) if self.unix_socket else "127.0.0.1"
        while True:
            if not self.running:
                raise PgStartError(f"postgres exited: {self._log_tail()}")
            ready = subprocess.run(
                [str(self.bin_dir / "pg_isready"), "-q", "-h", host, "-p", str(self.port),
                 "-d", "postgres", "-U", SUPERUSER], stdin=subprocess.DEVNULL,
                capture_output=True, check=False,
            )
            if ready.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.kill()
                raise PgStartError(f"postgres did not accept connections in {timeout}s")
            time.sleep(0.05)

    def _psql(self, sql: str, database: str = "postgres") -> str:
        env = {**os.environ, "PGPASSWORD": self.password}
        host = str(self.data_dir) if self.unix_socket else "127.0.0.1"
        result = subprocess.run(
            [str(self.bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-h", host, "-p", str(self.port), "-U", SUPERUSER, "-d", database, "-c", sql],
            stdin=subprocess.DEVNULL, capture_output=True, env=env, check=False,
        )
        if result.returncode != 0:
            raise PgStartError("psql failed: " + result.stderr.decode(errors="replace")[-2000:])
        return result.stdout.decode().strip()

    def _ensure_database(self) -> None:
        if not self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"):
            self._psql(f"CREATE DATABASE {DATABASE}")

    def _log_tail(self) -> str:
        try:
            return self._logfile.read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    # ---- stop --------------------------------------------------------------------------------

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT): sessions are ended, the data is checkpointed and kept."""
        self._end(signal.SIGINT, timeout)

    def kill(self) -> None:
        """SIGKILL to the postmaster and its backends, like a crash (WAL replays on start).
        Returns once every one of them is gone: a backend still dying holds the shared memory
        a new postmaster refuses to start beside."""
        pid = self._process.pid if self._process is not None else self._adopted
        self._end(signal.SIGKILL, 10.0)
        if pid is not None:
            _wait_group_gone(pid, 10.0)

    def restart(self, timeout: float = 30.0) -> str:
        self.stop()
        return self.start(timeout)

    def _end(self, signum: int, timeout: float) -> None:
        process, self._process = self._process, None
        adopted, self._adopted = self._adopted, None
        pid = process.pid if process is not None else adopted
        if pid is None or (process is not None and process.poll() is not None):
            return
        _signal(pid, signum)
        deadline = time.monotonic() + timeout
        while True:
            if process is not None:
                try:
                    process.wait(0.05)
                    return
                except subprocess.TimeoutExpired:
                    pass
            elif not alive(pid):
                return
            else:
                time.sleep(0.05)
            if time.monotonic() > deadline:
                _signal(pid, signal.SIGKILL)
                deadline = time.monotonic() + 10.0


def _wait_group_gone(group: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):  # gone, or not ours to watch
            return
        time.sleep(0.02)


def _signal(pid: int, signum: int) -> None:
    """SIGKILL goes to the whole process group (the backends too); others to the postmaster."""
    try:
        if signum == signal.SIGKILL:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


