"""Load benchmark: many tables of real websocket clients playing whole games against 1 or 2
server processes sharing one Redis, each table moving at a set pace.

    python -m bench.load                     # service.md scale: 500 tables, 1 move/s each
    python -m bench.load --tables 100 --servers 2 --spectators 2
    python -m bench.load --quick             # a small run for a smoke check
    python -m bench.load --crowd 2000        # plus one table watched by 2,000 spectators

Prints moves/s, ack and fan-out latency p50/p99 (client side: move sent -> accepted; move sent ->
the diff at every seat and spectator of the table), bytes per diff (median, per viewer, plays),
peak server RSS growth per connection, and those figures against the targets of service.md.
The load client runs on the same machine (and cores) as the servers and Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgpack
import websockets

from bench.commit_path import cpu_s
from server.redis_embedded import RedisProcess, free_port

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"ack_p99_ms": 10.0, "fanout_p99_ms": 10.0, "bytes_median": 24.0, "rss_kb": 30.0,
           "idle_kb": 30.0, "crowd_p99_ms": 200.0}


# ---- servers -----------------------------------------------------------------------------------


PROFILED = """
import cProfile, signal, sys
from server.__main__ import main
def stop(*_):
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
profile = cProfile.Profile()
profile.enable()
try:
    main()
finally:
    profile.disable()
    profile.dump_stats(sys.argv[1])
"""


STALLS = """
import collections, gc, json, os, sys, threading, time
from server.__main__ import main
out, threshold_ms = open(sys.argv[1], "w", buffering=1), float(sys.argv[2])
main_id = threading.main_thread().ident
collecting = {"ms": 0.0, "at": 0.0}
def collector(phase, info):
    if phase == "start":
        collecting["at"] = time.perf_counter()
    else:
        collecting["ms"] += (time.perf_counter() - collecting["at"]) * 1000
gc.callbacks.append(collector)
def idle(frame):  # uvloop waiting for events: no Python frame below asyncio.run's
    return frame.f_code.co_name == "run" and frame.f_code.co_filename.endswith("runners.py")
def sample():
    start, outer, inner, gc_ms = None, collections.Counter(), collections.Counter(), 0.0
    while True:
        time.sleep(0.0003)
        frame = sys._current_frames().get(main_id)
        if frame is None:
            continue
        now = time.perf_counter()
        if idle(frame):
            if start is not None and (now - start) * 1000 >= threshold_ms:
                out.write(json.dumps({"at": time.time() - (now - start),
                                      "ms": (now - start) * 1000,
                                      "gc_ms": collecting["ms"] - gc_ms,
                                      "outer": outer.most_common(3),
                                      "inner": inner.most_common(3)}) + "\\n")
            start = None
            continue
        if start is None:
            start, gc_ms = now, collecting["ms"]
            outer.clear()
            inner.clear()
        chain = []
        while frame is not None and not idle(frame):
            chain.append(frame.f_code)
            frame = frame.f_back
        if chain:
            outer[chain[-1].co_qualname] += 1
            inner[f"{chain[0].co_qualname} ({os.path.basename(chain[0].co_filename)})"] += 1
