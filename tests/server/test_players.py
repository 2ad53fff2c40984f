"""Players on the real service (docs/players.md): seats bound to accounts and guests, rated
tables, ratings written once at the game's end, profiles, game lists, stats recomputed from the
archived transcripts, leaderboards, and a PostgreSQL outage in the middle of a rated game."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio as aioredis
from openskill.models import PlackettLuce

from tests.server.conftest import FAST, running
from tests.support.pg_server import PgServer
from tests.support.servers import GameClient, ServiceProcess, close_code, play_to_end
from tests.support.stats_oracle import recompute
from tests.support.web import PASSWORD, account, browser, code, create, eventually, sit

SHORT_GAME = {"preset": "all-fives", "target": 1}  # over after the first hand that scores
ENV = {**FAST, "BOT_DELAY_MS": "0", "ARCHIVE_SWEEP_S": "1", "LEADERBOARD_REFRESH_S": "0.5"}


def scale(mu: float) -> int:
    """The documented rating scale (docs/players.md "Ratings"), written out here."""
    return round(1500 + 48 * (mu - 25))


@pytest.fixture
async def svc(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**ENV, "DATABASE_URL": database_url})) \
            as process:
        yield process


async def connect(service: ServiceProcess, table: str, token: str | None) -> GameClient:
    client = await GameClient.connect(service.ws_url)
    assert (await client.hello(table, token))["t"] == "welcome"
    return client


async def ratings_arrive(client: GameClient, within_s: float = 20.0) -> list[Any]:
    deadline = asyncio.get_running_loop().time() + within_s
    while client.doc is None or client.doc["table"]["ratings"] is None:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise AssertionError("no ratings on the finished table")
        await client.recv(left)
    return list(client.doc["table"]["ratings"])


async def rated_game(service: ServiceProcess, ann: httpx.AsyncClient,
                     bob: httpx.AsyncClient) -> tuple[str, GameClient, GameClient]:
    table = await create(ann, rated=True, rules=SHORT_GAME)
    first = await connect(service, table, await sit(ann, table, 0))
    second = await connect(service, table, await sit(bob, table, 1))
    return table, first, second


def two_player_expectation() -> tuple[int, int]:
    """(winner after, loser after) for two new players, from OpenSkill itself."""
    model = PlackettLuce()
    won, lost = model.rate([[model.rating()], [model.rating()]], ranks=[1, 2])
    return scale(won[0].mu), scale(lost[0].mu)


# ---- rated tables ----------------------------------------------------------------------------

async def test_a_rated_game_rates_both_players_once_and_shows_the_changes(
    svc: ServiceProcess, db: asyncpg.Connection, redis_url: str,
) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        table, first, second = await rated_game(svc, ann, bob)
        assert first.doc is not None and first.doc["table"]["rated"] is True
        await second.wait_version(first.v or 0)
        assert second.doc is not None
        assert [s["player"] for s in second.doc["table"]["seats"]] == [
            {"name": "ann", "rating": 1500, "provisional": True},
            {"name": "bob", "rating": 1500, "provisional": True}]
        # account seats bear the username
        assert [s["name"] for s in second.doc["table"]["seats"]] == ["ann", "bob"]
        await play_to_end({0: first, 1: second}, [])
        winner = first.doc["game"]["winner"]
        assert winner in (0, 1)
        shown = await ratings_arrive(first)
        high, low = two_player_expectation()
        assert shown == [
            {"seat": seat, "before": 1500, "after": high if seat == winner else low,
             "provisional": True} for seat in (0, 1)]
        stored = {r["username"]: (r["rating"], r["games"]) for r in await db.fetch(
            "SELECT p.username, r.rating, r.games FROM ratings r JOIN players p "
            "ON p.id = r.player_id WHERE r.family = 'fives'")}
        names = ["ann", "bob"]
        assert stored == {names[winner]: (high, 1), names[1 - winner]: (low, 1)}
        async with httpx.AsyncClient(base_url=svc.url) as plain:
            profile = (await plain.get("/api/players/ann")).json()
        assert profile["ratings"]["fives"]["games"] == 1
        assert profile["ratings"]["fives"]["history"][0]["rating"] == stored["ann"][0]
        assert profile["recent"][0]["id"] == table
        assert profile["recent"][0]["rating"] == {"before": 1500, "after": stored["ann"][0]}
    # the same game end queued again (a retry, another process) counts once
    client = aioredis.from_url(redis_url)
    try:
        await client.rpush("archive:pending", table, f"{table} 1")
        await eventually(lambda: _drained(client), what="the duplicate jobs done")
    finally:
        await client.aclose()
    assert await db.fetchval("SELECT sum(games) FROM ratings") == 2
    assert await db.fetchval("SELECT count(*) FROM rating_history") == 2
    assert await db.fetchval("SELECT count(*) FROM game_players WHERE game_id = $1",
                             table) == 2


async def _drained(client: Any) -> bool:
    return int(await client.llen("archive:pending")) == 0


async def test_rated_tables_refuse_bots_guests_and_a_second_seat(svc: ServiceProcess) -> None:
    async with account(svc, "ann") as ann, browser(svc) as guest:
        refused = await ann.post("/api/tables", json={"rated": True, "bots": {"1": "greedy"}})
        assert (refused.status_code, code(refused)) == (400, "rated_bots")
        refused = await guest.post("/api/tables", json={"rated": True})
        assert (refused.status_code, code(refused)) == (403, "account_required")
        table = await create(ann, rated=True)
        refused = await guest.post(f"/api/tables/{table}/join", json={"seat": 0, "name": "g"})
        assert (refused.status_code, code(refused)) == (403, "account_required")
        await sit(ann, table, 0)
        refused = await ann.post(f"/api/tables/{table}/join", json={"seat": 1, "name": "a2"})
        assert (refused.status_code, code(refused)) == (409, "already_seated")
        summary = (await guest.get(f"/api/tables/{table}")).json()
        assert [s["taken"] for s in summary["seats"]] == [True, False]
        assert summary["rated"] is True and summary["status"] == "waiting"
        # a rated game has a clock even when none was asked for: it cannot be stalled
        assert summary["clock"] == {"kind": "realtime", "move_s": 30, "reserve_s": 120}


async def test_leaving_a_rated_game_forfeits_it(svc: ServiceProcess,
                                                db: asyncpg.Connection) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        table = await create(ann, rated=True)  # a long game: nobody finishes it by playing
        first = await connect(svc, table, await sit(ann, table, 0))
        token = await sit(bob, table, 1)
        left = await bob.post(f"/api/tables/{table}/leave", json={"token": token})
        assert left.status_code == 200
        deadline = asyncio.get_running_loop().time() + 10
        while first.doc is None or first.doc["table"]["status"] != "finished":
            await first.recv(deadline - asyncio.get_running_loop().time())
        assert first.doc["table"]["result"] == {"winner": 0, "reason": "forfeit", "seat": 1,
                                              "cause": "leave"}
        shown = await ratings_arrive(first)
        high, low = two_player_expectation()
        assert [(c["seat"], c["after"]) for c in shown] == [(0, high), (1, low)]
        outcomes = {r["seat"]: r["outcome"] for r in await db.fetch(
            "SELECT seat, outcome FROM game_players WHERE game_id = $1", table)}
        assert outcomes == {0: "win", 1: "loss"}


# ---- seats bound to people -------------------------------------------------------------------

async def test_my_tables_and_resuming_a_seat_on_another_device(svc: ServiceProcess) -> None:
    async with account(svc, "ann") as laptop, browser(svc) as phone, \
            browser(svc) as stranger:
        table = await create(laptop, bots={"1": "greedy"}, rules=SHORT_GAME)
        token = await sit(laptop, table, 0)
        mine = (await laptop.get("/api/me/tables")).json()["tables"]
        assert [(t["id"], t["seat"], t["turn"]) for t in mine] == [(table, 0, mine[0]["turn"])]
        assert (await stranger.get("/api/me/tables")).json() == {"tables": []}
        refused = await stranger.post(f"/api/tables/{table}/resume", json={})
        assert (refused.status_code, code(refused)) == (403, "not_seated")
        old = await connect(svc, table, token)
        logged = await phone.post("/api/session", json={"username": "ann",
                                                        "password": "long enough"})
        assert logged.status_code == 200
        assert [t["id"] for t in (await phone.get("/api/me/tables")).json()["tables"]] == [table]
        refused = await phone.post(f"/api/tables/{table}/resume", content=b"{}")
        assert (refused.status_code, code(refused)) == (415, "unsupported_media_type")
        resumed = await phone.post(f"/api/tables/{table}/resume", json={})
        assert resumed.status_code == 200 and resumed.json()["seat"] == 0
        assert await close_code(old) == 4005  # the old token's socket is closed
        retry = await GameClient.connect(svc.ws_url)
        assert (await retry.hello(table, token))["t"] == "error"
        fresh = await connect(svc, table, resumed.json()["token"])
        assert fresh.seat == 0


async def test_an_accounts_seat_is_named_by_its_username_whatever_the_join_says(
    svc: ServiceProcess,
) -> None:
    """docs/protocol.md "Join": a logged-in player's seat is named by the account's username
    whatever `name` says -- so no `name`, or one a guest could not take, is no reason to refuse
    the join (both were 400 before); a guest's `name` is still checked."""
    async with account(svc, "dora") as web, browser(svc) as guest:
        table = await create(web, players=3)
        for seat, body in ((0, {}), (1, {"name": "Bot"})):
            joined = await web.post(f"/api/tables/{table}/join", json={"seat": seat, **body})
            assert joined.status_code == 200, joined.text
        refused = await guest.post(f"/api/tables/{table}/join", json={"seat": 2, "name": "Bot"})
        assert (refused.status_code, code(refused)) == (400, "bad_request")
        summary = (await web.get(f"/api/tables/{table}")).json()
        assert [s["name"] for s in summary["seats"][:2]] == ["dora", "dora"]


