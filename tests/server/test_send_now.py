"""The direct write and read of server.keepalive (`send_now` and `receive_now`, the scope
extensions SEND_NOW and RECEIVE_NOW), under a real uvicorn on a real socket: frames written at
once arrive intact and in order among those sent through ASGI, nothing is written once a close
was sent, and a transport that holds writes back (a peer that does not read) makes it refuse
rather than buffer; messages read directly are Starlette's, in order with those it reads, and a
client that sends faster than the server reads waits in its own buffers."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket
from websockets.asyncio.client import connect
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from server.keepalive import (
    FEED_BYTES,
    PAUSE_AT,
    Inbox,
    QuietPingProtocol,
    binary_frame,
    protocol_for,
    receive_now_of,
    send_now_of,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(endpoint: Callable[[WebSocket], Awaitable[None]],
                  deflate: bool = True, max_size: int = 16 * 1024 * 1024) -> AsyncIterator[str]:
    async def route(websocket: WebSocket) -> None:
        await websocket.accept()
        await endpoint(websocket)

    app = Starlette(routes=[WebSocketRoute("/ws", route)])
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, ws=protocol_for("websockets-sansio"),
                            ws_per_message_deflate=deflate, ws_max_size=max_size,
                            log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to wait on)
        await asyncio.sleep(0.01)
    try:
        yield f"ws://127.0.0.1:{port}/ws"
    finally:
        server.should_exit = True
        await task


async def raw_client(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter,
                                        ClientProtocol]:
    """A connected websocket client with its socket in the test's hands (no compression)."""
    reader, writer = await asyncio.open_connection("127.0.0.1",
                                                   int(url.split(":")[2].split("/")[0]))
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = ClientProtocol(parse_uri(url))
    client.send_request(client.connect())
    for data in client.data_to_send():
        writer.write(data)
    while client.state is State.CONNECTING:
        client.receive_data(await reader.read(65536))
    return reader, writer, client


async def until_closed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       client: ClientProtocol) -> None:
    """Read what the server sends until its close (or the end of the stream)."""
    while client.state is not State.CLOSED and (data := await reader.read(65536)):
        client.receive_data(data)
    writer.close()


def collecting(read: list[bytes]) -> Callable[[WebSocket], Awaitable[None]]:
    """An endpoint that appends every binary message it reads directly to ``read``."""

    async def endpoint(websocket: WebSocket) -> None:
        receive_now = receive_now_of(websocket.scope)
        assert receive_now is not None
        while (message := await receive_now())["type"] == "websocket.receive":
            read.append(message["bytes"])

    return endpoint


async def test_the_server_protocol_offers_send_now() -> None:
    assert protocol_for("websockets-sansio") is QuietPingProtocol
    offered: list[bool] = []

    async def endpoint(websocket: WebSocket) -> None:
        offered.append(send_now_of(websocket.scope) is not None)
        await websocket.send_bytes(b"done")

    async with serving(endpoint) as url, connect(url) as client:
        assert await client.recv() == b"done"
    assert offered == [True]
    assert send_now_of({"extensions": {}}) is None
    assert send_now_of(None) is None


def test_a_frame_is_built_as_websockets_builds_it() -> None:
    for size in (0, 1, 125, 126, 127, 65535, 65536, 70_000):  # 7-, 16- and 64-bit lengths
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        expected = Frame(Opcode.BINARY, data).serialize(mask=False)
        assert binary_frame(data) == expected
        assert binary_frame(bytearray(data)) == expected


# Compressed (the client offers permessage-deflate and the server takes it): websockets frames
# each message; not compressed (the server's default, WS_DEFLATE off): send_now frames it.
@pytest.mark.parametrize("deflate", [True, False], ids=["compressed", "plain"])
async def test_frames_written_at_once_arrive_in_order_among_asgi_sends(deflate: bool) -> None:
    results: list[bool] = []

    async def endpoint(websocket: WebSocket) -> None:
        send_now = send_now_of(websocket.scope)
        assert send_now is not None
        for n in range(30):
            if n % 3 == 0:
                await websocket.send_bytes(b"asgi %d" % n)
            else:
                results.append(send_now(b"now %d " % n + bytes(range(256)) * n))
        await websocket.close(1000)
        results.append(send_now(b"after the close"))

    async with serving(endpoint, deflate) as url, connect(url) as client:
        got = [message async for message in client]
    assert results == [True] * 20 + [False]
    expected = [b"asgi %d" % n if n % 3 == 0 else b"now %d " % n + bytes(range(256)) * n
                for n in range(30)]
    assert got == expected


