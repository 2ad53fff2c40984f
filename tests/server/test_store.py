"""The Redis layout and the atomic commit script, on a real redis-server."""

from __future__ import annotations

import asyncio

import msgpack
import redis.asyncio
from redis.crc import key_slot

from server.store import DEADLINES, Store, TableKeys, committed_notice
from tests.support.redis_server import RedisServer
from tests.support.tables import frames


async def test_first_commit_creates_the_table_at_version_one(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    assert await store.load("abcd12") is None
    result = await store.commit("abcd12", 0, b"state1", b"meta1", frames(1))
    assert result == ("ok", 1)
    assert await store.load("abcd12") == (1, b"state1")
    assert await store.meta("abcd12") == b"meta1"


async def test_an_empty_meta_leaves_the_stored_one_alone(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"meta1", frames(1))
    assert await store.commit("abcd12", 1, b"s2", b"", frames(2)) == ("ok", 2)
    assert await store.load("abcd12") == (2, b"s2")
    assert await store.metas_and_versions(["abcd12", "gone12"]) == [(b"meta1", 2), (None, 0)]


async def test_every_key_of_a_table_shares_its_hash_tag(redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s", b"m", frames(1), client=(0, "m1"),
                       token=("set", 0, "ff" * 32))
    keys = sorted(k.decode() for k in await redis_client.keys("*"))
    assert keys == ["t:{abcd12}:cid", "t:{abcd12}:log", "t:{abcd12}:meta", "t:{abcd12}:state",
                    "t:{abcd12}:tok", "t:{abcd12}:v"]
    keys += TableKeys("abcd12").companions  # written outside the commit, same lifetime
    keys.append(TableKeys("abcd12").lease)  # its own expiry
    slots = {key_slot(k.encode()) for k in keys}
    assert len(slots) == 1


async def test_commit_against_an_old_version_is_stale_and_changes_nothing(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m1", frames(1))
    await store.commit("abcd12", 1, b"s2", b"m2", frames(2))
    assert await store.commit("abcd12", 1, b"bad", b"bad", frames(9)) == ("stale", 2)
    assert await store.commit("abcd12", 0, b"bad", b"bad", frames(9)) == ("stale", 2)
    assert await store.load("abcd12") == (2, b"s2")
    assert await store.meta("abcd12") == b"m2"
    assert await redis_client.xlen(TableKeys("abcd12").stream) == 2


async def test_a_retried_client_id_returns_the_version_first_accepted(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m", frames(1))
    assert await store.commit("abcd12", 1, b"s2", b"m", frames(2), client=(1, "m7")) == ("ok", 2)
    assert await store.commit("abcd12", 1, b"s2", b"m", frames(2), client=(1, "m7")) == ("dup", 2)
    assert await store.commit("abcd12", 2, b"s3", b"m", frames(3), client=(1, "m7")) == ("dup", 2)
    assert await store.client_version("abcd12", 1, "m7") == 2
    # The same id from another seat is another message.
    assert await store.commit("abcd12", 2, b"s3", b"m", frames(3), client=(0, "m7")) == ("ok", 3)
    # Client ids live as long as the table: here, with no lifetime given, for good.
    assert await redis_client.pttl(TableKeys("abcd12").clients) == -1


async def test_a_commit_gives_every_key_of_the_table_its_lifetime(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    keys = TableKeys("abcd12")
    await store.commit("abcd12", 0, b"s1", b"m", frames(1), client=(0, "a"), lifetime_ms=5000)
    await redis_client.rpush(keys.chat, b"line")
    await store.share_lifetime("abcd12")
    for key in (keys.version, keys.state, keys.stream, keys.meta, keys.clients, keys.chat):
        assert 0 < await redis_client.pttl(key) <= 5000, key
    await store.commit("abcd12", 1, b"s2", b"m", frames(2), client=(0, "b"))  # kept for good
    for key in (keys.version, keys.state, keys.stream, keys.meta, keys.clients, keys.chat):
        assert await redis_client.pttl(key) == -1, key
    await store.commit("abcd12", 2, b"s3", b"m", frames(3), lifetime_ms="keep")
    await store.commit("abcd12", 3, b"s4", b"m", frames(4), lifetime_ms=5000)
    await store.commit("abcd12", 4, b"s5", b"m", frames(5), lifetime_ms="keep")
    for key in (keys.version, keys.state, keys.stream, keys.meta, keys.clients, keys.chat):
        assert 0 < await redis_client.pttl(key) <= 5000, key


async def test_a_lease_taken_before_a_commit_keeps_its_own_expiry(
    redis_client: redis.asyncio.Redis,
) -> None:
    """A process that commits while holding a table's lease (a bot's move) and then dies must
    not leave the lease for good: the table's deadlines would never be acted on again."""
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m", frames(1), lifetime_ms=60_000)
    assert await store.acquire_lease("abcd12", "process-a", 2000)
    await store.commit("abcd12", 1, b"s2", b"m", frames(2), lifetime_ms=0)
    await store.share_lifetime("abcd12")
    assert 0 < await redis_client.pttl(TableKeys("abcd12").lease) <= 2000


async def test_concurrent_commits_on_one_version_let_exactly_one_win(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m", frames(1))
    results = await asyncio.gather(
        *(store.commit("abcd12", 1, b"s-%d" % i, b"m", frames(2)) for i in range(20))
    )
    assert sorted(r.outcome for r in results) == ["ok"] + ["stale"] * 19
    winner = next(i for i, r in enumerate(results) if r.outcome == "ok")
    assert await store.load("abcd12") == (2, b"s-%d" % winner)


async def test_token_hashes_are_set_and_removed_with_the_commit(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s", b"m", frames(1), token=("set", 1, "ab" * 32))
    assert await store.access("abcd12") == (1, {1: "ab" * 32}, None)
    await store.commit("abcd12", 1, b"s", b"m", frames(2), token=("set", "invite", "cd" * 32))
    assert await store.access("abcd12") == (2, {1: "ab" * 32}, "cd" * 32)
    await store.commit("abcd12", 2, b"s", b"m", frames(3), token=("del", 1, ""))
    assert await store.access("abcd12") == (3, {}, "cd" * 32)


async def test_a_commit_requiring_a_seat_token_is_refused_once_the_token_changed(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m", frames(1), token=("set", 0, "aa" * 32))
    assert await store.commit("abcd12", 1, b"s2", b"m", frames(2),
                              require=(0, "aa" * 32)) == ("ok", 2)
    await store.commit("abcd12", 2, b"s3", b"m", frames(3), token=("del", 0, ""))
    assert await store.commit("abcd12", 3, b"s4", b"m", frames(4),
                              require=(0, "aa" * 32)) == ("revoked", 3)
    assert await store.commit("abcd12", 3, b"s4", b"m", frames(4),
                              require=(1, "aa" * 32)) == ("revoked", 3)
    assert await store.load("abcd12") == (3, b"s3")


async def test_frames_name_the_last_version_that_changed_the_audiences_seat_token(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s", b"m", frames(1), token=("set", 0, "aa" * 32))
    await store.commit("abcd12", 1, b"s", b"m", frames(2))
    await store.commit("abcd12", 2, b"s", b"m", frames(3), token=("del", 0, ""))
    await store.commit("abcd12", 3, b"s", b"m", frames(4), token=("set", 1, "bb" * 32))
    seat0 = await store.frames_since("abcd12", "0", 0)
    assert seat0 is not None and [v for v, _ in seat0] == [1, 2, 3, 4]
    assert seat0.revoked_at == 3
    seat0_late = await store.frames_since("abcd12", "0", 3)
    assert seat0_late is not None and seat0_late.revoked_at is None
    seat1 = await store.frames_since("abcd12", "1", 0)
    assert seat1 is not None and seat1.revoked_at == 4
    spectators = await store.frames_since("abcd12", "s", 0)
    assert spectators is not None and spectators.revoked_at is None


async def test_frames_since_returns_each_missing_version_for_one_audience(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    for v in range(1, 6):
        await store.commit("abcd12", v - 1, b"s", b"m", frames(v))
    assert await store.frames_since("abcd12", "1", 2) == [
        (3, b"seat1-3"), (4, b"seat1-4"), (5, b"seat1-5")]
    assert await store.frames_since("abcd12", "s", 0) == [(v, b"spec-%d" % v) for v in range(1, 6)]
    assert await store.frames_since("abcd12", "s", 5) == []
    assert await store.frames_since("abcd12", "s", 6) is None
    assert await store.frames_since("abcd12", "3", 2) is None
    assert await store.frames_since("nosuch", "s", 0) is None


async def test_trimmed_history_answers_none_beyond_what_is_kept(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client, history_limit=3)
    for v in range(1, 8):
        await store.commit("abcd12", v - 1, b"s", b"m", frames(v))
    assert await store.frames_since("abcd12", "0", 4) == [
        (5, b"seat0-5"), (6, b"seat0-6"), (7, b"seat0-7")]
    assert await store.frames_since("abcd12", "0", 3) is None


async def test_commit_publishes_its_version_with_its_frames_and_state(
        redis_client: redis.asyncio.Redis) -> None:
    big = {"0": b"x" * 300, "1": b"y" * 300, "s": b"z" * 300}
    store = Store(redis_client, notice_frames_max=899)
    pubsub = redis_client.pubsub()
    await pubsub.subscribe(TableKeys("abcd12").channel)
    await pubsub.get_message(timeout=1.0)  # subscription confirmation
    await store.commit("abcd12", 0, b"s", b"m", frames(1), token=("set", 0, "hash"))
    await store.commit("abcd12", 1, b"s", b"m", frames(2))
    await store.commit("abcd12", 2, b"+a", b"", frames(3), append=True)  # a move appended
    await store.commit("abcd12", 3, b"s", b"m", big)  # 900 bytes of frames: over the limit
    assert (await store.commit("abcd12", 3, b"s", b"m", frames(9))).outcome == "stale"
    got = []
    while len(got) < 4:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=5.0)
        if message is not None:
            got.append(message["data"])
    # msgpack [version, {audience: frame}, token field, state], bytes and names as msgpack str
    assert msgpack.unpackb(got[0]) == [1, {k: v.decode() for k, v in frames(1).items()}, "0",
                                       "s"]
    assert committed_notice(got[0]) == (1, frames(1), "0", b"s", None)
    assert committed_notice(got[1]) == (2, frames(2), None, b"s", None)
    # an appended move: [version, frames, token field, nil, the move]
    assert msgpack.unpackb(got[2]) == [3, {k: v.decode() for k, v in frames(3).items()}, None,
                                       None, "+a"]
    assert committed_notice(got[2]) == (3, frames(3), None, None, b"+a")
    assert got[3] == b"4"  # the bare version
    assert await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5) is None
    await pubsub.aclose()


async def test_an_appended_move_follows_the_stored_state_and_a_whole_state_replaces_both(
        redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s1", b"m", frames(1), lifetime_ms=60_000)
    await store.commit("abcd12", 1, b"+a", b"", frames(2), append=True, lifetime_ms="keep")
    await store.commit("abcd12", 2, b"+b", b"", frames(3), append=True, lifetime_ms="keep")
    assert await store.load("abcd12") == (3, b"s1+a+b")
    assert 0 < await redis_client.pttl(TableKeys("abcd12").state) <= 60_000  # kept its lifetime
    # a stale or duplicate commit appends nothing
    assert (await store.commit("abcd12", 2, b"+c", b"", frames(9), append=True)).outcome \
        == "stale"
    await store.commit("abcd12", 3, b"+d", b"", frames(4), append=True, client=(0, "m4"))
    assert (await store.commit("abcd12", 4, b"+d", b"", frames(5), append=True,
                               client=(0, "m4"))).outcome == "dup"
    assert await store.load("abcd12") == (4, b"s1+a+b+d")
    await store.commit("abcd12", 4, b"s5", b"", frames(5))
    assert await store.load("abcd12") == (5, b"s5")


async def test_commit_survives_a_restarted_redis_with_an_empty_script_cache() -> None:
    with RedisServer() as server:
        client = redis.asyncio.Redis.from_url(server.url)
        store = Store(client)
        await store.commit("abcd12", 0, b"s1", b"m", frames(1))
        server.restart()
        assert await store.load("abcd12") == (1, b"s1")
        # Redis before 7 keeps loaded scripts in the AOF; empty the cache as a new one would be.
        await client.script_flush()
        assert await client.script_exists(store._commit.sha) == [False]
        assert await store.commit("abcd12", 1, b"s2", b"m", frames(2)) == ("ok", 2)
        server.kill()
        server.start()
        assert await store.load("abcd12") == (2, b"s2")
        assert await store.frames_since("abcd12", "0", 0) == [(1, b"seat0-1"), (2, b"seat0-2")]
        await client.aclose()


async def test_deadline_entries_move_with_the_version(redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    await store.schedule("abcd12", None, 1, 1000)
    await store.schedule("abcd12", 1, 2, 2000)
    await store.schedule("efgh34", None, 4, 1500)
    assert await redis_client.zrange(DEADLINES, 0, -1, withscores=True) == [
        (b"efgh34:4", 1500.0), (b"abcd12:2", 2000.0)]
    assert await store.due(1600) == [("efgh34", 4)]
    assert await store.next_due_ms() == 1500
    await store.schedule("abcd12", 2, 3, None)
    await store.unschedule("efgh34", 4)
    assert await redis_client.zcard(DEADLINES) == 0


async def test_lease_is_held_by_one_owner_until_released(
    redis_client: redis.asyncio.Redis,
) -> None:
    store = Store(redis_client)
    assert await store.acquire_lease("abcd12", "a", 5000)
    assert not await store.acquire_lease("abcd12", "b", 5000)
    await store.release_lease("abcd12", "b")
    assert not await store.acquire_lease("abcd12", "b", 5000)
    await store.release_lease("abcd12", "a")
    assert await store.acquire_lease("abcd12", "b", 5000)
