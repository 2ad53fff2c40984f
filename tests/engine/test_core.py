"""Core API: tiles, moves, legal moves, apply, views and the plain-data round trip."""

from __future__ import annotations

import pytest

from engine import (
    Draw,
    IllegalMove,
    InvalidNotation,
    InvalidTranscript,
    Pass,
    Play,
    Tile,
    apply,
    legal_moves,
    move_from_data,
    move_to_data,
    new_game,
    past_from_data,
    redact_events,
    state_from_data,
    state_to_data,
    view,
)
from tests.engine.scenario import deal, move, play, points


def test_tile_text_is_symmetric() -> None:
    assert Tile.parse("6-4") == Tile.parse("4-6") == Tile(4, 6)
    assert str(Tile.parse("4-6")) == "6-4"
    assert Tile.parse("3-3").is_double
    assert Tile.parse("5-2").pips == 7
    assert (Tile.parse("6-4").high, Tile.parse("6-4").low) == (6, 4)
    assert sorted([Tile.parse("6-6"), Tile.parse("0-0"), Tile.parse("5-4")])[0] == Tile(0, 0)
    assert len({Tile.parse("1-2"), Tile.parse("2-1")}) == 1


@pytest.mark.parametrize("text", ["7-1", "6_4", "64", "", "6-", " 6-4", 64, None, "a-b"])
def test_bad_tile_text_is_refused(text: object) -> None:
    with pytest.raises(InvalidNotation) as err:
        Tile.parse(text)
    assert err.value.code == "bad_tile"


def test_move_data_round_trip() -> None:
    for data in ({"play": "5-3", "on": "5-5"}, {"play": "5-5"}, {"draw": True}, {"pass": True}):
        assert move_to_data(move_from_data(data)) == data
    assert move_from_data({"play": "3-5", "on": "5-5"}) == Play(Tile(5, 3), Tile(5, 5))
    assert move_from_data({"draw": True}) == Draw()
    assert move_from_data({"pass": True}) == Pass()


@pytest.mark.parametrize("data", [
    {"draw": False}, {"pass": 1}, {"play": "5-3", "at": "L"}, {"play": "9-9"}, [], "draw",
    {"draw": True, "pass": True}, {},
])
def test_bad_move_data_is_refused(data: object) -> None:
    with pytest.raises(InvalidNotation):
        move_from_data(data)


def test_new_game_is_deterministic_and_deals_the_whole_set() -> None:
    a = new_game("all-fives", 2, 7)
    b = new_game("all-fives", 2, 7)
    assert a == b
    assert new_game("all-fives", 2, 8) != a
    hands = [a.hand(s) for s in range(2)]
    assert [len(h) for h in hands] == [7, 7]
    assert a.boneyard_size == 14
    assert a.players == 2 and a.round == 0 and a.scores == (0, 0)
    assert a.sides == ((0,), (1,))
    assert new_game("all-fives", 4, 1).sides == ((0, 2), (1, 3))


def test_lead_legal_moves_are_every_tile_in_hand() -> None:
    state = deal({"preset": "all-fives", "hand_size": 3}, [["5-5", "6-4", "1-0"],
                                                            ["2-2", "3-1", "4-0"]])
    assert {move_to_data(m)["play"] for m in legal_moves(state)} == {"5-5", "6-4", "1-0"}


def test_pagat_sequence_scores_and_views() -> None:
    state = deal("all-fives", [
        ["4-1", "4-4", "2-1", "5-5", "3-1", "4-2", "6-2"],
        ["1-1", "4-3", "5-1", "5-0", "6-3", "6-6", "0-0"],
    ])
    state, events = play(state, ["1-4", "1-1", "4-4", "4-3", "1-2", "1-5", "5-5", "5-0",
                                 "1-3>1-1"])
    assert points(events) == [5, 0, 10, 5, 5, 10, 15, 5, 0]
    assert state.scores == (35, 20)
    seen = view(state, 1)
    assert seen["end_total"] == 8
    assert sorted(e["count"] for e in seen["ends"]) == [0, 2, 3, 3]
    assert seen["hand"] == ["6-6", "6-3", "0-0"]
    assert sorted(seen["legal"], key=str) == sorted([
        {"play": "6-3", "on": "4-3"}, {"play": "6-3", "on": "3-1"}, {"play": "0-0", "on": "5-0"},
    ], key=str)
    assert seen["layout"][1] == {"tile": "1-1", "parent": 0, "side": "R", "inner": 1,
                                 "spinner": True}


def test_illegal_move_leaves_state_untouched() -> None:
    state = deal("all-fives", [
        ["4-1", "4-4", "2-1", "5-5", "3-1", "4-2", "6-2"],
        ["1-1", "4-3", "5-1", "5-0", "6-3", "6-6", "0-0"],
    ])
    state, _ = play(state, ["1-4"])
    before = state_to_data(state)
    with pytest.raises(IllegalMove) as err:
        apply(state, 1, move("6-6"))
    assert err.value.code == "not_playable"
    assert state_to_data(state) == before


def test_state_round_trips_through_plain_data() -> None:
    state = new_game("all-fives", 3, 11)
    for _ in range(30):
        assert state.turn is not None
        state, _ = apply(state, state.turn, legal_moves(state)[0])
        assert state_from_data(state_to_data(state)) == state


def test_a_stored_state_with_a_malformed_move_log_is_refused() -> None:
    state = new_game("all-fives", 2, 4)
    while not state.table.past or len(state.log) < 2:  # a finished round, and moves in this one
        assert state.turn is not None
        state, _ = apply(state, state.turn, legal_moves(state)[0])
    good = state_to_data(state)
    assert past_from_data(good["past"]) == state.table.past
    assert state_from_data(good) == state
    assert state_from_data(dict(good, past=[]), state.table.past) == state
    entry = list(good["log"][0])
    for bad in ([*entry[:5], True], [*entry[:5], 1.0], [*entry[:5], None], entry[:5],
                [*entry, 0], 7):
        for where in ("log", "past"):
            data = dict(good, log=[bad, *good["log"][1:]])
            if where == "past":
                first = dict(good["past"][0], moves=[bad, *good["past"][0]["moves"][1:]])
                data = dict(good, past=[first, *good["past"][1:]])
            with pytest.raises(InvalidTranscript) as info:
                state_from_data(data)
            assert info.value.code == "bad_state", (where, bad)
    with pytest.raises(InvalidTranscript):
        past_from_data([{"hands": [[1, True]]}])


def test_draw_events_are_redacted_for_other_seats() -> None:
    events = [{"type": "draw", "seat": 1, "tile": "6-6"}, {"type": "pass", "seat": 0}]
    assert redact_events(events, 1) == events
    assert redact_events(events, 0) == [{"type": "draw", "seat": 1}, {"type": "pass", "seat": 0}]
    assert redact_events(events, None)[0] == {"type": "draw", "seat": 1}
