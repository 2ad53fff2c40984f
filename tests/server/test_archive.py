"""The PostgreSQL archive of finished games (server.archive) on real Redis and PostgreSQL:
archived once however often the job runs, through a PostgreSQL outage, served after the
table's retention (private games with their invite only), and archived by another process
when the one that finished the game died right after its commit."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from server.archive import Archive, Job
from server.db import Postgres
from server.rejected import Rejected
from server.store import ARCHIVE_QUEUE
from server.tables import TableService
from tests.support.pg_server import PgServer
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end
from tests.support.tables import new_table, play_random

SHORT_GAME = {"preset": "all-fives", "target": 1}  # over after the first hand that scores


@contextlib.asynccontextmanager
async def archiving(client: redis.asyncio.Redis, url: str, *, retention_s: float = 3600.0,
                    run: bool = True) -> AsyncIterator[tuple[TableService, Archive]]:
    """A TableService that archives, its Postgres and Archive (its worker running if ``run``)."""
    service = TableService(client, retention_s=retention_s, archive=True)
    postgres = Postgres(url, retry_max_s=0.5)
    archive = Archive(service, postgres, retry_max_s=0.5, poll_s=0.1)
    service.archived = archive.rendered
    await postgres.start()
    stop = asyncio.Event()
    worker = asyncio.create_task(archive.run(stop)) if run else None
    try:
        yield service, archive
    finally:
        stop.set()
        if worker is not None:
            await worker
        service.close()
        await postgres.close()


async def finish(service: TableService, table_id: str, seed: int = 1,
                 stop_after: int | None = None) -> int:
    """Random legal moves until the game is over (or ``stop_after`` moves); the moves made."""
    rng = random.Random(seed)
    for moves in range(5000):
        _, doc = await service.snapshot(table_id, "s")
        if doc["game"]["game_over"] or moves == stop_after:
            return moves
        await play_random(service, table_id, rng, f"m{moves}")
    raise AssertionError("the game did not end")


async def rows(url: str, table_id: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch("SELECT * FROM games WHERE id = $1", table_id))
    finally:
        await conn.close()


async def wait_for(check: Any, within_s: float = 20.0, what: str = "condition") -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def test_a_finished_game_is_archived_once(redis_client: redis.asyncio.Redis,
                                                database_url: str) -> None:
    async with archiving(redis_client, database_url) as (service, archive):
        table_id, _ = await new_table(service, rules=SHORT_GAME)
        await finish(service, table_id)
        found = await wait_for(lambda: rows(database_url, table_id), what="the archive row")
        row = found[0]
        assert row["players"] == 2 and row["preset"] == "all-fives"
        assert row["seat_names"] == ["player0", "player1"]
        assert row["end_reason"] == "game_end" and row["hands"] >= 1
        assert max(row["scores"]) >= 1 and not row["private"] and row["invite_hash"] is None
        transcript = json.loads(gzip.decompress(row["transcript"]))
        assert transcript["players"] == 2 and len(transcript["rounds"]) == row["hands"]
        # archived: the table now expires after RETENTION and its job is gone
        await wait_for(lambda: redis_client.pttl(f"t:{{{table_id}}}:v"), what="expiry")
        assert await redis_client.pttl(f"t:{{{table_id}}}:v") > 0
        assert await redis_client.llen(ARCHIVE_QUEUE) == 0
        # a duplicated or retried job changes nothing
        await redis_client.rpush(ARCHIVE_QUEUE, table_id, f"{table_id} 1")
        await archive.drain()
        await archive.archive(Job(None, table_id, 5))
        again = await rows(database_url, table_id)
        assert again == found and archive.archived == 1
        assert await redis_client.llen(ARCHIVE_QUEUE) == 0
        summary = await archive.game(table_id, None)
        assert summary["result"]["reason"] == "game_end" and summary["hands"] == row["hands"]
        assert summary["transcript"] == transcript


async def test_postgres_down_at_the_end_of_the_game_the_row_appears_once_it_is_back(
    redis_client: redis.asyncio.Redis,
) -> None:
    pg = PgServer()
    url = await asyncio.to_thread(pg.start)
    try:
        async with archiving(redis_client, url) as (service, archive):
            table_id, _ = await new_table(service, rules=SHORT_GAME)
            await finish(service, table_id, stop_after=3)
            await asyncio.to_thread(pg.stop)  # down mid-game
            await finish(service, table_id)
            await asyncio.sleep(1.5)  # the worker tries (and fails) a few times
            # kept without expiry, its job queued, until archived
            assert await redis_client.pttl(f"t:{{{table_id}}}:v") == -1
            assert await redis_client.lrange(ARCHIVE_QUEUE, 0, -1) != []
            with pytest.raises(Rejected) as refused:
                await archive.game(table_id, None)
            assert refused.value.status == 503
            await asyncio.to_thread(pg.start)
            found = await wait_for(lambda: rows(url, table_id), what="the archive row")
            assert len(found) == 1
            await wait_for(lambda: redis_client.pttl(f"t:{{{table_id}}}:v"), what="expiry")
            assert await redis_client.llen(ARCHIVE_QUEUE) == 0
            assert archive.archived == 1
            assert len(await rows(url, table_id)) == 1
    finally:
        await asyncio.to_thread(pg.close)


async def test_after_retention_the_archive_serves_transcript_and_replay(
    redis_client: redis.asyncio.Redis, database_url: str,
) -> None:
    async with archiving(redis_client, database_url, retention_s=1.0) as (service, archive):
        public, _ = await new_table(service, rules=SHORT_GAME)
        await finish(service, public)
        created = await service.create({"players": 2, "private": True, "rules": SHORT_GAME})
        private, invite = str(created["id"]), str(created["invite"])
        _, token = await service.join(private, 0, "ada", invite)
        await service.join(private, 1, "bob", invite)
        await finish(service, private, seed=2)
        # while the table lives: invite or seat token
        live_transcript = await service.transcript(private, token=token)
        live_replay = await service.replay(public)
        for table_id in (public, private):
            await wait_for(lambda t=table_id: rows(database_url, t), what="the archive row")
            await wait_for(lambda t=table_id: _gone(redis_client, t), what="the keys to expire")
        assert json.loads(gzip.decompress(await service.transcript(public)))["players"] == 2
        replay = json.loads(gzip.decompress(await service.replay(public)))
        assert replay == json.loads(gzip.decompress(live_replay)) and replay["views"]
        assert await service.replay(public) == await service.replay(public)  # kept in the row
        assert await service.transcript(private, invite=invite) == live_transcript
        assert json.loads(gzip.decompress(await service.replay(private, invite=invite)))["views"]
        for kind in ("transcript", "replay"):
            for reader in ({}, {"invite": "wrong"}, {"token": token}):
                with pytest.raises(Rejected) as refused:
                    await getattr(service, kind)(private, **reader)
                assert (refused.value.code, refused.value.status) == ("unknown_table", 404)
        with pytest.raises(Rejected) as refused:
            await archive.game(private, None)
        assert (refused.value.code, refused.value.status) == ("unknown_game", 404)
        assert (await archive.game(private, invite))["private"] is True
        with pytest.raises(Rejected) as refused:
            await service.transcript("nosuchtable")
        assert refused.value.code == "unknown_table"


async def _gone(client: redis.asyncio.Redis, table_id: str) -> bool:
    return not await client.exists(f"t:{{{table_id}}}:v", f"t:{{{table_id}}}:state")


async def test_a_game_whose_process_died_after_the_finishing_commit_is_archived_by_another(
    redis_client: redis.asyncio.Redis, redis_url: str, database_url: str,
) -> None:
    # This process ends the game and "dies" at once: its job never reaches the queue.
    async with archiving(redis_client, database_url, run=False) as (service, _archive):

        async def lost(job: str) -> None:
            raise asyncio.CancelledError  # killed right after the commit

        service.store.queue_archive = lost  # type: ignore[method-assign]
        created = await service.create({"players": 2, "private": True, "rules": SHORT_GAME})
        table_id, invite = str(created["id"]), str(created["invite"])
        await service.join(table_id, 0, "ada", invite)
        await service.join(table_id, 1, "bob", invite)
        with pytest.raises(asyncio.CancelledError):
            await finish(service, table_id)
    assert await redis_client.llen(ARCHIVE_QUEUE) == 0
    assert await redis_client.pttl(f"t:{{{table_id}}}:v") == -1  # the durable pending mark
    other = ServiceProcess(redis_url, env={"DATABASE_URL": database_url, "RETENTION": "2"})
    await asyncio.to_thread(other.start)
    try:
        found = await wait_for(lambda: rows(database_url, table_id), what="the archive row")
        assert len(found) == 1 and found[0]["private"]
        await wait_for(lambda: _gone(redis_client, table_id), what="the keys to expire")
        async with httpx.AsyncClient(base_url=other.url, timeout=10) as http:
            assert (await http.get(f"/api/games/{table_id}")).status_code == 404
            game = await http.get(f"/api/games/{table_id}", params={"invite": invite})
            assert game.status_code == 200 and game.json()["transcript"]["players"] == 2
            missing = await http.get(f"/api/tables/{table_id}/transcript")
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "unknown_table"
            served = await http.get(f"/api/tables/{table_id}/replay",
                                    params={"invite": invite})
            assert served.status_code == 200 and served.json()["views"]
    finally:
        await asyncio.to_thread(other.stop)
    assert len(await rows(database_url, table_id)) == 1


async def test_a_service_killed_after_the_game_ended_still_gets_it_archived(
    redis_client: redis.asyncio.Redis, redis_url: str, database_url: str, pg_server: Any,
) -> None:
    # The first process has no working PostgreSQL, so the job is still queued when it is
    # killed (kill -9); a process started afterwards archives the game.
    dead_db = pg_server.database_url("no_such_database")
    env = {"RATE": "1000/2000", "RETENTION": "2", "BOT_DELAY_MS": "0"}
    first = ServiceProcess(redis_url, env={**env, "DATABASE_URL": dead_db})
    await asyncio.to_thread(first.start)
    try:
        async with httpx.AsyncClient(base_url=first.url, timeout=10) as http:
            table = await create_table(http, bots={"1": "greedy"}, rules=SHORT_GAME)
            token = await join(http, table, 0, "ann")
        player = await GameClient.connect(first.ws_url)
        assert (await player.hello(table, token))["t"] == "welcome"
        await play_to_end({0: player}, [])
        await player.close()
        assert await redis_client.lrange(ARCHIVE_QUEUE, 0, -1) != []
        await asyncio.to_thread(first.kill)
    finally:
        await GameClient.close_all()
        await asyncio.to_thread(first.kill)
    assert await redis_client.pttl(f"t:{{{table}}}:v") == -1
    second = ServiceProcess(redis_url, env={**env, "DATABASE_URL": database_url})
    await asyncio.to_thread(second.start)
    try:
        found = await wait_for(lambda: rows(database_url, table), what="the archive row")
        assert len(found) == 1 and found[0]["seat_bots"] == [None, "greedy"]
        await wait_for(lambda: _gone(redis_client, table), what="the keys to expire")
        assert await redis_client.llen(ARCHIVE_QUEUE) == 0
        async with httpx.AsyncClient(base_url=second.url, timeout=10) as http:
            game = (await http.get(f"/api/games/{table}")).json()
            assert game["seats"][0]["name"] == "ann" and game["result"]["reason"] == "game_end"
            transcript = await http.get(f"/api/tables/{table}/transcript")
            assert transcript.status_code == 200
            assert transcript.json() == game["transcript"]
    finally:
        await asyncio.to_thread(second.stop)
    assert len(await rows(database_url, table)) == 1
