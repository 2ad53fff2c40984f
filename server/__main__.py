"""`python -m server` / `dominoes-server`: run the service under uvicorn.

Starts an embedded redis-server when REDIS_URL is unset and an embedded PostgreSQL cluster when
DATABASE_URL is unset (data in DATA_DIR), then serves HTTP and websockets. `python -m server
migrate` applies the pending database migrations and exits. SIGTERM closes every socket with
1001 first, so clients reconnect and resume.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import resource
import signal
import socket
import sys

import uvicorn

from server import logs
from server.app import create_app, going_away
from server.keepalive import protocol_for
from server.pg_embedded import PgProcess, PgStartError
from server.redis_embedded import RedisProcess
from server.settings import Settings


class Server(uvicorn.Server):
    """uvicorn, but sockets are closed with 1001 (going away) before its own shutdown."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        app = self.config.loaded_app
        while hasattr(app, "app") and not hasattr(app, "state"):
            app = app.app
        if hasattr(app, "state"):
            await going_away(app)
        await super().shutdown(sockets)


def log_config(level: str) -> dict[str, object]:
    """uvicorn's own lines as JSON too."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "server.logs.JsonLines"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        },
    }


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def port_free(host: str, port: int) -> bool:
    """Whether ``host:port`` can be listened on now (as uvicorn will: SO_REUSEADDR set)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


FD_RESERVE = 256  # descriptors kept for Redis connections, bot workers, files and logs


def connection_limit(settings: Settings) -> int:
    """How many connections (HTTP and websocket) uvicorn serves at once; beyond it a new
    request is answered 503 instead of the process running out of descriptors. MAX_CONNECTIONS,
    or what the descriptor limit allows (raised to its hard limit first) less FD_RESERVE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    available = max(64, soft - FD_RESERVE)
    return min(settings.max_connections, available) if settings.max_connections else available


def start_postgres(settings: Settings) -> tuple[Settings, PgProcess | None]:
    """The embedded PostgreSQL in DATA_DIR/postgres when DATABASE_URL is unset. A cluster that
    cannot start is not fatal: the service runs live tables without the database."""
    if settings.database_url is not None:
        return settings, None
    try:
        embedded = PgProcess(settings.data_dir / "postgres")
        url = embedded.start()
    except (PgStartError, OSError) as exc:
        logs.configure(settings.log_level)
        logs.event("postgres embedded failed", error=str(exc)[:500])
        return settings, None
    return dataclasses.replace(settings, database_url=url, postgres_embedded=True), embedded


def migrate_command(settings: Settings) -> None:
    """`python -m server migrate`: apply the pending migrations and exit."""
    import asyncio

    from server.db import migrate_url

    settings, embedded = start_postgres(settings)
    try:
        if settings.database_url is None:
            sys.stderr.write("error: no PostgreSQL (set DATABASE_URL or install postgresql)\n")
            raise SystemExit(1)
        applied = asyncio.run(migrate_url(settings.database_url))
        sys.stdout.write(f"applied {len(applied)} migration(s): "
                         f"{', '.join(f'{v:04d}' for v in applied) or 'none pending'}\n")
    finally:
        if embedded is not None:
            embedded.stop()


def tune_gc() -> None:
    """Before serving: what start-up made (modules, functions, classes: ~50,000 objects) goes
    to the permanent generation, never scanned again, and the young generation is collected
    after 10,000 allocations instead of 700, so that a move's documents (replaced by the next
    move within seconds) die young instead of filling the oldest generation. With the defaults
    a full collection ran every ~4 s at 500 moves/s over ~240,000 objects and stopped the event
    loop for 100-300 ms each time: the ack p99 of bench/ load runs. The middle generation is
    collected after every third young collection instead of the 21st: what a burst of
    sockets leaves alive (1,000 connecting: ~137,000 objects) is then walked in pieces of
    7-17 ms instead of at once for 54-190 ms."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 2, 100)


def main() -> None:
    settings = Settings.from_env()
    if sys.argv[1:2] == ["migrate"]:
        migrate_command(settings)
        return
    if settings.port and not port_free(settings.host, settings.port):
        sys.stderr.write(
            f"error: {settings.host}:{settings.port} is already in use; "
            f"start with PORT=<another port> (or stop what listens there)\n"
        )
        raise SystemExit(1)
    embedded: RedisProcess | None = None
    if settings.redis_url is None:
        embedded = RedisProcess(settings.data_dir / "redis")
        settings = dataclasses.replace(
            settings, redis_url=embedded.start(), redis_embedded=True
        )
    settings, embedded_pg = start_postgres(settings)
    # uvicorn re-raises SIGTERM once it has shut down; turning it into SystemExit lets the
    # embedded Redis below stop cleanly too.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        config = uvicorn.Config(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            ws=protocol_for(settings.ws_impl),
            proxy_headers=True,
            limit_concurrency=connection_limit(settings),
            forwarded_allow_ips=settings.forwarded_allow_ips,
            ws_max_size=settings.max_frame,
            ws_ping_interval=settings.ws_ping_interval_s,
            ws_ping_timeout=settings.ws_ping_timeout_s,
            ws_per_message_deflate=settings.ws_deflate,
            log_level=settings.log_level.lower(),
            log_config=log_config(settings.log_level),
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        tune_gc()
        Server(config).run()
    finally:
        if embedded is not None:
            embedded.stop()
        if embedded_pg is not None:
            embedded_pg.stop()


if __name__ == "__main__":
    main()
