"""Floods against honest tables, calm and under attack in one run: chat floods and history
replays (docs/operations.md "Limits and abuse").

    python -m bench.scenarios flood                  # the same, from the scenarios runner
    python -m bench.floods --tables 20 --bots 10 --seconds 15

One Redis and one server process with the default limits (the message rate as in production).
The same honest tables play through five phases of `--seconds` each:

1. calm;
2. chat flood: 100 spectator sockets (10 addresses) on honest table 0, created with
   `spectator_chat: true` so that only the budgets stand in the way, each sending a 200-character
   line every second and reading what comes;
3. sync flood: on a long finished table, 10 never-reading sockets and 40 reading ones each
   send `sync since=0` 10 times a second;
4. resume flood: 4 loops reconnect to that table with `hello since=0` and read the whole
   history, again and again, as fast as they can;
5. calm again (what the machine gives now).

Honest tables: `--tables` two-player tables (both seats and a spectator are bench clients, one
move a second per table) and `--bots` tables of one person against a bot (BOT_DELAY_MS=0: the
bot's reply time is the server's own). Printed per phase: move -> accepted p50/p99, move -> the
diff at every socket of the table p50/p99, accepted -> the bot's move p50/p99, honest errors
and closes, the server's peak RSS, and what the attackers got. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgpack
import redis.asyncio
import websockets

from bench.load import Client, Stats, Table, pct, post
from bench.scenarios import ADDRESSES, RESULTS, Stack
from server.diff import apply_ops
from server.tables import TableService

LINE = "x" * 200


@dataclass
class BotStats:
    ack_ms: list[float] = field(default_factory=list)
    reply_ms: list[float] = field(default_factory=list)
    errors: int = 0


class BotSeat:
    """A person at seat 0 against a bot: move -> accepted, and accepted -> the bot's move."""

    def __init__(self, table: str, token: str) -> None:
        self.table, self.token = table, token
        self.doc: dict[str, Any] | None = None
        self.v = -1
        self.socket: Any = None
        self.stats = BotStats()
        self.moves = 0

    async def open(self, url: str) -> None:
        self.socket = await websockets.connect(url, max_size=2**22, open_timeout=30)
        await self.socket.send(msgpack.packb({"t": "hello", "proto": 1, "table": self.table,
                                              "token": self.token, "since": None}))
        while self.doc is None:
            self.apply(msgpack.unpackb(await asyncio.wait_for(self.socket.recv(), 30),
                                       raw=False))

    def apply(self, message: dict[str, Any]) -> None:
        if message["t"] == "snapshot":
            self.doc, self.v = message["doc"], message["v"]
        elif message["t"] == "diff" and self.doc is not None and message["v"] == self.v + 1:
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]

    async def play(self, until: float, pace: float = 1.0) -> None:
        sent_id, sent_at, accepted_v, accepted_at = "", 0.0, -1, 0.0
        next_at = time.perf_counter() + random.uniform(0, pace)
        try:
            while time.perf_counter() < until:
                game = (self.doc or {}).get("game")
                if game is None or game["game_over"]:
                    return
                now = time.perf_counter()
                if (not sent_id and accepted_v < 0 and game["turn"] == 0 and game["legal"]
                        and now >= next_at):
                    self.moves += 1
                    sent_id, sent_at = f"b{self.moves}", now
                    await self.socket.send(msgpack.packb({
                        "t": "move", "id": sent_id, "v": self.v, "move": game["legal"][0]}))
                try:
                    data = await asyncio.wait_for(self.socket.recv(), 0.1)
                except TimeoutError:
                    continue
                now = time.perf_counter()
                message = msgpack.unpackb(data, raw=False)
                self.apply(message)
                if message["t"] in ("accepted", "rejected") and message.get("id") == sent_id:
                    sent_id = ""
                    next_at = sent_at + pace
                    if message["t"] == "accepted":
                        self.stats.ack_ms.append((now - sent_at) * 1000)
                        accepted_v, accepted_at = message["v"], now
                    else:
                        self.stats.errors += 1
                elif message["t"] == "diff" and 0 <= accepted_v < message["v"]:
                    self.stats.reply_ms.append((now - accepted_at) * 1000)
                    accepted_v = -1
                elif message["t"] == "error":
                    self.stats.errors += 1
        except websockets.ConnectionClosed:
            self.stats.errors += 1