@pytest.mark.parametrize("deflate", [True, False], ids=["compressed", "plain"])
async def test_one_payload_fanned_out_reaches_every_socket_intact(deflate: bool) -> None:
    senders: list[Callable[[bytes], bool]] = []
    done = asyncio.Event()

    async def endpoint(websocket: WebSocket) -> None:
        send_now = send_now_of(websocket.scope)
        assert send_now is not None
        senders.append(send_now)
        await done.wait()
        await websocket.close(1000)

    shared, small = b"\x01" * 70_000, b"seat's own"  # a 64-bit length, then a 7-bit one
    async with serving(endpoint, deflate) as url:
        clients = [await connect(url, max_size=None) for _ in range(3)]
        while len(senders) < 3:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for round_ in range(3):
            for n, send_now in enumerate(senders):
                assert send_now(shared)
                if n == 1:
                    assert send_now(small + bytes([round_]))
            assert all(send_now(bytearray(b"mutable")) for send_now in senders)
        done.set()
        got = [[message async for message in client] for client in clients]
    plain = [shared, b"mutable"] * 3
    with_own = [m for r in range(3) for m in (shared, small + bytes([r]), b"mutable")]
    assert sorted(got, key=len) == [plain, plain, with_own]  # which socket is which: any


async def test_a_peer_that_does_not_read_makes_send_now_refuse() -> None:
    refused = asyncio.Event()
    written: list[int] = []
    frame = b"x" * 4096

    async def endpoint(websocket: WebSocket) -> None:
        send_now = send_now_of(websocket.scope)
        assert send_now is not None
        while len(written) < 10_000:  # 40 MB: far beyond any socket's buffers
            if not send_now(frame):
                refused.set()
                break
            written.append(len(frame))
            await asyncio.sleep(0)
        await websocket.send_bytes(b"last")  # waits for the transport, then goes out

    async with serving(endpoint) as url:
        # A client that reads the handshake's answer and then nothing, with a tiny window.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.connect(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock)
        client = ClientProtocol(parse_uri(url), max_size=None)
        client.send_request(client.connect())
        for data in client.data_to_send():
            writer.write(data)
        while client.state is State.CONNECTING:
            client.receive_data(await reader.read(65536))
        assert client.state is State.OPEN
        await asyncio.wait_for(refused.wait(), 30)
        assert 0 < len(written) < 10_000
        got: list[bytes] = []
        while len(got) < len(written) + 1:  # now it reads everything
            client.receive_data(await asyncio.wait_for(reader.read(65536), 10))
            got.extend(bytes(event.data) for event in client.events_received()
                       if isinstance(event, Frame) and event.opcode is Opcode.BINARY)
        writer.close()
    assert got == [frame] * len(written) + [b"last"]


async def test_messages_read_directly_are_starlettes_in_the_same_order() -> None:
    read: list[object] = []

    async def endpoint(websocket: WebSocket) -> None:
        receive_now = receive_now_of(websocket.scope)
        assert receive_now is not None
        read.append(await websocket.receive_bytes())  # through Starlette, then directly
        while True:
            message = await receive_now()
            read.append(message)
            if message["type"] == "websocket.disconnect":
                return

    async with serving(endpoint) as url, connect(url) as client:
        await client.send(b"first")
        await client.send(b"\x00binary")
        await client.send("text \u00e9")
        await client.send(b"")
        await client.close(4321, "done")
    assert read == [
        b"first",
        {"type": "websocket.receive", "bytes": b"\x00binary"},
        {"type": "websocket.receive", "text": "text \u00e9"},
        {"type": "websocket.receive", "bytes": b""},
        {"type": "websocket.disconnect", "code": 4321, "reason": "done"},
    ]
    assert receive_now_of({"extensions": {}}) is None
    assert receive_now_of(None) is None


