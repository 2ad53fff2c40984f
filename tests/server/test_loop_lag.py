"""The event loop's lag (`dominoes_loop_lag_seconds`): a loop held by one piece of work shows
as that much lag, and a running server measures it."""

from __future__ import annotations

import asyncio
import time

import httpx

from server.metrics import Metrics
from tests.server.conftest import running
from tests.support.servers import ServiceProcess


def lag_buckets(metrics: Metrics) -> dict[str, float]:
    """The histogram's cumulative bucket counts by upper bound, and its count."""
    found: dict[str, float] = {}
    for family in metrics.registry.collect():
        if family.name != "dominoes_loop_lag_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_bucket"):
                found[sample.labels["le"]] = sample.value
            elif sample.name.endswith("_count"):
                found["count"] = sample.value
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
