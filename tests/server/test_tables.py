"""TableService on a real Redis: games from creation to the end, concurrency, idempotency,
frames that rebuild every audience's document, no hidden tile in any other audience's frame."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import msgpack
import pytest
import redis.asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from server.diff import apply_ops
from server.store import TableKeys
from server.tables import Rejected, TableService
from tests.support.redis_server import RedisServer
from tests.support.tables import DocumentFollower, ManualClock, new_table, play_random

AUDIENCES_2P = ("0", "1", "s")


@pytest.fixture
async def tables(redis_client: redis.asyncio.Redis) -> AsyncIterator[TableService]:
    service = TableService(redis_client, bot_delay_ms=0, clock=ManualClock())
    service.seed_source = functools.partial(random.Random(2026).getrandbits, 62)
    yield service


def tile_bytes(tile: object) -> bytes:
    """How a tile string looks inside a msgpack frame."""
    return bytes(msgpack.packb(str(tile)))


def hidden_from(game: Any, audience: str) -> set[bytes]:
    """Tiles this audience must not see: other seats' hands and the boneyard."""
    hidden = {tile_bytes(engine.TILES[i]) for i in game.boneyard_tiles}
    for seat in range(game.players):
        if audience != str(seat):
            hidden |= {tile_bytes(t) for t in game.hand(seat)}
    return hidden


def live_part(frame: bytes) -> bytes:
    """The part of a frame about the hand in play, re-encoded. A finished round reveals its
    hands and a new deal may hand those tiles out again, so when a version ends a round only
    the events after the round's end count (the new document is checked as a whole)."""
    message = msgpack.unpackb(frame)
    events = message["ev"]
    ends = [i for i, e in enumerate(events) if e["type"] == "hand_end"]
    if ends:
        return bytes(msgpack.packb(events[ends[-1] + 1:]))
    ops = [op for op in message["ops"] if op[1][:2] != ["game", "rounds"]]
    return bytes(msgpack.packb([ops, events]))


def live_document(doc: dict[str, Any]) -> bytes:
    """The document without its finished rounds (which reveal their hands), encoded."""
    game = {k: v for k, v in doc["game"].items() if k != "rounds"}
    return bytes(msgpack.packb({**doc, "game": game}))


async def test_full_two_player_game_to_the_end(tables: TableService) -> None:
    table_id, tokens = await new_table(tables, 2, rules="all-fives", name="Friday fives")
    assert sorted(tokens) == [0, 1]
    followers = {aud: DocumentFollower(tables, table_id, aud) for aud in AUDIENCES_2P}
    for follower in followers.values():
        assert [v for v, _ in await follower.catch_up()] == [1, 2, 3]
        assert await follower.matches_snapshot()
    with pytest.raises(Rejected) as refused:
        await tables.transcript(table_id)
    assert (refused.value.code, refused.value.status) == ("game_not_over", 409)

    rng = random.Random(7)
    moves = 0
    while True:
        version, doc = await tables.snapshot(table_id, "s")
        if doc["table"]["status"] == "finished":
            break
        assert doc["table"]["status"] == "playing"
        new_version = await play_random(tables, table_id, rng, f"m{moves}")
        assert new_version == version + 1
        moves += 1
        assert moves < 2000
        loaded = await tables.load(table_id)
        for audience, follower in followers.items():
            new_frames = await follower.catch_up()
            assert [v for v, _ in new_frames] == [new_version]
            assert await follower.matches_snapshot(), f"{audience} at v{new_version}"
            for hidden in hidden_from(loaded.record.game, audience):
                assert hidden not in live_part(new_frames[0][1]), (audience, hidden)
                assert hidden not in live_document(follower.doc), (audience, hidden)

    version, doc = await tables.snapshot(table_id, "s")
    assert version == moves + 3  # created, two seats taken, then one version per move
    game = doc["game"]
    assert game["game_over"] is True
    assert max(game["scores"]) >= 150
    assert doc["table"]["result"] == {"winner": game["winner"], "reason": "game_end",
                                      "seat": None}
    transcript = json.loads(gzip.decompress(await tables.transcript(table_id)))
    assert transcript["players"] == 2
    assert sum(len(r["moves"]) for r in transcript["rounds"]) == moves
    assert engine.replay(transcript)["winner"] == game["winner"]
    views = json.loads(gzip.decompress(await tables.replay(table_id)))["views"]
    # Each round's deal, then the view after each move.
    assert len(views) == moves + len(transcript["rounds"])
    assert views[0]["layout"] == [] and views[0]["hand"] is None
    assert views[-1]["scores"] == game["scores"]
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, 0, {"draw": True}, version, "late")
    assert refused.value.code == "game_over"