async def test_guests_have_tables_and_keep_them_and_their_games_when_they_register(
    svc: ServiceProcess, db: asyncpg.Connection,
) -> None:
    async with browser(svc) as guest, browser(svc) as other:
        done = await create(guest, bots={"1": "greedy"}, rules=SHORT_GAME)
        assert "guest" in guest.cookies  # a first visit gets a guest identity
        player = await connect(svc, done, await sit(guest, done, 0, "visitor"))
        await play_to_end({0: player}, [])
        await eventually(lambda: db.fetchval(
            "SELECT count(*) FROM game_players WHERE game_id = $1 AND guest IS NOT NULL",
            done), what="the guest's archived seat")
        live = await create(guest, bots={"1": "greedy"})
        await sit(guest, live, 0, "visitor")
        assert [t["id"] for t in (await guest.get("/api/me/tables")).json()["tables"]] == [live]
        assert (await other.get("/api/me/tables")).json()["tables"] == []
        made = await guest.post("/api/accounts", json={"username": "newcomer",
                                                       "password": "long enough"})
        assert made.status_code == 201
        assert "guest" not in guest.cookies
        mine = (await guest.get("/api/me/tables")).json()["tables"]
        assert [t["id"] for t in mine] == [live]
        assert mine[0]["seats"][0]["name"] == "newcomer"
        assert mine[0]["seats"][0]["player"] == {"name": "newcomer", "rating": 1500,
                                                 "provisional": True}
        profile = (await guest.get("/api/players/newcomer")).json()
        assert [g["id"] for g in profile["recent"]] == [done]
        assert profile["stats"]["fives"]["games"] == 1
        assert profile["ratings"] == {}  # casual games do not rate