async def finished_table(redis_url: str, target: int = 250) -> tuple[str, int]:
    """A two-player game played to its end straight through a TableService: (id, version)."""
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        service = TableService(client, bot_delay_ms=0)
        created = await service.create({"players": 2,
                                        "rules": {"preset": "all-fives", "target": target}})
        table = str(created["id"])
        for seat in (0, 1):
            await service.join(table, seat, f"p{seat}", None)
        rng, n = random.Random(target), 0
        while True:
            version, doc = await service.snapshot(table, "s")
            if doc["game"]["game_over"]:
                return table, version
            seat = doc["game"]["turn"]
            _, own = await service.snapshot(table, str(seat))
            await service.submit(table, seat, rng.choice(own["game"]["legal"]), version, f"m{n}")
            n += 1
    finally:
        await client.aclose()


async def hello(url: str, table: str, address: str, since: int | None = None,
                **kwargs: Any) -> Any:
    ws = await websockets.connect(url, max_size=2**24, local_addr=(address, 0), **kwargs)
    await ws.send(msgpack.packb({"t": "hello", "proto": 1, "table": table, "token": None,
                                 "since": since}))
    return ws


@dataclass
class Attack:
    chat_sent: int = 0
    chat_refused: int = 0
    chat_relayed: int = 0  # spam lines an honest player of the victim table received
    syncs_sent: int = 0
    bytes_pulled: int = 0
    resumes: int = 0
    closes: dict[str, int] = field(default_factory=dict)

    def closed(self, code: object) -> None:
        self.closes[str(code)] = self.closes.get(str(code), 0) + 1


class ChatFlood:
    """100 spectator sockets (10 addresses) on one table, each sending a 200-character line a
    second and reading what comes; and an honest spectator counting the spam that reaches it."""

    def __init__(self, url: str, table: str, attack: Attack) -> None:
        self.url, self.table, self.attack = url, table, attack
        self.sockets: list[Any] = []
        self.witness: Any = None

    async def connect(self) -> None:
        for n in range(100):
            try:
                self.sockets.append(await hello(self.url, self.table, ADDRESSES[40 + n % 10]))
            except (OSError, websockets.WebSocketException):
                self.attack.closed("connect failed")
        self.witness = await hello(self.url, self.table, ADDRESSES[0])

    async def run(self, until: float) -> None:
        attack = self.attack

        async def spammer(n: int, ws: Any) -> None:
            async def read() -> None:
                with contextlib.suppress(websockets.ConnectionClosed):
                    async for data in ws:
                        if msgpack.unpackb(data, raw=False)["t"] == "error":
                            attack.chat_refused += 1

            reader = asyncio.create_task(read())
            await asyncio.sleep(random.uniform(0, 1))
            k = 0
            with contextlib.suppress(websockets.ConnectionClosed):
                while time.perf_counter() < until:
                    k += 1
                    await ws.send(msgpack.packb({"t": "chat", "text": f"{n}:{k} {LINE}"[:200]}))
                    attack.chat_sent += 1
                    await asyncio.sleep(1.0)
            await ws.close()
            reader.cancel()
            attack.closed(ws.close_code)

        async def witness() -> None:
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                while time.perf_counter() < until:
                    data = await asyncio.wait_for(self.witness.recv(), 2)
                    message = msgpack.unpackb(data, raw=False)
                    if message["t"] == "chat" and message["seat"] is None:
                        attack.chat_relayed += 1
            await self.witness.close()

        await asyncio.gather(witness(), *(spammer(n, ws) for n, ws in enumerate(self.sockets)))


