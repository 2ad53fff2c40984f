"""Every kind of illegal move is refused with its code and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine import (
    Draw,
    EngineError,
    GameState,
    IllegalMove,
    InvalidNotation,
    Pass,
    apply,
    replay,
    state_to_data,
)
from tests.engine.scenario import deal, move, play

PAGAT = [
    ["4-1", "4-4", "2-1", "5-5", "3-1", "4-2", "6-2"],
    ["1-1", "4-3", "5-1", "5-0", "6-3", "6-6", "0-0"],
]


def refused(state: GameState, seat: int, the_move: Any, code: str) -> None:
    before = state_to_data(state)
    with pytest.raises(EngineError) as err:
        apply(state, seat, the_move)
    assert err.value.code == code
    assert err.value.message
    assert state_to_data(state) == before


def after(moves: list[str], spec: Any = "all-fives", hands: list[list[str]] = PAGAT,
          **kw: Any) -> GameState:
    return play(deal(spec, hands, **kw), moves)[0]


CASES: list[tuple[str, Callable[[], GameState], int, str, str]] = [
    ("wrong seat", lambda: after([]), 1, "1-1", "not_your_turn"),
    ("seat out of range", lambda: after([]), 7, "1-1", "not_your_turn"),
    ("tile not held", lambda: after(["1-4"]), 1, "5-5", "not_in_hand"),
    ("fits no end", lambda: after(["1-4"]), 1, "6-6", "not_playable"),
    ("named tile has no such end", lambda: after(["1-4", "1-1>4-1"]), 0, "2-1>4-1",
     "not_playable"),
    ("named tile not on layout", lambda: after(["1-4"]), 1, "1-1>5-5", "bad_end"),
    ("lead played on a tile", lambda: after([]), 0, "4-1>4-4", "bad_end"),
    ("draw while a tile fits", lambda: after(["1-4"]), 1, "draw", "must_play"),
    ("pass while a tile fits", lambda: after(["1-4"]), 1, "pass", "must_play"),
    ("lead must be made, not drawn", lambda: after([]), 0, "draw", "must_play"),
]


@pytest.mark.parametrize(("state_of", "seat", "text", "code"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_illegal_moves_are_refused(
    state_of: Callable[[], GameState], seat: int, text: str, code: str
) -> None:
    refused(state_of(), seat, move(text), code)


def test_ambiguous_omitted_end_is_a_bad_end() -> None:
    state = after(["1-4", "1-1>4-1", "4-4>4-1", "4-3>4-4"])
    # 3-1 fits the 4-3's 3 and the spinner 1-1's free side
    refused(state, 0, move("3-1"), "bad_end")


def test_pass_while_the_boneyard_is_open_must_draw() -> None:
    state = deal({"preset": "all-fives", "hand_size": 2}, [["6-6", "5-5"], ["1-0", "2-0"]])
    state, _ = play(state, ["6-6"])
    refused(state, 1, Pass(), "must_draw")


def test_draw_at_the_reserve_or_without_drawing_cannot_draw() -> None:
    state = deal({"preset": "all-fives", "hand_size": 2, "boneyard_reserve": 24},
                 [["6-6", "6-5"], ["1-0", "2-0"]])
    state, _ = play(state, ["6-6"])
    refused(state, 1, Draw(), "cannot_draw")
    state = deal({"preset": "block", "hand_size": 2}, [["6-6", "6-5"], ["1-0", "2-0"]])
    state, _ = play(state, ["6-6"])
    refused(state, 1, Draw(), "cannot_draw")


def test_must_lead_the_highest_double_or_a_double() -> None:
    state = deal({"preset": "block", "hand_size": 2}, [["5-5", "1-0"], ["6-6", "2-0"]],
                 leader=1)
    refused(state, 1, move("2-0"), "must_lead_double")
    state = deal("double-bergen", [
        ["3-3", "3-2", "1-0", "2-0", "4-0", "5-0"],
        ["4-3", "6-3", "4-1", "6-1", "5-1", "6-2"],
    ], leader=0)
    refused(state, 0, move("3-2"), "must_lead_double")
    refused(state, 0, Draw(), "must_play")


def test_nothing_is_played_after_the_game_is_over() -> None:
    state = deal({"preset": "all-fives", "hand_size": 1, "target": 5}, [["3-2"], ["1-1"]])
    state, _ = play(state, ["3-2"])
    assert state.game_over and state.turn is None
    refused(state, 0, move("1-0"), "game_over")
    refused(state, 1, Pass(), "game_over")


def test_not_a_move_is_bad_notation() -> None:
    state = after([])
    with pytest.raises(InvalidNotation) as err:
        apply(state, 0, "5-5")  # type: ignore[arg-type]
    assert err.value.code == "bad_move"


def test_moves_after_a_hand_ended_are_refused_in_a_transcript() -> None:
    transcript = {
        "rules": {"preset": "all-fives", "hand_size": 1}, "players": 2,
        "rounds": [{"hands": [["3-2"], ["1-1"]],
                    "boneyard": [t for t in ALL if t not in ("3-2", "1-1")],
                    "leader": 0,
                    "moves": [{"seat": 0, "play": "3-2"}, {"seat": 1, "pass": True}]}],
    }
    with pytest.raises(IllegalMove) as err:
        replay(transcript)
    assert (err.value.code, err.value.round, err.value.move) == ("hand_over", 0, 1)


ALL = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1)]


def same_tile(a: str, b: str) -> bool:
    return sorted(a.split("-")) == sorted(b.split("-"))


@pytest.mark.parametrize(("mutate", "code", "where"), [
    (lambda t: t["rounds"][0]["hands"][0].pop(), "bad_deal", (0, None)),
    (lambda t: t["rounds"][0]["hands"][0].__setitem__(0, "5-3"), "bad_deal", (0, None)),
    (lambda t: t["rounds"][0]["hands"][0].__setitem__(0, "9-9"), "bad_deal", (0, None)),
    (lambda t: t["rounds"][0]["hands"][0].__setitem__(0, 13), "bad_deal", (0, None)),
    (lambda t: t["rounds"][0].__setitem__("boneyard", "6-6"), "bad_deal", (0, None)),
    (lambda t: t["rounds"][0].__setitem__("leader", 2), "bad_leader", (0, None)),
    (lambda t: t["rounds"][0].__setitem__("leader", "0"), "bad_leader", (0, None)),
    (lambda t: t["rounds"][0]["moves"].append({"seat": 1, "play": "6-6"}), "not_playable",
     (0, 9)),
    (lambda t: t["rounds"][0]["moves"].append({"seat": 0, "play": "6-2"}), "not_your_turn",
     (0, 9)),
    (lambda t: t["rounds"][0]["moves"].append({"play": "6-3"}), "bad_move", (0, 9)),
    (lambda t: t["rounds"][0]["moves"].append({"seat": 1, "play": "6-3", "x": 1}), "bad_move",
     (0, 9)),
    (lambda t: t["rounds"].append(t["rounds"][0]), "extra_round", (1, None)),
    (lambda t: t.__setitem__("players", 3), "bad_deal", (0, None)),
    (lambda t: t.__setitem__("rules", {"preset": "all-fives", "colour": "red"}),
     "invalid_option", (None, None)),
])
def test_broken_transcripts_name_round_move_and_code(
    mutate: Callable[[dict[str, Any]], object], code: str, where: tuple[int | None, int | None]
) -> None:
    transcript: dict[str, Any] = {
        "format": "dominoes-transcript/1", "rules": "all-fives", "players": 2,
        "rounds": [{
            "hands": [list(h) for h in PAGAT],
            "boneyard": [t for t in ALL if not any(same_tile(t, x) for h in PAGAT for x in h)],
            "leader": 0,
            "moves": [{"seat": 0, "play": "1-4"}, {"seat": 1, "play": "1-1"},
                      {"seat": 0, "play": "4-4"}, {"seat": 1, "play": "4-3"},
                      {"seat": 0, "play": "1-2"}, {"seat": 1, "play": "1-5"},
                      {"seat": 0, "play": "5-5"}, {"seat": 1, "play": "5-0"},
                      {"seat": 0, "play": "1-3", "on": "1-1"}],
        }],
    }
    replay(transcript)
    mutate(transcript)
    with pytest.raises(EngineError) as err:
        replay(transcript)
    assert err.value.code == code
    assert (err.value.round, err.value.move) == where


def test_moves_after_an_exact_target_win_are_game_over() -> None:
    transcript = {
        "rules": {"preset": "fives-and-threes", "target": 1, "hand_size": 2}, "players": 2,
        "rounds": [{"hands": [["5-0", "6-6"], ["1-0", "4-4"]],
                    "boneyard": [t for t in ALL if t not in ("5-0", "6-6", "1-0", "4-4")],
                    "leader": 0,
                    "moves": [{"seat": 0, "play": "5-0"}, {"seat": 1, "play": "1-0"}]}],
    }
    with pytest.raises(IllegalMove) as err:
        replay(transcript)
    assert (err.value.code, err.value.round, err.value.move) == ("game_over", 0, 1)
    transcript["rounds"][0]["moves"].pop()  # type: ignore[index]
    assert replay(transcript) == {
        "rounds": [{"scores": [1], "end": "target", "winner": None, "bonus": 0,
                    "totals": [1, 0]}],
        "winner": 0,
    }
