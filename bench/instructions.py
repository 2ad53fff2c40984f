"""Instructions per move: what the move path costs the server process (and Redis), counted by
valgrind's callgrind instead of timed, so that the figure repeats from run to run whatever else
the machine is doing (a shared machine's CPU times drift ±10 % between runs; instruction counts
do not: three runs agree within 0.1 %).

    python -m bench.instructions [--tables 50] [--moves 2000] [--top 25]
    python -m bench.instructions --python .venv312/bin/python --names  # Python function names
    python -m bench.instructions --profile   # the same workload under cProfile, no valgrind

Starts a private Redis and one real server process (`server.__main__.main`, run by this module's
`--serve`: the games' seeds drawn from a seeded generator, so every run plays the same deals)
under `valgrind --tool=callgrind --instr-atstart=no`, and Redis under callgrind too
(`--no-redis-callgrind`: natively). Makes `--tables` tables of `--players` seats (all-fives by
default, through the HTTP API, one at a time) with websocket clients in this process
(bench.load's), plays `--warmup` moves per table uncounted, then turns the instrumentation on
(`callgrind_control -i on`), plays `--moves` moves one at a time (round-robin over the tables,
each the first legal move of the seat to move; the next starts once its `accepted` and every
client's diff have arrived), turns it off and dumps the counts. Then the same for
`--idle-seconds` with no move, so that what the processes do by the clock (the loop-lag probe,
uvicorn's tick, Redis' cron) is known per second and taken off: under valgrind a move takes
about 10 ms of wall time, and those timers would otherwise be charged to the moves. For the
same reason the server runs with its pings, presence refresh, quick-play matcher, leaderboard
refresh, archive sweep and deadline poll made rare (they are paced by the clock, not by
moves), without analysis workers and without PostgreSQL (live tables need none).

Prints one JSON line: instructions per move of the server (`server_ir_per_move`: the window's
total less the idle rate times the window's length; `server_ir_per_move_raw`: the window's
total), of Redis likewise, the idle rates, the window's length, and the server's costliest
functions inside the window (`callgrind_annotate`): C functions by inclusive and by self cost
and by object file (the interpreter's own frames, `_PyEval_EvalFrameDefault`, stand for Python
code). With `--names` (an interpreter of Python 3.12 or later with the server's packages) the
server runs with `-X perf`, whose trampolines give each Python function a code address of its
own, and the Python functions are listed by inclusive instructions (such a run counts more in
all: every Python call then goes through C). `--profile` runs the same workload natively with
cProfile switched on for the same window (SIGUSR1 / SIGUSR2 to the server) and lists Python
functions by CPU µs per move (cProfile's own overhead included: read the shares, not the sums).
Kernel work (system calls) is not counted by callgrind. Linux only; needs valgrind; asserts
nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.load import REPO, Client, Server, Stats, Table, post
from server.redis_embedded import RedisProcess, find_redis_server

CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=no",
             "--compress-strings=no", "--compress-pos=no"]

# Work the server does by the clock, not per move, made rare for the window: the deadline
# loop's longest wait (server.scheduler.POLL_S, 0.1 s: ten Redis reads a second)...
POLL_S = 60.0
# ... and the settings of the rest.
QUIET = {"WS_PING_INTERVAL_S": "3600", "WS_PING_TIMEOUT_S": "3600", "RECONNECT_WINDOW_S": "10800",
         "QUICKPLAY_TICK_S": "3600", "LEADERBOARD_REFRESH_S": "3600", "ARCHIVE_SWEEP_S": "3600",
         "ANALYSIS_WORKERS": "0", "RATE": "50/100", "PYTHONHASHSEED": "0"}


def serve(seed: int, profile_path: str) -> None:
    """The real server (`server.__main__.main`, run in its own process) with repeatable seeds,
    the deadline loop's poll made rare and no PostgreSQL; with a profile path, cProfile (CPU
    time) on at SIGUSR1 and off, written there, at SIGUSR2."""
    import cProfile
    import random
    import secrets

    import server.scheduler
    from server.pg_embedded import PgProcess, PgStartError

    secrets.randbits = random.Random(seed).getrandbits  # type: ignore[assignment]
    server.scheduler.POLL_S = POLL_S

    def no_postgres(self: PgProcess, *args: object, **kwargs: object) -> str:
        raise PgStartError("no PostgreSQL in this benchmark")

    PgProcess.start = no_postgres  # type: ignore[method-assign]
    if profile_path:
        profile = cProfile.Profile(time.process_time)

        def profile_on(signum: int, frame: object) -> None:
            profile.enable()

        def profile_off(signum: int, frame: object) -> None:
            profile.disable()
            profile.dump_stats(profile_path)

        signal.signal(signal.SIGUSR1, profile_on)
        signal.signal(signal.SIGUSR2, profile_off)
    sys.argv = sys.argv[:1]
    from server.__main__ import main as server_main

    server_main()


def control(pid: int, *args: str, host: str | None = None) -> None:
    """callgrind_control on the process `pid` (a callgrind run). Valgrind names its control
    pipes after the process's HOST variable (the server's is its address), so the same
    `host` must be given here."""
    env = dict(os.environ)
    if host is not None:
        env["HOST"] = host
    else:
        env.pop("HOST", None)
    result = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True,
                            text=True, timeout=120, check=False, env=env)
    if result.returncode or "OK." not in result.stdout or "error" in result.stderr:
        raise RuntimeError(f"callgrind_control {' '.join(args)} {pid}: "
                           f"{result.stdout.strip()} {result.stderr.strip()}")


def dumps(out: Path) -> list[Path]:
    """The numbered dumps callgrind wrote for `--callgrind-out-file=out`, oldest first."""
    found = [p for p in out.parent.glob(out.name + ".*") if p.suffix[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.suffix[1:]))


@dataclass(frozen=True)
class Counted:
    """A process running under callgrind: its pid, its HOST variable, its dumps' path."""
    pid: int
    host: str | None
    out: Path

    def control(self, *args: str) -> None:
        control(self.pid, *args, host=self.host)

    async def dump(self) -> Path:
        """Ask callgrind to write its counts; the new dump once it is there."""
        before = len(dumps(self.out))
        self.control("-d")
        for _ in range(1200):
            found = dumps(self.out)
            if len(found) > before and \
                    "totals:" in found[-1].read_text(errors="replace")[-4096:]:
                return found[-1]
            await asyncio.sleep(0.1)
        raise RuntimeError(f"callgrind wrote no dump for {self.out}")


