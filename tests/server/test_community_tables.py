"""Rematches, "your turn" notices and seasons on the real service (docs/players.md "Rematch",
"Your turn", "Seasons"; protocol.md §2 ``table.rematch``, §9 the rematch endpoints)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import msgpack
import pytest
import redis.asyncio as aioredis

from server import seasons
from server.settings import Settings
from server.store import inbox_channel
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, play_to_end
from tests.support.web import account, browser, code, create, eventually

SHORT_GAME = {"preset": "all-fives", "target": 1}  # over after the first hand that scores
ENV = {**FAST, "BOT_DELAY_MS": "0", "ARCHIVE_SWEEP_S": "1", "NEXT_HAND_S": "0"}
UTC = datetime.UTC


@pytest.fixture
async def svc(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**ENV, "DATABASE_URL": database_url})) \
            as process:
        yield process


async def player_id(web: httpx.AsyncClient) -> int:
    return int((await web.get("/api/me")).json()["id"])


async def sit(web: httpx.AsyncClient, table: str, seat: int | None, name: str = "someone",
              invite: str | None = None) -> str:
    joined = await web.post(f"/api/tables/{table}/join",
                            json={"seat": seat, "name": name, "invite": invite})
    assert joined.status_code == 200, joined.text
    return str(joined.json()["token"])


async def connect(service: ServiceProcess, table: str, token: str | None) -> GameClient:
    client = await GameClient.connect(service.ws_url)
    assert (await client.hello(table, token))["t"] == "welcome"
    return client


class Inbox:
    """The notices published to one player's inbox channel (server.inbox), read directly."""

    def __init__(self, pubsub: Any) -> None:
        self.pubsub = pubsub
        self.notices: list[dict[str, Any]] = []
        self.raw: list[bytes] = []  # every notice as published

    async def next(self, kind: str, within_s: float = 10.0, **match: Any) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + within_s
        while True:
            for notice in self.notices:
                if notice["t"] == kind and all(notice.get(k) == v for k, v in match.items()):
                    self.notices.remove(notice)
                    return notice
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"no {kind} {match} notice; got {self.notices}")
            message = await self.pubsub.get_message(ignore_subscribe_messages=True,
                                                    timeout=min(left, 0.5))
            if message is not None and message["type"] == "message":
                self.raw.append(message["data"])
                self.notices.append(msgpack.unpackb(message["data"]))

    async def drain(self, wait_s: float = 0.5) -> list[dict[str, Any]]:
        deadline = asyncio.get_running_loop().time() + wait_s
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            message = await self.pubsub.get_message(ignore_subscribe_messages=True,
                                                    timeout=left)
            if message is not None and message["type"] == "message":
                self.raw.append(message["data"])
                self.notices.append(msgpack.unpackb(message["data"]))
        found, self.notices = self.notices, []
        return found


@contextlib.asynccontextmanager
async def inbox(redis_url: str, player: int) -> AsyncIterator[Inbox]:
    client = aioredis.from_url(redis_url)
    pubsub = client.pubsub()
    try:
        await pubsub.subscribe(inbox_channel(player))
        await pubsub.get_message(timeout=1.0)  # the subscription's confirmation
        yield Inbox(pubsub)
    finally:
        await pubsub.aclose()
        await client.aclose()


async def finished_to(client: GameClient, check: Any, within_s: float = 10.0) -> None:
    """Read the client's versions until ``check(doc)`` holds."""
    deadline = asyncio.get_running_loop().time() + within_s
    while client.doc is None or not check(client.doc):
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise AssertionError("the document never got there")
        await client.recv(left)


# ---- seasons: the pure parts ---------------------------------------------------------------

