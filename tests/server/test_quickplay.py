"""Quick play on the real service (docs/players.md "Quick play"): two server processes on one
Redis and one PostgreSQL share the queues; players are seated together with similar ratings,
the window widens, a lone casual player gets bots, and leaving, a dropped page, a player busy
in a real-time game and bad requests are handled."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import msgpack
import pytest
import redis.asyncio as aioredis

from server.matchmaking import Entry, find_groups
from server.settings import Settings
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess
from tests.support.web import account, browser, code

BASE = {**FAST, "QUICKPLAY_TICK_S": "0.1", "QUICKPLAY_STALE_S": "5",
        "QUICKPLAY_BOT_AFTER_S": "30", "QUICKPLAY_WINDOW": "100", "QUICKPLAY_WIDEN": "20"}
CASUAL = {"preset": "all-fives", "players": 2, "rated": False}
RATED = {"preset": "all-fives", "players": 2, "rated": True}

Pair = tuple[ServiceProcess, ServiceProcess]
Start = Callable[..., Awaitable[Pair]]


@pytest.fixture
async def start(redis_url: str, database_url: str) -> AsyncIterator[Start]:
    """``await start(**env)``: two server processes with the BASE settings and ``env``
    (``processes=1``: one, returned twice, for what needs no second)."""
    async with contextlib.AsyncExitStack() as stack:
        async def two(*, processes: int = 2, **env: str) -> Pair:
            full = {**BASE, **env, "DATABASE_URL": database_url}
            started = await asyncio.gather(*(
                stack.enter_async_context(running(ServiceProcess(redis_url, env=full)))
                for _ in range(processes)))
            return started[0], started[-1]
        yield two


async def rate(db: asyncpg.Connection, name: str, rating: int) -> None:
    """Give the account ``name`` a rating in the fives family."""
    await db.execute(
        "INSERT INTO ratings (player_id, family, mu, sigma, rating, games, last_game_at) "
        "SELECT id, 'fives', 25, 3, $2, 20, now() FROM players WHERE username = $1",
        name, rating)


async def queue(web: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await web.post("/api/quickplay", json=body)


async def queued(web: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    answer = await queue(web, body)
    assert answer.status_code == 202, answer.text
    found: dict[str, Any] = answer.json()
    assert found["queued"] is True
    return found


async def status(web: httpx.AsyncClient) -> dict[str, Any]:
    answer = await web.get("/api/quickplay")
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def matched(web: httpx.AsyncClient, within_s: float = 15.0) -> dict[str, Any]:
    """Poll (as the client does, only faster) until matched."""
    deadline = asyncio.get_running_loop().time() + within_s
    while True:
        found = await status(web)
        if found["status"] == "matched":
            return found
        assert found["status"] in ("queued", "matching"), found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not matched within {within_s}s: {found}")
        await asyncio.sleep(0.2)


async def poll_for(web: httpx.AsyncClient, seconds: float) -> list[dict[str, Any]]:
    """Every answer of polling for ``seconds``."""
    answers = []
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        answers.append(await status(web))
        await asyncio.sleep(0.2)
    return answers


async def leave(web: httpx.AsyncClient) -> httpx.Response:
    return await web.delete("/api/quickplay", headers={"Content-Type": "application/json"})


# ---- matching ---------------------------------------------------------------------------------

async def test_two_players_on_two_processes_are_seated_at_one_table(
        start: Start, redis_url: str) -> None:
    one, two = await start()
    async with account(one, "ann") as ann, browser(two) as guest:
        me = (await ann.get("/api/me")).json()
        listener = aioredis.from_url(redis_url)
        inbox = listener.pubsub()
        await inbox.subscribe(f"inbox:{me['id']}")
        try:
            await queued(ann, CASUAL)
            await queued(guest, {**CASUAL, "name": "Zed"})
            first, second = await matched(ann), await matched(guest)
            assert first["table"] == second["table"]
            assert {first["seat"], second["seat"]} == {0, 1}
            assert first["token"] != second["token"]
            notice = None
            for _ in range(50):
                message = await inbox.get_message(ignore_subscribe_messages=True, timeout=0.2)
                if message is not None:
                    notice = msgpack.unpackb(message["data"])
                    break
            assert notice == {"t": "matched", "table": first["table"], "seat": first["seat"]}
        finally:
            await inbox.aclose()
            await listener.aclose()
        table = first["table"]
        # each token is its own seat's, on either process
        for service, found in ((two, first), (one, second)):
            client = await GameClient.connect(service.ws_url)
            welcome = await client.hello(table, found["token"])
            assert welcome["t"] == "welcome" and welcome["seat"] == found["seat"]
        summary = (await guest.get(f"/api/tables/{table}")).json()
        assert summary["status"] == "playing" and summary["rated"] is False
        assert summary["clock"]["kind"] == "realtime" and summary["name"] == "Quick play"
        names = {seat["name"] for seat in summary["seats"]}
        assert names == {"ann", "Zed"}
        # both see the table as theirs, and the queue is empty again
        for web in (ann, guest):
            mine = (await web.get("/api/me/tables")).json()["tables"]
            assert [t["id"] for t in mine] == [table]
        # seated in a real-time game in play, neither may queue again
        refused = await queue(ann, CASUAL)
        assert (refused.status_code, code(refused)) == (409, "busy_elsewhere")


async def test_similar_ratings_are_matched_first(start: Start, db: asyncpg.Connection) -> None:
    one, two = await start()
    async with account(one, "low") as low, account(two, "mid") as mid, \
            account(one, "high") as high:
        for name, rating in (("low", 1500), ("mid", 1520), ("high", 1900)):
            await rate(db, name, rating)
        await queued(high, RATED)
        await queued(low, RATED)
        await queued(mid, RATED)
        first, second = await matched(low), await matched(mid)
        assert first["table"] == second["table"]
        assert (await status(high))["status"] == "queued"
        summary = (await low.get(f"/api/tables/{first['table']}")).json()
        assert summary["rated"] is True
        shown = sorted((s["player"]["name"], s["player"]["rating"]) for s in summary["seats"])
        assert shown == [("low", 1500), ("mid", 1520)]
        left = await leave(high)
        assert left.status_code == 204
        assert (await status(high))["status"] == "idle"


async def test_the_window_widens_with_waiting(start: Start, db: asyncpg.Connection) -> None:
    one, two = await start(QUICKPLAY_WINDOW="10", QUICKPLAY_WIDEN="100")
    async with account(one, "ann") as ann, account(two, "bob") as bob:
        await rate(db, "ann", 1500)
        await rate(db, "bob", 1800)  # 300 apart: both windows must reach 300 (about 3 s)
        joined = await queued(ann, RATED)
        assert 10 <= joined["window"] <= 12
        await queued(bob, RATED)
        early = await poll_for(ann, 1.5)
        assert all(a["status"] == "queued" for a in early)
        windows = [a["window"] for a in early]
        assert windows == sorted(windows) and windows[-1] > windows[0] >= 10
        assert early[-1]["preset"] == "all-fives" and early[-1]["rated"] is True
        first = await matched(ann, within_s=10)
        second = await matched(bob, within_s=5)
        assert first["table"] == second["table"]


async def test_a_lone_casual_player_gets_bots(start: Start) -> None:
    one, _ = await start(processes=1, QUICKPLAY_BOT_AFTER_S="1")
    async with browser(one) as guest:
        await queued(guest, {"preset": "all-fives", "players": 3, "rated": False})
        early = await status(guest)
        assert early["status"] == "queued"
        found = await matched(guest, within_s=10)
        summary = (await guest.get(f"/api/tables/{found['table']}")).json()
        bots = [s["bot"] for s in summary["seats"]]
        assert summary["players"] == 3 and summary["status"] == "playing"
        assert bots[found["seat"]] is None
        assert sorted(b for b in bots if b is not None) == ["greedy", "greedy"]
        assert summary["seats"][found["seat"]]["name"].startswith("Guest ")
        client = await GameClient.connect(one.ws_url)
        assert (await client.hello(found["table"], found["token"]))["seat"] == found["seat"]


async def test_a_rated_queue_never_offers_bots(start: Start) -> None:
    one, _ = await start(processes=1, QUICKPLAY_BOT_AFTER_S="0.5")
    async with account(one, "ann") as ann:
        await queued(ann, RATED)
        assert all(a["status"] == "queued" for a in await poll_for(ann, 1.5))


# ---- leaving, dropping, refusing --------------------------------------------------------------

async def test_leaving_the_queue(start: Start, redis_url: str) -> None:
    one, two = await start()
    async with browser(one) as ann, browser(two) as bob:
        await queued(ann, CASUAL)
        assert (await leave(ann)).status_code == 204
        assert (await status(ann))["status"] == "idle"
        assert (await leave(ann)).status_code == 204  # nothing to leave is fine
        await queued(bob, CASUAL)
        assert all(a["status"] == "queued" for a in await poll_for(bob, 1.0))
        # leaving needs JSON and the page's Origin (a cookie-authenticated change)
        refused = await bob.delete("/api/quickplay")
        assert (refused.status_code, code(refused)) == (415, "unsupported_media_type")
        assert (await status(bob))["status"] == "queued"


async def test_one_queue_per_identity_and_a_repost_refreshes(start: Start) -> None:
    one, two = await start()
    async with browser(one) as ann, browser(two) as bob:
        first = await queued(ann, CASUAL)
        await asyncio.sleep(0.3)
        again = await queued(ann, CASUAL)
        assert again["since"] == first["since"]  # the same entry, its join time kept
        await queued(ann, {**CASUAL, "players": 4})  # moves: out of the 2-player queue
        assert (await status(ann))["players"] == 4
        await queued(bob, CASUAL)
        assert all(a["status"] == "queued" for a in await poll_for(bob, 1.0))


async def test_an_entry_nobody_polls_is_dropped(start: Start, redis_url: str) -> None:
    one, two = await start(QUICKPLAY_STALE_S="1")
    async with browser(one) as gone, browser(two) as late:
        await queued(gone, CASUAL)
        await asyncio.sleep(2.5)  # the page closed: no polls
        client = aioredis.from_url(redis_url)
        try:
            assert await client.hlen("qp:{qp}:who") == 0
            assert await client.zcard("qp:{qp}:z:all-fives:2:c") == 0
        finally:
            await client.aclose()
        await queued(late, CASUAL)
        assert all(a["status"] == "queued" for a in await poll_for(late, 0.8))
        assert (await status(gone))["status"] == "idle"


async def test_a_player_in_a_realtime_game_is_busy_elsewhere(start: Start) -> None:
    one, _ = await start(processes=1)
    async with browser(one) as web:
        made = await web.post("/api/tables", json={
            "players": 2, "bots": {"1": "greedy"},
            "clock": {"kind": "realtime", "move_s": 60, "reserve_s": 60}})
        table = made.json()["id"]
        joined = await web.post(f"/api/tables/{table}/join", json={"seat": 0, "name": "ann"})
        assert joined.status_code == 200
        refused = await queue(web, CASUAL)
        assert (refused.status_code, code(refused)) == (409, "busy_elsewhere")
        assert (await status(web))["status"] == "idle"
    async with browser(one) as web:  # a game without a clock is no obstacle
        made = await web.post("/api/tables", json={"players": 2, "bots": {"1": "greedy"}})
        table = made.json()["id"]
        await web.post(f"/api/tables/{table}/join", json={"seat": 0, "name": "ann"})
        await queued(web, CASUAL)


async def test_a_rated_queue_refuses_guests(start: Start) -> None:
    one, _ = await start(processes=1)
    async with browser(one) as guest:
        refused = await queue(guest, RATED)
        assert (refused.status_code, code(refused)) == (403, "account_required")
        assert (await status(guest))["status"] == "idle"


BAD_BODIES: list[tuple[dict[str, Any], str]] = [
    ({"preset": "no-such-game", "players": 2, "rated": False}, "unknown_preset"),
    ({"preset": "all-fives", "players": 5, "rated": False}, "bad_request"),
    ({"preset": "all-fives", "players": 1, "rated": False}, "bad_request"),
    ({"preset": "all-fives", "players": True, "rated": False}, "bad_request"),
    ({"preset": "all-fives", "players": "2", "rated": False}, "bad_request"),
    ({"preset": "all-fives", "players": 2, "rated": "yes"}, "bad_request"),
    ({"preset": "all-fives", "players": 2, "rated": None}, "bad_request"),
    ({"players": 2}, "bad_request"),
    ({"preset": 7, "players": 2}, "bad_request"),
    ({"preset": "all-fives", "players": 2, "clock": None}, "bad_request"),
    ({"preset": "all-fives", "players": 2, "name": "Bot 2"}, "bad_request"),
    ({"preset": "all-fives", "players": 2, "name": ""}, "bad_request"),
]


async def test_bad_bodies_queue_nothing(start: Start, redis_url: str) -> None:
    one, _ = await start(processes=1)
    async with browser(one) as web:
        for body, expected in BAD_BODIES:
            refused = await queue(web, body)
            assert (refused.status_code, code(refused)) == (400, expected), (body, refused.text)
        refused = await web.post("/api/quickplay", content=b"[1, 2]",
                                 headers={"Content-Type": "application/json"})
        assert (refused.status_code, code(refused)) == (400, "bad_request")
        refused = await web.post("/api/quickplay", content=json.dumps(CASUAL).encode(),
                                 headers={"Content-Type": "text/plain"})
        assert refused.status_code == 415
        async with httpx.AsyncClient(base_url=one.url) as no_origin:
            refused = await no_origin.post("/api/quickplay", json=CASUAL)
            assert (refused.status_code, code(refused)) == (403, "bad_origin")
        assert (await status(web))["status"] == "idle"
    client = aioredis.from_url(redis_url)
    try:
        assert await client.keys("qp:*") == []
    finally:
        await client.aclose()


async def test_queue_joins_are_rate_limited(start: Start) -> None:
    one, _ = await start(processes=1, QUICKPLAY_RATE="3")
    async with browser(one) as web:
        for _ in range(3):
            await queued(web, CASUAL)
        refused = await queue(web, CASUAL)
        assert (refused.status_code, code(refused)) == (429, "rate_limited")
        assert int(refused.headers["Retry-After"]) >= 1


# ---- the grouping itself ----------------------------------------------------------------------

def entry(name: str, rating: float, since: int) -> Entry:
    return Entry(name, rating, since, since, {})


def test_groups_of_four_fit_every_members_window() -> None:
    settings = Settings(quickplay_window=100, quickplay_widen=0, quickplay_bot_after_s=30)
    now = 100_000
    entries = [entry("a", 1500, 0), entry("b", 1560, 1), entry("c", 1440, 2),
               entry("d", 1470, 3), entry("e", 1520, 4), entry("f", 2000, 5)]
    groups = find_groups(entries, 4, settings, now, bots=False)
    # a's nearest are e (20), d (30), then b and c (60 each, b older): with b the group spans
    # 90 (every window holds it); c would make it 120
    assert [[e.identity for e in group] for group in groups] == [["a", "e", "d", "b"]]
    assert find_groups(entries[:3], 4, settings, now, bots=False) == []
    with_bots = find_groups([entry("f", 2000, 0)], 4, settings, 31_000, bots=True)
    assert [[e.identity for e in group] for group in with_bots] == [["f"]]
    assert find_groups([entry("f", 2000, 0)], 4, settings, 29_000, bots=True) == []
