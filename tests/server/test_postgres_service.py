"""The service and its PostgreSQL: the pool at start-up, /healthz, running while it is down."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

import httpx

from tests.support.pg_server import PgServer
from tests.support.servers import ServiceProcess


async def _health(service: ServiceProcess) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=service.url, timeout=5) as http:
        response = await http.get("/healthz")
        assert response.status_code == 200
        return dict(response.json())


def _started_line(service: ServiceProcess) -> dict[str, object]:
    for line in service.log_path.read_text().splitlines():
        if '"msg":"started"' in line.replace(" ", ""):
            return dict(json.loads(line))
    raise AssertionError(f"no started line in:\n{service.log()}")


async def test_healthz_reports_postgres_up(redis_url: str, database_url: str) -> None:
    service = ServiceProcess(redis_url, env={"DATABASE_URL": database_url, "LOG_LEVEL": "INFO"})
    await asyncio.to_thread(service.start)
    try:
        assert await _health(service) == {"ok": True, "postgres": "up"}
        assert _started_line(service)["postgres"] == "external"
    finally:
        await asyncio.to_thread(service.__exit__)


async def test_the_service_runs_while_postgres_is_down_and_connects_later(
    redis_url: str,
) -> None:
    pg = PgServer()
    url = await asyncio.to_thread(pg.start)  # made once, so that its address is known ...
    await asyncio.to_thread(pg.stop)  # ... and down when the service starts
    service = ServiceProcess(redis_url, env={"DATABASE_URL": url})
    await asyncio.to_thread(service.start)
    try:
        assert await _health(service) == {"ok": True, "postgres": "down"}
        async with httpx.AsyncClient(base_url=service.url, timeout=5) as http:
            created = await http.post("/api/tables", json={"players": 2})
            assert created.status_code == 201, created.text  # live tables need Redis only
        await asyncio.to_thread(pg.start)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while (await _health(service))["postgres"] != "up":
            assert loop.time() < deadline, "the pool was not retried"
            await asyncio.sleep(0.2)
        # and it came up migrated
        import asyncpg

        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM schema_migrations") >= 1
        finally:
            await conn.close()
        await asyncio.to_thread(pg.stop)  # down again: reported, live tables unaffected
        assert await _health(service) == {"ok": True, "postgres": "down"}
    finally:
        await asyncio.to_thread(service.__exit__)
        await asyncio.to_thread(pg.close)


async def test_without_database_url_python_m_server_runs_an_embedded_cluster(
    redis_url: str,
) -> None:
    with tempfile.TemporaryDirectory(prefix="svc-embedded-") as name:
        os.chmod(name, 0o755)
        data = Path(name) / "data"
        service = ServiceProcess(redis_url, env={"DATABASE_URL": "", "DATA_DIR": str(data),
                                                 "LOG_LEVEL": "INFO"}, command=True)
        await asyncio.to_thread(service.start, 60.0)
        try:
            assert await _health(service) == {"ok": True, "postgres": "up"}
            assert _started_line(service)["postgres"] == "embedded"
            assert (data / "postgres" / "pgdata" / "PG_VERSION").exists()
        finally:
            await asyncio.to_thread(service.__exit__)
        # stopped with the service
        assert not (data / "postgres" / "pgdata" / "postmaster.pid").exists()