def test_the_season_of_a_moment_is_its_utc_month_or_the_first_month_of_its_season() -> None:
    late = datetime.datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    assert seasons.season_of(late) == "2026-12"
    # 00:30 on 1 January in UTC+2 is still December in UTC
    east = datetime.datetime(2027, 1, 1, 0, 30, tzinfo=datetime.timezone(
        datetime.timedelta(hours=2)))
    assert seasons.season_of(east) == "2026-12"
    assert seasons.season_of(datetime.datetime(2027, 1, 1, 0, 0, tzinfo=UTC)) == "2027-01"
    assert seasons.season_of(late, 3) == "2026-10"
    assert seasons.season_of(datetime.datetime(2026, 3, 31, tzinfo=UTC), 3) == "2026-01"
    assert seasons.season_of(datetime.datetime(2026, 7, 1, tzinfo=UTC), 6) == "2026-07"
    assert seasons.season_of(late, 12) == "2026-01"
    with pytest.raises(ValueError, match="SEASON_MONTHS"):
        seasons.season_of(late, 5)
    assert seasons.parse_season("2026-04") == "2026-04"
    assert seasons.parse_season("2026-04", 3) == "2026-04"
    for bad in ("2026-05", "2026-4", "2026-13", "2026-00", "26-04", None, 202604):
        assert seasons.parse_season(bad, 3) is None


def test_season_months_is_a_divisor_of_a_year() -> None:
    assert Settings.from_env({}).season_months == 1
    assert Settings.from_env({"SEASON_MONTHS": "3"}).season_months == 3
    for bad in ("0", "5", "7", "24"):
        with pytest.raises(ValueError, match="SEASON_MONTHS"):
            Settings.from_env({"SEASON_MONTHS": bad})


def test_season_points_two_a_win_one_a_draw_and_a_bonus_from_the_third_win_in_a_row() -> None:
    streak, total, earned = 0, 0, []
    for outcome in ("win", "win", "win", "win", "draw", "win", "loss", "win", "win", "win"):
        points, streak = seasons.season_points(outcome, streak)
        earned.append(points)
        total += points
    assert earned == [2, 2, 3, 3, 1, 2, 0, 2, 2, 3]
    assert (total, streak) == (20, 3)


# ---- rematch -------------------------------------------------------------------------------