class HistoryFlood:
    """On a long finished table: 10 never-reading sockets and 40 reading ones each sending
    `sync since=0` 10 times a second (`syncs`), or 4 loops of `hello since=0` + the whole
    history, again and again (`resumes`)."""

    def __init__(self, url: str, port: int, table: str, version: int, attack: Attack, *,
                 resumes: bool) -> None:
        self.url, self.port, self.table, self.version = url, port, table, version
        self.attack = attack
        self.resumes = resumes
        self.silent: list[Any] = []
        self.reading: list[Any] = []

    async def connect(self) -> None:
        if self.resumes:
            return
        for n in range(10):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
            sock.bind((ADDRESSES[20 + n % 10], 0))
            sock.connect(("127.0.0.1", self.port))
            sock.setblocking(False)
            ws = await websockets.connect(self.url, sock=sock, max_queue=1, ping_interval=None)
            await ws.send(msgpack.packb({"t": "hello", "proto": 1, "table": self.table,
                                         "token": None, "since": None}))
            self.silent.append(ws)
        for n in range(40):
            self.reading.append(await hello(self.url, self.table, ADDRESSES[30 + n % 10]))

    async def run(self, until: float) -> None:
        attack = self.attack
        sync = msgpack.packb({"t": "sync", "since": 0})

        async def never_reads(ws: Any) -> None:
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                while time.perf_counter() < until:
                    await asyncio.wait_for(ws.send(sync), 2)
                    attack.syncs_sent += 1
                    await asyncio.sleep(0.1)
            ws.transport.abort()

        async def reads_syncs(ws: Any) -> None:
            async def read() -> None:
                with contextlib.suppress(websockets.ConnectionClosed):
                    async for data in ws:
                        attack.bytes_pulled += len(data)

            reader = asyncio.create_task(read())
            with contextlib.suppress(websockets.ConnectionClosed):
                while time.perf_counter() < until:
                    await ws.send(sync)
                    attack.syncs_sent += 1
                    await asyncio.sleep(0.1)
            await ws.close()
            reader.cancel()
            attack.closed(ws.close_code)

        async def resume_loop(n: int) -> None:
            while time.perf_counter() < until:
                ws = await hello(self.url, self.table, ADDRESSES[50 + n], since=0)
                with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                    held = 0
                    while held < self.version and time.perf_counter() < until:
                        data = await asyncio.wait_for(ws.recv(), 10)
                        attack.bytes_pulled += len(data)
                        message = msgpack.unpackb(data, raw=False)
                        if message["t"] in ("diff", "snapshot"):
                            held = message["v"]
                    attack.resumes += held >= self.version
                await ws.close()

        await asyncio.gather(*(never_reads(ws) for ws in self.silent),
                             *(reads_syncs(ws) for ws in self.reading),
                             *(resume_loop(n) for n in range(4 if self.resumes else 0)),
                             return_exceptions=True)


@dataclass
class Phase:
    name: str
    honest: Stats
    bots: BotStats
    attack: Attack
    peak_rss_kb: int = 0
    server_ack: tuple[float, float] = (float("nan"), float("nan"))
    server_cpu: float = 0.0  # share of one core


