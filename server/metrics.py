"""Prometheus metrics of one server process (a registry per app, so tests can build many apps).

Owns: metric names, the `/metrics` rendering, and the measure of the event loop's lag
(`Metrics.watch_loop`). Must not import the rest of the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import math
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5)
LOOP_LAG_INTERVAL_S = 0.25  # how often the event loop's lag is measured (`watch_loop`)


# The move path's metrics change several times a move. prometheus_client's Counter and
# Histogram take a lock and check their argument on every change (about 5 % of a move's
# instructions); these two are changed by the event loop's thread only, so a change is one
# addition, and they are handed to the registry as prometheus_client's custom collectors,
# which expose them as the library's own families (a histogram's buckets are counted apart
# and summed when scraped).


class LoopCounter(Collector):
    """A counter without labels that only the event loop's thread changes."""

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry) -> None:
        self.name, self.documentation = name, documentation
        self.value = 0.0
        self.created = time.time()
        registry.register(self)

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def collect(self) -> list[Metric]:
        return [CounterMetricFamily(self.name, self.documentation, value=self.value,
                                    created=self.created)]


class LoopHistogram(Collector):
    """A histogram without labels that only the event loop's thread changes."""

    def __init__(self, name: str, documentation: str, buckets: Sequence[float],
                 registry: CollectorRegistry) -> None:
        self.name, self.documentation = name, documentation
        self.bounds = sorted(float(bound) for bound in buckets if bound != math.inf)
        self.counts = [0] * (len(self.bounds) + 1)  # the last: above every bound
        self.sum = 0.0
        registry.register(self)

    def observe(self, amount: float) -> None:
        self.sum += amount
        self.counts[bisect_left(self.bounds, amount)] += 1  # the first bound >= amount

    def collect(self) -> list[Metric]:
        bounds = [*map(floatToGoString, self.bounds), "+Inf"]
        return [HistogramMetricFamily(
            self.name, self.documentation, sum_value=self.sum,
            buckets=list(zip(bounds, map(float, itertools.accumulate(self.counts)),
                             strict=True)))]


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.moves_accepted = LoopCounter(
            "dominoes_moves_accepted", "Moves accepted and committed", registry=r
        )
        self.moves_rejected = Counter(
            "dominoes_moves_rejected", "Moves rejected, by code", ["code"], registry=r
        )
        self.ack_seconds = LoopHistogram(
            "dominoes_ack_seconds",
            "Move frame received to accepted/rejected queued",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.fanout_seconds = LoopHistogram(
            "dominoes_fanout_seconds",
            "New version known to this process to its frames queued on every local socket",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.connections = Gauge("dominoes_connections", "Open websocket connections", registry=r)
        self.tables = Gauge("dominoes_local_tables", "Tables with local connections", registry=r)
        self.snapshots = Counter(
            "dominoes_snapshots", "Snapshots sent, by reason", ["reason"], registry=r
        )
        self.resyncs = Counter("dominoes_resyncs", "Sync requests from clients", registry=r)
        self.direct_deliveries = LoopCounter(
            "dominoes_direct_deliveries",
            "Versions queued on local sockets from the commit or its notice, without a read",
            registry=r)
        self.send_queue_depth = LoopHistogram(
            "dominoes_send_queue_depth",
            "Frames waiting in a connection's send queue when a frame is queued (every backlog;"
            " one idle frame in 16)",
            buckets=(0, 1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )
        self.redis_errors = Counter("dominoes_redis_errors", "Redis errors seen", registry=r)
        self.closes = Counter(
            "dominoes_ws_closes", "Connections closed by the server, by code", ["code"], registry=r
        )
        self.bad_messages = Counter(
            "dominoes_bad_messages", "Client frames answered with an error", ["code"], registry=r
        )
        self.send_queue_bytes = LoopHistogram(
            "dominoes_send_queue_bytes",
            "Bytes waiting in a connection's send queue when a frame is queued (sampled like"
            " dominoes_send_queue_depth)",
            buckets=(0, 1024, 4096, 16384, 32768, 65536, 131072, 262144),
            registry=r,
        )
        self.frames_dropped = Counter(
            "dominoes_frames_dropped",
            "Chat and presence frames not sent to a socket whose send queue was filling, by kind"
            " (a dropped presence is one a newer presence replaced)",
            ["kind"], registry=r,
        )
        self.replay_chunks = Counter(
            "dominoes_replay_chunks", "Chunks of history queued to resuming sockets", registry=r
        )
        self.replay_waits = Counter(
            "dominoes_replay_waits",
            "Chunks of history held back because their address replayed its REPLAY_RATE share",
            registry=r
        )
        self.syncs_coalesced = Counter(
            "dominoes_syncs_coalesced",
            "Sync requests within the cooldown, answered together when it ends", registry=r
        )
        self.chat_refused = Counter(
            "dominoes_chat_refused", "Chat lines refused, by reason (rate, table_budget,"
            " chat_off)", ["reason"], registry=r
        )
        self.spectators_refused = Counter(
            "dominoes_spectators_refused", "Spectator sockets refused, by cap (table, address)",
            ["cap"], registry=r
        )

        self.analyses = Counter(
            "dominoes_analyses", "Games the post-game analysis finished, by status (done,"
            " failed)", ["status"], registry=r
        )
        self.loop_lag = Histogram(
            "dominoes_loop_lag_seconds",
            "How late the event loop ran a timer (every 0.25 s): the time every socket and table"
            " of the process waited behind the work before it",
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5),
            registry=r,
        )
        self.gc_pause = Histogram(
            "dominoes_gc_pause_seconds",
            "How long each collection of Python's cyclic garbage collector held the process,"
            " by generation (0: young, 1: middle, 2: full)",
            ["generation"],
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
            registry=r,
        )
        self.analysis_cpu = Counter(
            "dominoes_analysis_cpu_seconds", "CPU seconds the post-game analysis spent",
            registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)

    @contextlib.contextmanager
    def watching_gc(self) -> Iterator[None]:
        """While open: every collection of the garbage collector, whichever thread it runs in,
        observed in `gc_pause` (the collector holds the interpreter's lock for that long)."""
        started = 0.0
        pauses = [self.gc_pause.labels(generation=str(g)) for g in range(3)]

        def observe(phase: str, info: dict[str, int]) -> None:
            nonlocal started
            if phase == "start":
                started = time.perf_counter()
            else:
                pauses[info["generation"]].observe(time.perf_counter() - started)

        gc.callbacks.append(observe)
        try:
            yield
        finally:
            gc.callbacks.remove(observe)

    async def watch_gc(self, stop: asyncio.Event) -> None:
        """`watching_gc` until `stop` is set."""
        with self.watching_gc():
            await stop.wait()

    async def watch_loop(self, stop: asyncio.Event,
                         interval_s: float = LOOP_LAG_INTERVAL_S) -> None:
        """Until `stop` is set: every `interval_s`, how much later than asked the loop woke
        this task (`loop_lag`). A callback or task that holds the loop shows here as lag, and
        as that much added to every answer and frame due meanwhile."""
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            due = loop.time() + interval_s
            await asyncio.sleep(interval_s)
            self.loop_lag.observe(max(0.0, loop.time() - due))
