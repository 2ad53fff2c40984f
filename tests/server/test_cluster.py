"""Tables on a real three-node Redis Cluster: every key of a table in one slot, global keys
touched one at a time, scripts routed by their keys."""

from __future__ import annotations

import random
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
from redis.asyncio.cluster import RedisCluster

from server.redis_embedded import RedisProcess
from server.scheduler import Scheduler
from server.tables import TableService
from tests.support.tables import DocumentFollower, ManualClock, new_table, play_random

SLOTS = 16384


def cluster_port(rng: random.Random) -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    while True:
        port = rng.randrange(20_000, 45_000)
        try:
            for candidate in (port, port + 10_000):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port


@pytest.fixture(scope="module")
def cluster_ports() -> Iterator[list[int]]:
    base = Path(tempfile.mkdtemp(prefix="redis-cluster-"))
    rng = random.Random()
    nodes = [
        RedisProcess(base / str(i), port=cluster_port(rng), appendfsync="everysec",
                     extra_args=("--cluster-enabled", "yes", "--cluster-config-file",
                                 "nodes.conf"))
        for i in range(3)
    ]
    for node in nodes:
        node.start()
    ports = [node.port for node in nodes if node.port is not None]
    clients = [redis.Redis(port=port) for port in ports]
    try:
        share = SLOTS // 3
        for i, client in enumerate(clients):
            last = SLOTS if i == 2 else (i + 1) * share
            client.execute_command("CLUSTER ADDSLOTS", *range(i * share, last))
        for client in clients[1:]:
            client.execute_command("CLUSTER MEET", "127.0.0.1", ports[0])
        deadline = time.monotonic() + 20
        while any(c.cluster("INFO")["cluster_state"] != "ok"
                  or int(c.cluster("INFO")["cluster_known_nodes"]) != 3 for c in clients):
            assert time.monotonic() < deadline, "the cluster did not form"
            time.sleep(0.05)
        yield ports
    finally:
        for client in clients:
            client.close()
        for node in nodes:
            node.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
async def cluster(cluster_ports: list[int]) -> AsyncIterator[RedisCluster]:
    client = RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    await client.initialize()
    await client.flushall(target_nodes=RedisCluster.PRIMARIES)
    try:
        yield client
    finally:
        await client.aclose()


async def test_tables_play_on_a_redis_cluster(cluster: RedisCluster) -> None:
    clock = ManualClock()
    tables = TableService(cluster, bot_delay_ms=0, clock=clock)  # type: ignore[arg-type]
    rng = random.Random(11)
    ids = []
    for _ in range(6):  # six tables: their slots land on more than one node
        table_id, tokens = await new_table(tables, 2, clock={"kind": "realtime", "move_s": 5,
                                                             "reserve_s": 0})
        ids.append(table_id)
        assert (await tables.authenticate(table_id, tokens[1]))[0] == 1
    nodes = {cluster.get_node_from_key(f"t:{{{t}}}:v").name for t in ids}
    assert len(nodes) > 1
    for table_id in ids:
        follower = DocumentFollower(tables, table_id, "0")
        for i in range(10):
            await play_random(tables, table_id, rng, f"m{i}")
        await follower.catch_up()
        assert follower.version == 13
        assert await follower.matches_snapshot()
    assert {s["id"] for s in await tables.list_public()} == set(ids)
    clock.advance(5)
    scheduler = Scheduler(tables)
    while await scheduler.run_once():  # every table's clock ran out: bots play those turns
        pass
    for table_id in ids:
        assert (await tables.snapshot(table_id, "s"))[0] > 13