sys.setswitchinterval(0.0005)  # so that the sampler gets its turn while the loop is busy
threading.Thread(target=sample, daemon=True).start()
main()
"""


class Server:
    def __init__(
        self, redis_url: str, env: dict[str, str], log: Path, profile: Path | None = None,
        python: str = sys.executable, command: list[str] | None = None,
        stalls: tuple[Path, float] | None = None,
    ) -> None:
        self.port = free_port()
        self.log = log
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws"
        full_env = {**os.environ, "REDIS_URL": redis_url, "PORT": str(self.port),
                    "HOST": "127.0.0.1", "LOG_LEVEL": "WARNING", "BOT_DELAY_MS": "0",
                    "PYTHONWARNINGS": "ignore",
                    # the load client creates every table and takes every seat itself
                    "CREATE_RATE": "1000000", "MAX_WAITING_TABLES": "1000000",
                    "JOIN_RATE": "1000000", "MAX_TABLES_PER_PLAYER": "1000000",
                    # ... and holds every socket from one address
                    "MAX_SOCKETS_PER_ADDRESS": "1000000", "MAX_SPECTATORS_PER_ADDRESS": "1000000",
                    "TABLES_PER_ADDRESS_SHARE": "1",
                    # scripted players move on at once: no pause between hands
                    "NEXT_HAND_S": "0", **env}
        with log.open("ab") as out:
            if command is None:
                command = [python, "-m", "server"]
                if profile is not None:
                    command = [python, "-c", PROFILED, str(profile)]
                elif stalls is not None:
                    command = [python, "-c", STALLS, str(stalls[0]), str(stalls[1])]
            self.proc = subprocess.Popen(command, cwd=REPO, env=full_env, stdout=out, stderr=out)
        self.base_rss_kb = 0  # before the websockets connect (tables already made)
        self.connected_rss_kb = 0  # once every websocket has its snapshot
        self.peak_rss_kb = 0
        self.ack_q = (float("nan"), float("nan"))
        self.fanout_q = (float("nan"), float("nan"))

    def cpu_s(self) -> float:
        """User + system CPU seconds used by the server process so far."""
        try:
            return cpu_s(self.proc.pid)
        except (OSError, IndexError, ValueError):
            return 0.0

    def rss_kb(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    async def wait_healthy(self, timeout_s: float = 20.0) -> None:
        async with httpx.AsyncClient(timeout=max(5.0, timeout_s / 10)) as http:
            for _ in range(round(timeout_s / 0.05)):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited ({self.proc.returncode}): {self.log}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(self.url + "/healthz")).status_code == 200:
                        self.base_rss_kb = self.rss_kb()
                        return
                await asyncio.sleep(0.05)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- clients -----------------------------------------------------------------------------------


def apply_in_place(doc: Any, ops: list[Any]) -> Any:
    """The protocol's diff ops applied to `doc` in place (server.diff.apply_ops copies first,
    which is the safe choice for a UI but too slow for thousands of clients in one process)."""
    for op in ops:
        kind, path = op[0], op[1]
        if kind == "=" and not path:
            doc = op[2]
            continue
        node = doc
        for key in path[:-1]:
            node = node[key]
        last = path[-1] if path else None
        if kind == "=":
            node[last] = op[2]
        elif kind == "+":
            node[last].extend(op[2])
        elif kind == "-":
            del node[last]
        elif kind == "~":
            del node[last][op[2]:]
    return doc


@dataclass
class Stats:
    ack_ms: list[float] = field(default_factory=list)
    fanout_ms: list[float] = field(default_factory=list)
    crowd_ms: list[float] = field(default_factory=list)
    play_bytes: list[int] = field(default_factory=list)
    moves: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    games_finished: int = 0
    errors: int = 0
    closed: list[str] = field(default_factory=list)
    server_cpu_s: float = 0.0
    idle: tuple[int, float, float] | None = None  # sockets, KB each, seconds to connect
    load: tuple[float, float] = (0.0, 0.0)


class Client:
    """One websocket: keeps its document, notes when each version arrived."""

    def __init__(self, table: Table, token: str | None) -> None:
        self.table, self.token = table, token
        self.doc: dict[str, Any] | None = None
        self.v = -1
        self.seat: int | None = None
        self.socket: Any = None
        self.answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.ready = asyncio.Event()

    async def connect(self, ws_url: str) -> None:
        self.socket = await websockets.connect(ws_url, max_size=2**22, ping_interval=None,
                                               open_timeout=120)
        await self.socket.send(msgpack.packb(
            {"t": "hello", "proto": 1, "table": self.table.id, "token": self.token,
             "since": None}))

    async def read(self) -> None:
        stats = self.table.stats
        try:
            async for data in self.socket:
                now = time.perf_counter()
                message = msgpack.unpackb(data, raw=False)
                kind = message["t"]
                if kind == "diff":
                    if self.doc is None or message["v"] != self.v + 1:
                        continue
                    self.doc = apply_in_place(self.doc, message["ops"])
                    self.v = message["v"]
                    if any(e.get("type") == "play" for e in message["ev"]):
                        stats.play_bytes.append(len(data))
                    self.table.arrived(self.v, now)
                elif kind == "snapshot":
                    self.doc, self.v = message["doc"], message["v"]
                    self.ready.set()
                elif kind == "welcome":
                    self.seat = message["seat"]
                elif kind in ("accepted", "rejected"):
                    future = self.answers.pop(message["id"], None)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif kind == "error":
                    stats.errors += 1
        except websockets.ConnectionClosed:
            pass
        finally:
            for future in self.answers.values():
                if not future.done():
                    future.set_exception(websockets.ConnectionClosed(None, None))

    async def move(self, move: dict[str, Any], client_id: str,
                   timeout_s: float = 30.0) -> dict[str, Any]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.answers[client_id] = future
        await self.socket.send(msgpack.packb(
            {"t": "move", "id": client_id, "v": self.v, "move": move}))
        return await asyncio.wait_for(future, timeout_s)


class Table:
    def __init__(self, table_id: str, stats: Stats, crowd: bool = False) -> None:
        self.id, self.stats, self.crowd = table_id, stats, crowd
        self.clients: list[Client] = []
        self.waiting: dict[int, tuple[float, int, asyncio.Event]] = {}
        self.sent = 0  # moves sent: their ids stay unique across calls of `play`

    def arrived(self, version: int, now: float) -> None:
        entry = self.waiting.get(version)
        if entry is None:
            return
        sent, left, done = entry
        left -= 1
        self.waiting[version] = (sent, left, done)
        if left == 0:
            (self.stats.crowd_ms if self.crowd else self.stats.fanout_ms).append(
                (now - sent) * 1000)
            done.set()

    async def play(self, pace: float, deadline: float) -> None:
        await asyncio.sleep(random.uniform(0, pace))
        next_at = time.perf_counter()
        while time.perf_counter() < deadline:
            outcome = await self.step()
            if outcome in ("over", "failed"):
                return
            if outcome == "wait":
                await asyncio.sleep(0.01)
                continue
            next_at += pace
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    async def step(self, timeout_s: float = 30.0) -> str:
        """One move (the first legal one) by the seat to move, then the wait until every client
        of the table holds the new version. "moved" (accepted), "rejected", "wait" (the mover's
        document shows no legal move yet), "over" (no game, or the game ended: counted as
        finished) or "failed" (the socket closed or an answer timed out)."""
        doc = self.clients[0].doc
        assert doc is not None
        game = doc["game"]
        if game is None or game["game_over"]:
            self.stats.games_finished += game is not None and game["game_over"]
            return "over"
        seats = {c.seat: c for c in self.clients if c.seat is not None}
        mover = seats[game["turn"]]
        # every client must hold the current version before the next move
        legal = mover.doc["game"]["legal"] if mover.doc else []
        if not legal:
            return "wait"
        self.sent += 1
        new_v = mover.v + 1
        done = asyncio.Event()
        sent = time.perf_counter()
        self.waiting[new_v] = (sent, len(self.clients), done)
        try:
            answer = await mover.move(legal[0], f"m{self.sent}", timeout_s)
        except websockets.ConnectionClosed as exc:
            self.stats.errors += 1
            self.stats.closed.append(str(exc))
            return "failed"
        except TimeoutError:
            self.stats.errors += 1
            return "failed"
        outcome = "moved"
        if answer["t"] == "accepted":
            self.stats.ack_ms.append((time.perf_counter() - sent) * 1000)
            self.stats.moves += 1
            try:
                await asyncio.wait_for(done.wait(), timeout_s)
            except TimeoutError:
                self.stats.errors += 1
        else:
            code = answer["code"]
            self.stats.rejected[code] = self.stats.rejected.get(code, 0) + 1
            outcome = "rejected"
        self.waiting.pop(new_v, None)
        return outcome


def histogram_quantiles(text: str, name: str) -> tuple[float, float]:
    """p50 and p99 (bucket upper bounds, ms) of a Prometheus histogram in /metrics text."""
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float("inf") if bound == "+Inf" else float(bound),
                            float(line.rsplit(" ", 1)[1])))
    if not buckets or buckets[-1][1] == 0:
        return float("nan"), float("nan")
    total = buckets[-1][1]
    found = []
    for q in (0.5, 0.99):
        found.append(next(b for b, count in buckets if count >= q * total) * 1000)
    return found[0], found[1]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def post(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST with a few retries (a loaded machine drops the odd connection)."""
    for attempt in range(5):
        try:
            response = await http.post(path, json=body)
            response.raise_for_status()
            result: dict[str, Any] = response.json()
            return result
        except httpx.HTTPError:
            if attempt == 4:
                raise
            await asyncio.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


