"""Redis keys of live tables end with their tables, and a client cannot grow what a table or
its players keep in Redis without bound: against a real server (python -m server on the
session's Redis and PostgreSQL), and against the store or the table service where a test needs
a precise state or interleaving."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio

from server.store import SEAT_CHANGES_FIELD, Store, TableKeys, seated_key
from server.tables import TableService
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end
from tests.support.tables import frames
from tests.support.web import browser


async def keys_of(redis_client: redis.asyncio.Redis, table: str) -> list[bytes]:
    return [key async for key in redis_client.scan_iter(match=f"*{{{table}}}*")]


async def kept_for_good(redis_client: redis.asyncio.Redis, table: str) -> dict[bytes, int]:
    """The table's keys that have no expiry (PTTL -1)."""
    found = {}
    for key in await keys_of(redis_client, table):
        ttl = await redis_client.pttl(key)
        if ttl == -1:
            found[key] = ttl
    return found


async def gone(redis_client: redis.asyncio.Redis, table: str, wait_s: float = 10.0) -> bool:
    """Whether the table's version key is gone (expired) within ``wait_s``."""
    for _ in range(int(wait_s * 10)):
        if not await redis_client.exists(TableKeys(table).version):
            return True
        await asyncio.sleep(0.1)
    return False


EXPIRING = {**FAST, "WAITING_TTL": "2", "RETENTION": "2", "RECONNECT_WINDOW_S": "1.5"}


@pytest.fixture
async def expiring(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=EXPIRING)) as process:
        yield process


# ---- what a socket's presence writes ends with its table -------------------------------------

async def gone_while_connected(redis_client: redis.asyncio.Redis, table: str,
                               player: GameClient) -> dict[bytes, int]:
    """Wait (the player's socket open) until the table's keys expire and a few presence
    refreshes ran; close the socket; the table's keys left without expiry."""
    assert await gone(redis_client, table), "the table should have expired"
    await asyncio.sleep(1.5)  # presence refreshes run meanwhile
    await player.close()
    await asyncio.sleep(0.5)
    return await kept_for_good(redis_client, table)


