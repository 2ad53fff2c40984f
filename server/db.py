"""PostgreSQL: the schema migrations and the asyncpg pool the app holds.

Owns: ``server/migrations/NNNN_name.sql`` (applied in order, each in its own transaction, each
recorded in ``schema_migrations``; an advisory lock makes concurrent starters apply each once)
and ``Postgres``, the pool the application state holds: when the database is down at start-up the
service runs without it and retries in the background. Must not import the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import asyncpg  # type: ignore[import-untyped]  # ships no type hints

from server import logs

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# pg_advisory_lock key held while migrating: any 64-bit number no other code uses.
MIGRATION_LOCK = 0x646F6D696E6F6573  # "dominoes"
_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")

DB_DOWN = (asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
           asyncpg.CannotConnectNowError, asyncpg.TooManyConnectionsError,
           asyncpg.ConnectionDoesNotExistError, OSError, TimeoutError)
"""The failures that mean PostgreSQL is not reachable now (answered 503 ``unavailable``)."""


class Queries(Protocol):
    """What the server asks of an asyncpg pool or connection (asyncpg ships no type hints;
    rows are asyncpg Records)."""

    async def execute(self, query: str, *args: object) -> str: ...

    async def fetch(self, query: str, *args: object) -> list[Any]: ...

    async def fetchrow(self, query: str, *args: object) -> Any: ...

    async def fetchval(self, query: str, *args: object) -> Any: ...


class Connection(Queries, Protocol):
    """An asyncpg connection."""

    async def executemany(self, command: str, args: Iterable[Sequence[object]]) -> None: ...

    def transaction(self) -> AbstractAsyncContextManager[object]: ...

    async def close(self) -> None: ...


class Pool(Queries, Protocol):
    """An asyncpg pool."""

    def acquire(self) -> AbstractAsyncContextManager[Connection]: ...

    async def close(self) -> None: ...

    def terminate(self) -> None: ...

BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Every ``NNNN_name.sql`` of ``directory`` in version order; numbers must be unique."""
    found: dict[int, Migration] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        match = _NAME.fullmatch(path.name)
        if match is None:
            raise ValueError(f"migration {path.name} is not named NNNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise ValueError(f"two migrations numbered {version:04d}")
        found[version] = Migration(version, match.group(2), path.read_text())
    return [found[v] for v in sorted(found)]


async def migrate(
    conn: Connection, migrations: list[Migration] | None = None
) -> list[int]:
    """Apply the migrations not applied yet, in order; returns the versions applied now.

    Holds a session advisory lock for the whole run, so a second process migrating at the same
    time waits and then finds everything applied."""
    pending = load_migrations() if migrations is None else migrations
    applied_now: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute(BOOKKEEPING)
        done = {row["version"] for row in await conn.fetch("SELECT version FROM schema_migrations")}
        for migration in pending:
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    migration.version, migration.name)
            applied_now.append(migration.version)
            logs.event("migration applied", version=migration.version, name=migration.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    return applied_now


async def migrate_url(url: str, connect_timeout_s: float = 10.0) -> list[int]:
    """Connect to ``url``, apply the pending migrations, disconnect."""
    conn = await asyncpg.connect(url, timeout=connect_timeout_s)
    try:
        return await migrate(conn)
    finally:
        await conn.close()


async def open_pool(url: str, *, connect_timeout_s: float = 5.0, max_size: int = 10) -> Pool:
    """An asyncpg pool on ``url`` after the migrations are applied."""
    await migrate_url(url, connect_timeout_s)
    pool: Pool | None = await asyncpg.create_pool(url, min_size=1, max_size=max_size,
                                                  timeout=connect_timeout_s,
                                                  command_timeout=30)
    assert pool is not None
    return pool


class Postgres:
    """The pool of one process: ``pool`` is None while the database is unreachable.

    ``start()`` tries once and, on failure, keeps retrying in the background (backoff up to
    ``retry_max_s``)."""

    def __init__(self, url: str | None, *, retry_max_s: float = 10.0) -> None:
        self.url = url
        self.pool: Pool | None = None
        self.retry_max_s = retry_max_s
        self._task: asyncio.Task[None] | None = None

    async def _attempt(self) -> bool:
        if self.url is None:
            return False
        try:
            self.pool = await open_pool(self.url)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            logs.event("postgres unavailable", error=f"{type(exc).__name__}: {exc}"[:300])
            return False
        logs.event("postgres up")
        return True

    async def start(self) -> None:
        if self.url is None or await self._attempt():
            return
        self._task = asyncio.create_task(self._retry(), name="postgres-retry")

    async def _retry(self) -> None:
        delay = 0.25
        while not await self._attempt():
            await asyncio.sleep(delay)
            delay = min(self.retry_max_s, delay * 2)

    async def healthy(self, wait_s: float = 2.0) -> bool:
        pool = self.pool
        if pool is None:
            return False
        try:
            await asyncio.wait_for(pool.fetchval("SELECT 1"), wait_s)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            return False
        return True

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        pool, self.pool = self.pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), 5.0)
            except TimeoutError:
                pool.terminate()