async def test_a_rematch_needs_every_player_then_moves_both_to_rotated_seats(
    svc: ServiceProcess, redis_url: str,
) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        ids = {"ann": await player_id(ann), "bob": await player_id(bob)}
        table = await create(ann, rated=True, rules=SHORT_GAME, name="Rematch me")
        tokens = [await sit(ann, table, 0), await sit(bob, table, 1)]
        first, second = (await connect(svc, table, tokens[0]),
                         await connect(svc, table, tokens[1]))
        early = await ann.post(f"/api/tables/{table}/rematch", json={"token": tokens[0]})
        assert (early.status_code, code(early)) == (409, "game_not_over")
        await play_to_end({0: first, 1: second}, [])
        assert first.doc is not None and first.doc["table"]["rematch"] is None

        bad = await ann.post(f"/api/tables/{table}/rematch", json={"token": "nope"})
        assert (bad.status_code, code(bad)) == (403, "bad_token")
        missing = await ann.post(f"/api/tables/{table}/rematch", json={})
        assert (missing.status_code, code(missing)) == (400, "bad_request")
        asked = await ann.post(f"/api/tables/{table}/rematch", json={"token": tokens[0]})
        assert asked.status_code == 200, asked.text
        assert asked.json() == {"rematch": {"accepted": [0], "table": None}}
        again = await ann.post(f"/api/tables/{table}/rematch", json={"token": tokens[0]})
        assert again.json() == {"rematch": {"accepted": [0], "table": None}}  # once is enough
        await finished_to(second, lambda d: d["table"]["rematch"] == {"accepted": [0],
                                                                      "table": None})
        early = await ann.post(f"/api/tables/{table}/rematch/seat", json={"token": tokens[0]})
        assert (early.status_code, code(early)) == (409, "rematch_not_ready")

        async with inbox(redis_url, ids["ann"]) as ann_inbox, \
                inbox(redis_url, ids["bob"]) as bob_inbox:
            agreed = await bob.post(f"/api/tables/{table}/rematch", json={"token": tokens[1]})
            assert agreed.status_code == 200, agreed.text
            rematch = agreed.json()["rematch"]
            new = rematch["table"]
            assert rematch["accepted"] == [0, 1] and isinstance(new, str) and new != table
            for box in (ann_inbox, bob_inbox):
                assert await box.next("rematch") == {"t": "rematch", "table": new,
                                                     "from": table}
        await finished_to(first, lambda d: d["table"]["rematch"] == rematch)
        taken = await ann.post(f"/api/tables/{table}/rematch", json={"token": tokens[0]})
        assert (taken.status_code, code(taken)) == (409, "rematch_taken")

        claims = {}
        for web, seat in ((ann, 0), (bob, 1)):
            claimed = await web.post(f"/api/tables/{table}/rematch/seat",
                                     json={"token": tokens[seat]})
            assert claimed.status_code == 200, claimed.text
            claims[seat] = claimed.json()
            assert claims[seat]["table"] == new and claims[seat]["seat"] == 1 - seat
            assert claims[seat]["invite"] is None
        repeat = await bob.post(f"/api/tables/{table}/rematch/seat", json={"token": tokens[1]})
        assert repeat.json() == claims[1]  # the same answer within the TTL
        bad = await bob.post(f"/api/tables/{table}/rematch/seat", json={"token": "nope"})
        assert (bad.status_code, code(bad)) == (403, "bad_token")

        # seats rotated: ann (seat 0) now sits at seat 1, bob at seat 0; same rules, rated
        ann_new = await connect(svc, new, claims[0]["token"])
        bob_new = await connect(svc, new, claims[1]["token"])
        assert (ann_new.seat, bob_new.seat) == (1, 0)
        assert ann_new.doc is not None
        shown = ann_new.doc["table"]
        assert shown["status"] == "playing" and shown["rated"] is True
        assert shown["name"] == "Rematch me" and shown["rematch"] is None
        assert [s["name"] for s in shown["seats"]] == ["bob", "ann"]
        assert ann_new.doc["game"]["rules"]["target"] == 1
        mine = (await ann.get("/api/me/tables")).json()["tables"]
        assert [(t["id"], t["seat"]) for t in mine] == [(new, 1)]
        await play_to_end({0: bob_new, 1: ann_new}, [])  # the rematch plays like any game


async def test_a_guest_rematches_a_private_bot_game_and_a_left_seat_never_accepts(
    svc: ServiceProcess,
) -> None:
    async with browser(svc) as guest, browser(svc) as other:
        made = await guest.post("/api/tables", json={
            "players": 3, "bots": {"1": "greedy"}, "rules": SHORT_GAME, "private": True})
        assert made.status_code == 201, made.text
        table, invite = made.json()["id"], made.json()["invite"]
        token = await sit(guest, table, 0, "visitor", invite)
        leaver = await sit(other, table, 2, "leaver", invite)
        player = await connect(svc, table, token)
        left = await other.post(f"/api/tables/{table}/leave", json={"token": leaver})
        assert left.status_code == 200  # seat 2 goes to a stand-in bot
        await finished_to(player, lambda d: d["table"]["seats"][2]["bot"] == "greedy")
        await play_to_end({0: player}, [])
        asked = await guest.post(f"/api/tables/{table}/rematch", json={"token": token})
        assert asked.json() == {"rematch": {"accepted": [0], "table": None}}
        refused = await other.post(f"/api/tables/{table}/rematch", json={"token": leaver})
        # the left seat's token is gone: at a private table it opens nothing at all
        assert (refused.status_code, code(refused)) == (404, "unknown_table")
        still = await guest.post(f"/api/tables/{table}/rematch", json={"token": token})
        assert still.json() == {"rematch": {"accepted": [0], "table": None}}

    async with browser(svc) as guest:
        made = await guest.post("/api/tables", json={
            "players": 2, "bots": {"1": "greedy"}, "rules": SHORT_GAME, "private": True})
        table, invite = made.json()["id"], made.json()["invite"]
        token = await sit(guest, table, 0, "visitor", invite)
        await play_to_end({0: await connect(svc, table, token)}, [])
        asked = await guest.post(f"/api/tables/{table}/rematch", json={"token": token})
        assert asked.status_code == 200, asked.text
        new = asked.json()["rematch"]["table"]  # the only person accepted: made at once
        assert asked.json()["rematch"]["accepted"] == [0] and new is not None
        claimed = (await guest.post(f"/api/tables/{table}/rematch/seat",
                                    json={"token": token})).json()
        assert claimed["table"] == new and claimed["seat"] == 1
        assert claimed["invite"] and claimed["invite"] != invite  # a new private table
        hidden = await guest.get(f"/api/tables/{new}")
        assert (hidden.status_code, code(hidden)) == (404, "unknown_table")
        summary = (await guest.get(f"/api/tables/{new}",
                                   params={"invite": claimed["invite"]})).json()
        assert summary["private"] is True
        assert [(s["name"], s["bot"]) for s in summary["seats"]] == [
            ("Bot", "greedy"), ("visitor", None)]  # the bot moved on to seat 0 too
        client = await connect(svc, new, claimed["token"])
        assert client.seat == 1
        await play_to_end({1: client}, [])


