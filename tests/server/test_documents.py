"""Documents built from the previous version's (sharing what did not change) are exactly the
documents built from scratch, and the diff between consecutive ones rebuilds the new one."""

from __future__ import annotations

import itertools
import random
from dataclasses import fields, replace

import msgpack
import pytest

import engine
from server import protocol
from server.diff import Bodies, Memo, apply_ops, diff, same
from server.record import FINISHED, PLAYING, TableRecord, forfeit
from server.table_config import parse_create_request


def played_records(preset: str, players: int, seed: int) -> list[TableRecord]:
    rng = random.Random(seed)
    record = TableRecord.new("docs1", parse_create_request({"players": players, "rules": preset}),
                             0, rng.randrange(2**62), None)
    records = [record, replace(record, status=PLAYING)]
    while not records[-1].game.game_over and len(records) < 400:
        game = records[-1].game
        move = rng.choice(engine.legal_moves(game))
        records.append(replace(records[-1], game=engine.apply(game, game.turn, move)[0]))
    return records


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_shared_documents_equal_fresh_ones_and_diffs_rebuild_them(preset: str,
                                                                  players: int) -> None:
    records = played_records(preset, players, seed=players * 101 + len(preset))
    previous = None
    old_docs = None
    for version, record in enumerate(records, start=1):
        docs = record.documents(version, previous)
        fresh = record.documents(version)
        assert docs.keys() == fresh.keys()
        memo: Memo = {}  # shared by the audiences, as a commit shares it
        for audience in docs:
            assert same(docs[audience], fresh[audience]), (preset, version, audience)
            if old_docs is not None:
                ops = diff(old_docs[audience], docs[audience], memo)
                assert ops == diff(old_docs[audience], docs[audience]), (preset, version)
                rebuilt = apply_ops(old_docs[audience], ops)
                assert same(rebuilt, fresh[audience]), (preset, version, audience)
        previous, old_docs = (record, docs["s"]), docs


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("preset", sorted(engine.PRESETS))
def test_diffs_built_from_a_move_are_the_diffs_of_the_documents(preset: str,
                                                               players: int) -> None:
    """`TableRecord.move_ops` (the commit's path for a move within a hand) gives every
    audience the very ops the documents' diff gives, and is taken for most moves."""
    records = played_records(preset, players, seed=players * 7 + len(preset))
    taken = moves = 0
    for version, (before, after) in enumerate(itertools.pairwise(records[1:]), start=2):
        moves += 1
        moved = after.move_ops(before, version)
        if moved is None:
            continue
        taken += 1
        old_docs, new_docs = before.documents(version - 1), after.documents(version)
        assert moved.keys() == new_docs.keys()
        for audience, ops in moved.items():
            assert ops == diff(old_docs[audience], new_docs[audience]), (preset, version, audience)
            # and they are exactly what the frame carries (no shared object altered later)
            assert msgpack.unpackb(msgpack.packb(ops)) == msgpack.unpackb(
                msgpack.packb(diff(old_docs[audience], new_docs[audience])))
        # the frames packed group by group, as the commit packs them, are the frames whole
        bodies: Bodies = {}
        packed: protocol.Packed = {}
        groups = after.move_groups(before, version, bodies)
        assert groups is not None
        events = [{"type": "play", "seat": 0, "tile": "6-6"}]
        for audience, found in groups.items():
            assert protocol.pack_diff_groups(version, found, events, packed, bodies) == \
                protocol.pack(protocol.diff(version, moved[audience], events))
    assert taken >= moves * 0.6, (taken, moves)  # the hands' last moves and deals are not


def service_records(preset: str, players: int, seed: int, pause: bool,
                    most: int = 300, max_hands: int | None = None) -> list[TableRecord]:
    """A game played through the table service (a pause between hands when ``pause``, dealt
    by `TableService.deal`), a seat handed to a stand-in bot midway, and a forfeit or the
    game's end last."""
    import redis.asyncio

    from server.tables import TableService

    rng = random.Random(seed)
    service = TableService(redis.asyncio.Redis(), next_hand_s=20 if pause else 0,
                           max_hands=max_hands)
    record = TableRecord.new("docs3", parse_create_request({"players": players, "rules": preset}),
                             0, rng.randrange(2**62), None)
    records = [record, replace(record, status=PLAYING)]
    while records[-1].status == PLAYING and len(records) < most:
        record = records[-1]
        if len(records) == 40:
            seats = list(record.seats)
            seats[1] = replace(seats[1], bot="greedy")
            records.append(replace(record, seats=tuple(seats)))
        elif record.next_hand is not None:
            records.append(service.deal(record).record)
        else:
            seat = record.game.turn
            move = rng.choice(engine.legal_moves(record.game))
            records.append(service.play(record, seat, move, None).record)
    if records[-1].status == PLAYING:
        records.append(forfeit(records[-1], 0, "time", 10))
    return records


@pytest.mark.parametrize(("preset", "players", "pause", "most", "max_hands"), [
    ("all-fives", 2, False, 300, None), ("all-fives", 2, True, 300, None),
    ("draw", 4, False, 300, None), ("bergen", 3, True, 300, None),
    ("fives-and-threes", 3, False, 300, None), ("block", 4, True, 300, None),
    ("all-fives", 3, True, 60, None),  # a forfeit in the middle of a hand
    ("all-fives", 2, True, 300, 2), ("block", 3, False, 300, 3)])  # the hand limit
