"""`python -m server` / `dominoes-server`: run the service under uvicorn.

Starts an embedded redis-server when REDIS_URL is unset (data in DATA_DIR), then serves HTTP and
websockets. SIGTERM closes every socket with 1001 first, so clients reconnect and resume.
"""

from __future__ import annotations

import dataclasses
import signal
import socket

import uvicorn

from server.app import create_app, going_away
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


def main() -> None:
    settings = Settings.from_env()
    embedded: RedisProcess | None = None
    if settings.redis_url is None:
        embedded = RedisProcess(settings.data_dir / "redis")
        settings = dataclasses.replace(settings, redis_url=embedded.start())
    # uvicorn re-raises SIGTERM once it has shut down; turning it into SystemExit lets the
    # embedded Redis below stop cleanly too.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        config = uvicorn.Config(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            ws=settings.ws_impl,
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
        Server(config).run()
    finally:
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    main()
