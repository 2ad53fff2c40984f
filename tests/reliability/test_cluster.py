"""The whole game against a local three-master Redis Cluster (REDIS_URL=redis+cluster://...).

Two server processes on the cluster, robots on both, every game played to its end and audited.
Each table's keys (state, stream, tokens, chat, presence...) share the ``{id}`` hash tag, so they
all live in one slot; the tables themselves are spread over the masters, and each table's
notices are sharded to the master of its slot, where every process that serves the table reads
them. The same games end and audit clean while the processes' pub/sub connections are killed
over and over, and while tables' slots move between masters.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator

import httpx
import pytest
import redis

from tests.reliability.conftest import FAST, start, stop
from tests.reliability.games import audit_table, seat_tables
from tests.server.test_cluster import migrate_slot
from tests.support.cluster import LocalCluster
from tests.support.servers import ServiceProcess


def keys_by_table(cluster: LocalCluster, tables: list[str]) -> dict[str, dict[str, int]]:
    """table id -> {key: port of the master holding it}, read from every master."""
    found: dict[str, dict[str, int]] = {t: {} for t in tables}
    for port in cluster.ports:
        client = redis.Redis(host="127.0.0.1", port=port)
        try:
            for key in client.scan_iter(count=1000):
                name = key.decode()
                for table in tables:
                    if "{" + table + "}" in name:
                        found[table][name] = port
        finally:
            client.close()
    return found


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    local = LocalCluster()
    local.start()
    try:
        yield local
    finally:
        local.close()


@pytest.mark.slow
async def test_games_over_two_processes_on_a_three_master_cluster_end_and_audit_clean(
    cluster: LocalCluster,
) -> None:
    one = ServiceProcess(cluster.url, env=FAST)
    two = ServiceProcess(cluster.url, env=FAST, command=True)  # its own interpreter
    await start(one)
    await start(two)
    try:
        async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
            urls = [one.ws_url, two.ws_url]
            tables = await seat_tables(http, urls, tables=3, target=30, chat_every=3)
            for _ in range(10):  # until the tables sit on at least two masters
                owners = {cluster.slot_owner(f"t:{{{t}}}:v") for t in tables}
                if len(owners) >= 2:
                    break
                tables.update(await seat_tables(http, urls, tables=1, target=30))
            robots = [r for rs in tables.values() for r in rs]
            await asyncio.wait_for(asyncio.gather(*(r.run(60) for r in robots)), 70)
            for table, robot_list in tables.items():
                await audit_table(http, one.ws_url, table, robot_list)
            listed = (await http.get("/api/tables")).json()["tables"]
            assert not {t["id"] for t in listed} & set(tables)  # finished: out of the lobby
        placed = keys_by_table(cluster, list(tables))
        for table, keys in placed.items():
            assert {f"t:{{{table}}}:v", f"t:{{{table}}}:state", f"t:{{{table}}}:log",
                    f"t:{{{table}}}:tok", f"t:{{{table}}}:meta"} <= set(keys)
            assert len(set(keys.values())) == 1, keys  # one master holds all of a table
        assert len({port for keys in placed.values() for port in keys.values()}) >= 2
    finally:
        await stop(one)
        await stop(two)
        for process in (one, two):
            process.log_path.unlink(missing_ok=True)


async def churn(cluster: LocalCluster, tables: list[str], stop: asyncio.Event) -> tuple[int, int]:
    """Until `stop`: every 0.3 s kill the pub/sub connections of one master, every 1.2 s move a
    table's slot to another master. Returns (connections killed, slots moved)."""
    rng = random.Random(7)
    killed = moved = 0
    tick = 0
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.3)
        tick += 1
        client = redis.Redis(host="127.0.0.1", port=rng.choice(cluster.ports))
        try:
            killed += int(await asyncio.to_thread(
                client.execute_command, "CLIENT", "KILL", "TYPE", "pubsub"))
        finally:
            client.close()
        if tick % 4 == 1:
            key = f"t:{{{rng.choice(tables)}}}:v"
            source = cluster.slot_owner(key)
            target = rng.choice([p for p in cluster.ports if p != source])
            await asyncio.to_thread(migrate_slot, cluster.ports, key, target)
            moved += 1
    return killed, moved


@pytest.mark.slow
async def test_games_on_a_cluster_end_and_audit_clean_while_readers_die_and_slots_move(
    cluster: LocalCluster,
) -> None:
    one = ServiceProcess(cluster.url, env=FAST)
    two = ServiceProcess(cluster.url, env=FAST, command=True)  # its own interpreter
    await start(one)
    await start(two)
    try:
        async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
            urls = [one.ws_url, two.ws_url]
            # the players think 0.1 s per move so the games last several seconds of churn
            tables = await seat_tables(http, urls, tables=3, target=60, spectators=2, pause=0.1)
            robots = [r for rs in tables.values() for r in rs]
            stop_churn = asyncio.Event()
            churning = asyncio.create_task(churn(cluster, list(tables), stop_churn))
            try:
                await asyncio.wait_for(asyncio.gather(*(r.run(90) for r in robots)), 100)
            finally:
                stop_churn.set()
                killed, moved = await churning
            assert killed >= 5 and moved >= 1, (killed, moved)
            for table, robot_list in tables.items():
                await audit_table(http, one.ws_url, table, robot_list)
    finally:
        await stop(one)
        await stop(two)
        for process in (one, two):
            process.log_path.unlink(missing_ok=True)
