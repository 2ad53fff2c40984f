"""A bot's reply time says nothing about its hand.

A person plays a strong bot over a real websocket and times every bot move (from the version
that made it the bot's turn to the diff of its move). Afterwards the bot seat's own documents,
read from the table's stored history, tell which of those moves were forced (exactly one legal
move: a forced draw, a pass, the only tile that fits). If forced moves came back faster, an
opponent would learn that no other tile in the bot's hand fits.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator

import httpx
import msgpack
import pytest
import redis.asyncio

from server.diff import apply_ops
from server.store import Store
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join

BOT_SEAT = 1
BOT_DELAY_MS = 100
BOT_ACTIONS = {"play", "draw", "pass"}
WANTED = 40  # bot moves timed before looking at the classes
MOST = 90  # bot moves at most (two classes of at least MIN_CLASS each)
MIN_CLASS = 6
MEDIAN_MARGIN_MS = 40.0


@pytest.fixture
async def timed_service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, "BOT_DELAY_MS": str(BOT_DELAY_MS)}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


async def legal_counts(redis_url: str, table: str) -> dict[int, int]:
    """Version -> how many legal moves the bot seat had in its document at that version."""
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        frames = await Store(client).frames_since(table, str(BOT_SEAT), 0)
    finally:
        await client.aclose()
    assert frames is not None
    doc = None
    counts: dict[int, int] = {}
    for version, frame in frames:
        doc = apply_ops(doc, msgpack.unpackb(frame, raw=False)["ops"])
        assert doc is not None
        game = doc["game"]
        counts[version] = len(game["legal"]) if game else 0
    return counts


def best_threshold_accuracy(forced: list[float], free: list[float]) -> float:
    """Balanced accuracy of the best rule "forced if the reply took less than t"."""
    best = 0.5
    for t in sorted(forced + free):
        hit_forced = sum(1 for x in forced if x <= t) / len(forced)
        hit_free = sum(1 for x in free if x > t) / len(free)
        best = max(best, (hit_forced + hit_free) / 2)
    return best


async def time_bot_moves(service: ServiceProcess, http: httpx.AsyncClient,
                         replies: list[tuple[str, int, float]], wanted: int) -> None:
    """Play one table against a strong bot until `replies` holds `wanted` timed bot moves (or
    the game ends): (table, version the bot moved from, milliseconds)."""
    table = await create_table(http, rules={"preset": "all-fives", "target": 1000},
                               bots={str(BOT_SEAT): "strong"})
    token = await join(http, table, 0, "person")
    client = await GameClient.connect(service.ws_url)
    await client.hello(table, token)
    assert client.v is not None
    arrived: dict[int, float] = {client.v: time.perf_counter()}
    deadline = time.monotonic() + 120
    while len(replies) < wanted and time.monotonic() < deadline:
        if client.game.get("game_over"):
            return
        if client.my_turn():
            answer = await client.move(client.game["legal"][0])
            assert answer["t"] == "accepted", answer
            arrived.setdefault(answer["v"], time.perf_counter())
            continue
        message = await client.recv(15)
        now = time.perf_counter()
        if message["t"] != "diff":
            continue
        version = message["v"]
        arrived.setdefault(version, now)
        moved = any(e.get("seat") == BOT_SEAT and e.get("type") in BOT_ACTIONS
                    for e in message["ev"])
        if moved and version - 1 in arrived:
            replies.append((table, version - 1, (now - arrived[version - 1]) * 1000))
    await client.close()


async def test_forced_and_free_bot_moves_take_the_same_time(
    timed_service: ServiceProcess, redis_url: str
) -> None:
    replies: list[tuple[str, int, float]] = []
    forced: list[float] = []
    free: list[float] = []
    async with httpx.AsyncClient(base_url=timed_service.url, timeout=10) as http:
        wanted = WANTED
        while True:
            await time_bot_moves(timed_service, http, replies, wanted)
            counts: dict[str, dict[int, int]] = {}
            for table in {t for t, _, _ in replies}:
                counts[table] = await legal_counts(redis_url, table)
            forced = [ms for t, v, ms in replies if counts[t][v] == 1]
            free = [ms for t, v, ms in replies if counts[t][v] > 1]
            if min(len(forced), len(free)) >= MIN_CLASS or len(replies) >= MOST:
                break
            wanted = min(MOST, len(replies) + 10)
    assert len(forced) >= MIN_CLASS and len(free) >= MIN_CLASS, (len(forced), len(free))
    gap = statistics.median(free) - statistics.median(forced)
    accuracy = best_threshold_accuracy(forced, free)
    summary = (f"forced: n={len(forced)} median {statistics.median(forced):.0f} ms "
               f"range {min(forced):.0f}-{max(forced):.0f}; free: n={len(free)} median "
               f"{statistics.median(free):.0f} ms range {min(free):.0f}-{max(free):.0f}; "
               f"best threshold classifier {accuracy:.0%}")
    print(summary)
    assert abs(gap) < MEDIAN_MARGIN_MS, summary