async def setup_table(http: httpx.AsyncClient, args: argparse.Namespace) -> tuple[str, list[str]]:
    body = {"rules": {"preset": args.preset, "target": args.target}, "players": args.players}
    table = (await post(http, "/api/tables", body))["id"]
    tokens = []
    for seat in range(args.players):
        joined = await post(http, f"/api/tables/{table}/join", {"seat": seat, "name": f"p{seat}"})
        tokens.append(joined["token"])
    return table, tokens


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-bench-"))
    redis: RedisProcess | None = None
    redis_url = args.redis_url
    if redis_url is None:
        redis = RedisProcess(tmp / "redis", appendfsync="everysec")
        redis_url = redis.start()
    servers = [Server(redis_url, {"RATE": "50/100"}, tmp / f"server-{n}.log",
                      tmp / f"server-{n}.prof" if args.profile else None,
                      args.python,
                      stalls=(tmp / f"server-{n}.stalls", args.stalls) if args.stalls else None)
               for n in range(args.servers)]
    stats, crowd_stats = Stats(), Stats()
    tables: list[Table] = []
    try:
        await asyncio.gather(*(s.wait_healthy() for s in servers))
        print(f"servers: {len(servers)}, tables: {args.tables}, players: {args.players}, "
              f"spectators/table: {args.spectators}, pace: {args.pace}s/move/table",
              flush=True)
        limits = httpx.Limits(max_connections=20)
        async with httpx.AsyncClient(base_url=servers[0].url, limits=limits, timeout=30) as http:
            sem = asyncio.Semaphore(20)

            async def make() -> tuple[str, list[str]]:
                async with sem:
                    return await setup_table(http, args)

            made = await asyncio.gather(*(make() for _ in range(args.tables)))
            crowd_made = await setup_table(http, args) if args.crowd else None
            idle_made = await setup_table(http, args) if args.idle else None
        k = 0
        for table_id, tokens in made:
            table = Table(table_id, stats)
            for token in [*tokens, *([None] * args.spectators)]:
                table.clients.append(Client(table, token))
            tables.append(table)
        if crowd_made is not None:
            crowd = Table(crowd_made[0], crowd_stats, crowd=True)
            for token in [*crowd_made[1], *([None] * args.crowd)]:
                crowd.clients.append(Client(crowd, token))
            tables.append(crowd)
        clients = [c for t in tables for c in t.clients]
        connect_sem = asyncio.Semaphore(100)

        async def connect(client: Client, n: int) -> None:
            async with connect_sem:
                await client.connect(servers[n % len(servers)].ws_url)

        for server in servers:
            server.base_rss_kb = server.rss_kb()
        started = time.perf_counter()
        await asyncio.gather(*(connect(c, k + i) for i, c in enumerate(clients)))
        readers = [asyncio.create_task(c.read()) for c in clients]
        await asyncio.gather(*(c.ready.wait() for c in clients))
        print(f"{len(clients)} connections ready in {time.perf_counter() - started:.1f}s",
              flush=True)
        await asyncio.sleep(0.5)
        for server in servers:
            server.connected_rss_kb = server.rss_kb()
            server.peak_rss_kb = max(server.peak_rss_kb, server.connected_rss_kb)

        async def sample_rss() -> None:
            while True:
                for server in servers:
                    server.peak_rss_kb = max(server.peak_rss_kb, server.rss_kb())
                await asyncio.sleep(0.5)

        idle_readers: list[asyncio.Task[None]] = []
        idle_clients: list[Client] = []
        if idle_made is not None:
            idle_readers, idle_clients = await connect_idle(args, idle_made[0], servers, stats)
        sampler = asyncio.create_task(sample_rss())
        deadline = time.perf_counter() + args.max_seconds
        begun, window = time.perf_counter(), [time.time()]
        cpu_before = [s.cpu_s() for s in servers]
        load_before = os.getloadavg()[0]
        players = [t.play(args.pace, deadline) for t in tables if not t.crowd]
        if args.crowd:
            players.append(tables[-1].play(args.crowd_pace, deadline))
        await asyncio.gather(*players)
        elapsed = time.perf_counter() - begun
        window.append(time.time())
        cpu_used = sum(s.cpu_s() for s in servers) - sum(cpu_before)
        stats.server_cpu_s = cpu_used
        stats.load = (load_before, os.getloadavg()[0])
        sampler.cancel()
        for c in clients + idle_clients:
            await c.socket.close()
        for reader in idle_readers:
            reader.cancel()
        for reader in readers:
            reader.cancel()
        async with httpx.AsyncClient() as http:
            for server in servers:
                text = (await http.get(server.url + "/metrics")).text
                server.ack_q = histogram_quantiles(text, "dominoes_ack_seconds")
                server.fanout_q = histogram_quantiles(text, "dominoes_fanout_seconds")
        report(args, stats, crowd_stats, servers, len(clients), elapsed)
        if args.stalls:
            report_stalls([tmp / f"server-{n}.stalls" for n in range(len(servers))],
                          window[0], window[1], args.stalls)
        print(f"server logs: {tmp}")
    finally:
        for server in servers:
            server.stop()
        if redis is not None:
            redis.stop()
            shutil.rmtree(tmp / "redis", ignore_errors=True)