async def test_first_version_is_the_whole_waiting_document(tables: TableService) -> None:
    created = await tables.create({"players": 3, "bots": {"2": "greedy"}, "name": "Three"})
    assert created["invite"] is None
    table_id = created["id"]
    frames = await tables.frames_since(table_id, "s", 0)
    assert frames is not None and len(frames) == 1
    message = msgpack.unpackb(frames[0][1])
    assert message["v"] == 1
    expected_table = {
        "id": table_id, "name": "Three", "status": "waiting",
        "seats": [{"name": None, "bot": None, "taken": False, "player": None},
                  {"name": None, "bot": None, "taken": False, "player": None},
                  {"name": "Bot", "bot": "greedy", "taken": True, "player": None}],
        "clock": {"kind": None, "deadline": None, "reserve": None},
        "private": False, "result": None, "rated": False, "hints": False, "ratings": None,
        "next_hand": None, "rematch": None,
        # the deal commitment's value is checked against the revealed seed in test_fair_deal.py
        "commitment": message["ops"][0][2]["table"]["commitment"],
    }
    assert len(expected_table["commitment"]) == 64
    assert message["ops"] == [["=", [], {"v": 1, "game": None, "table": expected_table}]]
    assert await tables.snapshot(table_id, "2") == (1, {"v": 1, "game": None,
                                                        "table": expected_table})


async def test_table_starts_playing_when_the_last_person_sits(tables: TableService) -> None:
    created = await tables.create({"players": 2})
    table_id = created["id"]
    seat, token = await tables.join(table_id, None, "ann", None)
    assert seat == 0 and len(token) >= 43
    version, doc = await tables.snapshot(table_id, "0")
    assert (version, doc["table"]["status"], doc["game"]) == (2, "waiting", None)
    assert await tables.join(table_id, 1, "bob", None) is not None
    version, doc = await tables.snapshot(table_id, "1")
    assert version == 3
    assert doc["table"]["status"] == "playing"
    assert doc["table"]["seats"][1] == {"name": "bob", "bot": None, "taken": True, "player": None}
    assert doc["game"]["seat"] == 1 and len(doc["game"]["hand"]) == 7
    assert doc["game"]["hand_counts"] == [7, 7]
    with pytest.raises(Rejected) as refused:
        await tables.join(table_id, None, "carl", None)
    assert (refused.value.code, refused.value.status) == ("table_full", 409)


async def test_concurrent_moves_on_one_version_let_exactly_one_win(tables: TableService) -> None:
    table_id, _ = await new_table(tables, 2)
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await tables.snapshot(table_id, str(seat))
    legal = own["game"]["legal"]
    attempts = [tables.submit(table_id, seat, legal[i % len(legal)], version, f"c{i}")
                for i in range(12)]
    results = await asyncio.gather(*attempts, return_exceptions=True)
    accepted = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, Rejected)]
    assert accepted == [version + 1]
    assert len(refused) == 11
    assert {(r.code, r.status, r.version) for r in refused} == {
        ("stale_version", 409, version + 1)}
    assert (await tables.snapshot(table_id, "s"))[0] == version + 1


async def test_a_retried_move_id_is_applied_once(tables: TableService,
                                                 redis_client: redis.asyncio.Redis) -> None:
    table_id, _ = await new_table(tables, 2)
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await tables.snapshot(table_id, str(seat))
    move = own["game"]["legal"][0]
    assert await tables.submit(table_id, seat, move, version, "m1") == version + 1
    # The same message again (the client missed the answer): same version, nothing applied.
    assert await tables.submit(table_id, seat, move, version, "m1") == version + 1
    assert await tables.submit(table_id, seat, move, version + 1, "m1") == version + 1
    assert await redis_client.xlen(TableKeys(table_id).stream) == version + 1
    # A new id with the old version is stale.
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, seat, move, version, "m2")
    assert refused.value.code == "stale_version"