async def counted_window(processes: list[Counted], body: Awaitable[object]
                         ) -> tuple[list[Path], float]:
    """The dumps of what `processes` did while `body` ran, and how long it ran (seconds)."""
    for each in processes:
        each.control("-z")
    for each in processes:
        each.control("-i", "on")
    started = time.perf_counter()
    await body
    elapsed = time.perf_counter() - started
    for each in processes:
        each.control("-i", "off")
    return [await each.dump() for each in processes], elapsed


def total_ir(path: Path) -> int:
    """The instructions counted in one callgrind dump."""
    for line in reversed(path.read_text(errors="replace").splitlines()):
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


ANNOTATED = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(?:\*\s+)?(\S.*?)\s*$")
OBJECT = re.compile(r"\s*\[([^\]]*)\]$")
UNNAMED = re.compile(r"^\?\?\?:0x([0-9a-f]+)$")


def annotated(path: Path, inclusive: bool) -> list[tuple[int, str, str]]:
    """Every function of a dump, costliest first: (instructions, function, object file)."""
    result = subprocess.run(
        ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
         "--threshold=100", str(path)], check=True, capture_output=True, text=True)
    rows: list[tuple[int, str, str]] = []
    started = False
    for line in result.stdout.splitlines():
        if "file:function" in line:
            started = True
            continue
        match = ANNOTATED.match(line) if started else None
        if match is None:
            continue
        name, obj = match.group(2), ""
        found = OBJECT.search(name)
        if found is not None:
            name, obj = name[:found.start()], Path(found.group(1)).name
        name = re.sub(r"^/tmp/python-build[^/]*/Python-[^/]*/", "", name)
        name = re.sub(r"^/project/", "", name)
        rows.append((int(match.group(1).replace(",", "")), name, obj))
    return rows


def perf_names(pid: int) -> dict[int, str]:
    """The Python functions of a process run with `-X perf` (3.12+), by their trampoline's
    address (/tmp/perf-PID.map): callgrind shows each trampoline as a function of its own,
    named by its address, whose inclusive cost is the Python function's."""
    names: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/tmp/perf-{pid}.map").read_text().splitlines():
            address, _, name = line.split(" ", 2)
            if name.startswith("py::"):
                function, _, file = name[4:].partition(":")
                file = file.replace(str(REPO) + "/", "")
                file = re.sub(r".*/(site|dist)-packages/", "", file)
                names[int(address, 16)] = f"{file}:{function}"
    return names