async def connect_idle(
    args: argparse.Namespace, table_id: str, servers: list[Server], stats: Stats
) -> tuple[list[asyncio.Task[None]], list[Client]]:
    """Open `args.idle` spectator sockets on a table nobody plays; measure the RSS they cost."""
    table = Table(table_id, Stats())
    idle = [Client(table, None) for _ in range(args.idle)]
    before = [s.rss_kb() for s in servers]
    started = time.perf_counter()
    sem = asyncio.Semaphore(50)

    async def one(client: Client, n: int) -> None:
        async with sem:
            await client.connect(servers[n % len(servers)].ws_url)

    await asyncio.gather(*(one(c, n) for n, c in enumerate(idle)))
    readers = [asyncio.create_task(c.read()) for c in idle]
    await asyncio.gather(*(c.ready.wait() for c in idle))
    await asyncio.sleep(1.0)
    after = [s.rss_kb() for s in servers]
    growth = sum(a - b for a, b in zip(after, before, strict=True))
    stats.idle = (len(idle), growth / max(1, len(idle)), time.perf_counter() - started)
    print(f"{len(idle)} idle connections ready in {stats.idle[2]:.1f}s", flush=True)
    return readers, idle


def report(args: argparse.Namespace, stats: Stats, crowd: Stats, servers: list[Server],
           connections: int, elapsed: float) -> None:
    rss_growth = sum(max(0, s.connected_rss_kb - s.base_rss_kb) for s in servers)
    per_conn_kb = rss_growth / max(1, connections)
    bytes_median = statistics.median(stats.play_bytes) if stats.play_bytes else float("nan")
    figures = {
        "moves/s": stats.moves / elapsed if elapsed else 0.0,
        "ack_p50_ms": pct(stats.ack_ms, 0.50), "ack_p99_ms": pct(stats.ack_ms, 0.99),
        "fanout_p50_ms": pct(stats.fanout_ms, 0.50), "fanout_p99_ms": pct(stats.fanout_ms, 0.99),
        "bytes_median": bytes_median,
        "rss_kb": per_conn_kb,
    }
    print(f"\nmoves accepted: {stats.moves} in {elapsed:.1f}s; games finished: "
          f"{stats.games_finished}/{args.tables}; rejected: {stats.rejected or 0}; "
          f"errors: {stats.errors}")
    if stats.closed:
        print(f"connections closed by the server: {len(stats.closed)}, e.g. {stats.closed[0]}")
    print(f"moves/s:                          {figures['moves/s']:.1f}")
    if stats.moves:
        print(f"server CPU per move:              {stats.server_cpu_s / stats.moves * 1e6:.0f} µs "
              f"(all server processes; {stats.server_cpu_s / elapsed * 100:.0f}% of one core)")
    print(f"machine load average:             {stats.load[0]:.1f} at start, "
          f"{stats.load[1]:.1f} at end ({os.cpu_count()} cores)")
    print(f"move -> accepted  p50 / p99:      {figures['ack_p50_ms']:.2f} / "
          f"{figures['ack_p99_ms']:.2f} ms")
    print(f"move -> all diffs p50 / p99:      {figures['fanout_p50_ms']:.2f} / "
          f"{figures['fanout_p99_ms']:.2f} ms")
    for n, server in enumerate(servers):
        print(f"server {n} own histograms (bucket bounds) p50 / p99: ack "
              f"<= {server.ack_q[0]:g} / <= {server.ack_q[1]:g} ms, fan-out "
              f"<= {server.fanout_q[0]:g} / <= {server.fanout_q[1]:g} ms")
    print(f"bytes per diff (play, median):    {bytes_median:.0f} B payload "
          f"({bytes_median + 2:.0f} B with the websocket header)")
    print("server RSS before sockets / with sockets / peak: " + ", ".join(
        f"{s.base_rss_kb / 1024:.1f} / {s.connected_rss_kb / 1024:.1f} / "
        f"{s.peak_rss_kb / 1024:.1f} MiB" for s in servers))
    print(f"RSS growth per connection:        {per_conn_kb:.1f} KB ({connections} connections, "
          "measured from before the first websocket to all of them holding a snapshot)")
    if crowd.fanout_ms or crowd.crowd_ms:
        figures["crowd_p99_ms"] = pct(crowd.crowd_ms, 0.99)
        print(f"crowd ({args.crowd} spectators) move -> all p50 / p99: "
              f"{pct(crowd.crowd_ms, 0.5):.1f} / {figures['crowd_p99_ms']:.1f} ms")
    if stats.idle is not None:
        figures["idle_kb"] = stats.idle[1]
        print(f"idle connections:                 {stats.idle[0]} held by "
              f"{len(servers)} process(es), {stats.idle[1]:.1f} KB RSS each")
    print("\nagainst service.md targets:")
    rows = [("ack p99", "ack_p99_ms", "ms"), ("fan-out p99", "fanout_p99_ms", "ms"),
            ("bytes per viewer per play (median, payload)", "bytes_median", "B"),
            ("memory per connected client", "rss_kb", "KB"),
            ("memory per idle connection", "idle_kb", "KB"),
            ("crowd move -> all p99", "crowd_p99_ms", "ms")]
    for label, key, unit in rows:
        if key not in figures:
            continue
        value, target = figures[key], TARGETS[key]
        verdict = "ok" if value <= target else "MISSED"
        print(f"  {label:45s} {value:8.2f} {unit:2s}  target <= {target:g} {unit}  {verdict}")