async def test_a_seat_socket_left_open_on_an_expired_waiting_table_leaves_no_key_for_good(
    expiring: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """A waiting table nobody joins expires after WAITING_TTL even while its one player stays
    connected, and the hub's presence refresh of that socket (`{id}:presence`, `t:{id}:seen`)
    writes nothing of the table once it is gone: no key of it is left without expiry."""
    async with httpx.AsyncClient(base_url=expiring.url, timeout=10) as http:
        table = await create_table(http)
        token = await join(http, table, 0, "ann")
    player = await GameClient.connect(expiring.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"
    assert await gone_while_connected(redis_client, table, player) == {}


async def finished_against_a_bot(http: httpx.AsyncClient, process: ServiceProcess,
                                  target: int) -> tuple[str, GameClient]:
    """A game of all-fives to ``target`` played to its end by ann (seat 0, her socket still
    open) against a greedy bot: the table, and her socket."""
    table = await create_table(http, bots={"1": "greedy"},
                               rules={"preset": "all-fives", "target": target})
    token = await join(http, table, 0, "ann")
    player = await GameClient.connect(process.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"
    await play_to_end({0: player}, [])
    return table, player


async def test_a_tab_left_open_on_a_finished_game_past_retention_leaves_no_key_for_good(
    expiring: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """The same for a finished game whose page stays open longer than RETENTION: its keys all
    go, and the socket's presence refresh brings none of them back."""
    async with httpx.AsyncClient(base_url=expiring.url, timeout=10) as http:
        table, player = await finished_against_a_bot(http, expiring, 5)
    assert await gone_while_connected(redis_client, table, player) == {}


async def test_presence_is_renewed_with_its_tables_lifetime_and_never_for_a_gone_table(
    redis_client: redis.asyncio.Redis,
) -> None:
    """One refresh of a process's sockets: the presence fields and `seen` times of a table
    that exists take its lifetime (none while it is kept without expiry); a gone table's are
    not written, and the refresh names it."""
    store = Store(redis_client)
    await store.commit("live01", 0, b"s", b"m", frames(1), lifetime_ms=60_000)
    await store.commit("kept01", 0, b"s", b"m", frames(1), lifetime_ms=0)
    expiry = int(time.time() * 1000) + 30_000
    found = await store.refresh_presence(
        {table: {"p1:7": f"0:{expiry}"} for table in ("live01", "kept01", "gone01")},
        {table: {0: expiry} for table in ("live01", "kept01", "gone01")},
        {"gone01": ["p1:8"]}, expiry)
    assert found == {"gone01"}
    for key in (TableKeys("live01").presence, TableKeys("live01").seen):
        assert 0 < await redis_client.pttl(key) <= 60_000
    for key in (TableKeys("kept01").presence, TableKeys("kept01").seen):
        assert await redis_client.pttl(key) == -1
    assert await redis_client.hgetall(TableKeys("live01").seen) == {b"0": str(expiry).encode()}
    assert await keys_of(redis_client, "gone01") == [TableKeys("gone01").watchers.encode()]
    assert await redis_client.pttl(TableKeys("gone01").watchers) > 0  # its own expiry


# ---- what is written outside a commit is stored only with its table ---------------------

async def test_what_is_written_outside_a_commit_goes_with_a_gone_table(
    redis_client: redis.asyncio.Redis,
) -> None:
    """A rendering or an owner is stored only while its table exists, with its lifetime; a
    claim written as the table goes (`share_lifetime` after it) is deleted, not kept."""
    store = Store(redis_client)
    await store.commit("live01", 0, b"s", b"m", frames(1), lifetime_ms=60_000)
    assert await store.keep_rendered("live01", "replay", b"r")
    await store.set_owner("live01", "o")
    for key in (TableKeys("live01").replay, TableKeys("live01").owner):
        assert 0 < await redis_client.pttl(key) <= 60_000
    assert not await store.keep_rendered("gone01", "replay", b"r")
    await store.set_owner("gone01", "o")
    assert await store.claim_seat("gone01", 0, "p1:7", "0:99") == 1
    await store.share_lifetime("gone01")
    assert await keys_of(redis_client, "gone01") == []


async def test_a_replay_asked_for_as_its_table_expires_is_not_kept_for_good(
    expiring: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """`GET /replay` of a finished game whose keys are about to expire (RETENTION after the
    archive): the rendering ends after the table is gone, and is then not stored at all (it is
    stored only with the table's lifetime, in one step with the check that the table exists);
    the answer is the replay all the same."""
    async with httpx.AsyncClient(base_url=expiring.url, timeout=30) as http:
        table, player = await finished_against_a_bot(http, expiring, 300)
        await player.close()
        version_key = TableKeys(table).version
        for _ in range(200):  # archived: the keys have their RETENTION
            if await redis_client.pttl(version_key) > 0:
                break
            await asyncio.sleep(0.05)
        # Ask when the table has a little less left than its replay takes to render.
        while (left := await redis_client.pttl(version_key)) > 25:  # noqa: ASYNC110
            await asyncio.sleep(0.01 if left > 150 else 0)
        answer = await http.get(f"/api/tables/{table}/replay")
        assert answer.status_code == 200
        assert answer.json()["views"]
    await asyncio.sleep(0.5)
    assert not await redis_client.exists(version_key)
    left_behind = await kept_for_good(redis_client, table)
    sizes = {key: await redis_client.memory_usage(key) for key in left_behind}
    assert left_behind == {}, f"kept for good (bytes): {sizes}"


# ---- a table takes MAX_SEAT_CHANGES seat changes -------------------------------------------

CAP = 41
CAPPED = {**FAST, "MAX_SEAT_CHANGES": str(CAP), "WAITING_TTL": "4"}


@pytest.fixture
async def capped(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=CAPPED)) as process:
        yield process


async def test_a_table_counts_its_seat_changes_in_the_commit(
    redis_client: redis.asyncio.Redis,
) -> None:
    """The commit script counts every commit that changes a seat's token; once a table has
    had the cap, a commit that would hand a seat out is refused with nothing written, one that
    keeps it waiting is made without renewing its lifetime, and any other is made as asked."""
    store = Store(redis_client)
    keys = TableKeys("abcd12")
    await store.commit("abcd12", 0, b"s", b"m", frames(1), lifetime_ms=60_000)
    for version in (1, 2):
        assert await store.commit("abcd12", version, b"s", b"m", frames(version + 1),
                                  token=("set", 0, "aa" * 32), lifetime_ms=60_000,
                                  seat_changes=(2, "refuse")) == ("ok", version + 1)
    assert await redis_client.hget(keys.clients, SEAT_CHANGES_FIELD) == b"2"
    assert await store.commit("abcd12", 3, b"s", b"m", frames(4), token=("set", 0, "bb" * 32),
                              lifetime_ms=60_000, seat_changes=(2, "refuse")) == ("closed", 3)
    assert await redis_client.xlen(keys.stream) == 3
    await redis_client.pexpire(keys.version, 5_000)
    assert await store.commit("abcd12", 3, b"s", b"m", frames(4), token=("del", 0, ""),
                              lifetime_ms=60_000, seat_changes=(2, "keep")) == ("ok", 4)
    assert 0 < await redis_client.pttl(keys.version) <= 5_000  # not renewed
    assert await store.commit("abcd12", 4, b"s", b"m", frames(5), token=("set", 1, "cc" * 32),
                              lifetime_ms=0, seat_changes=(2, "")) == ("ok", 5)
    assert await redis_client.pttl(keys.version) == -1  # made as asked
    assert await redis_client.hget(keys.clients, SEAT_CHANGES_FIELD) == b"4"
    assert await store.commit("abcd12", 5, b"s", b"m", frames(6),
                              lifetime_ms="keep") == ("ok", 6)  # a move counts for nothing
    assert await redis_client.hget(keys.clients, SEAT_CHANGES_FIELD) == b"4"


async def token_changes(redis_client: redis.asyncio.Redis, table: str) -> int:
    """The versions in the table's history that changed a seat's token."""
    entries = await redis_client.xrange(TableKeys(table).stream)
    return sum(1 for _, fields in entries if fields.get(b"!tok", b"").isdigit())


async def test_join_and_leave_churn_does_not_grow_a_waiting_tables_keys_without_bound(
    capped: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """Every join and every leave of a table is a version (a stream entry, ~0.7 KB with four
    seats, and a client id), and a change of a waiting table renews its WAITING_TTL. A table
    takes MAX_SEAT_CHANGES of them: a join beyond is refused `409 too_many_seat_changes`
    (nothing written), a leave is still made but renews nothing, and the table expires
    WAITING_TTL after its last renewing change -- however long one client keeps taking and
    leaving seats."""
    async with httpx.AsyncClient(base_url=capped.url, timeout=10) as http:
        table = await create_table(http, players=4)
        token = ""
        for _ in range(150):
            answer = await http.post(f"/api/tables/{table}/join",
                                     json={"seat": None, "name": "churn"})
            if answer.status_code != 200:
                break
            token = answer.json()["token"]
            if await redis_client.hget(TableKeys(table).clients, SEAT_CHANGES_FIELD) \
                    == str(CAP).encode():
                break  # the last seat change: the seat is kept
            left = await http.post(f"/api/tables/{table}/leave", json={"token": token})
            assert left.status_code == 200
        refused = await http.post(f"/api/tables/{table}/join", json={"seat": None, "name": "x"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "too_many_seat_changes"
        keys = TableKeys(table)
        assert await redis_client.xlen(keys.stream) == 1 + CAP  # the creation and the changes
        assert await token_changes(redis_client, table) == CAP
        assert await redis_client.hlen(keys.clients) == CAP + 1  # their ids and the count
        before = await redis_client.pttl(keys.version)
        await asyncio.sleep(0.3)
        left = await http.post(f"/api/tables/{table}/leave", json={"token": token})
        assert left.status_code == 200  # leaving always works ...
        assert 0 < await redis_client.pttl(keys.version) < before  # ... and renews nothing
        assert await token_changes(redis_client, table) == CAP + 1
    assert await gone(redis_client, table)
    assert await keys_of(redis_client, table) == []


async def test_a_resume_loop_on_a_table_in_play_is_bounded_too(
    capped: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """A resume gives the seat a new token: one more version of a table in play (kept without
    expiry while someone is there). Joins and resumes together take MAX_SEAT_CHANGES; beyond,
    a resume is refused `409 too_many_seat_changes` and writes nothing."""
    async with browser(capped) as http:
        table = await create_table(http, bots={"1": "greedy"})
        await join(http, table, 0, "ann")  # the game starts
        answers = [await http.post(f"/api/tables/{table}/resume", json={})
                   for _ in range(CAP + 20)]
    codes = [a.status_code for a in answers]
    assert codes == [200] * (CAP - 1) + [409] * 21, codes
    assert answers[-1].json()["error"]["code"] == "too_many_seat_changes"
    assert await token_changes(redis_client, table) == CAP


# ---- a player's list of tables forgets the tables they no longer sit at ----------------------

async def seated_lists_naming(redis_client: redis.asyncio.Redis,
                              table: str) -> dict[bytes, int]:
    """The `seated:<identity>` keys that list ``table``, with their PTTL."""
    found = {}
    async for key in redis_client.scan_iter(match="seated:*"):
        if await redis_client.zscore(key, table) is not None:
            found[key] = await redis_client.pttl(key)
    return found


async def test_seats_taken_by_throwaway_guests_leave_no_keys_behind_their_tables(
    redis_url: str, redis_client: redis.asyncio.Redis
) -> None:
    """A join without cookies makes a new guest identity, and its list of tables
    (`seated:g:<hash>`, kept SEATED_KEEP_S, 90 days, after its last write) names the table
    while the guest sits there. The table leaves the list when the seat is left, when it is
    freed for want of a connection, and when a guest's game ends; an emptied list is deleted.
    So a fresh guest per join leaves nothing behind."""
    env = {**FAST, "SEAT_CONNECT_S": "2", "BOT_DELAY_MS": "0"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        async with httpx.AsyncClient(base_url=process.url, timeout=10) as http:
            table = await create_table(http, players=4)
        for k in range(10):  # left
            async with httpx.AsyncClient(base_url=process.url, timeout=10) as throwaway:
                token = await join(throwaway, table, None, f"g{k}")
                mine = (await throwaway.get("/api/me/tables")).json()["tables"]
                assert [t["id"] for t in mine] == [table]
                assert len(await seated_lists_naming(redis_client, table)) == 1
                left = await throwaway.post(f"/api/tables/{table}/leave", json={"token": token})
                assert left.status_code == 200
                assert await seated_lists_naming(redis_client, table) == {}
                assert (await throwaway.get("/api/me/tables")).json()["tables"] == []
        for k in range(3):  # freed: nobody connects within SEAT_CONNECT_S
            async with httpx.AsyncClient(base_url=process.url, timeout=10) as throwaway:
                await join(throwaway, table, None, f"f{k}")
        assert len(await seated_lists_naming(redis_client, table)) == 3
        for _ in range(100):
            if not await seated_lists_naming(redis_client, table):
                break
            await asyncio.sleep(0.1)
        assert await seated_lists_naming(redis_client, table) == {}
        async with httpx.AsyncClient(base_url=process.url, timeout=10) as http:  # played out
            played = await create_table(http, bots={"1": "greedy"},
                                        rules={"preset": "all-fives", "target": 5})
            token = await join(http, played, 0, "ann")
        assert len(await seated_lists_naming(redis_client, played)) == 1
        player = await GameClient.connect(process.ws_url)
        assert (await player.hello(played, token))["t"] == "welcome"
        await play_to_end({0: player}, [])
        for _ in range(50):  # the game's last commit, then its seats' lists
            if not await seated_lists_naming(redis_client, played):
                break
            await asyncio.sleep(0.1)
        assert await seated_lists_naming(redis_client, played) == {}


async def test_a_guests_list_of_tables_lasts_no_longer_than_its_waiting_table(
    expiring: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """A throwaway guest per join at a table that never starts: the seat is held (its socket
    open) until the waiting table expires, and the guest's list of tables
    (`seated:g:<hash>`) expires with it instead of naming a gone table for 90 days. Once a
    game starts, its guests' lists are kept SEATED_KEEP_S, as an account's."""
    async with httpx.AsyncClient(base_url=expiring.url, timeout=10) as guest:
        table = await create_table(guest)
        token = await join(guest, table, 0, "ann")
    kept = await seated_lists_naming(redis_client, table)
    assert len(kept) == 1
    assert 0 < max(kept.values()) <= 2000  # WAITING_TTL: no longer than its table
    player = await GameClient.connect(expiring.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"
    assert await gone(redis_client, table), "the table should have expired"
    await asyncio.sleep(0.3)
    assert await seated_lists_naming(redis_client, table) == {}
    await player.close()

    # A join renews a waiting table's lifetime, and its guests' lists with it; the last join
    # starts the game (connected, so that no seat is freed meanwhile)
    async with httpx.AsyncClient(base_url=expiring.url, timeout=10) as ann, \
            httpx.AsyncClient(base_url=expiring.url, timeout=10) as bob, \
            httpx.AsyncClient(base_url=expiring.url, timeout=10) as cat:
        started = await create_table(ann, players=3)
        sockets = [await GameClient.connect(expiring.ws_url)]
        assert (await sockets[0].hello(started, await join(ann, started, 0, "ann")))["t"] \
            == "welcome"
        assert max((await seated_lists_naming(redis_client, started)).values()) <= 2000
        await asyncio.sleep(1.2)
        sockets.append(await GameClient.connect(expiring.ws_url))
        assert (await sockets[1].hello(started, await join(bob, started, 1, "bob")))["t"] \
            == "welcome"
        await asyncio.sleep(1.2)  # ann's list would have gone with the table's first lifetime
        kept = await seated_lists_naming(redis_client, started)
        assert len(kept) == 2 and max(kept.values()) <= 2000, kept
        await join(cat, started, 2, "cat")  # the game starts
    kept = await seated_lists_naming(redis_client, started)
    assert len(kept) == 3
    assert min(kept.values()) > 89 * 86400 * 1000, kept
    for socket in sockets:
        await socket.close()


async def test_a_guests_list_is_kept_with_a_waiting_table_whatever_commit_renews_it(
    expiring: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    """Not only a join renews a waiting table's lifetime: a resume (a new token for the seat,
    no seat changed) does too, and the guest's list is kept with it."""
    async with browser(expiring) as guest:
        table = await create_table(guest)
        await join(guest, table, 0, "ann")
        await asyncio.sleep(1.2)
        resumed = await guest.post(f"/api/tables/{table}/resume", json={})
        assert resumed.status_code == 200, resumed.text
        await asyncio.sleep(1.2)  # past the table's first lifetime, within its renewed one
        assert await redis_client.exists(TableKeys(table).version)
        kept = await seated_lists_naming(redis_client, table)
        assert len(kept) == 1 and max(kept.values()) <= 2000, kept
        assert [t["id"] for t in (await guest.get("/api/me/tables")).json()["tables"]] == [table]


async def test_a_seat_taken_again_while_the_last_one_is_dropped_stays_listed(
    redis_client: redis.asyncio.Redis,
) -> None:
    """Taking a table out of an identity's list follows the commit that freed the seat (the
    list is a global key, in another cluster slot). Should the same identity take a seat there
    again in between, the table stays in its list."""
    service = TableService(redis_client, bot_delay_ms=0)
    try:
        table = str((await service.create({"players": 4}))["id"])
        _, token = await service.join(table, None, "ann", None, owner="g:again")
        dropping = service.store.drop_seated

        async def rejoin_first(identity: str, table_ids: list[str]) -> None:
            service.store.drop_seated = dropping  # type: ignore[method-assign]
            await service.join(table, None, "ann", None, owner=identity)
            await dropping(identity, table_ids)

        service.store.drop_seated = rejoin_first  # type: ignore[method-assign]
        await service.leave(table, token)
        assert await service.store.seated_tables("g:again") == [table]
        assert [t["id"] for t in await service.seated("g:again")] == [table]
        assert await redis_client.exists(seated_key("g:again"))
    finally:
        service.close()


async def test_every_tables_presence_is_renewed_within_a_refresh_period(
    redis_url: str, redis_client: redis.asyncio.Redis
) -> None:
    """The presence refresh goes through the process's tables a slice at a time, the slices
    spread over its period (RECONNECT_WINDOW_S / 3): with more tables than one slice holds,
    every table's presence entry is still renewed within each period, never left to expire."""
    window_s = 1.5
    env = {**FAST, "RECONNECT_WINDOW_S": str(window_s), "CREATE_RATE": "1000000",
           "JOIN_RATE": "1000000", "MAX_WAITING_TABLES": "1000000",
           "MAX_TABLES_PER_PLAYER": "1000000", "MAX_SOCKETS_PER_ADDRESS": "1000000",
           "TABLES_PER_ADDRESS_SHARE": "1"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as process,
        httpx.AsyncClient(base_url=process.url, timeout=10) as http,
    ):
        tables = [await create_table(http) for _ in range(70)]  # three slices of 25
        sockets = []
        try:
            for table in tables:
                token = await join(http, table, 0, "ann")
                player = await GameClient.connect(process.ws_url)
                sockets.append(player)
                assert (await player.hello(table, token))["t"] == "welcome"
            for _ in range(3):
                await asyncio.sleep(window_s)  # three periods: each table renewed thrice
                now_ms = int(time.time() * 1000)
                for table in tables:
                    entries = await redis_client.hvals(TableKeys(table).presence)
                    assert len(entries) == 1, (table, entries)
                    seat, expiry = entries[0].decode().split(":")
                    # renewed at most a period (0.5 s) ago, with the window's lifetime
                    assert seat == "0" and int(expiry) - now_ms > 1000 - 250, (table, expiry)
        finally:
            for player in sockets:
                await player.close()