def listing(path: Path, moves: int, count: int, names: dict[int, str]) -> dict[str, Any]:
    """The costliest functions of the window's dump, in instructions per move: C functions by
    inclusive and self cost and by object file, Python functions (with `names`) by inclusive
    cost (each function's outermost activation: its recursive ones are within it)."""
    total = total_ir(path)

    def row(ir: int, name: str) -> list[Any]:
        return [round(ir / moves), round(ir / total, 4), name]

    own = annotated(path, inclusive=False)
    objects: dict[str, int] = {}
    for ir, _, obj in own:
        objects[obj or "?"] = objects.get(obj or "?", 0) + ir
    outermost = [(ir, name, obj) for ir, name, obj in annotated(path, inclusive=True)
                 if "'" not in name]  # a function's recursive activations are listed apart
    out: dict[str, Any] = {
        "inclusive": [row(ir, f"{name} [{obj}]") for ir, name, obj in outermost[:count]],
        "self": [row(ir, f"{name} [{obj}]") for ir, name, obj in own[:count]],
        "self_by_object": [row(ir, obj) for obj, ir in
                           sorted(objects.items(), key=lambda item: -item[1])[:count]],
    }
    if names:
        python: list[list[Any]] = []
        for ir, name, _ in outermost:
            found = UNNAMED.match(name)
            if found is not None and int(found.group(1), 16) in names:
                python.append(row(ir, names[int(found.group(1), 16)]))
                if len(python) == count:
                    break
        out["python_inclusive"] = python
    return out


def redis_wrapper(directory: Path, out: Path) -> str:
    """An executable that runs redis-server under callgrind (the instrumentation off)."""
    script = directory / "redis-callgrind"
    command = " ".join([*CALLGRIND, f"--callgrind-out-file={out}", find_redis_server()])
    script.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
    script.chmod(0o755)
    return str(script)


async def make_tables(server: Server, args: argparse.Namespace) -> list[Table]:
    """The tables, every seat taken, each client holding its snapshot."""
    stats = Stats()
    body = {"rules": {"preset": args.preset, "target": args.target}, "players": args.players}
    tables: list[Table] = []
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as http:
        for _ in range(args.tables):  # one at a time: the same order of events every run
            table = Table((await post(http, "/api/tables", body))["id"], stats)
            for seat in range(args.players):
                joined = await post(http, f"/api/tables/{table.id}/join",
                                    {"seat": seat, "name": f"p{seat}"})
                table.clients.append(Client(table, joined["token"]))
            table.clients.extend(Client(table, None) for _ in range(args.spectators))
            tables.append(table)
    for table in tables:
        for client in table.clients:
            await client.connect(server.ws_url)
            asyncio.create_task(client.read())  # noqa: RUF006 - ends with its socket
            await asyncio.wait_for(client.ready.wait(), 300)
    return tables


