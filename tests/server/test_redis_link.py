"""The hiredis pub/sub link (server.redis_link.PubSubLink) against a real Redis: what redis-py's
pub/sub would give the process's reader, its name, authentication, and a lost connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import redis.asyncio
from redis.exceptions import ConnectionError as RedisConnectionError

from server import redis_link
from server.redis_link import PUSHED_HIGH, PubSubLink


@contextlib.asynccontextmanager
async def link_to(url: str, name: str | None = None) -> AsyncIterator[PubSubLink]:
    client = redis.asyncio.Redis.from_url(url)
    link = PubSubLink.of(client, name)
    assert link is not None
    try:
        yield link
    finally:
        await link.aclose()
        await client.aclose()


async def test_messages_and_confirmations_arrive_as_redis_py_gives_them(
        redis_url: str, redis_client: redis.asyncio.Redis) -> None:
    async with link_to(redis_url) as link:
        assert not link.subscribed
        await link.subscribe("one", "two")
        assert link.subscribed
        assert await link.get_message(timeout=5) == {
            "type": "subscribe", "pattern": None, "channel": b"one", "data": 1}
        assert await link.get_message(timeout=5) == {
            "type": "subscribe", "pattern": None, "channel": b"two", "data": 2}
        assert await redis_client.publish("two", b"\x00bytes\xff") == 1
        assert await redis_client.publish("one", "second") == 1
        assert await link.get_message(timeout=5) == {
            "type": "message", "pattern": None, "channel": b"two", "data": b"\x00bytes\xff"}
        assert await link.get_message(timeout=5) == {
            "type": "message", "pattern": None, "channel": b"one", "data": b"second"}
        assert await link.get_message(timeout=0.2) is None  # nothing more within the wait
        await link.unsubscribe("one")
        assert await link.get_message(timeout=5) == {
            "type": "unsubscribe", "pattern": None, "channel": b"one", "data": 1}
        assert await redis_client.publish("one", "unheard") == 0
        await link.unsubscribe("two")
        assert not link.subscribed
        assert (await link.get_message(timeout=5) or {})["type"] == "unsubscribe"


async def test_the_connection_is_named_and_a_lost_one_is_reported(
        redis_url: str, redis_client: redis.asyncio.Redis) -> None:
    async with link_to(redis_url, "reader-name") as link:
        await link.subscribe("chan")
        assert (await link.get_message(timeout=5) or {})["type"] == "subscribe"
        assert await redis_client.publish("chan", "before") == 1
        killed = await redis_client.client_kill_filter(_type="pubsub", skipme=True)
        assert killed == 1
        # what arrived before the loss is read first, then the loss is an error, every time
        assert (await link.get_message(timeout=5) or {}).get("data") == b"before"
        for _ in range(2):
            with pytest.raises(RedisConnectionError):
                await link.get_message(timeout=5)
        # a subscribe now only records its channel, for the reader's renewal to subscribe
        await link.subscribe("again")
        assert link.channels == {"chan", "again"}
        with pytest.raises(RedisConnectionError):
            await link.get_message(timeout=5)
        with pytest.raises(RedisConnectionError):
            await link.unsubscribe("chan")
    async with link_to(redis_url, "reader-name") as link:
        await link.subscribe("chan")
        names = [c["name"] for c in await redis_client.client_list(_type="pubsub")]
        assert names == ["reader-name"]


async def test_it_authenticates_selects_its_database_and_reports_a_refusal(
        redis_url: str, redis_client: redis.asyncio.Redis) -> None:
    await redis_client.acl_setuser("reader", enabled=True, passwords=["+secret"],
                                   keys=["*"], channels=["*"], commands=["+@all"])
    try:
        base = redis_url.split("://", 1)[1].split("/", 1)[0]
        async with link_to(f"redis://reader:secret@{base}/3") as link:
            await link.subscribe("chan")
            assert (await link.get_message(timeout=5) or {})["type"] == "subscribe"
            assert await redis_client.publish("chan", "to the reader") == 1
            assert (await link.get_message(timeout=5) or {}).get("data") == b"to the reader"
        async with link_to(f"redis://reader:wrong@{base}/0") as link:
            with pytest.raises(RedisConnectionError, match="refused AUTH"):
                await link.subscribe("chan")
            assert not link.subscribed
    finally:
        await redis_client.acl_deluser("reader")


async def test_a_redis_that_cannot_be_reached_is_a_connection_error() -> None:
    async with link_to("redis://127.0.0.1:1/0") as link:
        with pytest.raises(RedisConnectionError):
            await link.subscribe("chan")
        assert not link.subscribed
        with pytest.raises(RedisConnectionError):
            await link.get_message(timeout=0.1)


async def test_a_reader_that_falls_behind_leaves_the_rest_in_the_socket_and_misses_nothing(
        redis_url: str, redis_client: redis.asyncio.Redis) -> None:
    sent = 6 * PUSHED_HIGH
    async with link_to(redis_url) as link:
        await link.subscribe("chan")
        assert (await link.get_message(timeout=5) or {})["type"] == "subscribe"
        async with redis_client.pipeline(transaction=False) as pipe:
            for n in range(sent):
                pipe.publish("chan", b"%d" % n + b"." * 200)
            await pipe.execute()
        await asyncio.sleep(0.5)  # the link reads what it will while nobody takes anything
        # paused once it held PUSHED_HIGH (checked after each read of the socket, up to
        # about 1,100 of these messages): far fewer than were sent
        assert PUSHED_HIGH <= link.buffered < sent // 2
        got = []
        while len(got) < sent:
            message = await link.get_message(timeout=5)
            assert message is not None, f"{len(got)} of {sent}"
            got.append(int(message["data"].rstrip(b".")))
        assert got == list(range(sent))
        assert await link.get_message(timeout=0.1) is None


async def test_a_silent_peer_is_found_by_the_health_check(redis_url: str) -> None:
    """A server that takes the connection and never answers (a peer gone without closing it):
    after an interval of silence the link PINGs it, and without an answer within another it
    counts as lost. A live Redis answers the PING and the link stays up."""
    accepted: list[asyncio.StreamWriter] = []

    async def black_hole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        while await reader.read(4096):
            pass

    server = await asyncio.start_server(black_hole, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        silent = PubSubLink({"host": "127.0.0.1", "port": port, "health_check_interval": 1},
                            False)
        await silent.subscribe("chan")
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(RedisConnectionError, match="PING"):
            while loop.time() - started < 10:
                assert await silent.get_message(timeout=0.2) is None
        assert 1.5 < loop.time() - started < 5
        await silent.aclose()
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()

    client = redis.asyncio.Redis.from_url(redis_url, health_check_interval=1)
    live = PubSubLink.of(client)
    assert live is not None
    try:
        await live.subscribe("chan")
        assert (await live.get_message(timeout=5) or {})["type"] == "subscribe"
        loop = asyncio.get_running_loop()
        started = loop.time()
        while loop.time() - started < 3.5:  # three PINGs' worth, each answered
            assert await live.get_message(timeout=0.2) is None
    finally:
        await live.aclose()
        await client.aclose()


async def test_a_link_closed_while_it_connects_stays_closed(redis_url: str) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    link = PubSubLink.of(client)
    assert link is not None
    try:
        subscribing = asyncio.create_task(link.subscribe("chan"))
        await asyncio.sleep(0)  # it is connecting
        await link.aclose()
        with pytest.raises(RedisConnectionError, match="closed"):
            await subscribing
        await asyncio.sleep(0.1)
        assert not [p for p in redis_link._OPEN if p.transport and not p.transport.is_closing()]
    finally:
        await client.aclose()