GARBAGE_MOVES: list[Any] = [
    None, [], "5-3", 7, {}, {"play": 5}, {"play": "7-7"}, {"play": "5-3", "on": [1]},
    {"draw": "yes"}, {"pass": 1}, {"play": "5-3", "draw": True}, {"play": "x" * 5000},
    {"play": {"a": 1}}, {"jump": True}, {"play": "6-6", "on": "9-9"}, {"draw": False},
    {"play": "0-0", "on": None, "extra": 1}, {"play": None},
]


async def test_garbage_moves_are_rejected_with_codes_and_change_nothing(
    tables: TableService, redis_client: redis.asyncio.Redis,
) -> None:
    table_id, _ = await new_table(tables, 2)
    version, before = await tables.snapshot(table_id, "s")
    state_before = await redis_client.get(TableKeys(table_id).state)
    seat = before["game"]["turn"]
    for i, move in enumerate(GARBAGE_MOVES):
        for who in (seat, 1 - seat):
            with pytest.raises(Rejected) as refused:
                await tables.submit(table_id, who, move, version, f"g{i}-{who}")
            assert refused.value.code and refused.value.code.isidentifier(), move
            assert 400 <= refused.value.status < 500
    # The id and version are the wire's to check (tests/server/test_protocol.py); a seat that
    # is no seat is refused here.
    for bad in [(7, {"draw": True}, version, "x"), (True, {"draw": True}, version, "x")]:
        with pytest.raises(Rejected) as refused:
            await tables.submit(table_id, *bad)  # type: ignore[arg-type]
        assert refused.value.code == "not_seated"
    assert await tables.snapshot(table_id, "s") == (version, before)
    assert await redis_client.get(TableKeys(table_id).state) == state_before
    assert await redis_client.xlen(TableKeys(table_id).stream) == version


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["play", "on", "draw", "pass", "x"]) | st.text(max_size=3), inner,
        max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=json_like)
async def test_fuzzed_move_payloads_never_change_the_table(
    tables: TableService, payload: Any,
) -> None:
    table_id = getattr(tables, "_fuzz_table", None)
    if table_id is None:
        table_id, _ = await new_table(tables, 2)
        tables._fuzz_table = table_id  # type: ignore[attr-defined]
    version, before = await tables.snapshot(table_id, "s")
    seat = 1 - before["game"]["turn"]  # the seat not to move: nothing it sends may apply
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, seat, payload, version, "fuzz")
    assert refused.value.code
    assert await tables.snapshot(table_id, "s") == (version, before)


@pytest.mark.parametrize(
    ("request_body", "code"),
    [
        ("all-fives", "bad_request"),
        ({"players": 5}, "bad_request"),
        ({"players": True}, "bad_request"),
        ({"players": "2"}, "bad_request"),
        ({"rules": "no-such-game"}, "unknown_preset"),
        ({"rules": {"preset": "all-fives", "target": -5}}, "invalid_option"),
        ({"rules": 12}, "invalid_option"),
        ({"bots": {"1": "genius"}}, "bad_request"),
        ({"bots": {"2": "greedy"}}, "bad_request"),
        ({"bots": {"0": "greedy", "1": "greedy"}}, "bad_request"),
        ({"bots": ["greedy"]}, "bad_request"),
        ({"clock": {"kind": "realtime", "move_s": 0, "reserve_s": 10}}, "bad_request"),
        ({"clock": {"kind": "realtime", "move_s": 30}}, "bad_request"),
        ({"clock": {"kind": "turn", "move_h": 24, "max_h": 12}}, "bad_request"),
        ({"clock": {"kind": "blitz"}}, "bad_request"),
        ({"clock": "fast"}, "bad_request"),
        ({"on_timeout": "draw"}, "bad_request"),
        ({"private": "yes"}, "bad_request"),
        ({"name": "x" * 61}, "bad_request"),
        ({"name": ""}, "bad_request"),
        ({"name": "a\x00b"}, "bad_request"),
        ({"name": 5}, "bad_request"),
        ({"colour": "red"}, "bad_request"),
    ],
)
async def test_bad_create_requests_are_refused_with_a_code(
    tables: TableService, redis_client: redis.asyncio.Redis, request_body: Any, code: str,
) -> None:
    with pytest.raises(Rejected) as refused:
        await tables.create(request_body)
    assert (refused.value.code, refused.value.status) == (code, 400)
    assert await redis_client.dbsize() == 0