def test_every_change_of_a_table_in_play_diffs_as_its_documents(
        preset: str, players: int, pause: bool, most: int, max_hands: int | None) -> None:
    """`TableRecord.change_groups` (the commit's path for a table in play, whatever changed:
    moves, hands' last moves, deals, a seat, the game's end) gives every audience the very ops
    the documents' diff gives, and frames packed as the commit packs them."""
    records = service_records(preset, players, seed=players * 5 + len(preset), pause=pause,
                              most=most, max_hands=max_hands)
    assert records[-1].status == FINISHED
    if max_hands is not None:
        assert records[-1].result is not None
        assert records[-1].result["reason"] == "hand_limit", records[-1].result
    events = [{"type": "play", "seat": 0, "tile": "6-6"}]
    for version, (before, after) in enumerate(itertools.pairwise(records[1:]), start=2):
        bodies: Bodies = {}
        groups = after.change_groups(before, version, bodies)
        assert groups is not None, version
        old_docs, new_docs = before.documents(version - 1), after.documents(version)
        assert groups.keys() == new_docs.keys()
        packed: protocol.Packed = {}
        for audience, found in groups.items():
            ops = diff(old_docs[audience], new_docs[audience])
            assert [op for group in found for op in group] == ops, (preset, version, audience)
            assert protocol.pack_diff_groups(version, found, events, packed, bodies) == \
                protocol.pack(protocol.diff(version, ops, events))
    waiting = TableRecord.new("docs4", parse_create_request({"players": 2}), 0, 7, None)
    assert records[1].change_groups(waiting, 2) is None  # a game starting: its documents


def test_a_move_that_ends_a_hand_or_changes_the_table_is_left_to_the_documents() -> None:
    records = played_records("all-fives", 2, seed=5)
    ended = next(i for i in range(2, len(records))
                 if records[i].game.round != records[i - 1].game.round
                 or records[i].game.turn is None)
    assert records[ended].move_ops(records[ended - 1], 9) is None
    before, after = records[3], records[4]
    assert after.move_ops(before, 9) is not None
    seated = (replace(before.seats[0], name="Ann", taken=True), *before.seats[1:])
    assert after.move_ops(replace(before, seats=seated), 9) is None
    assert replace(after, status=FINISHED).move_ops(before, 9) is None


def test_a_seat_view_is_never_taken_as_the_previous_public_view() -> None:
    """Reuse starts only from a spectator's view: a seat's view holds its own drawn tiles."""
    records = played_records("draw", 2, seed=3)
    for before, after in itertools.pairwise(records[1:]):
        seat_doc = before.documents(1)["0"]
        docs = after.documents(2, (before, seat_doc))
        assert same(docs["s"], after.documents(2)["s"])


def test_state_blobs_rebuild_the_record_with_its_finished_rounds() -> None:
    records = played_records("all-fives", 2, seed=8)
    assert len(records[-1].game.table.past) >= 2  # several rounds: their encoding is reused
    for record in records:
        assert TableRecord.from_blob(record.to_blob()) == record


def test_a_state_blob_is_the_whole_state_whatever_its_parts_encoded_before() -> None:
    records = played_records("draw", 3, seed=5)
    other = replace(records[-1], id="docs2", salt="another salt")  # the same settings object
    for record in [*records, other, records[-1]]:
        data = msgpack.unpackb(record.to_blob())
        game = data.pop("game")
        game["past"] = msgpack.unpackb(game["past"])
        assert game == engine.state_to_data(record.game)
        assert (data["id"], data["salt"], data["status"]) == (record.id, record.salt,
                                                             record.status)
        assert data["config"] == record.config.to_data()
        assert data["seats"] == [seat.to_blob() for seat in record.seats]


def test_a_state_blob_with_its_rounds_inline_still_loads() -> None:
    """Blobs written before the finished rounds were stored as one binary field."""
    record = played_records("all-fives", 2, seed=9)[-1]
    data = msgpack.unpackb(record.to_blob())
    data["game"]["past"] = engine.past_to_data(record.game.table.past)
    assert TableRecord.from_blob(msgpack.packb(data)) == record


def test_a_record_with_another_game_is_the_record_replace_gives() -> None:
    records = played_records("all-fives", 2, seed=12)
    record = replace(
        records[5], clock=None, result={"winner": 1}, invite_hash="h" * 64, started_ms=17,
        ratings=({"seat": 0},), next_hand={"deadline": 5, "ready": [1]},
        rematch={"accepted": [0], "table": None})
    assert {f.name for f in fields(TableRecord)} == set(TableRecord.__slots__)
    moved = record.with_game(records[6].game)
    assert type(moved) is TableRecord
    assert moved == replace(record, game=records[6].game)
    assert all(getattr(moved, f.name) is getattr(record, f.name)
               for f in fields(TableRecord) if f.name != "game")
    assert moved.game is records[6].game
    with pytest.raises(AttributeError):
        moved.game = records[5].game  # type: ignore[misc]  # frozen like any TableRecord
