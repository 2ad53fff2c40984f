"""Post-game analysis (server.analysis) on real Redis, PostgreSQL and uvicorn: every archived
game is queued in the archive's transaction and analysed once by a worker process; a job whose
worker died is taken again when its lease ends; a job that keeps failing is given up; the
analysis is served (a private game's with its invite only) and is the engine's own."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import asyncpg
import httpx
import redis.asyncio

from engine.analysis import analyse
from server.analysis import _TAKE, MAX_TRIES, Analyst
from tests.server.test_archive import SHORT_GAME, archiving, finish, rows, wait_for
from tests.support.servers import GameClient, ServiceProcess, create_and_sit, play_to_end
from tests.support.tables import new_table

DEALS = 12


async def analysis_row(url: str, game_id: str) -> asyncpg.Record | None:
    conn = await asyncpg.connect(url)
    try:
        row: asyncpg.Record | None = await conn.fetchrow(
            "SELECT * FROM game_analysis WHERE game_id = $1", game_id)
        return row
    finally:
        await conn.close()


async def archived_game(client: redis.asyncio.Redis, url: str) -> tuple[str, dict[str, Any]]:
    """A short game played to its end and archived (no analysis worker running); its id and
    transcript."""
    async with archiving(client, url) as (service, _archive):
        table_id, _ = await new_table(service, rules=SHORT_GAME)
        await finish(service, table_id)
        found = await wait_for(lambda: rows(url, table_id), what="the archive row")
    return table_id, json.loads(gzip.decompress(found[0]["transcript"]))


async def only_pending(conn: asyncpg.Connection, games: list[str]) -> None:
    """Leave only ``games`` pending in the queue (other tests' games are marked failed)."""
    await conn.execute("UPDATE game_analysis SET status = 'failed' "
                       "WHERE status = 'pending' AND game_id <> ALL($1::text[])", games)


async def test_an_archived_game_is_queued_and_analysed_once_by_a_worker_process(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    table_id, transcript = await archived_game(redis_client, database_url)
    queued = await analysis_row(database_url, table_id)
    assert queued is not None and queued["status"] == "pending" and queued["tries"] == 0
    async with archiving(redis_client, database_url, run=False) as (_service, archive):
        analyst = Analyst(archive.postgres, archive.analysis_wakeup, workers=1,
                          budget_ms=10**8, deals=DEALS, poll_s=0.1)
        stop = asyncio.Event()
        worker = asyncio.create_task(analyst.run(stop))
        try:
            async def done() -> bool:
                row = await analysis_row(database_url, table_id)
                return row is not None and row["status"] == "done"
            await wait_for(done, within_s=60, what="the analysis")
            read = await analyst.read(table_id, None)
        finally:
            stop.set()
            await worker
    assert read["status"] == "done" and read["id"] == table_id
    # the worker computed what the engine computes from the archived transcript
    expected = analyse(transcript, deals=DEALS, budget_ms=10**8)
    assert read["analysis"]["moves"] == expected["moves"]
    assert read["analysis"]["players"] == expected["players"]
    row = await analysis_row(database_url, table_id)
    assert row is not None and row["tries"] == 1 and row["cpu_ms"] >= 0
    assert row["lease_until"] is None


async def test_a_job_whose_worker_died_is_taken_again_and_one_that_keeps_failing_is_given_up(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    first, _ = await archived_game(redis_client, database_url)
    second, _ = await archived_game(redis_client, database_url)
    conn = await asyncpg.connect(database_url)
    try:
        # Only these two games are pending; a worker took the newest (`second`) and died.
        await only_pending(conn, [first, second])
        taken = await conn.fetchrow(_TAKE, 0.5)
        assert taken is not None and taken["game_id"] == second
        # `first` has been taken (and lost) MAX_TRIES times already.
        await conn.execute("UPDATE game_analysis SET tries = $2, lease_until = now() "
                           "WHERE game_id = $1", first, MAX_TRIES)
    finally:
        await conn.close()
    async with archiving(redis_client, database_url, run=False) as (_service, archive):
        analyst = Analyst(archive.postgres, archive.analysis_wakeup, workers=1,
                          budget_ms=10**8, deals=DEALS)
        assert await analyst.run_once()  # `second` is leased: `first` is taken, and given up
        gave_up = await analysis_row(database_url, first)
        assert gave_up is not None and gave_up["status"] == "failed"
        assert (await analyst.read(first, None))["status"] == "failed"
        await asyncio.sleep(0.6)  # the dead worker's lease ends
        assert await analyst.run_once()
        assert not await analyst.run_once()  # nothing is left
    again = await analysis_row(database_url, second)
    assert again is not None and again["status"] == "done" and again["tries"] == 2


async def test_the_owner_with_the_fewest_games_waiting_is_served_first(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    """The queue serves the owner (the address that created the table) with the fewest games
    waiting first, newest game first among equals: one client archiving games in bulk cannot
    keep everyone else's analyses waiting (the newest game used to go first, whoever's)."""
    a1, _ = await archived_game(redis_client, database_url)
    b1, _ = await archived_game(redis_client, database_url)
    a2, _ = await archived_game(redis_client, database_url)
    conn = await asyncpg.connect(database_url)
    try:
        await only_pending(conn, [a1, b1, a2])
        await conn.execute("UPDATE game_analysis SET owner = 'a:bulk' WHERE game_id = ANY($1)",
                           [a1, a2])
        await conn.execute("UPDATE game_analysis SET owner = 'a:one' WHERE game_id = $1", b1)
        order = [(await conn.fetchrow(_TAKE, 60))["game_id"] for _ in range(3)]
        assert order == [b1, a2, a1]
        assert await conn.fetchrow(_TAKE, 60) is None  # all three leased
    finally:
        await conn.close()


async def test_an_archived_game_is_queued_under_its_tables_owner(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    async with archiving(redis_client, database_url) as (service, _archive):
        table_id, _ = await new_table(service, rules=SHORT_GAME, owner="a:0123456789abcdef")
        await finish(service, table_id)
        await wait_for(lambda: rows(database_url, table_id), what="the archive row")
    queued = await analysis_row(database_url, table_id)
    assert queued is not None and queued["owner"] == "a:0123456789abcdef"


async def test_the_analysis_is_served_over_http_private_games_with_their_invite(
    redis_url: str, database_url: str,
) -> None:
    # a database of its own: no other test's games wait in its analysis queue
    env = {"ANALYSIS_WORKERS": "1", "ANALYSIS_DEALS": str(DEALS), "RATE": "1000/2000",
           "DATABASE_URL": database_url}
    service = ServiceProcess(redis_url, env=env)
    await asyncio.to_thread(service.start)
    try:
        async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
            table, invite, token = await create_and_sit(
                http, "ann", bots={"1": "greedy"}, rules=SHORT_GAME, private=True)
            player = await GameClient.connect(service.ws_url)
            assert (await player.hello(table, token))["t"] == "welcome"
            await play_to_end({0: player}, [])
            await player.close()
            # at once, before the archive may have the game: pending, not unknown
            first = await http.get(f"/api/games/{table}/analysis", params={"invite": invite})
            assert first.status_code == 200, first.text
            assert first.json()["status"] in ("pending", "done")

            async def analysed() -> dict[str, Any] | None:
                got = await http.get(f"/api/games/{table}/analysis", params={"invite": invite})
                if got.status_code != 200 or got.json()["status"] != "done":
                    return None
                body: dict[str, Any] = got.json()
                return body
            body = await wait_for(analysed, within_s=60, what="the analysis over HTTP")
            analysis = body["analysis"]
            assert analysis["version"] == 1 and analysis["deals"] == DEALS
            assert [p["seat"] for p in analysis["players"]] == [0, 1]
            assert all(m["deals"] == DEALS for m in analysis["moves"])
            # without the invite, a private game's analysis does not exist
            hidden = await http.get(f"/api/games/{table}/analysis")
            assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "unknown_game"
            unknown = await http.get("/api/games/nosuchgame1/analysis")
            assert unknown.status_code == 404
            metrics = (await http.get("/metrics")).text
            assert 'dominoes_analyses_total{status="done"} 1.0' in metrics
    finally:
        await GameClient.close_all()
        await asyncio.to_thread(service.stop)


async def test_stopping_mid_analysis_gives_the_game_back_at_once(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    table_id, _ = await archived_game(redis_client, database_url)
    async with archiving(redis_client, database_url, run=False) as (_service, archive):
        # a budget that takes minutes: the analysis is still running when the process stops
        analyst = Analyst(archive.postgres, archive.analysis_wakeup, workers=1,
                          budget_ms=10**8, deals=10**7, poll_s=0.1)
        stop = asyncio.Event()
        worker = asyncio.create_task(analyst.run(stop))

        async def taken() -> bool:
            row = await analysis_row(database_url, table_id)
            return row is not None and row["tries"] == 1
        await wait_for(taken, what="the lease")
        await asyncio.sleep(0.5)
        started = asyncio.get_running_loop().time()
        stop.set()
        await asyncio.wait_for(worker, 10)
        assert asyncio.get_running_loop().time() - started < 5
    row = await analysis_row(database_url, table_id)
    assert row is not None and row["status"] == "pending"
    assert row["tries"] == 0 and row["lease_until"] is None