async def test_private_table_needs_its_invite_and_is_not_listed(tables: TableService) -> None:
    public = await tables.create({"name": "open"})
    private = await tables.create({"name": "secret", "private": True})
    invite = private["invite"]
    assert isinstance(invite, str) and len(invite) >= 16
    assert [s["id"] for s in await tables.list_public()] == [public["id"]]
    with pytest.raises(Rejected) as unknown:
        await tables.summary("nosuchtable")
    for wrong in (None, "nope"):
        with pytest.raises(Rejected) as refused:
            await tables.summary(private["id"], wrong)
        # Exactly what an id that never existed gets, but for the id itself.
        assert (refused.value.code, refused.value.status) == ("unknown_table", 404)
        assert refused.value.message == unknown.value.message.replace("nosuchtable",
                                                                      private["id"])
        with pytest.raises(Rejected) as refused:
            await tables.join(private["id"], 0, "ann", wrong)
        assert (refused.value.code, refused.value.status) == ("unknown_table", 404)
        with pytest.raises(Rejected) as refused:
            await tables.authenticate(private["id"], None, wrong)
        assert refused.value.code == "unknown_table"
    summary = await tables.summary(private["id"], invite)
    assert summary["private"] is True and summary["name"] == "secret"
    seat, token = await tables.join(private["id"], 0, "ann", invite)
    assert seat == 0
    # A seat's token is enough for its holder; the invite lets a spectator in.
    assert (await tables.authenticate(private["id"], token))[0] == 0
    assert (await tables.authenticate(private["id"], None, invite))[0] is None
    assert (await tables.summary(private["id"], None, token))["id"] == private["id"]


async def test_summary_and_listing_put_open_tables_first(tables: TableService) -> None:
    full, _ = await new_table(tables, 2, name="full")
    waiting = (await tables.create({"name": "open", "rules": {"preset": "all-fives",
                                                              "target": 250}}))["id"]
    listed = await tables.list_public()
    assert [s["id"] for s in listed] == [waiting, full]
    assert listed[0] == {
        "id": waiting, "name": "open", "players": 2,
        "rules": {"preset": "all-fives", "target": 250}, "status": "waiting",
        "seats": [{"name": None, "bot": None, "taken": False, "player": None}] * 2,
        "private": False, "v": 1, "clock": None, "on_timeout": "bot",
        "created": listed[0]["created"], "rated": False, "hints": False, "family": "fives",
    }
    assert listed[1]["status"] == "playing" and listed[1]["v"] == 3


async def test_a_move_leaves_the_lobby_summary_alone_and_the_listing_shows_its_version(
        tables: TableService, redis_client: redis.asyncio.Redis) -> None:
    table_id, tokens = await new_table(tables, 2)
    meta_key = TableKeys(table_id).meta
    before = await redis_client.get(meta_key)
    assert before is not None and "v" not in msgpack.unpackb(before)
    version, doc = await tables.snapshot(table_id, "s")
    seat = doc["game"]["turn"]
    _, own = await tables.snapshot(table_id, str(seat))
    await tables.submit(table_id, seat, own["game"]["legal"][0], version, "m1")
    assert await redis_client.get(meta_key) == before
    assert [(s["id"], s["v"]) for s in await tables.list_public()] == [(table_id, version + 1)]
    await tables.leave(table_id, tokens[1 - seat])  # a seat changes: the summary is written again
    after = msgpack.unpackb(await redis_client.get(meta_key))
    assert after["seats"] != msgpack.unpackb(before)["seats"]


async def test_seat_tokens_authenticate_and_are_stored_only_as_hashes(
    tables: TableService, redis_client: redis.asyncio.Redis,
) -> None:
    table_id, tokens = await new_table(tables, 2)
    assert (await tables.authenticate(table_id, tokens[1]))[0] == 1
    assert (await tables.authenticate(table_id, None))[0] is None
    for bad in ("nope", tokens[0][:-1] + "x", ""):
        with pytest.raises(Rejected) as refused:
            await tables.authenticate(table_id, bad)
        assert (refused.value.code, refused.value.status) == ("bad_token", 403)
    with pytest.raises(Rejected) as refused:
        await tables.authenticate("nosuchtable", tokens[0])
    assert (refused.value.code, refused.value.status) == ("unknown_table", 404)
    with pytest.raises(Rejected) as refused:
        await tables.snapshot("bad{id}", "s")
    assert refused.value.code == "unknown_table"
    for key in await redis_client.keys("*"):
        if await redis_client.type(key) == b"string":
            value = await redis_client.get(key)
            assert tokens[0].encode() not in value and tokens[1].encode() not in value