# A realtime clock as short as it gets: a seat that does nothing forfeits within a second.
HURRIED = {"clock": {"kind": "realtime", "move_s": 1, "reserve_s": 0}, "on_timeout": "forfeit"}


@pytest.fixture
async def stingy(redis_url: str) -> AsyncIterator[ServiceProcess]:
    """The service with one table a minute and two seats a minute per client address."""
    env = {**ENV, "CREATE_RATE": "1", "JOIN_RATE": "2", "MAX_WAITING_TABLES": "1"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


async def forfeited(web: httpx.AsyncClient, table: str) -> int:
    """Wait for the seat to move to forfeit on time (nobody plays); the table's version."""

    async def over() -> int | None:
        summary = (await web.get(f"/api/tables/{table}")).json()
        return int(summary["v"]) if summary["status"] == "finished" else None

    return int(await eventually(over, within_s=10, what="forfeit on time"))


async def a_minute_later(redis: aioredis.Redis, kind: str) -> None:
    """The fixed windows of the ``kind`` quota ("create", "join": server.quotas) end now."""
    async for key in redis.scan_iter(match=f"quota:{kind}:*"):
        await redis.delete(key)


def refused_over_quota(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert code(response) == "rate_limited"
    assert int(response.headers["Retry-After"]) > 0


async def test_a_rematch_chain_is_charged_to_the_address_quotas_like_the_front_door(
    stingy: ServiceProcess, redis_client: aioredis.Redis,
) -> None:
    async with browser(stingy) as guest:
        made = await guest.post("/api/tables",
                                json={"players": 2, "bots": {"1": "random"}, **HURRIED})
        assert made.status_code == 201, made.text
        table = made.json()["id"]
        token = await sit(guest, table, 0, "visitor")  # the first of two seats a minute
        refused_over_quota(await guest.post("/api/tables", json={"players": 2}))

        # The guest forfeits on time and asks for a rematch: that would make a table, and the
        # address has made its one table this minute.
        version = await forfeited(guest, table)
        asked = await guest.post(f"/api/tables/{table}/rematch", json={"token": token})
        refused_over_quota(asked)
        assert (await guest.get(f"/api/tables/{table}")).json()["v"] == version  # unchanged
        assert (await guest.get("/api/me/tables")).json()["tables"] == []  # no table made

        # A minute later the same request makes the rematch (a table within the quota).
        await a_minute_later(redis_client, "create")
        asked = await guest.post(f"/api/tables/{table}/rematch", json={"token": token})
        assert asked.status_code == 200, asked.text
        new = asked.json()["rematch"]["table"]
        assert asked.json()["rematch"]["accepted"] == [0] and new is not None
        claimed = await guest.post(f"/api/tables/{table}/rematch/seat", json={"token": token})
        assert claimed.status_code == 200, claimed.text  # the second seat this minute
        assert claimed.json()["table"] == new

        # The chain stops there: the next rematch would be a second table this minute ...
        await forfeited(guest, new)
        chained = await guest.post(f"/api/tables/{new}/rematch",
                                   json={"token": claimed.json()["token"]})
        refused_over_quota(chained)
        # ... and claiming the rematch seat again is a third seat this minute.
        refused_over_quota(await guest.post(f"/api/tables/{table}/rematch/seat",
                                            json={"token": token}))
        await a_minute_later(redis_client, "join")
        again = await guest.post(f"/api/tables/{table}/rematch/seat", json={"token": token})
        assert again.json() == claimed.json()  # the same seat, once the window is over


async def test_the_player_who_completes_a_rematch_pays_for_it_and_a_refusal_loses_nothing(
    stingy: ServiceProcess, redis_client: aioredis.Redis,
) -> None:
    async with browser(stingy) as ann, browser(stingy) as bob:
        table = await create(ann, **HURRIED)
        tokens = [await sit(ann, table, 0, "ann"), await sit(bob, table, 1, "bob")]
        await forfeited(ann, table)
        # Accepting makes nothing yet: no quota to pay, even with the address's table spent.
        first = await ann.post(f"/api/tables/{table}/rematch", json={"token": tokens[0]})
        assert first.json() == {"rematch": {"accepted": [0], "table": None}}, first.text
        version = (await ann.get(f"/api/tables/{table}")).json()["v"]
        # Bob's acceptance would make the table: refused, and Bob's acceptance not recorded.
        refused_over_quota(await bob.post(f"/api/tables/{table}/rematch",
                                          json={"token": tokens[1]}))
        assert (await bob.get(f"/api/tables/{table}")).json()["v"] == version
        await a_minute_later(redis_client, "create")
        agreed = await bob.post(f"/api/tables/{table}/rematch", json={"token": tokens[1]})
        assert agreed.status_code == 200, agreed.text
        rematch = agreed.json()["rematch"]
        assert rematch["accepted"] == [0, 1] and rematch["table"] is not None  # Ann's kept


# ---- your turn -----------------------------------------------------------------------------

async def test_your_turn_reaches_the_other_player_of_a_turn_based_game(
    svc: ServiceProcess, redis_url: str,
) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        ids = [await player_id(ann), await player_id(bob)]
        webs = [ann, bob]
        table = await create(ann, name="Daily", rules=SHORT_GAME,
                             clock={"kind": "turn", "move_h": 24, "max_h": 72})
        async with inbox(redis_url, ids[0]) as ann_box, inbox(redis_url, ids[1]) as bob_box:
            boxes = [ann_box, bob_box]
            tokens = [await sit(ann, table, 0), await sit(bob, table, 1)]
            clients = [await connect(svc, table, tokens[0]),
                       await connect(svc, table, tokens[1])]
            doc = clients[0].doc
            assert doc is not None and doc["table"]["status"] == "playing"
            leader = doc["game"]["turn"]
            deadline = doc["table"]["clock"]["deadline"]
            assert isinstance(deadline, int)
            notice = await boxes[leader].next("your_turn")
            assert notice == {"t": "your_turn", "table": table, "name": "Daily",
                              "seat": leader, "deadline": deadline}
            listed = (await webs[leader].get("/api/me/tables")).json()["tables"]
            assert [(t["turn"], t["deadline"]) for t in listed] == [(True, deadline)]
            waiting = (await webs[1 - leader].get("/api/me/tables")).json()["tables"]
            assert [(t["turn"], t["deadline"]) for t in waiting] == [(False, None)]
            assert await boxes[1 - leader].drain() == []  # not their turn: nothing

            # the leader plays (a first play of a hand: never a draw): the other player's turn
            mover = clients[leader]
            answer = await mover.move(mover.game["legal"][0])
            assert answer["t"] == "accepted"
            await clients[1 - leader].wait_version(answer["v"])
            after = clients[1 - leader].doc
            assert after is not None and after["game"]["turn"] == 1 - leader
            notice = await boxes[1 - leader].next("your_turn")
            assert notice == {"t": "your_turn", "table": table, "name": "Daily",
                              "seat": 1 - leader,
                              "deadline": after["table"]["clock"]["deadline"]}
            other = (await webs[1 - leader].get("/api/me/tables")).json()["tables"]
            assert other[0]["deadline"] == notice["deadline"]
            assert await boxes[leader].drain() == []  # once per turn, only to its seat


async def test_no_notice_of_a_whole_game_carries_a_tile(
    svc: ServiceProcess, redis_url: str,
) -> None:
    # The hidden-tile gate, extended to the inbox: every "your turn" notice of a game played
    # to its end (and its rematch notices) is checked for any tile, written as the protocol
    # writes tiles.
    tiles = [f"{a}-{b}" for a in range(7) for b in range(a + 1)]
    patterns = {bytes(msgpack.packb(t)) for tile in tiles
                for t in (tile, "-".join(reversed(tile.split("-"))))}
    async with account(svc, "tia") as tia, account(svc, "tom") as tom:
        ids = [await player_id(tia), await player_id(tom)]
        table = await create(tia, name="Gate", rules=SHORT_GAME,
                             clock={"kind": "turn", "move_h": 24, "max_h": 72})
        async with inbox(redis_url, ids[0]) as first, inbox(redis_url, ids[1]) as second:
            tokens = [await sit(tia, table, 0), await sit(tom, table, 1)]
            clients = [await connect(svc, table, token) for token in tokens]
            await play_to_end({0: clients[0], 1: clients[1]}, [])
            for web, token in zip((tia, tom), tokens, strict=True):
                asked = await web.post(f"/api/tables/{table}/rematch", json={"token": token})
                assert asked.status_code == 200, asked.text
            kinds = [n["t"] for n in await first.drain(1.0) + await second.drain(1.0)]
    assert kinds.count("your_turn") >= 2 and "rematch" in kinds
    raw = first.raw + second.raw
    assert len(raw) == len(kinds)
    for data in raw:
        for pattern in patterns:
            assert pattern not in data, f"a tile in a notice: {msgpack.unpackb(data)}"


async def test_guests_and_bots_get_no_notice_and_a_bot_table_still_plays(
    svc: ServiceProcess, redis_url: str,
) -> None:
    async with account(svc, "solo") as web, browser(svc) as guest:
        me = await player_id(web)
        async with inbox(redis_url, me) as box:
            table = await create(guest, bots={"1": "greedy"}, rules=SHORT_GAME)
            player = await connect(svc, table, await sit(guest, table, 0, "g"))
            await play_to_end({0: player}, [])
            assert await box.drain() == []  # a guest's table tells no account anything
            table = await create(web, bots={"1": "greedy"}, rules=SHORT_GAME)
            player = await connect(svc, table, await sit(web, table, 0))
            moves = await play_to_end({0: player}, [])
            found = await box.drain(1.0)
        assert all(n["t"] == "your_turn" and n["seat"] == 0 and n["table"] == table
                   for n in found)
        assert found and len(found) <= moves  # at most once per turn of the account


# ---- seasons on the service ----------------------------------------------------------------

async def test_rated_games_score_in_the_season_and_past_seasons_show_on_profiles(
    svc: ServiceProcess, db: asyncpg.Connection,
) -> None:
    season = seasons.season_of(datetime.datetime.now(UTC))
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        names = ["ann", "bob"]
        expected = {name: {"points": 0, "games": 0, "wins": 0, "streak": 0} for name in names}
        games = []
        for _ in range(2):
            table = await create(ann, rated=True, rules=SHORT_GAME)
            first = await connect(svc, table, await sit(ann, table, 0))
            second = await connect(svc, table, await sit(bob, table, 1))
            await play_to_end({0: first, 1: second}, [])
            assert first.doc is not None
            winner = first.doc["game"]["winner"]
            for seat, name in enumerate(names):
                outcome = "draw" if winner is None else "win" if winner == seat else "loss"
                points, streak = seasons.season_points(outcome, expected[name]["streak"])
                expected[name]["points"] += points
                expected[name]["games"] += 1
                expected[name]["wins"] += outcome == "win"
                expected[name]["streak"] = streak
            games.append(table)
            await eventually(lambda t=table: db.fetchval(
                "SELECT rating_changes IS NOT NULL FROM games WHERE id = $1", t),
                what="the rated game archived")
        rows = {r["username"]: dict(r) for r in await db.fetch(
            "SELECT p.username, s.points, s.games, s.wins, s.streak FROM season_scores s "
            "JOIN players p ON p.id = s.player_id WHERE s.season = $1 AND s.family = 'fives'",
            season)}
        assert {name: {k: row[k] for k in ("points", "games", "wins", "streak")}
                for name, row in rows.items()} == expected

        board = (await ann.get("/api/seasons/fives")).json()
        order = sorted(names, key=lambda n: (-expected[n]["points"], -expected[n]["wins"],
                                             names.index(n)))
        assert board["season"] == season and board["family"] == "fives"
        assert board["players"] == [
            {"rank": rank, "name": name, "points": expected[name]["points"],
             "games": 2, "wins": expected[name]["wins"]}
            for rank, name in enumerate(order, start=1)]
        assert board["me"] == {"rank": order.index("ann") + 1, **expected["ann"]}
        named = (await bob.get("/api/seasons/fives", params={"season": season})).json()
        assert named["players"] == board["players"]
        async with httpx.AsyncClient(base_url=svc.url) as anonymous:
            assert (await anonymous.get("/api/seasons/fives")).json()["me"] is None
        for bad in ("2026-13", "last", "2026-1"):
            refused = await ann.get("/api/seasons/fives", params={"season": bad})
            assert (refused.status_code, code(refused)) == (400, "bad_season")
        unknown = await ann.get("/api/seasons/chess")
        assert (unknown.status_code, code(unknown)) == (404, "unknown_family")

        # past seasons stay: ann 2nd of 12 in 2020-01, 12th of 12 in 2020-02 (not a top 10)
        ann_id = await db.fetchval("SELECT id FROM players WHERE username = 'ann'")
        others = [await db.fetchval("INSERT INTO players (username, password_hash) "
                                    "VALUES ($1, 'x') RETURNING id", f"rival_{n}")
                  for n in range(11)]
        past = "INSERT INTO season_scores VALUES ($1, 'fives', $2, $3, $4, $5, 0, now())"
        await db.execute(past, "2020-01", ann_id, 30, 12, 10)
        await db.execute(past, "2020-01", others[0], 40, 20, 15)
        await db.execute(past, "2020-01", others[1], 30, 15, 10)  # tied: more games, after
        for n, rival in enumerate(others):
            await db.execute(past, "2020-02", rival, 50 - n, 20, 10)
        await db.execute(past, "2020-02", ann_id, 5, 20, 1)
        await db.execute(past, "2020-03", ann_id, 7, 3, 3)
        await db.execute(past.replace("'fives'", "'threes'"), "2020-03", ann_id, 4, 2, 2)
        profile = (await bob.get("/api/players/ann")).json()
        assert profile["seasons"] == [
            {"season": "2020-03", "family": "fives", "rank": 1, "points": 7},
            {"season": "2020-03", "family": "threes", "rank": 1, "points": 4},
            {"season": "2020-01", "family": "fives", "rank": 2, "points": 30}]
        old = (await bob.get("/api/seasons/fives", params={"season": "2020-01"})).json()
        assert [(p["rank"], p["name"]) for p in old["players"]] == [
            (1, "rival_0"), (2, "ann"), (3, "rival_1")]
        assert old["me"] is None  # bob played no game then
