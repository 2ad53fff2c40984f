"""Websocket pings (server.keepalive): a socket whose client keeps sending (and reading) is
pinged every few intervals only, a quiet one every interval, and a peer that does not answer
is dropped, whether it sends or not."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import httpx
import msgpack
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri

from tests.server.conftest import running
from tests.support.servers import ServiceProcess, create_table

PINGS = {"WS_PING_INTERVAL_S": "0.5", "WS_PING_TIMEOUT_S": "0.5"}


class RawClient:
    """A websocket client whose pongs go out only with what it sends (`send`, `flush`), and
    which counts the pings it was sent."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 protocol: ClientProtocol) -> None:
        self.reader, self.writer, self.protocol = reader, writer, protocol
        self.pings = 0
        self.closed = False

    @classmethod
    async def connect(cls, ws_url: str) -> RawClient:
        parts = urlsplit(ws_url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        protocol = ClientProtocol(parse_uri(ws_url))
        protocol.send_request(protocol.connect())
        client = cls(reader, writer, protocol)
        client.flush()
        while protocol.handshake_exc is None and protocol.state.name == "CONNECTING":
            await client.read(1.0)
        assert protocol.state.name == "OPEN", protocol.handshake_exc
        return client

    def flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.writer.write(data)

    async def read(self, wait_s: float) -> None:
        """Read what arrives within ``wait_s`` and count the pings (not answered here)."""
        try:
            data = await asyncio.wait_for(self.reader.read(65536), wait_s)
        except TimeoutError:
            return
        except ConnectionError:
            data = b""
        if not data:
            self.closed = True
            self.protocol.receive_eof()
            return
        self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if isinstance(event, Frame) and event.opcode == Opcode.PING:
                self.pings += 1
            elif isinstance(event, Frame) and event.opcode == Opcode.CLOSE:
                self.closed = True

    def send(self, message: dict[str, object]) -> None:
        """Send a message, after the pongs the protocol has queued."""
        self.protocol.send_binary(msgpack.packb(message))
        self.flush()

    def close(self) -> None:
        self.writer.close()


@contextlib.asynccontextmanager
async def raw_client(ws_url: str) -> AsyncIterator[RawClient]:
    client = await RawClient.connect(ws_url)
    try:
        yield client
    finally:
        client.close()
        with contextlib.suppress(ConnectionError):
            await client.writer.wait_closed()


@contextlib.asynccontextmanager
async def spectators(redis_url: str) -> AsyncIterator[Callable[[], Awaitable[RawClient]]]:
    """A service with quick pings and a table; yields a function that opens a spectator's
    socket on that table (it has said hello)."""
    async with (
        running(ServiceProcess(redis_url, env=PINGS)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
        contextlib.AsyncExitStack() as stack,
    ):
        table = await create_table(http, players=2)

        async def spectator() -> RawClient:
            client = await stack.enter_async_context(raw_client(server.ws_url))
            client.send({"t": "hello", "proto": 1, "table": table})
            await client.read(1.0)
            return client

        yield spectator


async def test_a_client_that_keeps_sending_is_pinged_less_than_a_quiet_one(
        redis_url: str) -> None:
    async with spectators(redis_url) as spectator:
        talking, quiet = await spectator(), await spectator()
        deadline = time.monotonic() + 4.0  # eight ping intervals, two proofs of reading
        n = 0
        while time.monotonic() < deadline:  # five messages a second, within the rate
            n += 1
            talking.send({"t": "ping", "n": n})  # (with the pongs it owes)
            await talking.read(0.02)
            quiet.flush()  # its pongs, and nothing else
            await quiet.read(0.02)
            await asyncio.sleep(0.16)
        assert 1 <= talking.pings <= 2 and not talking.closed
        assert quiet.pings >= 6 and not quiet.closed


async def test_a_client_that_sends_but_does_not_read_is_dropped(redis_url: str) -> None:
    async with spectators(redis_url) as spectator:
        client = await spectator()
        deadline = time.monotonic() + 4.0  # four intervals, the ping's timeout, and more
        n = 0
        while time.monotonic() < deadline:  # it reads nothing, so it answers no ping
            n += 1
            client.send({"t": "ping", "n": n})
            await asyncio.sleep(0.2)
        # Read at last, for less than an interval (not long enough to be dropped as a quiet
        # peer): the server is gone already -- a close frame, or a reset (which discards what
        # the client never read).
        for _ in range(3):
            await client.read(0.1)
        assert client.closed


async def test_a_peer_that_does_not_answer_pings_is_dropped(redis_url: str) -> None:
    async with spectators(redis_url) as spectator:
        client = await spectator()
        deadline = time.monotonic() + 5.0
        while not client.closed and time.monotonic() < deadline:
            await client.read(0.1)
            client.protocol.data_to_send()  # its pongs are never sent
        assert client.pings >= 1
        assert client.closed


async def test_sockets_that_connect_together_are_not_pinged_together(redis_url: str) -> None:
    # Each socket's first ping comes between half an interval and one and a half after its
    # handshake (then every interval): a crowd that connected at once (a restart, a popular
    # game) is not pinged in one burst every interval ever after.
    interval = 1.0
    env = {"WS_PING_INTERVAL_S": str(interval), "WS_PING_TIMEOUT_S": "5"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        contextlib.AsyncExitStack() as stack,
    ):
        opened: list[tuple[float, RawClient]] = []
        for _ in range(20):
            client = await stack.enter_async_context(raw_client(server.ws_url))
            opened.append((time.monotonic(), client))
        first: list[float] = []

        async def first_ping(at: float, client: RawClient) -> None:
            deadline = at + 2 * interval
            while client.pings == 0 and time.monotonic() < deadline:
                await client.read(0.01)
                client.flush()  # its pongs
            first.append(time.monotonic() - at)

        await asyncio.gather(*(first_ping(at, client) for at, client in opened))
        assert all(0.45 * interval <= after <= 1.6 * interval for after in first), first
        # 20 draws from an interval's width: all within half an interval of each other only
        # once in ~50,000 runs; without the draw they would come within the connections'
        # own spread (a few milliseconds each).
        assert max(first) - min(first) >= 0.5 * interval, sorted(first)
