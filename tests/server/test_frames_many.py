"""One read of a table's history for several audiences: frames_since_many answers each audience
exactly what frames_since answers it alone (same versions, same bytes, None when trimmed)."""

from __future__ import annotations

import functools
import random

import pytest
import redis.asyncio

from server.rejected import Rejected
from server.store import Store
from server.tables import TableService
from tests.support.tables import ManualClock, frames, new_table, play_random


async def test_store_answers_every_audience_from_its_own_since(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    for v in range(1, 7):
        await store.commit("abcd12", v - 1, b"s", b"m", frames(v))
    got = await store.frames_since_many("abcd12", {"0": 4, "1": 1, "s": 6, "3": 2})
    assert got == {
        "0": [(5, b"seat0-5"), (6, b"seat0-6")],
        "1": [(2, b"seat1-2"), (3, b"seat1-3"), (4, b"seat1-4"), (5, b"seat1-5"),
              (6, b"seat1-6")],
        "s": [],
        "3": None,  # no frame of that audience in the entries
    }
    assert await store.frames_since_many("abcd12", {"0": 7, "s": 0}) == {
        "0": None, "s": [(v, b"spec-%d" % v) for v in range(1, 7)]}
    assert await store.frames_since_many("nosuch", {"0": 0, "s": 0}) == {"0": None, "s": None}
    assert await store.frames_since_many("abcd12", {}) == {}


async def test_store_trimmed_history_is_none_only_for_the_audiences_behind_it(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client, history_limit=3)
    for v in range(1, 8):
        await store.commit("abcd12", v - 1, b"s", b"m", frames(v))
    # Entries 5, 6, 7 are kept: since 4 is the oldest that can still be answered.
    assert await store.frames_since_many("abcd12", {"0": 3, "1": 4, "s": 6}) == {
        "0": None,
        "1": [(5, b"seat1-5"), (6, b"seat1-6"), (7, b"seat1-7")],
        "s": [(7, b"spec-7")],
    }


@pytest.mark.parametrize("history_limit", [None, 6])
async def test_service_answers_several_audiences_as_frames_since_does_each(
    redis_client: redis.asyncio.Redis, history_limit: int | None,
) -> None:
    tables = TableService(redis_client, history_limit=history_limit, bot_delay_ms=0,
                          clock=ManualClock())
    tables.seed_source = functools.partial(random.Random(2026).getrandbits, 62)
    table_id, _ = await new_table(tables, 2)
    rng = random.Random(5)
    for i in range(8):
        await play_random(tables, table_id, rng, f"m{i}")
    current = await tables.store.version(table_id)
    assert current == 11  # created, 2 joins, 8 moves
    sinces = {"0": 3, "1": 9, "s": 6}
    got = await tables.frames_since_many(table_id, sinces)
    assert list(got) == ["0", "1", "s"]
    for audience, since in sinces.items():
        assert got[audience] == await tables.frames_since(table_id, audience, since)
    # The versions each audience gets, hand-derived from since+1..11 and the kept history.
    assert [v for v, _ in got["1"] or []] == [10, 11]
    assert [v for v, _ in got["s"] or []] == [7, 8, 9, 10, 11]
    if history_limit is None:
        assert [v for v, _ in got["0"] or []] == list(range(4, 12))
    else:
        assert got["0"] is None  # only 6..11 are kept; 4 and 5 are gone


async def test_service_checks_each_audience_and_since(redis_client: redis.asyncio.Redis) -> None:
    tables = TableService(redis_client, bot_delay_ms=0, clock=ManualClock())
    table_id, _ = await new_table(tables, 2)
    assert await tables.frames_since_many(table_id, {"0": -1, "s": 3}) == {"0": None, "s": []}
    with pytest.raises(Rejected) as refused:
        await tables.frames_since_many(table_id, {"0": 0, "x": 0})
    assert refused.value.code == "bad_request"
