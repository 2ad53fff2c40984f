"""Two server processes, one Redis: everyone sees the same versions in the same order.

Seats and spectators of each table are split over two processes. Spectators on different
processes receive byte-identical diff frames for every version (the frames are encoded once, at
commit time, and only relayed). Each seat's live frames are byte-identical to what the other
process replays to that seat from the table's history afterwards.
"""

from __future__ import annotations

import asyncio

import httpx
import msgpack
import pytest

from tests.reliability.conftest import FAST, start, stop
from tests.reliability.games import audit_table, seat_tables
from tests.reliability.robots import Robot
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess


def diffs_by_version(frames: list[bytes]) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for frame in frames:
        message = msgpack.unpackb(frame, raw=False)
        if message["t"] == "diff":
            assert out.setdefault(message["v"], frame) == frame
    return out


async def replayed(ws_url: str, table: str, robot: Robot) -> dict[int, bytes]:
    """The seat's whole history as another process replays it (hello with since=0)."""
    client = await GameClient.connect(ws_url)
    await client.hello(table, robot.token, since=0, doc={})
    await client.wait_version(robot.v or 0)
    await client.close()
    return diffs_by_version(client.raw)


@pytest.mark.slow
async def test_seats_and_spectators_split_over_two_processes_get_identical_frames(
    own_redis: RedisServer,
) -> None:
    one = ServiceProcess(own_redis.url, env=FAST)
    # python -m server itself for the second: a process of its own interpreter (its own hash
    # seed), so nothing shared between processes may depend on one interpreter's ordering.
    two = ServiceProcess(own_redis.url, env=FAST, command=True)
    await start(one)
    await start(two)
    try:
        async with httpx.AsyncClient(base_url=two.url, timeout=10) as http:
            urls = [one.ws_url, two.ws_url]
            tables = await seat_tables(http, urls, tables=4, target=30, spectators=2,
                                       chat_every=5)
            robots = [r for rs in tables.values() for r in rs]
            await asyncio.wait_for(asyncio.gather(*(r.run(60) for r in robots)), 70)
            for table, robot_list in tables.items():
                await audit_table(http, one.ws_url, table, robot_list)
                watchers = [r for r in robot_list if r.token is None]
                assert {r.urls[0] for r in watchers} == set(urls)  # one on each process
                first, second = (diffs_by_version(w.frames) for w in watchers)
                assert sorted(first) == list(range(1, (watchers[0].v or 0) + 1))
                assert first == second
                for robot in robot_list:
                    if robot.token is None:
                        continue
                    other = next(u for u in urls if u != robot.urls[0])
                    live = diffs_by_version(robot.frames)
                    history = await replayed(other, table, robot)
                    assert live and all(history[v] == frame for v, frame in live.items())
    finally:
        await stop(one)
        await stop(two)
        for process in (one, two):
            process.log_path.unlink(missing_ok=True)
