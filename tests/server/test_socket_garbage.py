"""A closed websocket leaves nothing for the cyclic garbage collector: every object of its
protocol (uvicorn's, websockets' parser and the transport) is freed when the connection ends.
A server whose players come and go would otherwise pile up garbage from every socket that
closed until a full collection, and each middle collection would walk it (at 6 closes a second,
42,000 such objects in three minutes, and middle collections of 90-175 ms)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
from collections.abc import Awaitable, Callable, Iterator

import pytest
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.asyncio.client import ClientConnection, connect

from server.connection import Close, Connection
from server.metrics import Metrics
from tests.server.test_send_now import serving

# What a server socket is made of, in the protocol layer under the application
SERVER_SIDE = {"QuietPingProtocol", "Inbox", "ServerProtocol", "TCPTransport", "PseudoSocket"}
# and what a close that fails leaves when its exception is kept in a cycle
FAILED_CLOSE = {"ClientDisconnected", "WebSocketDisconnect", "traceback", "frame", "Task"}


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """Every object a collection finds unreachable from now on (gc.DEBUG_SAVEALL keeps them in
    gc.garbage instead of freeing them)."""
    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


SOCKETS = 20


async def left_after(endpoint: Callable[[WebSocket], Awaitable[None]],
                     talk: Callable[[ClientConnection], Awaitable[None]], done: list[int],
                     garbage: list[object], names: set[str]) -> collections.Counter[str]:
    """Serve ``endpoint`` (which counts each socket it finished in ``done[0]``), open SOCKETS
    sockets one after the other, each talking with ``talk`` and then closed, wait until the
    endpoint finished them all, and collect: the unreachable objects whose type is one of
    ``names``."""
    async with serving(endpoint) as url:
        for _ in range(SOCKETS):
            async with connect(url) as client:
                await talk(client)
        for _ in range(200):
            if done[0] == SOCKETS:
                break
            await asyncio.sleep(0.01)
        assert done[0] == SOCKETS
        await asyncio.sleep(0.2)  # the transports' own close
        gc.collect()
    return collections.Counter(type(o).__name__ for o in garbage if type(o).__name__ in names)


@pytest.mark.parametrize("who_closes", ["client", "server"])
async def test_a_closed_socket_leaves_no_garbage(saved_garbage: list[object],
                                                 who_closes: str) -> None:
    done = [0]

    async def endpoint(websocket: WebSocket) -> None:
        try:
            while True:
                data = await websocket.receive_bytes()
                if data == b"bye" and who_closes == "server":
                    await websocket.close(1000)
                    return
                await websocket.send_bytes(data)
        except WebSocketDisconnect:
            pass
        finally:
            done[0] += 1

    async def talk(client: ClientConnection) -> None:
        await client.send(b"hello")
        assert await client.recv() == b"hello"
        if who_closes == "server":
            await client.send(b"bye")
            await client.wait_closed()

    left = await left_after(endpoint, talk, done, saved_garbage, SERVER_SIDE)
    assert left == {}, f"garbage left by {SOCKETS} closed sockets: {dict(left)}"


async def test_a_close_sent_after_the_peer_left_leaves_no_garbage(
        saved_garbage: list[object]) -> None:
    """The server's connection closes a socket whose peer is already gone (a player who left
    while the server was ending its session): the close fails, and its exception must not
    keep itself, its frames and tasks alive in a cycle."""
    done = [0]

    async def endpoint(websocket: WebSocket) -> None:
        conn = Connection(websocket, Metrics(), limit=8)
        try:
            async with asyncio.TaskGroup() as group:
                conn.group = group
                with contextlib.suppress(WebSocketDisconnect):
                    while True:
                        await websocket.receive_bytes()
                conn.close_soon(Close.NORMAL)  # the peer is gone: this close fails
        finally:
            conn.finished = True
            done[0] += 1

    async def talk(client: ClientConnection) -> None:
        await client.send(b"hello")

    left = await left_after(endpoint, talk, done, saved_garbage, SERVER_SIDE | FAILED_CLOSE)
    assert left == {}, f"garbage left by {SOCKETS} failed closes: {dict(left)}"