async def test_a_deleted_players_games_stay_under_deleted_player(
    svc: ServiceProcess, db: asyncpg.Connection,
) -> None:
    async with account(svc, "leaver") as web:
        table = await create(web, bots={"1": "greedy"}, rules=SHORT_GAME)
        player = await connect(svc, table, await sit(web, table, 0))
        await play_to_end({0: player}, [])
        await eventually(lambda: db.fetchval("SELECT 1 FROM game_players WHERE game_id = $1",
                                             table), what="the archived game")
        gone = await web.request("DELETE", "/api/me", json={"password": "long enough"})
        assert gone.status_code == 204
        game = (await web.get(f"/api/games/{table}")).json()
        assert game["seats"][0] == {"name": "deleted player", "bot": None, "player": None}
        assert await db.fetchval("SELECT seat_names[1] FROM games WHERE id = $1",
                                 table) == "deleted player"
        missing = await web.get("/api/players/leaver")
        assert (missing.status_code, code(missing)) == (404, "unknown_player")


# ---- records, stats ----------------------------------------------------------------------------

def _streaks(outcomes: list[str]) -> tuple[int, int]:
    longest = run = 0
    for outcome in outcomes:
        run = run + 1 if outcome == "win" else 0
        longest = max(longest, run)
    return longest, run