async def play(tables: list[Table], moves: int) -> int:
    """`moves` moves one at a time, round-robin over the tables still playing; how many."""
    done = 0
    playing = list(tables)
    while done < moves and playing:
        for table in list(playing):
            outcome = await table.step(timeout_s=600)
            if outcome == "moved":
                done += 1
            elif outcome in ("over", "failed"):
                playing.remove(table)
            elif outcome == "rejected":
                raise RuntimeError(f"a move was rejected at {table.id}: {table.stats.rejected}")
            if done == moves:
                break
    return done


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="dominoes-instructions-"))
    server_out, redis_out = tmp / "server.callgrind", tmp / "redis.callgrind"
    counted_redis = not args.profile and args.redis_callgrind
    redis = RedisProcess(tmp / "redis", appendfsync="everysec",
                         executable=redis_wrapper(tmp, redis_out) if counted_redis else None)
    redis_url = redis.start(timeout=120)
    redis_pid = int((redis.data_dir / "redis.pid").read_text().strip()) if counted_redis else 0
    profile_path = tmp / "server.prof"
    python = [args.python, "-X", "perf"] if args.names else [args.python]
    command = [*python, "-m", "bench.instructions", "--serve", str(args.seed),
               str(profile_path) if args.profile else ""]
    if not args.profile:
        command = [*CALLGRIND, f"--callgrind-out-file={server_out}", *command]
    server_env = {**QUIET, "DATA_DIR": str(tmp / "data"), "HOST": "127.0.0.1"}
    server = Server(redis_url, server_env, tmp / "server.log", command=command)
    out: dict[str, Any] = {"bench": "instructions", "tables": args.tables,
                           "players": args.players, "spectators": args.spectators,
                           "preset": args.preset, "seed": args.seed}
    try:
        await server.wait_healthy(timeout_s=600)
        tables = await make_tables(server, args)
        await play(tables, args.warmup * len(tables))
        pid = server.proc.pid
        if args.profile:
            os.kill(pid, signal.SIGUSR1)
            cpu = server.cpu_s()
            started = time.perf_counter()
            moves = await play(tables, args.moves)
            out["window_s"] = round(time.perf_counter() - started, 1)
            cpu = server.cpu_s() - cpu
            os.kill(pid, signal.SIGUSR2)
            for _ in range(100):
                if profile_path.exists():
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            out["moves"] = moves
            out["server_cpu_us_per_move"] = round(cpu / moves * 1e6, 1)
            out.update(profile_top(profile_path, moves, args.top))
            return out
        processes = [Counted(pid, server_env["HOST"], server_out)]
        if counted_redis:
            processes.append(Counted(redis_pid, os.environ.get("HOST"), redis_out))
        moved: list[int] = []

        async def moving() -> None:
            moved.append(await play(tables, args.moves))

        dumped, window_s = await counted_window(processes, moving())
        moves = moved[0]
        idled, idle_s = await counted_window(processes, asyncio.sleep(args.idle_seconds))
        out.update({"moves": moves, "window_s": round(window_s, 1), "idle_s": round(idle_s, 1)})
        for name, window, idle in zip(("server", "redis"), dumped, idled, strict=False):
            raw, idle_rate = total_ir(window), total_ir(idle) / idle_s
            out[f"{name}_ir_per_move"] = round((raw - idle_rate * window_s) / moves)
            out[f"{name}_ir_per_move_raw"] = round(raw / moves)
            out[f"{name}_idle_ir_per_s"] = round(idle_rate)
        out.update(listing(dumped[0], moves, args.top, perf_names(pid) if args.names else {}))
        if counted_redis:
            out["redis_self"] = listing(dumped[1], moves, min(args.top, 10), {})["self"]
        if args.keep:
            out["dumps"] = str(tmp)
        return out
    finally:
        server.stop()
        redis.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def profile_top(path: Path, moves: int, count: int) -> dict[str, Any]:
    """The costliest Python functions of a cProfile dump, by own and by cumulative time."""
    stats = pstats.Stats(str(path))
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # pstats' own table
    rows = [(key, value[2], value[3], value[1]) for key, value in table.items()]

    def name(key: tuple[str, int, str]) -> str:
        file, line, function = key
        file = file.replace(str(Path.cwd()) + "/", "")
        file = re.sub(r".*/site-packages/", "", file)
        return f"{file}:{line}:{function}" if line else function

    def top(index: int) -> list[list[Any]]:
        ordered = sorted(rows, key=lambda row: row[index], reverse=True)[:count]
        return [[round(row[index] / moves * 1e6, 1), round(row[3] / moves, 2), name(row[0])]
                for row in ordered]

    return {"profile_self_us": top(1), "profile_cumulative_us": top(2)}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--spectators", type=int, default=0, help="spectators per table")
    p.add_argument("--preset", default="all-fives")
    p.add_argument("--target", type=int, default=150, help="points to win (game length)")
    p.add_argument("--moves", type=int, default=2000, help="moves counted")
    p.add_argument("--warmup", type=int, default=2, help="moves per table before counting")
    p.add_argument("--idle-seconds", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=1, help="the source of the games' seeds")
    p.add_argument("--top", type=int, default=25, help="functions listed")
    p.add_argument("--profile", action="store_true",
                   help="cProfile the window natively instead of counting instructions")
    p.add_argument("--no-redis-callgrind", dest="redis_callgrind", action="store_false",
                   help="run Redis natively (its instructions not counted)")
    p.add_argument("--python", default=sys.executable, help="the server's interpreter")
    p.add_argument("--names", action="store_true",
                   help="run the server with -X perf (Python 3.12+) and list the Python "
                        "functions by inclusive instructions (the counts then differ from "
                        "3.11's: every Python call goes through a trampoline)")
    p.add_argument("--keep", action="store_true", help="keep the dumps and logs")
    p.add_argument("--serve", nargs=2, metavar=("SEED", "PROFILE"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    def stop(signum: int, frame: object) -> None:
        raise SystemExit(1)  # so that the server and Redis started here are stopped

    args = parse(argv)
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    signal.signal(signal.SIGTERM, stop)
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
