"""The real service as a process of its own, and a websocket test client that speaks the protocol.

``ServiceProcess(redis_url)`` runs the server's ``main`` (what ``python -m server`` runs) on a
free port and waits for /healthz (on the session's PostgreSQL, tests/support/pg_server.py, unless
``env`` names a DATABASE_URL): ``.url``, ``.ws_url``, ``.stop()`` (SIGTERM), ``.kill()``
(SIGKILL), ``.restart()``. The process is forked from a process that has already imported the
server (multiprocessing's forkserver, started on first use), so a start takes about 0.15 s
instead of the 0.7 s of a new interpreter importing everything. Forked processes share the
forkserver's hash seed, so ``command=True`` (``python -m server`` itself, in an interpreter of
its own) runs tests of the command and one process of the multi-process tests, where nothing
shared between processes may depend on one interpreter's ordering.
``GameClient`` is an async client (websockets + msgpack) that keeps its document in sync with
``server.diff.apply_ops`` and records every byte it receives.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from typing import Any, ClassVar, Protocol

import msgpack
import websockets
from websockets.exceptions import ConcurrencyError

from server.diff import apply_ops
from server.redis_embedded import free_port
from tests.support import pg_server

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def _logs() -> str:
    """This test run's directory for server logs, removed when the run ends."""
    path = tempfile.mkdtemp(prefix="dominoes-server-logs-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _serve(env: dict[str, str], log_path: str) -> None:
    """A forked server process: the environment and output `python -m server` would have in
    a subprocess of this one, then its main."""
    os.chdir(REPO)
    os.environ.clear()
    os.environ.update(env)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if env.get("PYTHONWARNINGS") == "ignore":  # read by a new interpreter only
        warnings.simplefilter("ignore")
    sys.argv = [str(REPO / "server" / "__main__.py")]
    from server.__main__ import main

    main()


@functools.cache
def _forks() -> multiprocessing.context.ForkServerContext:
    """The forkserver the servers are forked from, with the server imported once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["server.__main__", __name__])
    atexit.register(Forked.kill_all)  # before multiprocessing's own exit, which would wait
    return context


class Process(Protocol):
    """What the tests use of a server process: subprocess.Popen's calls."""

    pid: int

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def kill(self) -> None: ...


class Forked:
    """A forked server process, with the calls of subprocess.Popen the tests use."""

    live: ClassVar[set[Forked]] = set()  # killed at exit if a test left one running

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.process = _forks().Process(target=_serve, args=(env, str(log_path)))
        self.process.start()
        assert self.process.pid is not None
        self.pid: int = self.process.pid
        Forked.live.add(self)

    def poll(self) -> int | None:
        code = self.process.exitcode
        if code is not None:
            Forked.live.discard(self)
        return code

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired("server", timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    @classmethod
    def kill_all(cls) -> None:
        for forked in list(cls.live):
            forked.kill()
            forked.wait(10)


class ServiceProcess:
    def __init__(
        self, redis_url: str, *, port: int | None = None, env: dict[str, str] | None = None,
        command: bool = False,
    ) -> None:
        self.redis_url = redis_url
        self.port = port or free_port()
        self.extra_env = env or {}
        self.command = command  # `python -m server` in a new interpreter instead of a fork
        self.proc: Process | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="server-", suffix=".log", dir=_logs())[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 20.0) -> ServiceProcess:
        env = {
            **os.environ,
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "REDIS_URL": self.redis_url,
            # The session's PostgreSQL unless the test names a database of its own ("":
            # none, so that python -m server runs its embedded cluster).
            "DATABASE_URL": (self.extra_env["DATABASE_URL"] if "DATABASE_URL" in self.extra_env
                             else pg_server.shared().url),
            "BOT_DELAY_MS": "0",
            # Scripted clients create tables and take seats far faster than people; the
            # quotas themselves are tested with their own settings.
            "CREATE_RATE": "100000", "MAX_WAITING_TABLES": "100000", "JOIN_RATE": "100000",
            "LOG_LEVEL": "WARNING",
            "PYTHONWARNINGS": "ignore",
            # Scripted players go straight on to the next hand; the pause between hands is
            # tested with it on (NEXT_HAND_S).
            "NEXT_HAND_S": "0",
            # Post-game analysis costs seconds of CPU per game; tests of it turn it on.
            "ANALYSIS_WORKERS": "0",
            **self.extra_env,
        }
        if self.command:
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "server"], cwd=REPO, env=env, stdout=log, stderr=log
                )
        else:
            self.proc = Forked(env, self.log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log()}")
            if self.healthy():
                return self
            time.sleep(0.01)
        self.kill()
        raise RuntimeError(f"server did not become healthy:\n{self.log()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=1) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait: the graceful shutdown."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.poll()
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> ServiceProcess:
        self.stop()
        return self.start()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.log_path.unlink(missing_ok=True)


class ProtocolError(AssertionError):
    """The server broke the protocol as the client sees it (a gap, a diff before a snapshot)."""


class GameClient:
    """One websocket connection as a client program would hold it."""

    _ids = itertools.count(1)
    opened: ClassVar[list[GameClient]] = []  # every client connected, closed by `close_all`

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.doc: dict[str, Any] | None = None
        self.v: int | None = None
        self.seat: int | None = None
        self.raw: list[bytes] = []  # every frame received, as bytes
        self.messages: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []

    @classmethod
    async def connect(cls, ws_url: str, **kwargs: Any) -> GameClient:
        kwargs.setdefault("max_size", 2**24)
        socket = await websockets.connect(ws_url, **kwargs)
        client = cls(socket)
        cls.opened.append(client)
        return client

    @classmethod
    async def close_all(cls) -> None:
        opened, cls.opened = cls.opened, []
        await asyncio.gather(*(client.close() for client in opened))

    async def close(self) -> None:
        """The closing handshake, reading past what the test left unread meanwhile (a socket
        that holds unread frames stops reading and would only see the server's close frame
        after its close timeout)."""
        async def discard() -> None:
            # (ended by the close, or at once if the test still reads the socket itself)
            with contextlib.suppress(websockets.ConnectionClosed, ConcurrencyError):
                while True:
                    await self.socket.recv()

        reader = asyncio.create_task(discard())
        try:
            await self.socket.close()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def send(self, message: Any) -> None:
        await self.socket.send(msgpack.packb(message))

    async def send_raw(self, data: bytes | str) -> None:
        await self.socket.send(data)

    async def recv(self, wait_s: float = 10.0) -> dict[str, Any]:
        """The next message, applied to the document (snapshots and diffs)."""
        if self.pending:
            return self.pending.pop(0)
        data = await asyncio.wait_for(self.socket.recv(), wait_s)
        assert isinstance(data, bytes), "the server sends binary frames only"
        self.raw.append(data)
        message = msgpack.unpackb(data, raw=False)
        self.messages.append(message)
        self._apply(message)
        return message

    def _apply(self, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "welcome":
            self.seat = message["seat"]
        elif kind == "snapshot":
            self.doc, self.v = message["doc"], message["v"]
        elif kind == "diff":
            if self.v is None or self.doc is None:
                raise ProtocolError(f"diff {message['v']} before any snapshot")
            if message["v"] <= self.v:
                return
            if message["v"] != self.v + 1:
                raise ProtocolError(f"gap: holding {self.v}, got diff {message['v']}")
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]

    async def drain(self, quiet_s: float = 0.3) -> None:
        """Take (and apply) every message until none comes for ``quiet_s``."""
        while True:
            try:
                await self.recv(quiet_s)
            except TimeoutError:
                return

    async def recv_until(self, kind: str, wait_s: float = 10.0, **match: Any) -> dict[str, Any]:
        """Read (and apply) messages until one of type `kind` with the given fields."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError(f"no {kind} {match} within {wait_s}s")
            message = await self.recv(left)
            if message.get("t") == kind and all(message.get(k) == v for k, v in match.items()):
                return message

    async def hello(
        self,
        table: str,
        token: str | None = None,
        since: int | None = None,
        *,
        doc: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send hello and read up to the welcome (and the snapshot, when one is due)."""
        if doc is not None:
            self.doc, self.v = doc, since
        await self.send({"t": "hello", "proto": 1, "table": table, "token": token, "since": since})
        first = await self.recv()
        if first["t"] != "welcome":
            return first
        if since is None:
            await self.recv_until("snapshot")
        return first

    async def wait_version(self, version: int, wait_s: float = 10.0) -> None:
        deadline = asyncio.get_running_loop().time() + wait_s
        while self.v is None or self.v < version:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise TimeoutError(f"still at version {self.v}, waiting for {version}")
            await self.recv(left)

    async def move(
        self, move: dict[str, Any], v: int | None = None, client_id: str | None = None
    ) -> dict[str, Any]:
        """Send a move and read until its accepted/rejected (diffs on the way are applied)."""
        client_id = client_id or f"m{next(self._ids)}"
        await self.send(
            {"t": "move", "id": client_id, "v": self.v if v is None else v, "move": move}
        )
        while True:
            message = await self.recv()
            if message.get("t") in ("accepted", "rejected") and message.get("id") == client_id:
                return message

    @property
    def game(self) -> dict[str, Any]:
        assert self.doc is not None
        return dict(self.doc["game"] or {})

    def my_turn(self) -> bool:
        return bool(self.doc and self.doc["game"] and self.doc["game"]["turn"] == self.seat)


# ---- lobby and game driving ------------------------------------------------------------------


async def create_table(http: Any, **body: Any) -> str:
    """POST /api/tables with `body` (httpx.AsyncClient on the service); the new table id."""
    body.setdefault("players", 2)
    response = await http.post("/api/tables", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def create_and_sit(http: Any, player: str, **body: Any) -> tuple[str, str | None, str]:
    """POST /api/tables with `body`, then take seat 0 as `player` (with the invite of a private
    table): (table id, invite, seat token)."""
    body.setdefault("players", 2)
    created = await http.post("/api/tables", json=body)
    assert created.status_code == 201, created.text
    table, invite = created.json()["id"], created.json()["invite"]
    joined = await http.post(f"/api/tables/{table}/join",
                             json={"seat": 0, "name": player, "invite": invite})
    assert joined.status_code == 200, joined.text
    return table, invite, joined.json()["token"]


async def join(http: Any, table: str, seat: int | None, name: str) -> str:
    response = await http.post(f"/api/tables/{table}/join", json={"seat": seat, "name": name})
    assert response.status_code == 200, response.text
    assert response.json()["seat"] == seat or seat is None
    return str(response.json()["token"])


async def sync_all(clients: list[GameClient], wait_s: float = 20.0) -> int:
    """Bring every client to the highest version any of them holds."""
    top = max(c.v or 0 for c in clients)
    for client in clients:
        await client.wait_version(top, wait_s)
    return top


async def play_to_end(
    movers: dict[int, GameClient],
    watchers: list[GameClient],
    *,
    max_versions: int = 3000,
    on_version: Any = None,
    stop_after: int | None = None,
) -> int:
    """Play the first legal move for every seat in `movers` (bots play their own seats) until
    the game is over or the table finished, keeping every client in step. Returns the number
    of moves sent."""
    clients = list(movers.values()) + watchers
    sent = 0
    for _ in range(max_versions):
        await sync_all(clients)
        ref = clients[0]
        assert ref.doc is not None
        if on_version is not None:
            on_version(ref.v)
        game = ref.doc["game"]
        if game is not None and (game["game_over"] or ref.doc["table"]["status"] == "finished"):
            return sent  # played out, or ended by the table (a forfeit, the hand limit)
        if stop_after is not None and sent >= stop_after:
            return sent
        turn = None if game is None else game["turn"]
        if turn in movers:
            mover = movers[turn]
            legal = mover.game["legal"]
            assert legal, f"seat {turn} to move with no legal move"
            answer = await mover.move(legal[0])
            assert answer["t"] == "accepted", answer
            sent += 1
            target = answer["v"]
        else:
            target = (ref.v or 0) + 1  # a bot, a clock or a join makes the next version
        for client in clients:
            await client.wait_version(target, 20.0)
    raise AssertionError("the game did not end")


async def close_code(client: GameClient, wait_s: float = 10.0) -> int | None:
    """Read until the server closes the connection; its close code (frames read are kept)."""
    try:
        while True:
            await client.recv(wait_s)
    except websockets.ConnectionClosed:
        pass
    return client.socket.close_code