async def test_stats_and_game_lists_agree_with_the_archived_transcripts(
    svc: ServiceProcess, db: asyncpg.Connection,
) -> None:
    games: list[str] = []
    async with account(svc, "stat") as web:
        for n, rules in enumerate([{"preset": "all-fives", "target": 30}, SHORT_GAME,
                                   {"preset": "muggins", "target": 20}]):
            table = await create(web, bots={"1": "greedy"}, rules=rules, name=f"g{n}")
            player = await connect(svc, table, await sit(web, table, 0))
            await play_to_end({0: player}, [])
            games.append(table)
        await eventually(lambda: _archived(db, games), what="every game archived")
        profile = (await web.get("/api/players/stat")).json()
        page = (await web.get("/api/players/stat/games", params={"limit": 2})).json()
        rest = (await web.get("/api/players/stat/games",
                              params={"limit": 2, "cursor": page["next"]})).json()
        bad = await web.get("/api/players/stat/games", params={"cursor": "not-a-cursor!"})
        worse = await web.get("/api/players/stat/games", params={"limit": 500})
        archived = [(await web.get(f"/api/games/{g}")).json() for g in games]
    assert [g["id"] for g in page["games"] + rest["games"]] == games[::-1]  # newest first
    assert rest["next"] is None
    assert (bad.status_code, code(bad)) == (400, "bad_cursor")
    assert (worse.status_code, code(worse)) == (400, "bad_request")
    totals: dict[str, int] = {}
    outcomes = []
    best = 0
    for game in archived:
        numbers = recompute(game["transcript"])[0]
        for key, value in numbers.items():
            totals[key] = totals.get(key, 0) + value
        best = max(best, numbers["best_play"])
        winner = game["result"]["winner"]
        outcomes.append("draw" if winner is None else "win" if winner == 0 else "loss")
    stats = profile["stats"]["fives"]
    longest, current = _streaks(outcomes)
    assert stats == {
        "games": 3, "wins": outcomes.count("win"), "losses": outcomes.count("loss"),
        "draws": outcomes.count("draw"), "win_rate": round(outcomes.count("win") / 3, 4),
        "hands": totals["hands"], "hands_won": totals["hands_won"],
        "won_domino": totals["won_domino"], "won_block": totals["won_block"],
        "play_points": totals["play_points"], "bonus_points": totals["bonus_points"],
        "points_per_hand": round((totals["play_points"] + totals["bonus_points"])
                                 / totals["hands"], 2),
        "best_play": best, "big_plays": totals["big_plays"],
        "longest_streak": longest, "current_streak": current, "top_preset": "all-fives",
    }


async def _archived(db: asyncpg.Connection, games: list[str]) -> bool:
    found = await db.fetchval("SELECT count(*) FROM game_players WHERE game_id = ANY($1) "
                              "AND seat = 0", games)
    return bool(found == len(games))


# ---- leaderboards ----------------------------------------------------------------------------

