"""A real local Redis Cluster for tests: three masters on free loopback ports, no replicas.

Usage::

    cluster = LocalCluster()        # three fresh temporary directories, three free ports
    url = cluster.start()           # "redis+cluster://127.0.0.1:<port>/0" once the cluster is ok
    cluster.close()                 # stop every node and remove the directories

Each node is ``redis-server --cluster-enabled yes`` (AOF on); the slots are assigned with
``redis-cli --cluster create ... --cluster-yes``. Imports nothing from the server.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from server.redis_embedded import find_redis_server

BUS_OFFSET = 10_000  # a node's cluster bus listens on its port + 10000


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_port(taken: set[int]) -> int:
    """A free port p <= 55535 whose bus port p + 10000 is free too."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randrange(20_000, 65_535 - BUS_OFFSET)
        if port in taken or port + BUS_OFFSET in taken:
            continue
        if _bindable(port) and _bindable(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _binary(name: str) -> str:
    """The Debian binary when present (it has cluster support and matches redis-cli)."""
    system = Path("/usr/bin") / name
    if system.exists():
        return str(system)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed")
    return found


def slot_owner(ports: list[int], key: str) -> int:
    """The port of the master of the cluster on ``ports`` that serves ``key``'s slot (as the
    cluster itself says)."""
    client = redis.Redis(host="127.0.0.1", port=ports[0])
    try:
        slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
            if int(start) <= slot <= int(end):
                return int(master[1])
    finally:
        client.close()
    raise LookupError(key)


class LocalCluster:
    def __init__(self, masters: int = 3) -> None:
        if masters < 3:
            raise ValueError("a Redis Cluster needs at least three masters")
        self.root = Path(tempfile.mkdtemp(prefix="redis-cluster-"))
        self.ports: list[int] = []
        for _ in range(masters):
            self.ports.append(cluster_port(set(self.ports)))
        self.processes: list[subprocess.Popen[bytes]] = []
        try:
            self.server_binary = _binary("redis-server")
        except RuntimeError:
            self.server_binary = find_redis_server()
        self.cli_binary = _binary("redis-cli")

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.ports[0]}/0"

    @property
    def nodes(self) -> list[str]:
        return [f"127.0.0.1:{port}" for port in self.ports]

    def _start_node(self, port: int) -> subprocess.Popen[bytes]:
        directory = self.root / str(port)
        directory.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            [
                self.server_binary,
                "--port", str(port), "--bind", "127.0.0.1",
                "--cluster-enabled", "yes",
                "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000",
                "--dir", str(directory),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--daemonize", "no",
                "--logfile", str(directory / "redis.log"),
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _wait(self, check: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if all(self._node_ok(port, check) for port in self.ports):
                return
            for process in self.processes:
                if process.poll() is not None:
                    logs = self._logs()
                    self.stop()
                    raise RuntimeError(f"a cluster node exited: {logs}")
            if time.monotonic() > deadline:
                logs = self._logs()
                self.stop()
                raise RuntimeError(f"the cluster did not reach {check!r}: {logs}")
            time.sleep(0.05)

    @staticmethod
    def _node_ok(port: int, check: str) -> bool:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1.0)
        try:
            if check == "ping":
                return bool(client.ping())
            info = client.execute_command("CLUSTER", "INFO")
            text = info.decode() if isinstance(info, bytes) else str(info)
            return "cluster_state:ok" in text
        except redis.RedisError:
            return False
        finally:
            client.close()

    def _logs(self) -> str:
        parts = []
        for port in self.ports:
            log = self.root / str(port) / "redis.log"
            if log.exists():
                parts.append(f"[{port}] " + log.read_text(errors="replace")[-800:])
        return "\n".join(parts)

    def start(self, timeout: float = 30.0) -> str:
        self.processes = [self._start_node(port) for port in self.ports]
        self._wait("ping", timeout)
        created = subprocess.run(
            [self.cli_binary, "--cluster", "create", *self.nodes,
             "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True, timeout=timeout, check=False,
        )
        if created.returncode != 0:
            self.close()
            raise RuntimeError("redis-cli --cluster create failed:\n"
                               + created.stdout.decode(errors="replace")
                               + created.stderr.decode(errors="replace"))
        self._wait("ok", timeout)
        return self.url

    def slot_owner(self, key: str) -> int:
        """The port of the master that holds ``key``."""
        return slot_owner(self.ports, key)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
