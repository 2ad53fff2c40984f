"""What the server's stack costs by itself: the CPU per move of a minimal websocket server on
the same stack as ours (uvicorn, Starlette, websockets' sans-I/O protocol with the server's
`QuietPingProtocol`, uvloop, httptools) that does for each move only what any move needs of the
stack, and no game: read one binary frame, commit (optionally) with the store's real commit
script through its commit link, and write three frames of a move's size (the diff and `accepted`
to the mover, the diff to the other seat).

    python -m bench.stack_floor [--sockets 1000] [--rate 500] [--seconds 15]

Starts a private Redis (appendfsync everysec, as compare.sh) and, for each level in turn, one
such server process, driven by a load client in this process (pairs of sockets, each pair sending
one move a second from its two sockets in turn, spread over the second). Levels:
- `asgi`: the three frames sent through Starlette's `send_bytes`;
- `send_now`: sent through the server's direct write (keepalive.SEND_NOW), the frame received
  through Starlette's `receive`;
- `receive_now`: `send_now`, the frame read through the server's direct read
  (keepalive.RECEIVE_NOW), as the server does;
- `inline`: `send_now`, the frame handled where the websocket protocol parses it (a subclass of
  `QuietPingProtocol`) instead of going through uvicorn's receive queue, Starlette's `receive`
  and the endpoint's task: what the hop from the protocol into the application costs;
- `eval`: `receive_now` plus one EVALSHA through the commit link of a script that only SETs the
  state, with the commit's biggest arguments (the state and three frames): a round trip to Redis
  and back, and little work in Redis;
- `inline_eval`: `inline` plus the same EVALSHA, the frames written by a callback on its reply
  instead of by a task awaiting it: a round trip to Redis without any task switch;
- `commit`: `receive_now` plus one `Store.commit` per move (a 1.6 KB state and three frames of a
  move's sizes, the table's version checked and raised, the client id remembered).
Prints one JSON line: for each level the server's and Redis' CPU per move (µs, from
/proc/PID/stat over the window). A real server's figure (compare.sh, `bench.load`) less the
`commit` level's is what the game itself costs: the session, the engine, the documents and
diffs, the delivery. Linux only; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgpack

from bench.commit_path import cpu_s
from server.redis_embedded import RedisProcess, free_port

LEVELS = ("asgi", "send_now", "receive_now", "inline", "eval", "inline_eval", "commit")
ONE_SET = "redis.call('SET', KEYS[1], ARGV[1]) return 1"  # the `eval` level's script
ONE_SET_SHA = hashlib.sha1(ONE_SET.encode()).hexdigest()
STATE = os.urandom(1630)  # a move's state blob (all-fives, 2 players: 1.6 KB)
FRAME = os.urandom(388)  # a move's diff (all-fives, 2 players: 388 B median)
ACCEPTED = msgpack.packb({"t": "accepted", "id": "12345", "v": 1234})
MOVE = msgpack.packb({"t": "move", "id": "12345", "v": 1234, "move": {"tile": "3-4", "end": 0}})


def serve(level: str, port: int, redis_url: str) -> None:
    """The minimal server (run in its own process)."""
    import redis.asyncio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket

    from server.keepalive import QuietPingProtocol, protocol_for, receive_now_of, send_now_of
    from server.redis_link import CommitLink, _send
    from server.store import Store

    sockets: dict[int, WebSocket] = {}
    versions: dict[int, int] = {}
    stores: list[Store] = []

    def store() -> Store:
        if not stores:
            stores.append(Store(redis.asyncio.Redis.from_url(redis_url)))
        return stores[0]

    def link() -> CommitLink:
        found = store()._link
        assert found is not None, "a single Redis without TLS has a commit link"
        return found

    def one_set(pair: int) -> tuple[list[str], list[bytes]]:
        """The keys and arguments of the `eval` levels' script call for a pair's table."""
        return [f"floor{pair:05d}"], [STATE, FRAME, FRAME, FRAME]

    async def send(ws: WebSocket, data: bytes) -> None:
        direct = send_now_of(ws.scope) if level != "asgi" else None
        if direct is None or not direct(data):
            await ws.send_bytes(data)

    inline = level in ("inline", "inline_eval")
    writers: dict[int, Any] = {}  # the `inline` levels: each socket's direct write

    class Inline(QuietPingProtocol):
        """A move frame handled where the protocol parses it, once its socket is known."""
        me: int | None = None

        def handle_bytes(self, event: Any) -> None:
            if self.me is None or not event.fin:
                super().handle_bytes(event)
                return
            self.heard = True
            msgpack.unpackb(event.data)
            if level == "inline_eval":
                protocol = link()._protocol  # connected by the endpoint's first call
                assert protocol is not None
                keys, args = one_set(self.me // 2)
                reply = _send(protocol, ("EVALSHA", ONE_SET_SHA, len(keys), *keys, *args))
                reply.add_done_callback(lambda _: self.answer())
            else:
                self.answer()

        def answer(self) -> None:
            assert self.me is not None
            self.send_now(FRAME)
            self.send_now(ACCEPTED)
            other = writers.get(self.me ^ 1)
            if other is not None:
                other(FRAME)

    async def endpoint(ws: WebSocket) -> None:
        await ws.accept()
        me = int(msgpack.unpackb(await ws.receive_bytes()))
        sockets[me] = ws
        pair = me // 2
        if inline:
            await link().evalsha(ONE_SET_SHA, ONE_SET, *one_set(pair))  # loads it, connects
            direct = send_now_of(ws.scope)
            assert direct is not None, "the installed uvicorn offers the direct write"
            writers[me] = direct
            cast(Inline, direct.__self__).me = me  # type: ignore[attr-defined]
        receive = ws.receive
        if level in ("receive_now", "eval", "commit"):
            found = receive_now_of(ws.scope)
            assert found is not None, "the installed uvicorn offers the direct read"
            receive = found
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    return
                msgpack.unpackb(message["bytes"])
                if level == "eval":
                    await link().evalsha(ONE_SET_SHA, ONE_SET, *one_set(pair))
                elif level == "commit":
                    result = await store().commit(
                        f"floor{pair:05d}", versions.get(pair, 0), STATE, b"",
                        {"0": FRAME, "1": FRAME, "s": FRAME},
                        client=(me % 2, f"m:{time.monotonic_ns()}"),
                        lifetime_ms="keep", due_ms="keep")
                    versions[pair] = result.version
                await send(ws, FRAME)
                await send(ws, ACCEPTED)
                other = sockets.get(me ^ 1)
                if other is not None:
                    await send(other, FRAME)
        finally:
            sockets.pop(me, None)
            writers.pop(me, None)

    app = Starlette(routes=[WebSocketRoute("/ws", endpoint)])
    protocol = Inline if inline else protocol_for("websockets-sansio")
    uvicorn.run(app, host="127.0.0.1", port=port, ws=protocol,
                loop="uvloop", http="httptools", log_level="warning", access_log=False,
                lifespan="off", ws_ping_interval=20.0,
                ws_per_message_deflate=False)  # as the server (WS_DEFLATE off)


async def drive(port: int, sockets: int, rate: int, seconds: float, server_pid: int,
                redis_pid: int) -> dict[str, Any]:
    import websockets

    conns = []
    for k in range(sockets):
        for _attempt in range(100):
            try:
                ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None)
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise RuntimeError("the server did not accept connections")
        await ws.send(msgpack.packb(k))
        conns.append(ws)
    received = [0]

    async def read(ws: Any) -> None:
        async for _ in ws:
            received[0] += 1

    readers = [asyncio.create_task(read(ws)) for ws in conns]
    pairs = sockets // 2
    period = pairs / rate  # seconds between two moves of one pair
    sent = [0]

    async def pair(p: int) -> None:
        await asyncio.sleep(period * p / pairs)
        k = 0
        loop = asyncio.get_running_loop()
        start = loop.time()
        while True:
            await conns[2 * p + (k & 1)].send(MOVE)
            sent[0] += 1
            k += 1
            await asyncio.sleep(max(0.0, start + k * period - loop.time()))

    players = [asyncio.create_task(pair(p)) for p in range(pairs)]
    await asyncio.sleep(3.0)  # warm up
    moves, server, redis_cpu = sent[0], cpu_s(server_pid), cpu_s(redis_pid)
    await asyncio.sleep(seconds)
    moves = sent[0] - moves
    out = {"moves": moves,
           "server_us": round((cpu_s(server_pid) - server) / moves * 1e6, 1),
           "redis_us": round((cpu_s(redis_pid) - redis_cpu) / moves * 1e6, 1)}
    for task in players + readers:
        task.cancel()
    await asyncio.gather(*players, *readers, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    out["frames_per_move"] = round(received[0] / max(1, sent[0]), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=500, help="moves per second in all")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--serve", choices=LEVELS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.redis)
        return
    levels = args.levels.split(",")
    if len(set(levels)) != len(levels) or not set(levels) <= set(LEVELS):
        parser.error(f"--levels: each of {', '.join(LEVELS)} at most once")
    import uvloop
    out: dict[str, Any] = {"bench": "stack_floor", "sockets": args.sockets, "rate": args.rate,
                           "seconds": args.seconds}
    with tempfile.TemporaryDirectory() as tmp:
        redis_server = RedisProcess(Path(tmp) / "redis", port=free_port(),
                                    appendfsync="everysec")
        url = redis_server.start()
        try:
            import redis as redis_sync
            redis_pid = int(redis_sync.Redis.from_url(url).info("server")["process_id"])
            for level in levels:
                port = free_port()
                server = subprocess.Popen(
                    [sys.executable, "-m", "bench.stack_floor", "--serve", level,
                     "--port", str(port), "--redis", url],
                    cwd=Path(__file__).resolve().parents[1])
                try:
                    out[level] = uvloop.run(drive(port, args.sockets, args.rate, args.seconds,
                                              server.pid, redis_pid))
                finally:
                    server.terminate()
                    server.wait(10)
        finally:
            redis_server.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
