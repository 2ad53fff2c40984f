"""The event loop's lag (`dominoes_loop_lag_seconds`): a loop held by one piece of work shows
as that much lag, and a running server measures it; so are the garbage collector's pauses
(`dominoes_gc_pause_seconds`), one cause of such lag."""

from __future__ import annotations

import asyncio
import gc
import time

import httpx

from server.metrics import Metrics
from tests.server.conftest import running
from tests.support.servers import ServiceProcess


def lag_buckets(metrics: Metrics, name: str = "dominoes_loop_lag_seconds",
                **labels: str) -> dict[str, float]:
    """A histogram's cumulative bucket counts by upper bound, its count and its sum (of the
    series with these labels)."""
    found: dict[str, float] = {}
    for family in metrics.registry.collect():
        if family.name != name:
            continue
        for sample in family.samples:
            if any(sample.labels.get(k) != v for k, v in labels.items()):
                continue
            if sample.name.endswith("_bucket"):
                found[sample.labels["le"]] = sample.value
            elif sample.name.endswith("_count"):
                found["count"] = sample.value
            elif sample.name.endswith("_sum"):
                found["sum"] = sample.value
    return found


async def test_a_loop_held_for_300_ms_shows_as_that_much_lag() -> None:
    metrics = Metrics()
    stop = asyncio.Event()
    watcher = asyncio.create_task(metrics.watch_loop(stop, interval_s=0.05))
    await asyncio.sleep(0.3)  # a few calm wakes
    calm = lag_buckets(metrics)
    assert calm["count"] >= 3
    assert calm["0.2"] == calm["count"]  # none of them 200 ms late
    time.sleep(0.3)  # noqa: ASYNC251 (holding the loop is the point: its timer falls due)
    await asyncio.sleep(0.1)
    stop.set()
    await watcher
    held = lag_buckets(metrics)
    assert held["count"] > calm["count"]
    assert held["0.2"] < held["count"]  # one wake at least 200 ms late
    assert held["+Inf"] == held["count"]


async def test_the_server_measures_its_loop_lag(redis_url: str) -> None:
    async with (
        running(ServiceProcess(redis_url)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        await asyncio.sleep(0.8)
        text = (await http.get("/metrics")).text
    counts = [float(line.split()[1]) for line in text.splitlines()
              if line.startswith("dominoes_loop_lag_seconds_count ")]
    assert counts and counts[0] >= 2  # one measure every 0.25 s


def test_a_full_collection_over_many_objects_shows_as_a_pause_of_its_length() -> None:
    metrics = Metrics()
    live = [[i] for i in range(600_000)]  # tracked objects the full collection must walk
    with metrics.watching_gc():
        gc.collect(0)
        started = time.perf_counter()
        gc.collect(2)
        took = time.perf_counter() - started
    gc.collect(2)  # after the watch: not observed
    young = lag_buckets(metrics, "dominoes_gc_pause_seconds", generation="0")
    full = lag_buckets(metrics, "dominoes_gc_pause_seconds", generation="2")
    assert young["count"] >= 1
    assert full["count"] == 1
    assert took * 0.5 <= full["sum"] <= took
    assert full["0.005"] == 0 < took - 0.005  # 600,000 objects take longer than 5 ms
    del live


async def test_the_server_measures_its_gc_pauses(redis_url: str) -> None:
    async with (
        running(ServiceProcess(redis_url)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        text = (await http.get("/metrics")).text
    series = {line.split()[0] for line in text.splitlines()
              if line.startswith("dominoes_gc_pause_seconds_count")}
    assert series == {f'dominoes_gc_pause_seconds_count{{generation="{g}"}}' for g in "012"}