async def test_a_client_sending_faster_than_the_server_reads_waits_in_its_own_buffers() -> None:
    frame = b"m" * 1024
    total = 20_000  # 20 MB: far beyond any socket's buffers
    backlog: list[int] = []
    may_read = asyncio.Event()
    read: list[bytes] = []

    async def endpoint(websocket: WebSocket) -> None:
        receive_now = receive_now_of(websocket.scope)
        assert receive_now is not None
        inbox = receive_now.__self__.queue  # type: ignore[attr-defined]
        assert isinstance(inbox, Inbox)
        await may_read.wait()
        backlog.append(inbox.qsize())
        while len(read) < total:
            message = await receive_now()
            assert message["type"] == "websocket.receive"
            read.append(message["bytes"])
            backlog.append(inbox.qsize())

    async with serving(endpoint) as url, connect(url, max_size=None, compression=None) as client:
        sent = 0

        async def flood() -> None:
            nonlocal sent
            for _ in range(total):
                await client.send(frame)
                sent += 1

        flooding = asyncio.create_task(flood())
        try:
            before = -1
            while sent != before:  # until the client's sends stall: the server reads nothing
                before = sent
                await asyncio.sleep(0.5)
            assert sent < total
        finally:
            may_read.set()  # (the server's shutdown waits for its endpoint)
        await asyncio.wait_for(flooding, 60)
        while len(read) < total:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    # What waited unread in the server: the messages up to the pause, and what the read that
    # crossed it brought (one read of at most 256 KB), never the megabytes the client sent.
    assert PAUSE_AT <= backlog[0] <= PAUSE_AT + 256
    assert max(backlog) <= PAUSE_AT + 256
    assert read == [frame] * total


async def test_a_close_completes_while_unread_messages_wait() -> None:
    """The application stops reading with many messages waiting (and more of the read held
    back unparsed) and closes: the peer's close reply must still be read (reading is not paused
    again after the close, what was held back is parsed), so the connection ends at once rather
    than at uvicorn's close timeout (10 s)."""

    async def endpoint(websocket: WebSocket) -> None:
        await websocket.receive_bytes()
        protocol = getattr(receive_now_of(websocket.scope), "__self__")  # noqa: B009
        # (uvicorn's queue: no event to wait on)
        while protocol.unread is None:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        await websocket.close(4004)

    async with serving(endpoint) as url:
        reader, writer, client = await raw_client(url)
        for n in range(30):  # one write: they arrive together and wait unread
            client.send_binary(b"ping %d" % n)
        writer.write(b"".join(client.data_to_send()))
        started = asyncio.get_running_loop().time()
        while client.state is not State.CLOSED:
            data = await asyncio.wait_for(reader.read(65536), 15)
            if not data:
                client.receive_eof()
                break
            client.receive_data(data)
            replies = client.data_to_send()
            if replies:  # a frame the peer sent as the close crossed, then its close reply
                writer.write(Frame(Opcode.BINARY, b"late").serialize(mask=True, extensions=[]))
                await asyncio.sleep(0.1)
            for out in replies:
                writer.write(out)
        writer.close()
        assert client.close_rcvd is not None and client.close_rcvd.code == 4004
        assert asyncio.get_running_loop().time() - started < 5


