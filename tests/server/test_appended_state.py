"""A move that keeps its hand going is stored as itself, appended to the table's state: played
again (`TableRecord.replayed`) it gives exactly the record the commit made, and the stored
state (the whole state, then the moves appended since) reads back as the table."""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest
import redis.asyncio

import engine
from server.record import PLAYING, TableRecord, keeps_hand, stored_state
from server.store import TableKeys
from server.table_config import parse_create_request
from server.tables import TableService
from tests.support.tables import ManualClock, new_table, play_random

CLOCK = {"kind": "realtime", "move_s": 20, "reserve_s": 60}


def played_changes(preset: str, players: int, seed: int, pause_s: float,
                   clock: dict[str, Any] | None) -> list[tuple[TableRecord, Any]]:
    """(record before, change) of each move (and deal after a pause) of a random game played
    through the service's rules, its clock moving on by a random time before each move."""
    rng = random.Random(seed)
    now = ManualClock()
    service = TableService(redis.asyncio.Redis(), clock=now,  # never connects
                           next_hand_s=pause_s)
    config = parse_create_request({"players": players, "rules": preset, "clock": clock})
    record = TableRecord.new("app123", config, 0, rng.randrange(2**62), None)
    record = service._start(record)
    played = []
    while record.status == PLAYING and len(played) < 400:
        if record.next_hand is not None:  # the pause: the next hand dealt
            played.append((record, service.deal(record)))
            record = played[-1][1].record
            continue
        now.advance(rng.uniform(0.05, 8.0))
        move = rng.choice(engine.legal_moves(record.game))
        change = service.play(record, record.game.turn, move, None)
        played.append((record, change))
        record = change.record
    return played


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_an_appended_move_played_again_is_the_record_the_commit_made(preset: str,
                                                                      players: int) -> None:
    seed = players * 31 + len(preset)
    for pause_s, clock in ((0.0, CLOCK), (10.0, None)):
        played = played_changes(preset, players, seed, pause_s, clock)
        appended = since = 0
        stored = played[0][0].to_blob()
        for before, change in played:
            if change.move is None:
                # a hand's last move (and the deal or the game's end it brings), never appended
                assert not keeps_hand(before.game, change.record.game), (preset, pause_s)
                stored, since = change.record.to_blob(), 0
                continue
            appended += 1
            assert keeps_hand(before.game, change.record.game)
            assert before.replayed(msgpack.unpackb(change.move)) == change.record, preset
            # the whole state, then every move appended since, read back
            stored, since = stored + change.move, since + 1
            assert stored_state(stored) == (change.record, since), (preset, pause_s)
        assert appended >= len(played) * 0.6, (preset, appended, len(played))


def test_a_move_that_does_not_keep_its_hand_going_is_refused_when_played_again() -> None:
    played = played_changes("all-fives", 2, 5, 0.0, None)
    before = next(before for before, change in played if change.move is None)
    move = engine.move_to_data(next(
        m for m in engine.legal_moves(before.game)
        if not keeps_hand(before.game, engine.apply(before.game, before.game.turn, m)[0])))
    with pytest.raises(ValueError):
        before.replayed([before.game.turn, move, 0])
    # and a move of a seat whose turn it is not is the engine's refusal
    before = played[0][0]
    with pytest.raises(engine.EngineError):
        before.replayed([(before.game.turn + 1) % 2, {"draw": True}, 0])


async def test_the_stored_state_reads_back_as_the_table_after_every_commit(
        redis_client: redis.asyncio.Redis) -> None:
    service = TableService(redis_client, bot_delay_ms=0, clock=ManualClock())
    service.append_max = 3
    table_id, _ = await new_table(service, clock=CLOCK)
    rng = random.Random(11)
    seen_appended = set()
    for n in range(60):
        version = await play_random(service, table_id, rng, f"m{n}")
        blob = await redis_client.get(TableKeys(table_id).state)
        record, moves = stored_state(blob)
        cached = service._cache[table_id]
        assert (cached.version, cached.record, cached.appended) == (version, record, moves)
        assert moves <= 3
        seen_appended.add(moves)
        # a process that has never seen the table reads the same
        fresh = TableService(redis_client, clock=ManualClock())
        assert (await fresh.load(table_id)).record == record
        if record.status != PLAYING:
            break
    assert {0, 1, 2, 3} <= seen_appended


async def test_with_appending_off_every_commit_writes_the_whole_state(
        redis_client: redis.asyncio.Redis) -> None:
    service = TableService(redis_client, bot_delay_ms=0, clock=ManualClock(), append_max=0)
    table_id, _ = await new_table(service)
    rng = random.Random(12)
    for n in range(20):
        await play_random(service, table_id, rng, f"m{n}")
        blob = await redis_client.get(TableKeys(table_id).state)
        assert TableRecord.from_data(msgpack.unpackb(blob)) == service._cache[table_id].record