async def test_leaving_a_waiting_table_frees_the_seat(tables: TableService) -> None:
    table_id = (await tables.create({"players": 3}))["id"]
    _, token = await tables.join(table_id, 1, "ann", None)
    await tables.leave(table_id, token)
    version, doc = await tables.snapshot(table_id, "s")
    assert version == 3
    assert doc["table"]["seats"][1] == {"name": None, "bot": None, "taken": False, "player": None}
    with pytest.raises(Rejected) as refused:
        await tables.authenticate(table_id, token)
    assert refused.value.code == "bad_token"
    assert (await tables.join(table_id, 1, "bob", None))[0] == 1
    with pytest.raises(Rejected) as refused:
        await tables.join(table_id, 1, "carl", None)
    assert (refused.value.code, refused.value.status) == ("seat_taken", 409)


async def test_redis_restart_mid_game_with_empty_script_cache_keeps_playing() -> None:
    with RedisServer() as server:
        client = redis.asyncio.Redis.from_url(server.url)
        tables = TableService(client, bot_delay_ms=0)
        table_id, tokens = await new_table(tables, 2)
        rng = random.Random(3)
        for i in range(6):
            await play_random(tables, table_id, rng, f"a{i}")
        before = await tables.snapshot(table_id, "0")
        server.restart()
        await tables.snapshot(table_id, "s")  # the first command meets the restarted server
        await client.script_flush()
        assert await tables.snapshot(table_id, "0") == before
        assert (await tables.authenticate(table_id, tokens[1]))[0] == 1
        server.kill()
        server.start()
        follower = DocumentFollower(tables, table_id, "1")
        for i in range(6):
            await play_random(tables, table_id, rng, f"b{i}")
        await follower.catch_up()
        assert follower.version == before[0] + 6
        assert await follower.matches_snapshot()
        await client.aclose()


async def test_storage_down_is_reported_as_unavailable() -> None:
    server = RedisServer()
    server.start()
    client = redis.asyncio.Redis.from_url(server.url)
    tables = TableService(client)
    table_id, _ = await new_table(tables, 2)
    server.close()
    with pytest.raises(Rejected) as refused:
        await tables.snapshot(table_id, "s")
    assert (refused.value.code, refused.value.status) == ("unavailable", 503)
    with pytest.raises(Rejected) as refused:
        await tables.submit(table_id, 0, {"draw": True}, 3, "x")
    assert refused.value.code == "unavailable"
    await client.aclose()


def test_diff_ops_of_a_frame_apply_to_the_previous_document() -> None:
    # A hand-written frame as a client receives it (the protocol's example).
    doc = {"v": 12, "game": {"turn": 1, "scores": [10, 0], "history": []}}
    ops = [["=", ["v"], 13], ["=", ["game", "turn"], 0], ["=", ["game", "scores", 1], 15],
           ["+", ["game", "history"], [{"seat": 1, "play": "5-0", "on": "5-5"}]]]
    assert apply_ops(doc, ops) == {"v": 13, "game": {
        "turn": 0, "scores": [10, 15], "history": [{"seat": 1, "play": "5-0", "on": "5-5"}]}}


async def test_history_beyond_the_limit_asks_for_a_snapshot(
    redis_client: redis.asyncio.Redis,
) -> None:
    tables = TableService(redis_client, history_limit=5, bot_delay_ms=0)
    table_id, _ = await new_table(tables, 2)
    rng = random.Random(8)
    for i in range(8):
        await play_random(tables, table_id, rng, f"m{i}")
    assert await tables.frames_since(table_id, "s", 11) == []
    frames = await tables.frames_since(table_id, "s", 8)
    assert frames is not None and [v for v, _ in frames] == [9, 10, 11]
    assert [v for v, _ in await tables.frames_since(table_id, "1", 6) or []] == [7, 8, 9, 10, 11]
    assert await tables.frames_since(table_id, "s", 5) is None
    assert await tables.frames_since(table_id, "s", 12) is None
