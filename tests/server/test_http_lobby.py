"""The HTTP lobby, health, metrics and static routes against the real service."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.server.conftest import running
from tests.support.servers import GameClient, ServiceProcess, create_table, join

QUICK = {"preset": "all-fives", "target": 20}


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    return str(body["error"]["code"])


async def test_create_list_and_summary(http: httpx.AsyncClient) -> None:
    created = await http.post(
        "/api/tables", json={"rules": QUICK, "players": 3, "name": "Friday fives"}
    )
    assert created.status_code == 201
    table = created.json()
    assert table["invite"] is None and isinstance(table["id"], str)
    private = await http.post("/api/tables", json={"players": 2, "private": True})
    assert private.status_code == 201 and isinstance(private.json()["invite"], str)

    listed = (await http.get("/api/tables")).json()["tables"]
    ids = [t["id"] for t in listed]
    assert table["id"] in ids and private.json()["id"] not in ids

    summary = (await http.get(f"/api/tables/{table['id']}")).json()
    assert summary["name"] == "Friday fives"
    assert summary["players"] == 3 and summary["status"] == "waiting"
    assert summary["private"] is False and len(summary["seats"]) == 3
    assert not any(s["taken"] for s in summary["seats"])

    secret = private.json()
    response = await http.get(f"/api/tables/{secret['id']}")
    assert (response.status_code, error_code(response)) == (404, "unknown_table")
    response = await http.get(f"/api/tables/{secret['id']}", params={"invite": secret["invite"]})
    assert response.status_code == 200 and response.json()["private"] is True
    response = await http.get("/api/tables/nosuch")
    assert (response.status_code, error_code(response)) == (404, "unknown_table")


async def test_create_refuses_bad_requests(http: httpx.AsyncClient) -> None:
    cases: list[tuple[bytes, int, str]] = [
        (b"{not json", 400, "bad_request"),
        (b"[1, 2]", 400, "bad_request"),
        (b'{"rules": "no-such-game", "players": 2}', 400, "unknown_preset"),
        (b'{"rules": "all-fives", "players": 9}', 400, "invalid_option"),
        (b'{"players": 2, "clock": {"kind": "sundial"}}', 400, "bad_request"),
        (b'{"players": 2, "x": ' + b"1" * 5000 + b"}", 413, "too_large"),
    ]
    for body, status, code in cases:
        response = await http.post(
            "/api/tables", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == status, (body[:40], response.text)
        if code in ("bad_request", "too_large"):
            assert error_code(response) == code
        else:
            assert error_code(response) in (code, "invalid_rules", "bad_request")
    assert (await http.get("/api/tables")).json()["tables"] == []


async def test_join_and_leave(http: httpx.AsyncClient) -> None:
    table = await create_table(http, players=2)
    first = await http.post(f"/api/tables/{table}/join", json={"seat": 1, "name": "ann"})
    assert first.status_code == 200 and first.json()["seat"] == 1
    token = first.json()["token"]
    assert isinstance(token, str) and len(token) >= 22  # at least 128 bits, url-safe
    again = await http.post(f"/api/tables/{table}/join", json={"seat": 1, "name": "bob"})
    assert (again.status_code, error_code(again)) == (409, "seat_taken")
    for body in ({"seat": "1", "name": "bob"}, {"seat": 0}, {"seat": 0, "name": ""}):
        bad = await http.post(f"/api/tables/{table}/join", json=body)
        assert (bad.status_code, error_code(bad)) == (400, "bad_request"), body
    unknown = await http.post("/api/tables/nosuch/join", json={"seat": 0, "name": "x"})
    assert (unknown.status_code, error_code(unknown)) == (404, "unknown_table")
    wrong = await http.post(f"/api/tables/{table}/leave", json={"token": "guess"})
    assert (wrong.status_code, error_code(wrong)) == (403, "bad_token")
    left = await http.post(f"/api/tables/{table}/leave", json={"token": token})
    assert left.status_code == 200 and left.json() == {"ok": True}
    summary = (await http.get(f"/api/tables/{table}")).json()
    assert not summary["seats"][1]["taken"]
    await join(http, table, None, "bob")
    await join(http, table, None, "cy")
    full = await http.post(f"/api/tables/{table}/join", json={"seat": None, "name": "dee"})
    assert (full.status_code, error_code(full)) == (409, "table_full")


async def test_transcript_and_replay_only_when_the_game_is_over(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, rules=QUICK, players=2, bots={"0": "greedy"})
    token = await join(http, table, 1, "ann")
    for path in ("transcript", "replay"):
        response = await http.get(f"/api/tables/{table}/{path}")
        assert (response.status_code, error_code(response)) == (409, "game_not_over")
    leave = await http.post(f"/api/tables/{table}/leave", json={"token": token})
    assert leave.status_code == 200  # a bot takes over the seat and the bots finish the game
    watcher = await GameClient.connect(service.ws_url)
    await watcher.hello(table)
    while not watcher.game.get("game_over"):
        await watcher.recv(20)
    transcript = await http.get(f"/api/tables/{table}/transcript")
    assert transcript.status_code == 200
    record = transcript.json()
    assert record["players"] == 2 and record["rules"] == QUICK
    assert len(record["rounds"]) == len(watcher.game["rounds"])
    assert len(record["rounds"][-1]["moves"]) == len(watcher.game["history"])
    replay = await http.get(f"/api/tables/{table}/replay")
    assert replay.status_code == 200
    views = replay.json()["views"]
    assert views and views[-1]["game_over"] is True
    assert views[-1]["scores"] == watcher.game["scores"]
    assert views[-1]["layout"] == watcher.game["layout"]


async def test_health_metrics_and_static_client(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!doctype html><title>dominoes client</title>")
    static = ServiceProcess(redis_url, env={"STATIC_DIR": str(tmp_path)})
    async with running(static) as server, httpx.AsyncClient(base_url=server.url) as http:
        health = await http.get("/healthz")
        assert health.status_code == 200 and health.json()["ok"] is True
        page = await http.get("/")
        assert page.status_code == 200 and "dominoes client" in page.text
        assert (await http.get("/missing.js")).status_code == 404
        client = await GameClient.connect(server.ws_url)
        table = await create_table(http, players=2)
        await client.hello(table)
        metrics = (await http.get("/metrics")).text
        for name in (
            "dominoes_moves_accepted_total",
            "dominoes_ack_seconds_bucket",
            "dominoes_fanout_seconds_bucket",
            "dominoes_connections 1.0",
            "dominoes_snapshots_total",
            "dominoes_redis_errors_total",
            "dominoes_send_queue_depth_bucket",
        ):
            assert name in metrics, name
    absent = tmp_path / "absent"
    no_static = ServiceProcess(redis_url, env={"STATIC_DIR": str(absent)})
    async with running(no_static) as server, httpx.AsyncClient(base_url=server.url) as http:
        page = await http.get("/")
        assert page.status_code == 404 and "Not found" in page.text


async def test_health_reports_a_dead_redis(tmp_path: Path) -> None:
    from tests.support.redis_server import RedisServer

    with RedisServer(tmp_path / "redis") as redis:
        async with (
            running(ServiceProcess(redis.url)) as server,
            httpx.AsyncClient(base_url=server.url) as http,
        ):
            assert (await http.get("/healthz")).status_code == 200
            redis.stop()
            response = await http.get("/healthz")
            assert response.status_code == 503 and response.json()["ok"] is False
            create = await http.post("/api/tables", json={"players": 2})
            assert (create.status_code, error_code(create)) == (503, "unavailable")
            redis.start()
            for _ in range(100):
                if (await http.get("/healthz")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            assert (await http.get("/healthz")).status_code == 200