def report_stalls(paths: list[Path], begun: float, ended: float, threshold_ms: float) -> None:
    """The servers' event loops held busy for ``threshold_ms`` or more during the moves: how
    often and how long in all, by what ran most in each stretch (the collector when it took half
    of it), and the longest."""
    stretches = []
    for n, path in enumerate(paths):
        for line in path.read_text().splitlines():
            stretch = json.loads(line)
            if begun <= stretch["at"] <= ended:
                stretches.append((n, stretch))
    by: dict[str, list[float]] = {}
    for _, stretch in stretches:
        key = "the garbage collector" if stretch["gc_ms"] >= stretch["ms"] / 2 else \
            stretch["outer"][0][0] if stretch["outer"] else "?"
        by.setdefault(key, []).append(stretch["ms"])
    held_ms = sum(stretch["ms"] for _, stretch in stretches)
    print(f"\nevent loop busy for {threshold_ms:g} ms or more without a break, over "
          f"{ended - begun:.0f} s of moves: {len(stretches)} times, {held_ms:.0f} ms in all; "
          "by what ran most in each (count, total ms, longest ms):")
    for key, times in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {key:50s} {len(times):5d} {sum(times):8.0f} {max(times):7.1f}")
    print("longest:")
    for n, stretch in sorted(stretches, key=lambda s: -s[1]["ms"])[:10]:
        print(f"  server {n} +{stretch['at'] - begun:6.1f} s {stretch['ms']:6.1f} ms "
              f"(collector {stretch['gc_ms']:.1f}): {stretch['outer']} / {stretch['inner']}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tables", type=int, default=500)
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--spectators", type=int, default=1, help="spectators per table")
    p.add_argument("--pace", type=float, default=1.0, help="seconds between moves of a table")
    p.add_argument("--servers", type=int, default=1, choices=(1, 2))
    p.add_argument("--preset", default="all-fives")
    p.add_argument("--target", type=int, default=150, help="points to win (game length)")
    p.add_argument("--max-seconds", type=float, default=300.0)
    p.add_argument("--crowd", type=int, default=0, help="one more table with this many spectators")
    p.add_argument("--idle", type=int, default=0,
                   help="also hold this many idle spectator sockets (e.g. 10000)")
    p.add_argument("--crowd-pace", type=float, default=1.0)
    p.add_argument("--redis-url", default=None, help="default: a private redis-server")
    p.add_argument("--quick", action="store_true", help="20 tables, short games")
    p.add_argument("--python", default=sys.executable,
                   help="interpreter for the servers (e.g. a venv with other packages)")
    p.add_argument("--profile", action="store_true",
                   help="run the servers under cProfile (server-N.prof beside the logs)")
    p.add_argument("--stalls", type=float, default=0.0, metavar="MS",
                   help="sample each server's stack every 0.3 ms (a thread; the servers run a "
                        "little slower) and report the stretches of MS ms or more in which its "
                        "event loop never waited for events, by what ran in them")
    args = p.parse_args(argv)
    if args.quick:
        args.tables, args.target, args.max_seconds = min(args.tables, 20), 30, 60.0
    return args


def main(argv: list[str] | None = None) -> None:
    def stop(signum: int, frame: object) -> None:
        raise SystemExit(1)  # so that the servers and Redis started here are stopped

    signal.signal(signal.SIGTERM, stop)
    asyncio.run(run(parse(argv)))


if __name__ == "__main__":
    main()