async def test_leaderboards_list_the_active_established_players_and_my_rank(
    svc: ServiceProcess, db: asyncpg.Connection,
) -> None:
    async with account(svc, "viewer") as web:
        viewer = await db.fetchval("SELECT id FROM players WHERE username = 'viewer'")
        rows = [("top", 1800, 30, 1), ("mid", 1600, 12, 2), ("new", 1900, 3, 1),
                ("idle", 2000, 50, 60)]
        for name, rating, games, days in rows:
            pid = await db.fetchval("INSERT INTO players (username, password_hash) "
                                    "VALUES ($1, 'x') RETURNING id", name)
            await db.execute(
                "INSERT INTO ratings VALUES ($1, 'fives', 25, 2, $2, $3, "
                "now() - make_interval(days => $4))", pid, rating, games, days)
        await db.execute("INSERT INTO ratings VALUES ($1, 'fives', 25, 2, 1700, 20, now())",
                         viewer)

        async def refreshed() -> Any:  # the board is a snapshot, rebuilt every 0.5 s here
            shown = (await web.get("/api/leaderboards/fives")).json()
            return shown if [p["name"] for p in shown["players"]] == ["top", "viewer",
                                                                      "mid"] else None

        board = await eventually(refreshed, what="refreshed leaderboard")
        unknown = await web.get("/api/leaderboards/chess")
    assert [(p["rank"], p["name"], p["rating"]) for p in board["players"]] == [
        (1, "top", 1800), (2, "viewer", 1700), (3, "mid", 1600)]
    assert board["me"] == {"rank": 2, "rating": 1700, "games": 20}
    assert (unknown.status_code, code(unknown)) == (404, "unknown_family")


# ---- PostgreSQL down -------------------------------------------------------------------------

async def test_postgres_down_mid_rated_game_the_game_is_archived_and_rated_once(
    redis_url: str,
) -> None:
    pg = PgServer()
    url = await asyncio.to_thread(pg.start)
    try:
        env = {**ENV, "DATABASE_URL": url, "ARCHIVE_RETRY_MAX_S": "0.5"}
        async with running(ServiceProcess(redis_url, env=env)) as svc, \
                account(svc, "ann") as ann, account(svc, "bob") as bob:
            table, first, second = await rated_game(svc, ann, bob)
            await play_to_end({0: first, 1: second}, [], stop_after=2)
            await asyncio.to_thread(pg.stop)  # down mid-game: the table plays on
            await play_to_end({0: first, 1: second}, [])
            refused = await ann.post("/api/session", json={"username": "ann",
                                                           "password": "long enough"})
            assert (refused.status_code, code(refused)) == (503, "unavailable")
            await asyncio.sleep(1.0)
            assert first.doc is not None and first.doc["table"]["ratings"] is None
            await asyncio.to_thread(pg.start)
            shown = await ratings_arrive(first, within_s=30)
            assert sorted(c["after"] for c in shown) == sorted(two_player_expectation())
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM games WHERE id = $1", table) == 1
            assert await conn.fetchval("SELECT sum(games) FROM ratings") == 2
            assert await conn.fetchval("SELECT count(*) FROM rating_history") == 2
        finally:
            await conn.close()
    finally:
        await asyncio.to_thread(pg.close)



async def test_a_private_rated_game_is_counted_in_ratings_but_has_no_point_in_the_history(
    svc: ServiceProcess,
) -> None:
    """docs/players.md: private games are counted in stats and ratings but never listed. The
    rating history is public: a point for a private game would say, to the millisecond and on
    both profiles, that these two played and who won."""
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        made = await ann.post("/api/tables", json={"players": 2, "rated": True, "private": True})
        assert made.status_code == 201, made.text
        table, invite = made.json()["id"], made.json()["invite"]
        await ann.post(f"/api/tables/{table}/join", json={"seat": 0, "invite": invite})
        joined = await bob.post(f"/api/tables/{table}/join", json={"seat": 1, "invite": invite})
        left = await bob.post(f"/api/tables/{table}/leave", json={"token": joined.json()["token"]})
        assert left.status_code == 200  # bob resigns: ann wins
    async with browser(svc) as stranger:
        async def rated() -> Any:
            profiles = [(await stranger.get(f"/api/players/{name}")).json()
                        for name in ("ann", "bob")]
            return profiles if all(p["ratings"] for p in profiles) else None
        for profile in await eventually(rated, what="both ratings"):
            fives = profile["ratings"]["fives"]
            assert fives["games"] == 1 and fives["history"] == []
            assert profile["recent"] == []


