"""The committing process's move path: one Redis round trip when its copy of the table is
current, the deadline written in the same atomic step, and a stale copy never changing an
answer (two services on one Redis stand for two server processes)."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Mapping

import msgpack
import pytest
import redis.asyncio

from server.diff import apply_ops
from server.store import DEADLINES, Store, TableKeys, committed_notice, deadline_member
from server.tables import Rejected, TableService
from tests.support.tables import ManualClock, frames, new_table, play_random

COMMIT_SCRIPT_COMMANDS = {"get", "hget", "set", "append", "hset", "hdel", "xadd", "persist",
                          "pexpire", "publish", "zadd", "zrem"}


def service_on(client: redis.asyncio.Redis, seed: int = 2026) -> TableService:
    service = TableService(client, bot_delay_ms=0, clock=ManualClock())
    service.seed_source = functools.partial(random.Random(seed).getrandbits, 62)
    return service


@pytest.fixture
async def pair(redis_client: redis.asyncio.Redis,
               ) -> AsyncIterator[tuple[TableService, TableService]]:
    yield service_on(redis_client), service_on(redis_client)


async def command_calls(client: redis.asyncio.Redis) -> dict[str, int]:
    stats = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


async def test_a_move_on_a_current_copy_is_one_script_call_and_no_read(
        pair: tuple[TableService, TableService], redis_client: redis.asyncio.Redis) -> None:
    service, _ = pair
    table_id, _ = await new_table(service)
    rng = random.Random(1)
    await play_random(service, table_id, rng, "m1")  # its snapshots read the table first
    version, doc = await service.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await service.snapshot(table_id, str(seat))
    before = await command_calls(redis_client)
    assert await service.submit(table_id, seat, own["game"]["legal"][0], version, "m2") \
        == version + 1
    after = await command_calls(redis_client)
    grown = {name: after[name] - before.get(name, 0) for name in after
             if after[name] != before.get(name, 0)}
    # Redis counts the script's own commands too: the commit's GET/HGET/SET/XADD/..., and
    # besides them only the INFO of this test; the table is never read (MGET, XRANGE).
    assert grown.pop("evalsha") == 1, grown
    assert grown.pop("info") == 1, grown
    assert set(grown) <= COMMIT_SCRIPT_COMMANDS, grown


async def test_a_move_through_a_process_whose_copy_is_behind_commits_on_the_real_version(
        pair: tuple[TableService, TableService]) -> None:
    one, two = pair
    table_id, _ = await new_table(one)
    await two.snapshot(table_id, "s")  # `two` now holds a copy at this version
    rng = random.Random(5)
    for n in range(6):  # alternate processes: each one's copy is behind every other time
        service = one if n % 2 else two
        version = await play_random(service, table_id, rng, f"m{n}")
        assert version == (await one.snapshot(table_id, "s"))[0]
    _, left = await one.snapshot(table_id, "0")
    _, right = await two.snapshot(table_id, "0")
    assert left == right


async def test_a_refusal_from_a_stale_copy_is_judged_again_on_the_stored_table(
        pair: tuple[TableService, TableService]) -> None:
    one, two = pair
    created = await one.create({"players": 2})
    table_id = str(created["id"])
    _, token = await one.join(table_id, 0, "ann", None)
    await two.snapshot(table_id, "s")  # `two` sees seat 0 taken
    await one.leave(table_id, token)  # ... and it is free again
    seat, _ = await two.join(table_id, 0, "bob", None)
    assert seat == 0
    _, doc = await one.snapshot(table_id, "s")
    assert doc["table"]["seats"][0]["name"] == "bob"


async def test_a_stale_copy_still_answers_a_retried_move_with_its_first_version(
        pair: tuple[TableService, TableService]) -> None:
    one, two = pair
    table_id, _ = await new_table(one)
    version, doc = await one.snapshot(table_id, "s")
    await two.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await one.snapshot(table_id, str(seat))
    move = own["game"]["legal"][0]
    first = await one.submit(table_id, seat, move, version, "same-id")
    assert await two.submit(table_id, seat, move, version, "same-id") == first
    with pytest.raises(Rejected) as refused:
        await two.submit(table_id, seat, move, version, "other-id")
    assert refused.value.code == "stale_version"
    assert refused.value.version == first


def deadline_of(entries: list[tuple[bytes, float]], table_id: str) -> dict[str, int]:
    return {member.decode(): int(score) for member, score in entries
            if member.decode().startswith(table_id + ":")}


async def test_the_deadline_moves_with_the_commit_and_not_without_it(
        redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    await store.commit("dl1234", 0, b"s", b"m", frames(1), due_ms=1000)
    entries = await redis_client.zrange(DEADLINES, 0, -1, withscores=True)
    assert deadline_of(entries, "dl1234") == {deadline_member("dl1234", 1): 1000}
    assert (await store.commit("dl1234", 1, b"s", b"m", frames(2), due_ms=2000)).outcome == "ok"
    # a stale commit leaves the deadline as it is
    assert (await store.commit("dl1234", 1, b"s", b"m", frames(2), due_ms=5)).outcome == "stale"
    entries = await redis_client.zrange(DEADLINES, 0, -1, withscores=True)
    assert deadline_of(entries, "dl1234") == {deadline_member("dl1234", 2): 2000}
    await store.commit("dl1234", 2, b"s", b"m", frames(3), due_ms=None)
    entries = await redis_client.zrange(DEADLINES, 0, -1, withscores=True)
    assert deadline_of(entries, "dl1234") == {}
    # "keep" leaves the deadlines alone, and the table's keys keep no deadline key's lifetime
    await redis_client.zadd(DEADLINES, {deadline_member("dl1234", 3): 7})
    await store.commit("dl1234", 3, b"s", b"m", frames(4), lifetime_ms=60_000)
    entries = await redis_client.zrange(DEADLINES, 0, -1, withscores=True)
    assert deadline_of(entries, "dl1234") == {deadline_member("dl1234", 3): 7}
    assert await redis_client.pttl(DEADLINES) == -1


@pytest.mark.parametrize("append_max", [0, 64])
async def test_a_move_after_another_process_commit_starts_from_the_state_its_notice_carried(
        redis_client: redis.asyncio.Redis, append_max: int) -> None:
    """The notice carries the whole state (``append_max`` 0), or only the move when the commit
    appended it: the other process then plays it onto the version it holds."""
    one, other = service_on(redis_client), service_on(redis_client)
    one.append_max = other.append_max = append_max
    table_id, _ = await new_table(one)
    pubsub = redis_client.pubsub()  # a subscriber: the commit publishes its whole notice
    await pubsub.subscribe(one.notice_channel(table_id))
    await play_random(one, table_id, random.Random(4), "m0")  # the first move of the hand
    version, doc = await one.snapshot(table_id, "s")
    await other.snapshot(table_id, "s")  # the other process holds this version
    seat = doc["game"]["turn"]
    _, own = await one.snapshot(table_id, str(seat))
    await one.submit(table_id, seat, own["game"]["legal"][0], version, "m1")
    notice = None
    while notice is None or notice.version <= version:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
        notice = committed_notice(message["data"]) if message is not None else None
    await pubsub.aclose()
    assert notice.version == version + 1
    stored = await redis_client.get(TableKeys(table_id).state)
    if append_max:
        assert notice.state is None and notice.move is not None and stored.endswith(notice.move)
        other.noticed(table_id, notice.version, notice.move, move=True)
    else:
        assert notice.move is None and notice.state == stored
        other.noticed(table_id, notice.version, notice.state)
    audiences = ("0", "1", "s")
    before = {aud: (await one.snapshot(table_id, aud))[1] for aud in audiences}
    # The next seat plays on the other process, which never reads the table.
    nxt = before["s"]["game"]["turn"]
    legal = before[str(nxt)]["game"]["legal"] or [{"draw": True}]
    calls = await command_calls(redis_client)
    assert await other.submit(table_id, nxt, legal[0], version + 1, "m2") == version + 2
    grown = await command_calls(redis_client)
    assert grown["evalsha"] == calls["evalsha"] + 1
    assert grown.get("mget", 0) == calls.get("mget", 0)
    # What it committed is what a process reading the table from Redis finds.
    fresh = service_on(redis_client)
    stored_frames = await fresh.frames_since_many(table_id, dict.fromkeys(audiences, version + 1))
    for aud in audiences:
        frames_of_audience = stored_frames[aud]
        assert frames_of_audience is not None and frames_of_audience[0][0] == version + 2
        ops = msgpack.unpackb(frames_of_audience[0][1])["ops"]
        assert apply_ops(before[aud], ops) == (await fresh.snapshot(table_id, aud))[1]


async def test_moves_in_a_row_noticed_are_played_onto_the_version_the_process_holds(
        redis_client: redis.asyncio.Redis) -> None:
    """Three moves another process appended, each told by its notice, then a move here: no
    read of the table, and what it committed is what a fresh read finds."""
    one, other = service_on(redis_client), service_on(redis_client)
    table_id, _ = await new_table(one, rules="draw")
    pubsub = redis_client.pubsub()
    await pubsub.subscribe(one.notice_channel(table_id))
    version, _ = await other.snapshot(table_id, "s")  # the other process holds this version
    rng = random.Random(8)
    for n in range(3):  # a hand of seven tiles each does not end in three moves
        await play_random(one, table_id, rng, f"m{n}")
    notices = []
    while len(notices) < 3:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
        notice = committed_notice(message["data"]) if message is not None else None
        if notice is not None:
            notices.append(notice)
    await pubsub.aclose()
    for notice in notices:
        assert notice.state is None and notice.move is not None
        other.noticed(table_id, notice.version, notice.move, move=True)
    _, doc = await one.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await one.snapshot(table_id, str(seat))
    calls = await command_calls(redis_client)
    assert await other.submit(table_id, seat, own["game"]["legal"][0], version + 3, "m3") \
        == version + 4
    grown = await command_calls(redis_client)
    assert grown["evalsha"] == calls["evalsha"] + 1
    assert grown.get("mget", 0) == calls.get("mget", 0)
    fresh = service_on(redis_client)
    assert (await fresh.load(table_id)).record == other._cache[table_id].record


async def test_every_commit_is_told_with_the_frames_it_stored(
        pair: tuple[TableService, TableService]) -> None:
    one, _ = pair
    told: list[tuple[str, int, Mapping[str, bytes], str | None]] = []
    one.committed = lambda *args: told.append(args)
    table_id, _ = await new_table(one)
    version = await play_random(one, table_id, random.Random(2), "m1")
    assert [(t, v) for t, v, _, _ in told] == [(table_id, v) for v in range(1, version + 1)]
    assert told[1][3] == "0" and told[2][3] == "1"  # the joins set seat tokens
    stored = await one.frames_since_many(table_id, {"0": 0, "1": 0, "s": 0})
    for _, v, sent, _ in told:
        for audience, frames_of_audience in stored.items():
            assert frames_of_audience is not None
            assert dict(frames_of_audience)[v] == sent[audience]


def test_the_move_path_records_are_the_records_their_classes_make() -> None:
    from dataclasses import FrozenInstanceError, fields

    from server.record import TableRecord
    from server.table_config import parse_create_request
    from server.tables import Change, Loaded, new_change, new_loaded

    record = TableRecord.new("fast1", parse_create_request({"players": 2}), 0, 5, None)
    loaded = new_loaded(7, record, {}, 2)
    assert type(loaded) is Loaded and loaded == Loaded(7, record, {}, 2)
    change = new_change(record, [{"type": "play"}], b"move")
    assert type(change) is Change and change == Change(record, [{"type": "play"}], move=b"move")
    assert {f.name for f in fields(Loaded)} == {"version", "record", "docs", "appended"}
    assert {f.name for f in fields(Change)} == {"record", "events", "token", "move",
                                                "takes_seat"}
    with pytest.raises(FrozenInstanceError):
        loaded.version = 8  # type: ignore[misc]
