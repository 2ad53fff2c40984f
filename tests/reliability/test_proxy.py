"""The reverse proxy of compose.yaml (docs/nginx.conf), run for real in front of the service.

The config is used as shipped except for three things a test must change: the upstream (the
service on its free port instead of `app:8000`), the listening port, and the header timeout
(2 s instead of 10 s, so that the slow-loris check is quick). Checks: a game plays through it;
the service sees each client's own address (its bad-token budget is per client, not one for
the proxy); a client that sends its request head slowly is cut off; one address cannot hold
more than the connection limit."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import websockets

from server.redis_embedded import free_port
from tests.reliability.conftest import FAST
from tests.server.conftest import running
from tests.support.servers import REPO, GameClient, ServiceProcess, close_code, create_table, join

CONFIG = REPO / "docs" / "nginx.conf"


class Proxy:
    def __init__(self, upstream_port: int) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="nginx-test-"))
        text = CONFIG.read_text()
        for old, new in (("server app:8000;", f"server 127.0.0.1:{upstream_port};"),
                         ("listen 80;", f"listen 127.0.0.1:{self.port};"),
                         ("client_header_timeout 10s;", "client_header_timeout 2s;"),
                         ("http {", "http {\n    access_log off;")):
            assert old in text, old
            text = text.replace(old, new, 1)
        (self.dir / "nginx.conf").write_text(text)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Proxy:
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen(
            [nginx, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"),
             "-g", f"daemon off; pid {self.dir}/nginx.pid; error_log {self.dir}/error.log;"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with httpx.Client(timeout=1) as client:
                    if client.get(f"{self.url}/healthz").status_code == 200:
                        return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("nginx did not come up: " + (self.dir / "error.log").read_text())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
async def behind_nginx(redis_url: str) -> AsyncIterator[Proxy]:
    env = {**FAST, "FORWARDED_ALLOW_IPS": "127.0.0.1"}
    async with running(ServiceProcess(redis_url, env=env)) as service:
        proxy = await asyncio.to_thread(Proxy(service.port).start)
        try:
            yield proxy
        finally:
            await GameClient.close_all()
            proxy.stop()


async def test_a_game_plays_through_the_proxy_and_budgets_see_each_client(
    behind_nginx: Proxy,
) -> None:
    async with httpx.AsyncClient(base_url=behind_nginx.url, timeout=10) as http:
        table = await create_table(http)
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = []
    for token in tokens:
        player = await GameClient.connect(behind_nginx.ws_url)
        assert (await player.hello(table, token))["t"] == "welcome"
        players.append(player)
    mover = next(p for p in players if p.my_turn())
    assert (await mover.move(mover.game["legal"][0]))["t"] == "accepted"

    async def bad_hello(source: str) -> str:
        client = await GameClient.connect(behind_nginx.ws_url, local_addr=(source, 0))
        await client.send({"t": "hello", "proto": 1, "table": table, "token": "z" * 43,
                           "since": None})
        code = str((await client.recv()).get("code"))
        await close_code(client)
        return code

    assert [await bad_hello("127.0.0.2") for _ in range(11)][-1] == "rate_limited"
    assert await bad_hello("127.0.0.3") == "bad_token"  # a budget of its own


async def test_a_slow_request_head_is_cut_off(behind_nginx: Proxy) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", behind_nginx.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    closed_after = None
    for _ in range(20):  # a header line every half second, never the blank line
        await asyncio.sleep(0.5)
        try:
            writer.write(b"X-Slow: 1\r\n")
            await writer.drain()
        except ConnectionError:
            closed_after = time.monotonic() - started
            break
        if reader.at_eof() or (await _peek(reader)):
            closed_after = time.monotonic() - started
            break
    writer.close()
    assert closed_after is not None and closed_after < 6, closed_after


async def _peek(reader: asyncio.StreamReader) -> bool:
    """True when the proxy has answered (a 408) or closed."""
    try:
        await asyncio.wait_for(reader.read(1), 0.05)  # b"" at the close, else the answer
    except TimeoutError:
        return False
    return True


async def test_one_address_cannot_hold_more_than_the_connection_limit(
    behind_nginx: Proxy,
) -> None:
    opened: list[websockets.ClientConnection] = []
    refused = 0
    for _ in range(80):
        try:
            opened.append(await websockets.connect(behind_nginx.ws_url,
                                                   local_addr=("127.0.0.4", 0)))
        except websockets.InvalidStatus as exc:
            assert exc.response.status_code == 429
            refused += 1
    try:
        assert len(opened) == 64 and refused == 16
        other = await websockets.connect(behind_nginx.ws_url, local_addr=("127.0.0.5", 0))
        await other.close()
    finally:
        for socket in opened:
            await socket.close()
