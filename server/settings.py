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


def _default_bot_workers() -> int:
    """Every core but one (the event loop's), at least one."""
    return max(1, (os.cpu_count() or 2) - 1)


def _share(value: float) -> float:
    if not 0 < value <= 1:
        raise ValueError("BOT_CPU_SHARE must be more than 0 and at most 1")
    return value


def _share_of(name: str, value: float) -> float:
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be more than 0 and at most 1")
    return value


def _positive(name: str, value: float) -> float:
    if value <= 0:
        raise ValueError(f"{name} must be more than 0")
    return value


def _rate_and_burst(name: str, raw: str | None, rate: float, burst: int) -> tuple[float, int]:
    """A token bucket written "R" (per second; burst 2 x R) or "R/B"; the defaults if unset."""
    if raw is None or not raw.strip():
        return rate, burst
    head, _, tail = raw.partition("/")
    try:
        rate = float(head)
        burst = int(tail) if tail.strip() else max(1, int(rate * 2))
    except ValueError:
        raise ValueError(f"{name} must be a rate per second, optionally /burst, got {raw!r}") \
            from None
    if rate < 0 or burst < 1:
        raise ValueError(f"{name} must have a rate >= 0 and a burst >= 1, got {raw!r}")
    return rate, burst


def _season_months(value: int) -> int:
    if value <= 0 or 12 % value:
        raise ValueError("SEASON_MONTHS must be 1, 2, 3, 4, 6 or 12")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    redis_url: str | None = None  # None: start an embedded redis-server
    redis_embedded: bool = False  # redis_url is a redis-server this process started itself
    # None: start an embedded PostgreSQL cluster in DATA_DIR/postgres
    database_url: str | None = field(default=None, repr=False)
    postgres_embedded: bool = False  # database_url is a cluster this process started itself
    # Failed logins per account and per client address in LOGIN_WINDOW_S (docs/players.md).
    login_failures_per_account: int = 10
    login_failures_per_address: int = 50
    # Password checks (argon2id: logins, password changes, account deletions), whatever their
    # outcome, per account name and per client address in LOGIN_WINDOW_S.
    logins_per_account: int = 10
    logins_per_address: int = 100
    max_sessions_per_account: int = 20  # a login beyond it ends the account's oldest sessions
    login_window_s: float = 900.0
    registrations_per_address: int = 20  # accounts made from one address in LOGIN_WINDOW_S
    session_ttl_s: float = 30 * 86400.0  # a login session lasts this long
    guest_ttl_s: float = 365 * 86400.0  # a guest identity's cookie lasts this long
    max_tables_per_player: int = 20  # tables one account or guest sits at at once
    next_hand_s: float = 20.0  # the pause between hands (0: none)
    max_hands: int = 100  # a game ends after this many hands at the latest (the side ahead wins)
    next_hand_turn_s: float = 3600.0  # the pause between hands at a turn-clock table
    # Addresses of proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (uvicorn's
    # forwarded_allow_ips: comma-separated IPs or networks, "*" = any).
    forwarded_allow_ips: str = "127.0.0.1"
    data_dir: Path = Path("./data")
    max_frame: int = 4096  # bytes, client frames and HTTP bodies
    send_queue: int = 64  # frames buffered per connection
    rate: float = 10.0  # messages per second per connection
    rate_burst: int = 20
    bad_token_rate: int = 10  # bad tokens per minute per client address
    # Table lifecycle and quotas per client address (docs/operations.md "Limits and abuse").
    waiting_ttl_s: float = 3600.0  # a waiting table nobody joins for this long disappears
    retention_s: float = 86400.0  # a finished table (transcript, replay) is kept this long
    create_rate: int = 20  # tables created per minute per address
    max_waiting_tables: int = 5  # tables waiting for players at once per creating address
    join_rate: int = 30  # seats taken per minute per address
    seat_connect_s: float = 60.0  # a waiting table's seat with no connection this long is freed
    # Seat changes (joins, leaves, seats freed, resumes) one table takes over its life; beyond
    # them joins and resumes are refused and a waiting table is no longer renewed.
    max_seat_changes: int = 500
    max_tables_per_process: int = 10_000
    max_sockets_per_address: int = 256  # websockets of one client address in one process
    tables_per_address_share: float = 0.1  # of max_tables_per_process, for one address
    max_connections: int = 0  # connections served at once (0: the descriptor limit less a reserve)
    reconnect_window_s: float = 30.0  # presence entries of a vanished process expire after this
    allowed_origins: tuple[str, ...] = ()  # empty: origin host must equal Host; "*": any
    # Host header values served (besides loopback names); empty: the bound host; "*": any.
    allowed_hosts: tuple[str, ...] = ()
    # set: /metrics needs "Authorization: Bearer <token>"
    metrics_token: str | None = field(default=None, repr=False)
    bot_delay_ms: int = 600
    # A table in play whose human seats have had no connection for this long ends, abandoned.
    abandon_after_s: float = 600.0
    bot_workers: int = field(default_factory=_default_bot_workers)  # processes thinking for bots
    bot_cpu_share: float = 0.75  # of wall time each bot worker may spend thinking
    deadlines_in_flight: int = 64  # bot moves and clock expiries acted on at once
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
    # Floods (docs/operations.md "Limits and abuse").
    send_queue_bytes: int = 65536  # bytes queued per connection (besides the SEND_QUEUE frames)
    notice_frames_max: int = 16384  # a commit's notice carries its frames and state up to this
    # moves appended to a table's stored state before it is written whole again (0: never
    # appended; docs/operations.md "Upgrading a fleet")
    state_append_max: int = 64
    sync_cooldown_s: float = 1.0  # a sync sooner than this after the last is coalesced
    chat_rate: float = 1.0  # chat lines per second per connection ...
    chat_burst: int = 5
    table_chat_rate: float = 2.0  # ... and per table, for its players and its spectators apart
    table_chat_burst: int = 10
    spectator_chat_max: int = 50  # more spectators: their chat is off, unless the table chose
    max_spectators_per_table: int = 2000  # spectator sockets of a table, over every process
    max_spectators_per_address: int = 100  # spectator sockets of one address in one process
    replay_rate: float = 500.0  # versions of history replayed a second per client address ...
    replay_burst: int = 2000  # ... in one process (beyond the burst, a replay is paced)
    # The PostgreSQL archive of finished games (server.archive, docs/operations.md).
    archive_sweep_s: float = 300.0  # finished games whose job was lost are looked for this often
    archive_retry_max_s: float = 30.0  # longest wait between tries while PostgreSQL is down
    # The leaderboards snapshot (server.leaderboard) is rebuilt this often, by one process.
    leaderboard_refresh_s: float = 60.0
    # Post-game analysis (server.analysis, docs/operations.md "Analysis").
    analysis_workers: int = 1  # low-priority worker processes per server process (0: none)
    analysis_budget_ms: int = 20_000  # CPU milliseconds per game
    analysis_deals: int = 300  # sampled deals per analysed move
    # A season (server.seasons) lasts this many calendar months from January: 1, 2, 3, 4, 6, 12.
    season_months: int = 1
    # Quick play (server.matchmaking, docs/players.md "Quick play").
    quickplay_window: float = 100.0  # rating points either side of a new entry ...
    quickplay_widen: float = 20.0  # ... widened by this many a second waited
    quickplay_bot_after_s: float = 30.0  # a casual entry waiting this long gets bots
    quickplay_stale_s: float = 10.0  # an entry not polled for this long is dropped
    quickplay_rate: int = 30  # queue joins per minute per identity
    quickplay_tick_s: float = 0.5  # how often each process's matcher looks at the queues
    quickplay_match_ttl_s: float = 60.0  # a match (with its seat token) is kept this long
    # Friends, messages and invitations (server.social), per account, in a minute.
    message_rate: int = 20  # private messages sent
    invite_rate: int = 10  # invitations to a table sent
    follow_rate: int = 30  # follows, unfollows, blocks and unblocks
    max_unanswered: int = 50  # messages one sender may send one recipient before a reply
    messages_kept: int = 1000  # the newest messages a conversation keeps, both ways
    max_blocks: int = 1000  # players one account may block

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
        hosts = tuple(h.strip() for h in e.get("ALLOWED_HOSTS", "").split(",") if h.strip())
        metrics_token = e.get("METRICS_TOKEN", "").strip() or None
        static = e.get("STATIC_DIR")
        chat = _rate_and_burst("CHAT_RATE", e.get("CHAT_RATE"), d.chat_rate, d.chat_burst)
        table_chat = _rate_and_burst("TABLE_CHAT_RATE", e.get("TABLE_CHAT_RATE"),
                                     d.table_chat_rate, d.table_chat_burst)
        replay = _rate_and_burst("REPLAY_RATE", e.get("REPLAY_RATE"), d.replay_rate,
                                 d.replay_burst)
        return cls(
            host=e.get("HOST", d.host),
            port=int(num("PORT", d.port)),
            redis_url=e.get("REDIS_URL") or None,
            database_url=e.get("DATABASE_URL", "").strip() or None,
            login_failures_per_account=max(1, int(num("LOGIN_FAILURES_PER_ACCOUNT",
                                                       d.login_failures_per_account))),
            login_failures_per_address=max(1, int(num("LOGIN_FAILURES_PER_ADDRESS",
                                                       d.login_failures_per_address))),
            logins_per_account=max(1, int(num("LOGINS_PER_ACCOUNT", d.logins_per_account))),
            logins_per_address=max(1, int(num("LOGINS_PER_ADDRESS", d.logins_per_address))),
            max_sessions_per_account=max(1, int(num("MAX_SESSIONS_PER_ACCOUNT",
                                                     d.max_sessions_per_account))),
            login_window_s=_positive("LOGIN_WINDOW_S",
                                     num("LOGIN_WINDOW_S", d.login_window_s, float)),
            session_ttl_s=_positive("SESSION_TTL_S", num("SESSION_TTL_S", d.session_ttl_s, float)),
            guest_ttl_s=_positive("GUEST_TTL_S", num("GUEST_TTL_S", d.guest_ttl_s, float)),
            max_tables_per_player=max(1, int(num("MAX_TABLES_PER_PLAYER",
                                                  d.max_tables_per_player))),
            next_hand_s=num("NEXT_HAND_S", d.next_hand_s, float),
            max_hands=max(1, int(num("MAX_HANDS", d.max_hands))),
            next_hand_turn_s=num("NEXT_HAND_TURN_S", d.next_hand_turn_s, float),
            registrations_per_address=max(1, int(num("REGISTRATIONS_PER_ADDRESS",
                                                      d.registrations_per_address))),
            forwarded_allow_ips=e.get("FORWARDED_ALLOW_IPS", "").strip() or d.forwarded_allow_ips,
            data_dir=Path(e.get("DATA_DIR", str(d.data_dir))),
            max_frame=int(num("MAX_FRAME", d.max_frame)),
            send_queue=max(1, int(num("SEND_QUEUE", d.send_queue))),
            rate=rate,
            rate_burst=max(1, burst),
            bad_token_rate=int(num("BAD_TOKEN_RATE", d.bad_token_rate)),
            waiting_ttl_s=_positive("WAITING_TTL", num("WAITING_TTL", d.waiting_ttl_s, float)),
            retention_s=_positive("RETENTION", num("RETENTION", d.retention_s, float)),
            create_rate=int(num("CREATE_RATE", d.create_rate)),
            max_waiting_tables=int(num("MAX_WAITING_TABLES", d.max_waiting_tables)),
            join_rate=int(num("JOIN_RATE", d.join_rate)),
            seat_connect_s=_positive("SEAT_CONNECT_S",
                                     num("SEAT_CONNECT_S", d.seat_connect_s, float)),
            max_seat_changes=max(1, int(num("MAX_SEAT_CHANGES", d.max_seat_changes))),
            max_tables_per_process=int(num("MAX_TABLES_PER_PROCESS", d.max_tables_per_process)),
            max_connections=int(num("MAX_CONNECTIONS", d.max_connections)),
            max_sockets_per_address=max(1, int(num("MAX_SOCKETS_PER_ADDRESS",
                                                   d.max_sockets_per_address))),
            tables_per_address_share=_share_of("TABLES_PER_ADDRESS_SHARE",
                                               num("TABLES_PER_ADDRESS_SHARE",
                                                   d.tables_per_address_share, float)),
            reconnect_window_s=float(num("RECONNECT_WINDOW_S", d.reconnect_window_s, float)),
            allowed_origins=origins,
            allowed_hosts=hosts,
            metrics_token=metrics_token,
            bot_delay_ms=int(num("BOT_DELAY_MS", d.bot_delay_ms)),
            abandon_after_s=_positive("ABANDON_AFTER",
                                      num("ABANDON_AFTER", d.abandon_after_s, float)),
            bot_workers=max(1, int(num("BOT_WORKERS", d.bot_workers))),
            bot_cpu_share=_share(num("BOT_CPU_SHARE", d.bot_cpu_share, float)),
            deadlines_in_flight=max(1, int(num("DEADLINES_IN_FLIGHT", d.deadlines_in_flight))),
            log_level=e.get("LOG_LEVEL", d.log_level).upper(),
            static_dir=Path(static) if static else d.static_dir,
            ws_ping_interval_s=float(num("WS_PING_INTERVAL_S", d.ws_ping_interval_s, float)),
            ws_ping_timeout_s=float(num("WS_PING_TIMEOUT_S", d.ws_ping_timeout_s, float)),
            ws_impl=e.get("WS_IMPL", d.ws_impl),
            ws_deflate=e.get("WS_DEFLATE", "").strip().lower() in ("1", "true", "yes", "on"),
            send_queue_bytes=max(1, int(num("SEND_QUEUE_BYTES", d.send_queue_bytes))),
            notice_frames_max=max(0, int(num("NOTICE_FRAMES_MAX", d.notice_frames_max))),
            state_append_max=max(0, int(num("STATE_APPEND_MAX", d.state_append_max))),
            sync_cooldown_s=float(num("SYNC_COOLDOWN_S", d.sync_cooldown_s, float)),
            chat_rate=chat[0], chat_burst=chat[1],
            table_chat_rate=table_chat[0], table_chat_burst=table_chat[1],
            spectator_chat_max=int(num("SPECTATOR_CHAT_MAX", d.spectator_chat_max)),
            max_spectators_per_table=int(
                num("MAX_SPECTATORS_PER_TABLE", d.max_spectators_per_table)),
            max_spectators_per_address=int(
                num("MAX_SPECTATORS_PER_ADDRESS", d.max_spectators_per_address)),
            replay_rate=replay[0], replay_burst=replay[1],
            archive_sweep_s=_positive("ARCHIVE_SWEEP_S",
                                      num("ARCHIVE_SWEEP_S", d.archive_sweep_s, float)),
            archive_retry_max_s=_positive("ARCHIVE_RETRY_MAX_S",
                                          num("ARCHIVE_RETRY_MAX_S", d.archive_retry_max_s,
                                              float)),
            leaderboard_refresh_s=_positive("LEADERBOARD_REFRESH_S",
                                            num("LEADERBOARD_REFRESH_S", d.leaderboard_refresh_s,
                                                float)),
            analysis_workers=max(0, int(num("ANALYSIS_WORKERS", d.analysis_workers))),
            analysis_budget_ms=max(100, int(num("ANALYSIS_BUDGET_MS", d.analysis_budget_ms))),
            analysis_deals=max(1, int(num("ANALYSIS_DEALS", d.analysis_deals))),
            season_months=_season_months(int(num("SEASON_MONTHS", d.season_months))),
            quickplay_window=num("QUICKPLAY_WINDOW", d.quickplay_window, float),
            quickplay_widen=num("QUICKPLAY_WIDEN", d.quickplay_widen, float),
            quickplay_bot_after_s=num("QUICKPLAY_BOT_AFTER_S", d.quickplay_bot_after_s, float),
            quickplay_stale_s=_positive("QUICKPLAY_STALE_S",
                                        num("QUICKPLAY_STALE_S", d.quickplay_stale_s, float)),
            quickplay_rate=max(1, int(num("QUICKPLAY_RATE", d.quickplay_rate))),
            quickplay_tick_s=_positive("QUICKPLAY_TICK_S",
                                       num("QUICKPLAY_TICK_S", d.quickplay_tick_s, float)),
            quickplay_match_ttl_s=_positive("QUICKPLAY_MATCH_TTL_S",
                                            num("QUICKPLAY_MATCH_TTL_S",
                                                d.quickplay_match_ttl_s, float)),
            message_rate=max(1, int(num("MESSAGE_RATE", d.message_rate))),
            invite_rate=max(1, int(num("INVITE_RATE", d.invite_rate))),
            follow_rate=max(1, int(num("FOLLOW_RATE", d.follow_rate))),
            max_unanswered=max(1, int(num("MAX_UNANSWERED", d.max_unanswered))),
            messages_kept=max(1, int(num("MESSAGES_KEPT", d.messages_kept))),
            max_blocks=max(1, int(num("MAX_BLOCKS", d.max_blocks))),
        )
