"""The Starlette application: routes declared as data and a lifespan that owns shared resources.

Owns: wiring (the routes, and lobby.refused as the refusal handler of every HTTP route). The
lifespan holds the Redis client, the TableService, the hub and the deadline
loop, and builds the typed state the handlers read (server.seams.AppState, `app_state`); on
shutdown it closes every socket with 1001 (tables stay in Redis, so every client can resume).
Must not import the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route, WebSocketRoute

from server import accounts, inbox, leaderboard, lobby, logs, matchmaking, players, social
from server.analysis import Analyst
from server.archive import Archive
from server.db import Postgres
from server.guard import Guard, host_rules
from server.hub import Hub
from server.limits import AddressBudget
from server.metrics import Metrics
from server.pg_embedded import PgProcess, PgStartError
from server.protocol import Close
from server.quotas import Quotas
from server.redis_embedded import RedisProcess
from server.seams import STATE_ATTRIBUTE, AppState
from server.settings import Settings
from server.store import sharded_pubsub
from server.tables import Notices, TableService
from server.ws import websocket_endpoint


def routes(settings: Settings) -> list[Route | WebSocketRoute | Mount]:
    return [
        Route("/healthz", lobby.healthz, methods=["GET"]),
        Route("/metrics", lobby.metrics, methods=["GET"]),
        Route("/api/meta", lobby.meta, methods=["GET"]),
        Route("/api/tables", lobby.create_table, methods=["POST"]),
        Route("/api/tables", lobby.list_tables, methods=["GET"]),
        Route("/api/tables/{table_id}", lobby.table_summary, methods=["GET"]),
        Route("/api/tables/{table_id}/join", lobby.join_table, methods=["POST"]),
        Route("/api/tables/{table_id}/leave", lobby.leave_table, methods=["POST"]),
        Route("/api/tables/{table_id}/resume", lobby.resume_seat, methods=["POST"]),
        Route("/api/tables/{table_id}/rematch", lobby.rematch, methods=["POST"]),
        Route("/api/tables/{table_id}/rematch/seat", lobby.rematch_seat, methods=["POST"]),
        Route("/api/tables/{table_id}/transcript", lobby.transcript, methods=["GET"]),
        Route("/api/tables/{table_id}/replay", lobby.replay, methods=["GET"]),
        Route("/api/games/{game_id}", lobby.archived_game, methods=["GET"]),
        Route("/api/games/{game_id}/analysis", lobby.game_analysis, methods=["GET"]),
        Route("/api/accounts", accounts.register, methods=["POST"]),
        Route("/api/session", accounts.login, methods=["POST"]),
        Route("/api/session", accounts.logout, methods=["DELETE"]),
        Route("/api/sessions", accounts.logout_everywhere, methods=["DELETE"]),
        Route("/api/me", accounts.me, methods=["GET"]),
        Route("/api/me", accounts.delete_account, methods=["DELETE"]),
        Route("/api/me/password", accounts.change_password, methods=["POST"]),
        Route("/api/me/tables", lobby.my_tables, methods=["GET"]),
        Route("/api/players/{name}", players.profile, methods=["GET"]),
        Route("/api/players/{name}/games", players.player_games, methods=["GET"]),
        Route("/api/leaderboards/{family}", players.leaderboard_of, methods=["GET"]),
        Route("/api/seasons/{family}", players.season_board, methods=["GET"]),
        Route("/api/quickplay", matchmaking.join_queue, methods=["POST"]),
        Route("/api/quickplay", matchmaking.poll_queue, methods=["GET"]),
        Route("/api/quickplay", matchmaking.leave_queue, methods=["DELETE"]),
        Route("/api/me/follows", social.follows, methods=["GET"]),
        Route("/api/me/follows/{name}", social.follow, methods=["PUT"]),
        Route("/api/me/follows/{name}", social.unfollow, methods=["DELETE"]),
        Route("/api/me/blocks", social.blocks, methods=["GET"]),
        Route("/api/me/blocks/{name}", social.block, methods=["PUT"]),
        Route("/api/me/blocks/{name}", social.unblock, methods=["DELETE"]),
        Route("/api/messages", social.conversations, methods=["GET"]),
        Route("/api/messages/{name}", social.conversation, methods=["GET"]),
        Route("/api/messages/{name}", social.send_message, methods=["POST"]),
        Route("/api/messages/{name}/read", social.mark_read, methods=["POST"]),
        Route("/api/tables/{table_id}/invite", social.invite, methods=["POST"]),
        WebSocketRoute("/ws/me", inbox.me_endpoint),
        WebSocketRoute("/ws", websocket_endpoint),
        Mount("/", app=lobby.StaticClient(settings.static_dir)),
    ]


CLUSTER_SCHEME = "redis+cluster://"


def redis_client(url: str) -> aioredis.Redis:
    """A client for REDIS_URL; ``redis+cluster://host:port`` (any one node) means Redis Cluster.
    On a cluster a table's notices are shard channels, read from the primary of each table's
    slot (server.fanout.pubsub)."""
    if url.startswith(CLUSTER_SCHEME):
        cluster = RedisCluster.from_url(
            "redis://" + url[len(CLUSTER_SCHEME):],
            decode_responses=False,
            socket_connect_timeout=2.0,
            retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
        )
        return cluster  # type: ignore[return-value]  # same command API as Redis
    # A bounded pool that makes a burst wait for a free connection instead of failing
    # ("Too many connections") when hundreds of tables move at once.
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=128,
        timeout=10,
        decode_responses=False,
        socket_connect_timeout=2.0,
        health_check_interval=10,
        retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
    )
    return aioredis.Redis(connection_pool=pool)


async def going_away(app: Starlette, grace_s: float = 2.0) -> None:
    """Close every socket with 1001 and wait (briefly) for the writers to finish."""
    shared: AppState | None = getattr(app.state, STATE_ATTRIBUTE, None)
    if shared is None:
        return
    hub = shared.hub
    hub.close_all(Close.GOING_AWAY, "server going away")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while hub.tables and loop.time() < deadline:  # noqa: ASYNC110 - bounded poll of a dict many tasks change
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    embedded: RedisProcess | None = None
    url = settings.redis_url
    if url is None:
        embedded = RedisProcess(settings.data_dir / "redis")
        url = await asyncio.to_thread(embedded.start)
    redis = redis_client(url)
    if isinstance(redis, RedisCluster):
        await redis.initialize()  # the slot map; pub/sub picks its node from it
    metrics: Metrics = app.state.metrics
    # PostgreSQL (players, sessions, ratings, archive): optional at start-up, retried.
    embedded_pg: PgProcess | None = None
    db_url = settings.database_url
    if db_url is None:
        try:
            embedded_pg = PgProcess(settings.data_dir / "postgres")
            db_url = await asyncio.to_thread(embedded_pg.start)
        except (PgStartError, OSError) as exc:
            embedded_pg = None
            logs.event("postgres embedded failed", error=str(exc)[:500])
    # Without any PostgreSQL there is no archive: finished tables just expire after RETENTION.
    service = TableService(redis, bot_delay_ms=settings.bot_delay_ms,
                           waiting_ttl_s=settings.waiting_ttl_s, retention_s=settings.retention_s,
                           seat_connect_s=settings.seat_connect_s, archive=db_url is not None,
                           notice_frames_max=settings.notice_frames_max,
                           append_max=settings.state_append_max,
                           next_hand_s=settings.next_hand_s,
                           next_hand_turn_s=settings.next_hand_turn_s,
                           max_hands=settings.max_hands,
                           max_seat_changes=settings.max_seat_changes)
    service.store.sharded = await sharded_pubsub(redis)  # before the hub subscribes anything
    service.notify = Notices(redis)  # "your turn" and rematch notices (server.inbox)
    process_id = uuid.uuid4().hex[:12]
    hub = Hub(redis, service, metrics, settings, process_id)
    postgres = Postgres(db_url)
    archive = Archive(service, postgres, sweep_s=settings.archive_sweep_s,
                      retry_max_s=settings.archive_retry_max_s,
                      season_months=settings.season_months)
    if service.archive:
        service.archived = archive.rendered
    analyst = Analyst(postgres, archive.analysis_wakeup, workers=settings.analysis_workers,
                      budget_ms=settings.analysis_budget_ms, deals=settings.analysis_deals,
                      metrics=metrics)
    shared = AppState(
        settings=settings, metrics=metrics, redis=redis, service=service, hub=hub,
        quotas=Quotas(service.store, settings),
        bad_tokens=AddressBudget(settings.bad_token_rate), address_limits=hub.limits,
        archive=archive, analyst=analyst, postgres=postgres)
    setattr(app.state, STATE_ATTRIBUTE, shared)
    me_sockets = inbox.Inbox(redis, metrics, process_id)  # /ws/me (server.inbox)
    setattr(app.state, inbox.INBOX_ATTRIBUTE, me_sockets)
    await postgres.start()
    stop = asyncio.Event()
    own_redis = embedded is not None or settings.redis_embedded
    own_pg = embedded_pg is not None or settings.postgres_embedded
    logs.event("started", process=process_id, redis="embedded" if own_redis else "external",
               postgres="embedded" if own_pg else "external")
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(hub.run(stop))
            group.create_task(metrics.watch_loop(stop))
            group.create_task(metrics.watch_gc(stop))
            group.create_task(me_sockets.run(stop))
            group.create_task(service.run_deadlines(stop, settings))
            group.create_task(matchmaking.run(shared, process_id, stop))
            if service.archive:
                group.create_task(archive.run(stop))
                group.create_task(analyst.run(stop))
            if db_url is not None:
                group.create_task(leaderboard.run_refresh(postgres, stop,
                                                          settings.leaderboard_refresh_s))
            try:
                yield
            finally:
                await asyncio.gather(going_away(app), me_sockets.going_away())
                stop.set()
    finally:
        service.close()
        await redis.aclose()
        await postgres.close()
        if embedded_pg is not None:
            await asyncio.to_thread(embedded_pg.stop)
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        logs.event("stopped", process=process_id)


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings.from_env()
    logs.configure(settings.log_level)
    logging.getLogger("uvicorn.error").setLevel(settings.log_level)
    guard = Middleware(
        Guard, hosts=host_rules(settings.allowed_hosts, settings.host, settings.port),
        origins=settings.allowed_origins,
    )
    # Every refusal of an HTTP route (a Rejected, whoever raised it) and every storage failure
    # is answered by lobby.refused: one mapping to HTTP for the whole server.
    app = Starlette(routes=routes(settings), lifespan=lifespan, middleware=[guard],
                    exception_handlers=dict(lobby.EXCEPTION_HANDLERS))
    app.state.settings = settings
    app.state.metrics = Metrics()
    return app
