"""`kill -9` of a server process in the middle of several live games.

Two server processes share one Redis; robots play six tables over both. One process is killed
with SIGKILL while moves are in flight, then started again; later the other one too. Every
robot resumes by itself (reconnect + hello with `since`, an unanswered move sent again with the
same id), every game reaches its end, and the audit (tests/reliability/games.py) finds no
acknowledged move lost, none applied twice, and no hidden tile in any frame or log line.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx
import pytest

from server import processes
from tests.reliability.conftest import FAST, start, stop
from tests.reliability.games import audit_table, seat_tables
from tests.reliability.leaks import log_lines_naming_tiles
from tests.reliability.robots import Robot
from tests.support.redis_server import RedisServer
from tests.support.servers import (
    GameClient,
    ServiceProcess,
    create_table,
    join,
    play_to_end,
)


def versions(robots: dict[str, list[Robot]]) -> list[int]:
    return [max(r.v or 0 for r in rs) for rs in robots.values()]


def live(robots: dict[str, list[Robot]]) -> list[bool]:
    return [not any(r.game_over for r in rs) for rs in robots.values()]


async def wait_for(condition: object, budget_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    while not condition():  # type: ignore[operator]
        if loop.time() > deadline:
            raise TimeoutError(f"condition not reached in {budget_s}s")
        await asyncio.sleep(0.01)


@pytest.mark.slow
async def test_kill_9_mid_game_every_client_resumes_and_no_acknowledged_move_is_lost(
    own_redis: RedisServer,
) -> None:
    one = ServiceProcess(own_redis.url, env=FAST)
    two = ServiceProcess(own_redis.url, env=FAST)
    logs: list[str] = []
    await start(one)
    await start(two)
    try:
        async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
            # games long enough (to 120) that the second kill still finds them going
            tables = await seat_tables(http, [one.ws_url, two.ws_url], tables=6, target=120,
                                       chat_every=4)
            robots = [r for rs in tables.values() for r in rs]
            tasks = [asyncio.create_task(r.run(150)) for r in robots]
            try:
                # Kill one process while every table is mid-game and moves are in flight.
                await wait_for(lambda: min(versions(tables)) >= 12, 40)
                in_flight = sum(r.outstanding is not None for r in robots)
                victims = [r for r in robots if r.socket is not None and r.url == one.ws_url]
                first_connections = {id(r): r.connections for r in victims}
                one.kill()
                assert all(live(tables)), "every game is still going at the first kill"
                logs.append(one.log_path.read_text(errors="replace"))
                killed_at = versions(tables)
                await start(one)
                # Later, the other one.
                await wait_for(lambda: all(
                    v >= k + 8 or not alive for v, k, alive
                    in zip(versions(tables), killed_at, live(tables), strict=True)), 40)
                two.kill()
                logs.append(two.log_path.read_text(errors="replace"))
                live_at_second_kill = sum(live(tables))
                await start(two)
                await asyncio.wait_for(asyncio.gather(*tasks), 160)
            finally:
                for task in tasks:
                    task.cancel()
            for robot_list in tables.values():
                assert all(r.finished for r in robot_list)
            # Both kills hit live games.
            assert live_at_second_kill > 0
            # Every robot connected to the killed process came back by itself.
            assert len({r.table for r in victims}) == len(tables)
            assert all(r.connections > first_connections[id(r)] for r in victims)
            totals = {"moves": 0, "frames": 0, "connections": 0}
            for table, robot_list in tables.items():
                counts = await audit_table(http, one.ws_url, table, robot_list)
                for key in totals:
                    totals[key] += counts[key]
            assert totals["moves"] > 6 * 20
            print(f"crash run: {totals}, moves in flight at the first kill: {in_flight}, "
                  f"games live at the second kill: {live_at_second_kill}")
    finally:
        await stop(one)
        await stop(two)
        logs += [one.log_path.read_text(errors="replace"), two.log_path.read_text(errors="replace")]
        one.log_path.unlink(missing_ok=True)
        two.log_path.unlink(missing_ok=True)
    text = "\n".join(logs)
    assert '"msg":"hello"' in text  # the log was captured at INFO
    assert log_lines_naming_tiles(text) == []


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, their children, ...), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (command) state ppid ...": the command may hold spaces and parentheses
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            parents[int(entry.name)] = int(ppid)
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


async def test_a_killed_server_leaves_no_worker_process_running(own_redis: RedisServer) -> None:
    """A process killed with SIGKILL cannot shut its worker pools down: the bots' workers, the
    analysis worker and the transcript renderer end by themselves once their server is gone,
    instead of waiting for work forever (and holding their memory) after every crash."""
    server = ServiceProcess(own_redis.url, env={**FAST, "BOT_WORKERS": "2",
                                                "ANALYSIS_WORKERS": "1"},
                            command=True)  # python -m server itself, as it is deployed

    def pool_workers() -> set[int]:
        found = set()
        for pid in descendants(server.pid):
            with contextlib.suppress(OSError):  # (one that ended meanwhile)
                if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.add(pid)
        return found

    await start(server)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            # A finished game: archived, so analysed (the analysis worker), and its
            # transcript rendered (the renderer); the bots' workers start with the server.
            table = await create_table(http, bots={"1": "greedy"},
                                       rules={"preset": "all-fives", "target": 5})
            player = await GameClient.connect(server.ws_url)
            await player.hello(table, await join(http, table, 0, "ann"))
            await play_to_end({0: player}, [])
            assert (await http.get(f"/api/tables/{table}/transcript")).status_code == 200
        # two bots' workers, the analysis worker, the renderer
        await wait_for(lambda: len(pool_workers()) >= 4, 30)
        workers = descendants(server.pid)  # multiprocessing's resource tracker too
        server.kill()
        await wait_for(lambda: not any(processes.alive(pid) for pid in workers), 10)
    finally:
        await stop(server)