async def test_frames_cut_anywhere_by_the_reads_arrive_as_sent() -> None:
    """Binary frames the protocol takes itself, among text, pings, a fragmented message and
    frames of every length encoding, written in pieces cut at random: the very messages, in
    order."""
    read: list[object] = []
    owns: list[bool] = []

    async def endpoint(websocket: WebSocket) -> None:
        receive_now = receive_now_of(websocket.scope)
        assert receive_now is not None
        owns.append(receive_now.__self__.own_frames)  # type: ignore[attr-defined]
        while (message := await receive_now())["type"] == "websocket.receive":
            read.append(message.get("bytes", message.get("text")))

    rng = random.Random(5)
    sent: list[object] = []
    async with serving(endpoint, deflate=False) as url:
        reader, writer, client = await raw_client(url)
        pieces: list[bytes] = []  # each frame's bytes (a fragmented message: two frames)
        for n in range(400):
            kind = rng.random()
            if kind < 0.05:
                client.send_ping(b"p%d" % n)
            elif kind < 0.1:
                client.send_text(f"text {n}".encode())
                sent.append(f"text {n}")
            elif kind < 0.13:
                client.send_binary(b"first half %d," % n, fin=False)
                client.send_continuation(b" second half", fin=True)
                sent.append(b"first half %d, second half" % n)
            else:
                size = rng.choice([0, 1, 5, 120, 125, 126, 127, 300, 65535, 65536, 70_000])
                payload = bytes(rng.getrandbits(8) for _ in range(min(size, 64))) * (
                    size // 64 + 1)
                sent.append(payload[:size])
                client.send_binary(payload[:size])
            pieces += client.data_to_send()
        client.send_close(1000)
        pieces += client.data_to_send()
        while pieces:
            count = rng.randint(1, 3)  # whole frames, one to three in a write ...
            data, pieces = b"".join(pieces[:count]), pieces[count:]
            if rng.random() < 0.4:  # ... or cut anywhere, the rest written next
                cut = rng.randint(1, len(data))
                data, rest = data[:cut], data[cut:]
                pieces = [rest, *pieces] if rest else pieces
            writer.write(data)
            await writer.drain()
            await asyncio.sleep(0.001)  # a read of its own
        await reader.read()  # the server's close: everything before it was read
        writer.close()
    assert owns == [True]
    assert read == sent


@pytest.mark.parametrize("size", [999, 1000, 1001])
async def test_a_frame_over_the_size_limit_closes_the_socket(size: int) -> None:
    read: list[bytes] = []
    endpoint = collecting(read)
    async with serving(endpoint, deflate=False, max_size=1000) as url:
        reader, writer, client = await raw_client(url)
        client.send_binary(b"small")
        client.send_binary(b"x" * size)
        client.send_binary(b"after")
        client.send_close(1000)
        writer.write(b"".join(client.data_to_send()))
        await until_closed(reader, writer, client)
    if size <= 1000:
        assert read == [b"small", b"x" * size, b"after"]
    else:
        assert read == [b"small"]
        assert client.close_rcvd is not None and client.close_rcvd.code == 1009


async def test_an_unmasked_frame_closes_the_socket() -> None:
    read: list[bytes] = []
    endpoint = collecting(read)
    async with serving(endpoint, deflate=False) as url:
        reader, writer, client = await raw_client(url)
        client.send_binary(b"masked")
        writer.write(b"".join(client.data_to_send()))
        writer.write(Frame(Opcode.BINARY, b"unmasked").serialize(mask=False, extensions=[]))
        await until_closed(reader, writer, client)
    assert read == [b"masked"]
    assert client.close_rcvd is not None and client.close_rcvd.code == 1002


async def test_a_payload_that_looks_like_a_frame_is_read_as_the_payload() -> None:
    """A frame whose header arrives alone, then a payload that is itself a frame's bytes: the
    payload is the message (the protocol reads frames itself only between two frames)."""
    read: list[bytes] = []
    endpoint = collecting(read)
    inner = Frame(Opcode.BINARY, b"inner").serialize(mask=True, extensions=[])
    async with serving(endpoint, deflate=False) as url:
        reader, writer, client = await raw_client(url)
        for header in (bytes((0x82, 0x80 | len(inner))), b"\x00" * 4):  # a zero mask
            writer.write(header)  # the length, then the mask, each read alone
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(inner)
        client.send_binary(b"next")
        client.send_close(1000)
        writer.write(b"".join(client.data_to_send()))
        await reader.read()
        writer.close()
    assert read == [inner, b"next"]


@pytest.mark.parametrize("deflate", [True, False], ids=["compressed", "plain"])
async def test_a_read_of_tiny_frames_queues_a_bounded_number_of_messages(deflate: bool) -> None:
    """40,000 empty frames (6 bytes each) in one write: the server parses only so much of what
    it read while messages wait unread (not one message per 6 bytes of a 256 KB read), and
    delivers every one of them, in order, as the application reads."""
    total = 40_000
    backlog: list[int] = []
    may_read = asyncio.Event()
    read: list[bytes] = []

    async def endpoint(websocket: WebSocket) -> None:
        receive_now = receive_now_of(websocket.scope)
        assert receive_now is not None
        inbox = receive_now.__self__.queue  # type: ignore[attr-defined]
        await may_read.wait()
        backlog.append(inbox.qsize())
        while (message := await receive_now())["type"] == "websocket.receive":
            read.append(message["bytes"])
            backlog.append(inbox.qsize())

    async with serving(endpoint, deflate) as url:
        reader, writer, client = await raw_client(url)
        for n in range(total):
            client.send_binary(b"" if n % 1000 else b"%d" % n)
        writer.write(b"".join(client.data_to_send()))
        await writer.drain()
        await asyncio.sleep(0.5)  # every byte read by now (a read is at most 256 KB)
        may_read.set()
        while len(read) < total:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        client.send_close(1000)
        writer.write(b"".join(client.data_to_send()))
        await until_closed(reader, writer, client)
    assert max(backlog) <= PAUSE_AT + FEED_BYTES // 6
    assert read == [b"" if n % 1000 else b"%d" % n for n in range(total)]