@pytest.mark.parametrize("how", ["password", "everywhere", "delete"])
async def test_ending_the_other_sessions_also_ends_the_seat_tokens_they_took(
    svc: ServiceProcess, how: str,
) -> None:
    """Someone who learnt ann's password logs in and takes a token for her seat. Changing the
    password, logging out everywhere or deleting the account ends their session -- and every
    seat token of the account (the intruder's socket is closed 4005, the token refused), not
    only the sessions: a stolen token used to go on playing, even resigning her rated game.
    ann's own logged-in pages take their seat back with a new token (`resume`)."""
    async with account(svc, "ann") as ann, account(svc, "bob") as bob, \
            browser(svc) as intruder:
        table = await create(ann, rated=True)
        await sit(ann, table, 0)
        await sit(bob, table, 1)
        assert (await intruder.post("/api/session", json={
            "username": "ann", "password": PASSWORD})).status_code == 200
        stolen = (await intruder.post(f"/api/tables/{table}/resume", json={})).json()["token"]
        socket = await connect(svc, table, stolen)
        if how == "password":
            ended = await ann.post("/api/me/password",
                                   json={"password": PASSWORD, "new_password": "a new one!!"})
        elif how == "everywhere":
            ended = await ann.request("DELETE", "/api/sessions", json={})
        else:
            ended = await ann.request("DELETE", "/api/me", json={"password": PASSWORD})
        assert ended.status_code in (200, 204), ended.text
        assert (await intruder.get("/api/me")).status_code == 401
        assert await close_code(socket) == 4005
        left = await intruder.post(f"/api/tables/{table}/leave", json={"token": stolen})
        assert (left.status_code, code(left)) == (403, "bad_token")
        assert (await bob.get(f"/api/tables/{table}")).json()["status"] == "playing"
        if how == "password":  # (logging out everywhere logs this page out too)
            resumed = await ann.post(f"/api/tables/{table}/resume", json={})
            assert resumed.status_code == 200 and resumed.json()["seat"] == 0


async def test_a_token_of_a_finished_game_taken_by_an_intruder_cannot_make_a_rematch(
    svc: ServiceProcess,
) -> None:
    """The seat tokens of the account's finished games end too: with one, an intruder could
    accept a rematch for the player and claim a live seat at the rematch table."""
    async with account(svc, "ann") as ann, account(svc, "bob") as bob, \
            browser(svc) as intruder:
        table = await create(ann, rated=True)
        await sit(ann, table, 0)
        bobs = await sit(bob, table, 1)
        assert (await intruder.post("/api/session", json={
            "username": "ann", "password": PASSWORD})).status_code == 200
        stolen = (await intruder.post(f"/api/tables/{table}/resume", json={})).json()["token"]
        assert (await bob.post(f"/api/tables/{table}/leave", json={"token": bobs})).status_code \
            == 200  # the game is over: ann wins
        changed = await ann.post("/api/me/password",
                                 json={"password": PASSWORD, "new_password": "a new one!!"})
        assert changed.status_code == 204
        refused = await intruder.post(f"/api/tables/{table}/rematch", json={"token": stolen})
        assert (refused.status_code, code(refused)) == (403, "bad_token")
        claim = await intruder.post(f"/api/tables/{table}/rematch/seat", json={"token": stolen})
        assert (claim.status_code, code(claim)) == (403, "bad_token")


async def test_a_guest_cannot_sit_under_an_accounts_name(svc: ServiceProcess) -> None:
    """A guest's seat named as an account (in any case, or in letters drawn alike) would read
    as that player: refused, at a table and in quick play; a name of its own is fine."""
    async with account(svc, "ann"), browser(svc) as guest:
        table = await create(guest)
        # in any case, or drawn alike (a Cyrillic a, fullwidth letters, mathematical letters)
        for name in ("ann", "ANN", " Ann ", "\u0430nn", "\uff21\uff2e\uff2e",
                     "\U0001d5ba\U0001d5c7n"):
            refused = await guest.post(f"/api/tables/{table}/join",
                                       json={"seat": 0, "name": name})
            assert (refused.status_code, code(refused)) == (400, "bad_request"), name
        queued = await guest.post("/api/quickplay", json={
            "preset": "all-fives", "players": 2, "rated": False, "name": "\u0410nn"})
        assert (queued.status_code, code(queued)) == (400, "bad_request")
        assert (await guest.post(f"/api/tables/{table}/join",
                                 json={"seat": 0, "name": "annie"})).status_code == 200
