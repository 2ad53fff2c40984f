"""A commit's notice on a single Redis is published only when a subscriber besides the
committing process would read it (the committing process delivers to its own sockets itself),
and none is missed when a process's pub/sub connection is lost: its subscriptions stop counting
at once, and the tables it held are announced again once it is back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio

from server.fanout.pubsub import PUBSUB_CLIENT_NAME, Subscriber
from server.metrics import Metrics
from server.store import CommitNotice, Store, TableKeys
from tests.server.test_ws_delivery import answer_to, seated, two_processes
from tests.support.tables import frames


async def published(pubsub: Any, wait_s: float) -> list[bytes]:
    """The messages that reach `pubsub` within `wait_s`."""
    got: list[bytes] = []
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
        if message is not None:
            got.append(message["data"])
    return got


@contextlib.asynccontextmanager
async def listening(client: redis.asyncio.Redis, channel: str) -> AsyncIterator[Any]:
    pubsub = client.pubsub()
    await pubsub.subscribe(channel)
    await published(pubsub, 0.1)  # the confirmation
    try:
        yield pubsub
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]


async def test_a_commit_publishes_only_a_notice_someone_else_would_read(
        redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    channel = TableKeys("abcd12").channel
    await store.commit("abcd12", 0, b"s", b"m", frames(1))
    async with listening(redis_client, channel) as first:
        # `first` stands for the committing process's own subscription: nobody else listens
        assert (await store.commit("abcd12", 1, b"s", b"m", frames(2), subscribed=True)).version \
            == 2
        assert await published(first, 0.3) == []
        # not subscribed itself, or unable to tell: `first` is someone else
        await store.commit("abcd12", 2, b"s", b"m", frames(3), subscribed=False)
        await store.commit("abcd12", 3, b"s", b"m", frames(4))
        assert len(await published(first, 0.3)) == 2
        async with listening(redis_client, channel) as second:
            await store.commit("abcd12", 4, b"s", b"m", frames(5), subscribed=True)
            assert len(await published(first, 0.3)) == 1
            assert len(await published(second, 0.1)) == 1


class Heard:
    """What a Subscriber hands over (server.fanout.pubsub.Listener), in order."""

    def __init__(self) -> None:
        self.notices: list[tuple[str, int | None]] = []

    def notice(self, table_id: str, version: int | None) -> None:
        self.notices.append((table_id, version))

    def live(self, table_id: str, message: dict[str, Any]) -> None:
        pass

    def committed(self, table_id: str, notice: CommitNotice) -> None:
        pass


async def until(condition: Any, wait_s: float = 5.0) -> None:
    deadline = time.monotonic() + wait_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def kill_pubsub(client: redis.asyncio.Redis, pid: int,
                      named: str = PUBSUB_CLIENT_NAME) -> int:
    """Kill the pub/sub connections of the server process `pid` (those of its tables, or
    `named` another name pattern); how many there were."""
    name = named.format(pid=pid).encode()
    killed = 0
    for line in (await client.execute_command("CLIENT", "LIST")).split(b"\n"):
        fields = dict(f.split(b"=", 1) for f in line.split() if b"=" in f)
        if fields.get(b"name") == name:
            killed += int(await client.execute_command("CLIENT", "KILL", "ID", fields[b"id"]))
    return killed


async def test_a_subscription_counts_from_its_confirmation_until_it_is_left_or_lost(
        redis_client: redis.asyncio.Redis) -> None:
    store = Store(redis_client)
    await store.commit("abcd12", 0, b"s", b"m", frames(1))
    heard = Heard()
    subscriber = Subscriber(redis_client, Metrics(), lambda t: TableKeys(t).channel, heard,
                            announce=store.announce)
    stop = asyncio.Event()
    await subscriber.start(stop)
    reader = asyncio.create_task(subscriber.read_loop())
    try:
        await subscriber.watch("abcd12")
        await until(lambda: subscriber.subscribed("abcd12"))
        assert heard.notices == [("abcd12", None)]  # the confirmation: fetch what was missed
        await subscriber.unwatch("abcd12", lambda _: False)
        assert subscriber.subscribed("abcd12") is False  # at once, before Redis answers
        await subscriber.watch("abcd12")
        await until(lambda: subscriber.subscribed("abcd12"))

        # a commit that counted the subscription holds the unsubscribe back until it returned
        assert subscriber.begin_commit("abcd12") is True
        leaving = asyncio.create_task(subscriber.unwatch("abcd12", lambda _: False))
        await asyncio.sleep(0.3)
        assert subscriber.subscribed("abcd12") is False  # no new commit counts it
        assert (await redis_client.pubsub_numsub(TableKeys("abcd12").channel))[0][1] == 1
        assert not leaving.done()
        subscriber.end_commit("abcd12")
        await asyncio.wait_for(leaving, 5)
        await until_numsub(redis_client, TableKeys("abcd12").channel, 0, at_most=True)
        await subscriber.watch("abcd12")
        await until(lambda: subscriber.subscribed("abcd12"))

        async with listening(redis_client, TableKeys("abcd12").channel) as other:
            assert await kill_pubsub(redis_client, os.getpid()) == 1
            await until(lambda: not subscriber.subscribed("abcd12"))
            # renewed: subscribed again, and the table's version announced to the others
            await until(lambda: subscriber.subscribed("abcd12"))
            assert await published(other, 1.0) == [b"1"]
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await subscriber.close()


async def test_a_lost_subscription_of_the_committing_process_loses_no_notice() -> None:
    """Two processes, one player on each: just before each move the mover's process loses its
    pub/sub connection. Its commit may still count it subscribed (its reader has not seen the
    loss yet) and leave the notice unpublished; the announcement after its renewal must still
    bring every version to the other process's player."""
    async with two_processes() as (admin, one, two):
        table, players = await seated(one, two)
        notice = TableKeys(table).channel
        processes = {id(players[0]): one, id(players[1]): two}
        kills = 0
        for n in range(12):
            mover = next(p for p in players if p.my_turn())
            version = mover.v
            assert version is not None
            # both processes subscribed (again), then the mover's loses its connection
            await until_numsub(admin, notice, 2)
            kills += await kill_pubsub(admin, processes[id(mover)].pid)
            await mover.send({"t": "move", "id": f"m{n}", "v": version,
                              "move": mover.game["legal"][0]})
            assert (await answer_to(mover, f"m{n}"))["t"] == "accepted"
            for player in players:
                await player.wait_version(version + 1, wait_s=10)
        assert kills == 12


async def until_numsub(client: redis.asyncio.Redis, channel: str, n: int,
                       at_most: bool = False) -> None:
    """Until `channel` has at least (`at_most`: at most) `n` subscribers."""
    deadline = time.monotonic() + 10
    while (count := (await client.pubsub_numsub(channel))[0][1]) != n and (count > n) == at_most:
        assert time.monotonic() < deadline, f"{channel} has {count} subscribers, not {n}"
        await asyncio.sleep(0.05)