def histogram_change(before: str, after: str, name: str) -> tuple[float, float]:
    """p50 and p99 (bucket upper bounds, ms) of what a Prometheus histogram counted between
    two /metrics texts."""
    def buckets(text: str) -> dict[str, float]:
        found = {}
        for line in text.splitlines():
            if line.startswith(name + "_bucket{"):
                found[line.split('le="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
        return found

    old, new = buckets(before), buckets(after)
    counts = sorted(((float("inf") if b == "+Inf" else float(b)), n - old.get(b, 0.0))
                    for b, n in new.items())
    if not counts or counts[-1][1] == 0:
        return float("nan"), float("nan")
    total = counts[-1][1]
    p50, p99 = (next(b for b, n in counts if n >= q * total) * 1000 for q in (0.5, 0.99))
    return p50, p99


async def scenario_flood(tables: int, bots: int, seconds: float) -> None:
    async with Stack(1, {"RATE": "10/20"}) as stack:
        server = stack.servers[0]
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            boards: list[Table] = []
            for n in range(tables):
                body: dict[str, Any] = {"rules": {"preset": "all-fives", "target": 500},
                                        "players": 2}
                if n == 0:
                    body["spectator_chat"] = True
                table = (await post(http, "/api/tables", body))["id"]
                tokens = [(await post(http, f"/api/tables/{table}/join",
                                      {"seat": s, "name": f"p{s}"}))["token"] for s in (0, 1)]
                board = Table(table, Stats())
                board.clients = [Client(board, t) for t in [*tokens, None]]
                boards.append(board)
            seats = []
            for _ in range(bots):
                table = (await post(http, "/api/tables", {
                    "rules": {"preset": "all-fives", "target": 500}, "players": 2,
                    "bots": {"1": "random"}}))["id"]
                token = (await post(http, f"/api/tables/{table}/join",
                                    {"seat": 0, "name": "p0"}))["token"]
                seats.append(BotSeat(table, token))
        long_table, long_version = await finished_table(stack.redis_url)
        clients = [c for b in boards for c in b.clients]
        for client in clients:
            await client.connect(server.ws_url)
        readers = [asyncio.create_task(c.read()) for c in clients]
        await asyncio.gather(*(c.ready.wait() for c in clients))
        for seat in seats:
            await seat.open(server.ws_url)
        phases = [Phase(name, Stats(), BotStats(), Attack())
                  for name in ("calm", "chat flood", "sync flood", "resume flood", "calm again")]
        attacks = {
            "chat flood": ["chat", server.ws_url, str(server.port), boards[0].id, "0"],
            "sync flood": ["syncs", server.ws_url, str(server.port), long_table,
                           str(long_version)],
            "resume flood": ["resumes", server.ws_url, str(server.port), long_table,
                             str(long_version)],
        }
        # One game per table through every phase (move ids stay unique); the figures go to
        # the phase they were measured in.
        end = time.perf_counter() + len(phases) * seconds + 120
        players = asyncio.gather(*(b.play(1.0, end) for b in boards))
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            for phase in phases:
                attacker = None
                if phase.name in attacks:
                    # The attackers run in a process of their own (not in this event loop), and
                    # connect first: the phase measures the flood itself.
                    attacker = await asyncio.create_subprocess_exec(
                        sys.executable, "-m", "bench.floods", "--attack",
                        *attacks[phase.name], str(seconds), stdout=asyncio.subprocess.PIPE)
                    assert attacker.stdout is not None
                    await attacker.stdout.readline()  # "ready"
                for board in boards:
                    board.stats = phase.honest
                for seat in seats:
                    seat.stats = phase.bots
                until = time.perf_counter() + seconds
                before = (await http.get("/metrics")).text
                cpu_before = server.cpu_s()

                async def sample(until: float = until, phase: Phase = phase) -> None:
                    while time.perf_counter() < until:
                        phase.peak_rss_kb = max(phase.peak_rss_kb, server.rss_kb())
                        await asyncio.sleep(0.25)

                await asyncio.gather(*(s.play(until) for s in seats), sample())
                for board in boards:
                    board.stats = Stats()  # between phases: not counted
                phase.server_cpu = (server.cpu_s() - cpu_before) / seconds
                phase.server_ack = histogram_change(
                    before, (await http.get("/metrics")).text, "dominoes_ack_seconds")
                if attacker is not None:
                    assert attacker.stdout is not None
                    line = await asyncio.wait_for(attacker.stdout.readline(), 60)
                    phase.attack = Attack(**json.loads(line))
                    await attacker.wait()
        for board in boards:
            board.stats = Stats()
        players.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await players
        for client in clients:
            await client.socket.close()
        for reader in readers:
            reader.cancel()
        for seat in seats:
            await seat.socket.close()
    report(phases, tables, bots, seconds)


def report(phases: list[Phase], tables: int, bots: int, seconds: float) -> None:
    print(f"\nflood: {tables} honest two-player tables (1 move/s each, a spectator each) and "
          f"{bots} person-vs-bot tables, {seconds:.0f} s per phase, one server process")
    print("| phase | honest moves | ack p50 / p99 | server's ack p50 / p99 | all diffs p50 / p99 "
          "| bot reply p50 / p99 | honest errors | server CPU | server RSS peak | attackers |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in phases:
        h, b, a = p.honest, p.bots, p.attack
        ack = h.ack_ms + b.ack_ms
        attack = ""
        if a.chat_sent:
            attack = (f"{a.chat_sent} chat lines sent, {a.chat_refused} refused, "
                      f"{a.chat_relayed} reached the table; closes {a.closes}")
        elif a.syncs_sent or a.resumes:
            attack = (f"{a.syncs_sent} syncs sent, {a.resumes} whole-history resumes, "
                      f"{a.bytes_pulled / 1e6:.1f} MB pulled; closes {a.closes}")
        print(f"| {p.name} | {h.moves + len(b.ack_ms)} | {pct(ack, .5):.1f} / "
              f"{pct(ack, .99):.1f} ms | <= {p.server_ack[0]:g} / <= {p.server_ack[1]:g} ms | "
              f"{pct(h.fanout_ms, .5):.1f} / "
              f"{pct(h.fanout_ms, .99):.1f} ms | {pct(b.reply_ms, .5):.1f} / "
              f"{pct(b.reply_ms, .99):.1f} ms | {h.errors + b.errors} | "
              f"{p.server_cpu * 100:.0f} % | "
              f"{p.peak_rss_kb / 1024:.0f} MB | {attack or '-'} |")
    calm = phases[0]
    for p in phases[1:-1]:
        RESULTS[f"honest ack p99, calm / {p.name}"] = (
            f"{pct(calm.honest.ack_ms + calm.bots.ack_ms, .99):.1f} / "
            f"{pct(p.honest.ack_ms + p.bots.ack_ms, .99):.1f} ms")
        RESULTS[f"bot reply p99, calm / {p.name}"] = (
            f"{pct(calm.bots.reply_ms, .99):.1f} / {pct(p.bots.reply_ms, .99):.1f} ms")


async def run_attack(kind: str, url: str, port: int, table: str, version: int,
                     seconds: float) -> None:
    """The attackers of one phase (a process of their own): connect, say "ready", flood for
    `seconds`, print what they got as JSON."""
    attack = Attack()
    flood: ChatFlood | HistoryFlood = (
        ChatFlood(url, table, attack) if kind == "chat"
        else HistoryFlood(url, port, table, version, attack, resumes=kind == "resumes"))
    await flood.connect()
    print("ready", flush=True)
    await flood.run(time.perf_counter() + seconds)
    print(json.dumps(dataclasses.asdict(attack)), flush=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=20, help="honest two-player tables")
    parser.add_argument("--bots", type=int, default=10, help="honest person-vs-bot tables")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--attack", nargs=6, metavar=("KIND", "URL", "PORT", "TABLE", "V", "S"),
                        help=argparse.SUPPRESS)  # the attackers' own process
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.attack:
        kind, url, port, table, version, seconds = args.attack
        asyncio.run(run_attack(kind, url, int(port), table, int(version), float(seconds)))
        return
    asyncio.run(scenario_flood(args.tables, args.bots, args.seconds))
    print("\n| scenario | figure |\n|---|---|")
    for key, value in RESULTS.items():
        print(f"| {key} | {value} |")


if __name__ == "__main__":
    main()
