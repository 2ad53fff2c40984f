"""Service settings read from the environment, with defaults that run out of the box.

Owns: parsing and validating environment variables. Must not import the rest of the server.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_static_dir() -> Path:
    built = REPO_ROOT / "client_js" / "dist"
    return built if built.is_dir() else REPO_ROOT / "client_js"


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    redis_url: str | None = None  # None: start an embedded redis-server
    data_dir: Path = Path("./data")
    max_frame: int = 4096  # bytes, client frames and HTTP bodies
    send_queue: int = 64  # frames buffered per connection
    rate: float = 10.0  # messages per second per connection
    rate_burst: int = 20
    bad_token_rate: int = 10  # bad tokens per minute per client address
    max_tables_per_process: int = 10_000
    reconnect_window_s: float = 30.0  # presence entries of a vanished process expire after this
    allowed_origins: tuple[str, ...] = ()  # empty: origin host must equal Host; "*": any
    bot_delay_ms: int = 600
    log_level: str = "INFO"
    static_dir: Path = field(default_factory=_default_static_dir)
    hello_timeout_s: float = 10.0
    ws_ping_interval_s: float = 5.0
    ws_ping_timeout_s: float = 10.0
    recent_chat: int = 50
    ws_deflate: bool = False  # permessage-deflate costs ~100 KB and CPU per connection
    # uvicorn's websocket implementation: "websockets-sansio" (no tasks per connection, about
    # 8 KB less memory per socket than the deprecated "websockets" one, same limits and pings).
    ws_impl: str = "websockets-sansio"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        d = cls()

        def num(name: str, default: float, kind: type = int) -> float:
            raw = e.get(name)
            if raw is None or raw.strip() == "":
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {raw!r}") from None
            if value < 0:
                raise ValueError(f"{name} must not be negative")
            return value  # type: ignore[no-any-return]  # kind is int or float

        rate_raw = e.get("RATE", "")
        rate, burst = d.rate, d.rate_burst
        if rate_raw.strip():
            # "10" or "10/20" (messages per second / burst)
            head, _, tail = rate_raw.partition("/")
            rate = float(head)
            burst = int(tail) if tail else max(1, int(rate * 2))
        burst = int(num("RATE_BURST", burst))
        origins = tuple(o.strip() for o in e.get("ALLOWED_ORIGINS", "").split(",") if o.strip())
        static = e.get("STATIC_DIR")
        return cls(
            host=e.get("HOST", d.host),
            port=int(num("PORT", d.port)),
            redis_url=e.get("REDIS_URL") or None,
            data_dir=Path(e.get("DATA_DIR", str(d.data_dir))),
            max_frame=int(num("MAX_FRAME", d.max_frame)),
            send_queue=max(1, int(num("SEND_QUEUE", d.send_queue))),
            rate=rate,
            rate_burst=max(1, burst),
            bad_token_rate=int(num("BAD_TOKEN_RATE", d.bad_token_rate)),
            max_tables_per_process=int(num("MAX_TABLES_PER_PROCESS", d.max_tables_per_process)),
            reconnect_window_s=float(num("RECONNECT_WINDOW_S", d.reconnect_window_s, float)),
            allowed_origins=origins,
            bot_delay_ms=int(num("BOT_DELAY_MS", d.bot_delay_ms)),
            log_level=e.get("LOG_LEVEL", d.log_level).upper(),
            static_dir=Path(static) if static else d.static_dir,
            ws_ping_interval_s=float(num("WS_PING_INTERVAL_S", d.ws_ping_interval_s, float)),
            ws_ping_timeout_s=float(num("WS_PING_TIMEOUT_S", d.ws_ping_timeout_s, float)),
            ws_impl=e.get("WS_IMPL", d.ws_impl),
            ws_deflate=e.get("WS_DEFLATE", "").strip().lower() in ("1", "true", "yes", "on"),
        )
