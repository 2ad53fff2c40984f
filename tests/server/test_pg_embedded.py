"""The embedded PostgreSQL cluster (server/pg_embedded.py): a real postgres in a directory."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from server.pg_embedded import PgProcess, unprivileged_user

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="pg-embedded-") as name:
        os.chmod(name, 0o755)  # reachable by the unprivileged user when run as root
        yield Path(name)


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError("no Uid line")


async def _query(url: str, sql: str, *args: object) -> object:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql, *args)
    finally:
        await conn.close()


async def test_start_stop_restart_keeps_data(workdir: Path) -> None:
    pg = PgProcess(workdir / "postgres", fsync=False)
    try:
        url = pg.start()
        assert pg.unix_socket and "host=" in url  # a short path: unix socket only
        await _query(url, "CREATE TABLE kept (n int)")
        await _query(url, "INSERT INTO kept VALUES (42)")
        pg.stop()
        assert not pg.running
        url = pg.start()
        assert await _query(url, "SELECT n FROM kept") == 42
        url = pg.restart()
        assert await _query(url, "SELECT count(*) FROM kept") == 1
        # a crash (SIGKILL of every postgres process): the WAL brings committed rows back
        await _query(url, "INSERT INTO kept VALUES (43)")
        pg.kill()
        url = pg.start()
        assert await _query(url, "SELECT sum(n) FROM kept") == 85
    finally:
        pg.stop()


async def test_long_path_falls_back_to_a_loopback_port_with_a_password(workdir: Path) -> None:
    deep = workdir / ("d" * 60) / ("e" * 60) / "postgres"
    deep.parent.mkdir(parents=True)
    for parent in (deep.parent, deep.parent.parent):
        parent.chmod(0o755)
    pg = PgProcess(deep, fsync=False)
    try:
        url = pg.start()
        assert not pg.unix_socket and url.startswith("postgresql://dominoes:")
        assert "@127.0.0.1:" in url
        assert await _query(url, "SELECT current_database()") == "dominoes"
        bad = url.replace(pg.password, "wrong-password")
        with pytest.raises(asyncpg.InvalidPasswordError):
            await _query(bad, "SELECT 1")
    finally:
        pg.stop()


async def test_a_second_owner_adopts_a_running_cluster(workdir: Path) -> None:
    first = PgProcess(workdir / "postgres", fsync=False)
    try:
        first.start()
        second = PgProcess(workdir / "postgres", fsync=False)
        url = second.start()  # postgres would refuse a second postmaster on the same files
        assert await _query(url, "SELECT 1") == 1
    finally:
        first.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="the root path needs root")
async def test_as_root_postgres_runs_as_an_unprivileged_user(workdir: Path) -> None:
    pg = PgProcess(workdir / "postgres", fsync=False)
    try:
        url = pg.start()
        user = unprivileged_user()
        assert pg.run_as is not None and pg.run_as.pw_uid == user.pw_uid != 0
        assert _uid_of(pg._process.pid if pg._process else 0) == user.pw_uid
        assert (workdir / "postgres").stat().st_uid == user.pw_uid
        assert (workdir / "postgres" / "pgdata").stat().st_uid == user.pw_uid
        assert await _query(url, "SELECT 1") == 1
    finally:
        pg.stop()


def _reachable_by_others(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.resolve().parents)


def _python_for_others() -> str | None:
    """An interpreter another user may run (server/pg_embedded.py needs only the stdlib)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if Path(candidate).exists() and _reachable_by_others(Path(candidate)):
            return candidate
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
@pytest.mark.skipif(_python_for_others() is None, reason="no Python usable by another user")
def test_as_a_normal_user_postgres_runs_as_that_user(workdir: Path) -> None:
    """The normal-user path, run for real by a process that is not root."""
    user = pwd.getpwnam("nobody")
    home = workdir / "home"
    home.mkdir()
    os.chown(home, user.pw_uid, user.pw_gid)
    script = (
        "import os\n"
        "from server.pg_embedded import PgProcess\n"
        f"pg = PgProcess({str(home / 'postgres')!r}, fsync=False)\n"
        "pg.start()\n"
        "try:\n"
        "    assert pg.run_as is None and pg._process is not None\n"
        "    uid = [l for l in open(f'/proc/{pg._process.pid}/status') if l.startswith('Uid:')]\n"
        "    assert int(uid[0].split()[1]) == os.getuid() != 0\n"
        "    assert pg._psql('SELECT current_database()', 'dominoes') == 'dominoes'\n"
        "    pg.restart()\n"
        "finally:\n"
        "    pg.stop()\n"
        "print('ok')\n"
    )
    python = _python_for_others()
    assert python is not None
    result = subprocess.run(
        [python, "-c", script], cwd=home, capture_output=True, text=True, timeout=120,
        user=user.pw_uid, group=user.pw_gid, extra_groups=[],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
             "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
    assert (home / "postgres" / "pgdata").stat().st_uid == user.pw_uid


@pytest.mark.skipif(os.geteuid() != 0, reason="the root path needs root")
def test_as_root_an_unreachable_directory_is_a_clear_error(workdir: Path) -> None:
    from server.pg_embedded import PgStartError

    closed = workdir / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(PgStartError, match="not searchable"):
        PgProcess(closed / "postgres", fsync=False).start()
