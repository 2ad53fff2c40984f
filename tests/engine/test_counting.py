"""Counting the ends and scoring plays (rules.md §2, §3, §8); expected values by hand."""

from __future__ import annotations

import pytest

from engine import Draw, legal_moves, view
from tests.engine.scenario import deal, move, play, points


@pytest.mark.parametrize(("lead", "total", "scored"), [
    ("5-0", 5, 5), ("6-4", 10, 10), ("5-5", 10, 10), ("3-2", 5, 5), ("6-6", 12, 0),
])
def test_worked_leads(lead: str, total: int, scored: int) -> None:
    state = deal({"preset": "all-fives", "hand_size": 2}, [[lead, "1-0"], ["2-1", "3-1"]])
    state, events = play(state, [lead])
    assert events[0]["end_total"] == total
    assert points(events) == [scored]
    assert view(state, None)["layout"][0]["spinner"] is (lead == "5-5" or lead == "6-6")


def test_pagat_worked_sequence_counts_every_step() -> None:
    state = deal("all-fives", [
        ["4-1", "4-4", "2-1", "5-5", "3-1", "4-2", "6-2"],
        ["1-1", "4-3", "5-1", "5-0", "6-3", "6-6", "0-0"],
    ])
    state, events = play(state, ["1-4", "1-1>4-1", "4-4>4-1", "4-3>4-4", "2-1>1-1",
                                 "5-1>1-1", "5-5>5-1", "5-0>5-5", "3-1>1-1"])
    totals = [e["end_total"] for e in events if e["type"] == "play"]
    assert totals == [5, 6, 10, 5, 5, 10, 15, 5, 8]
    assert points(events) == [5, 0, 10, 5, 5, 10, 15, 5, 0]
    layout = view(state, None)["layout"]
    assert [n["side"] for n in layout] == [None, "R", "L", "O", "R", "U", "O", "O", "D"]
    assert [n["spinner"] for n in layout].count(True) == 1


def test_lone_double_with_one_neighbour_still_counts_both_halves() -> None:
    state = deal({"preset": "all-fives", "hand_size": 3},
                 [["5-5", "1-1", "2-2"], ["5-0", "6-6", "3-3"]])
    state, events = play(state, ["5-5", "5-0"])
    assert [e["end_total"] for e in events] == [10, 10]
    assert points(events) == [10, 10]


def test_play_on_spinner_takes_the_free_horizontal_side_before_a_vertical() -> None:
    state = deal({"preset": "all-fives", "hand_size": 3},
                 [["5-5", "5-1", "0-0"], ["5-3", "6-6", "4-4"]])
    state, events = play(state, ["5-5", "5-3", "5-1>5-5"])
    assert events[-1]["end_total"] == 4
    assert points(events) == [10, 0, 0]
    seen = view(state, None)
    assert [n["side"] for n in seen["layout"]] == [None, "L", "R"]
    assert sorted((e["side"], e["count"]) for e in seen["ends"] if e["node"] == 0) == [
        ("D", 0), ("U", 0)]


def test_spinner_with_three_and_four_arms_and_30_and_35_point_plays() -> None:
    state = deal("all-fives", [
        ["3-3", "5-3", "4-3", "4-4", "5-2", "0-0", "1-0"],
        ["6-3", "6-6", "5-5", "3-2", "1-1", "2-1", "6-1"],
    ])
    state, events = play(state, [
        "3-3", "6-3>3-3", "5-3>3-3", "6-6>6-3", "4-3>3-3", "5-5>5-3", "4-4>4-3",
        "3-2>3-3", "5-2>3-2",
    ])
    totals = [e["end_total"] for e in events if e["type"] == "play"]
    assert totals == [6, 12, 11, 17, 21, 26, 30, 32, 35]
    assert points(events) == [0, 0, 0, 0, 0, 0, 30, 0, 35]
    assert state.scores == (65, 0)
    sides = [n["side"] for n in view(state, None)["layout"]]
    assert sides[1] == "L" and sides[2] == "R" and sides[4] == "U" and sides[7] == "D"


def test_first_double_mid_row_becomes_the_spinner_and_later_doubles_never_branch() -> None:
    state = deal({"preset": "all-fives", "hand_size": 6}, [
        ["6-4", "4-1", "5-4", "6-2", "1-0", "2-0"],
        ["4-4", "4-3", "6-6", "6-0", "0-0", "4-0"],
    ])
    state, events = play(state, ["6-4", "4-4>6-4", "4-1>4-4", "4-3>4-4", "5-4>4-4",
                                 "6-6>6-4", "6-2>6-6"])
    totals = [e["end_total"] for e in events if e["type"] == "play"]
    assert totals == [10, 14, 7, 10, 15, 21, 11]
    assert points(events) == [10, 0, 0, 10, 15, 0, 0]
    assert state.scores == (25, 10)
    layout = view(state, None)["layout"]
    assert [n["spinner"] for n in layout] == [False, True, False, False, False, False, False]
    assert [n["side"] for n in layout[2:5]] == ["R", "U", "D"]
    assert all(e["node"] != 5 for e in view(state, None)["ends"])
    assert legal_moves(state) == [Draw()]


def test_without_spinners_a_lead_double_never_branches() -> None:
    state = deal({"preset": "muggins", "hand_size": 3},
                 [["5-5", "5-1", "6-6"], ["5-0", "4-4", "3-3"]])
    state, events = play(state, ["5-5", "5-0", "5-1"])
    assert points(events) == [10, 10, 0]
    seen = view(state, None)
    assert len(seen["ends"]) == 2
    assert seen["end_total"] == 1
    assert seen["layout"][0]["spinner"] is False


def test_five_up_several_spinners_score_in_fifths() -> None:
    state = deal("five-up", [
        ["5-5", "6-5", "6-3", "5-2", "5-4"],
        ["5-0", "6-6", "6-2", "6-4", "4-3"],
    ])
    state, events = play(state, [
        "5-5", "5-0>5-5", "6-5>5-5", "6-6>6-5", "6-3>6-6", "6-2>6-6", "5-2>5-5", "6-4>6-6",
    ])
    layout = view(state, None)["layout"]
    assert [n["tile"] for n in layout if n["spinner"]] == ["5-5", "6-6"]
    assert [n["side"] for n in layout] == [None, "L", "R", "O", "R", "U", "U", "D"]
    state, last = play(state, ["5-4>5-5"])
    events += last
    totals = [e["end_total"] for e in events if e["type"] == "play"]
    assert totals == [10, 10, 6, 12, 3, 5, 7, 11, 15]
    assert points(events) == [2, 2, 0, 0, 0, 1, 0, 0, 3]
    end = next(e for e in events if e["type"] == "hand_end")
    assert end["end"] == "domino" and end["winner"] == 0
    assert end["bonus"] == 1  # 4-3 = 7 pips, nearest 5 is 5, scale 5
    assert end["totals"] == [5 + 1, 3]


def test_fives_and_threes_counts_both_and_ends_at_exact_target() -> None:
    spec = {"preset": "fives-and-threes", "target": 10}
    state = deal(spec, [
        ["5-0", "5-5", "6-5", "2-2", "1-1", "4-4", "6-6"],
        ["3-0", "5-3", "6-2", "2-0", "1-0", "4-1", "6-4"],
    ])
    state, events = play(state, [
        "5-0", "3-0>5-0", "5-5>5-0", "5-3>3-0", "6-5>5-3", "6-2>6-5", "2-2>6-2", "2-0>2-2",
    ])
    totals = [e["end_total"] for e in events if e["type"] == "play"]
    assert totals == [5, 8, 13, 15, 16, 12, 14, 10]
    assert points(events) == [1, 0, 0, 8, 0, 0, 0, 2]  # 12 would score 4: 8 + 4 > 10, void
    assert state.scores == (1, 10)
    assert state.game_over and state.winner == 1
    end = next(e for e in events if e["type"] == "hand_end")
    assert (end["end"], end["winner"], end["bonus"]) == ("target", None, 0)


@pytest.mark.parametrize(("target", "scored", "bonus", "totals", "over"), [
    (3, 0, 0, (1, 0), False),   # 1 + 2 + 1 = 4 overshoots 3: play and bonus void together
    (4, 2, 1, (4, 0), True),    # exactly 4
])
def test_exact_target_domino_bonus_counts_with_the_play(
    target: int, scored: int, bonus: int, totals: tuple[int, int], over: bool
) -> None:
    state = deal({"preset": "fives-and-threes", "target": target, "hand_size": 2},
                 [["5-0", "5-3"], ["3-0", "6-6"]])
    state, events = play(state, ["5-0", "3-0>5-0", "5-3>3-0"])
    assert points(events) == [1, 0, scored]
    end = next(e for e in events if e["type"] == "hand_end")
    assert (end["end"], end["winner"], end["bonus"]) == ("domino", 0, bonus)
    assert state.scores == totals
    assert state.game_over is over


def test_bergen_double_and_triple_headers() -> None:
    state = deal("bergen", [
        ["6-6", "6-3", "2-2", "1-0", "4-1", "5-1"],
        ["6-2", "3-2", "4-0", "5-0", "5-4", "3-1"],
    ])
    state, events = play(state, ["6-6", "6-2>6-6", "6-3>6-6", "3-2>6-3", "2-2>3-2"])
    assert points(events) == [2, 0, 0, 2, 3]
    assert state.scores == (5, 2)


def test_double_bergen_draws_for_a_double_and_covers_the_spinner_first() -> None:
    state = deal("double-bergen", [
        ["3-1", "3-2", "1-0", "2-0", "4-0", "5-0"],
        ["4-3", "6-3", "4-1", "6-1", "5-1", "6-2"],
    ], leader=0, boneyard=["6-5", "4-2", "3-3"])
    assert legal_moves(state) == [Draw()]
    state, events = play(state, ["draw"])
    assert state.turn == 1  # a drawn non-double passes the turn
    state, _ = play(state, ["draw"])
    state, _ = play(state, ["draw"])
    assert state.turn == 0 and [m for m in legal_moves(state)] == [move("3-3")]
    state, events = play(state, ["3-3", "4-3>3-3"])
    assert points(events) == [2, 0]
    assert sorted(str(m.tile) for m in legal_moves(state)) == ["3-1", "3-2"]  # not 4-0 on 4-3
    state, events = play(state, ["3-1>3-3", "6-3>3-3", "3-2>3-3", "6-1>6-3"])
    assert points(events) == [0, 0, 0, 2]
    assert view(state, None)["leader"] == 0


def test_exact_target_reached_by_a_blocking_play_ends_blocked() -> None:
    state = deal({"preset": "fives-and-threes", "target": 2, "hand_size": 2},
                 [["5-0", "6-6"], ["1-0", "4-4"]])
    state, events = play(state, ["5-0", "1-0>5-0"])
    assert points(events) == [1, 2]  # ends 5 + 1 = 6 scores 2
    end = next(e for e in events if e["type"] == "hand_end")
    assert (end["end"], end["winner"], end["bonus"]) == ("blocked", 1, 0)
    assert state.game_over and state.winner == 1 and state.scores == (1, 2)


def test_all_threes_scores_thirds_and_rounds_the_bonus_to_threes() -> None:
    state = deal({"preset": "all-threes", "hand_size": 2}, [["6-3", "6-6"], ["3-0", "5-2"]])
    state, events = play(state, ["6-3", "3-0>6-3", "6-6>6-3"])
    assert [e["end_total"] for e in events if e["type"] == "play"] == [9, 6, 12]
    assert points(events) == [3, 2, 4]
    end = next(e for e in events if e["type"] == "hand_end")
    assert end["bonus"] == 2  # 7 pips: nearest 3 is 6, scale 3
    assert state.scores == (9, 2)


@pytest.mark.parametrize(("total", "scored"), [(15, 8), (12, 4), (10, 2), (6, 2), (9, 3),
                                               (30, 16), (7, 0), (0, 0)])
def test_fives_and_threes_figures(total: int, scored: int) -> None:
    from engine.scoring import play_points
    assert play_points("fives_and_threes", 1, total, ()) == scored


def bergen_ends(*shown: tuple[int, int]) -> tuple[tuple[int, str, int, int, int], ...]:
    """Open ends showing (value, halves), one end per entry."""
    return tuple((i, "O", value, halves, 0) for i, (value, halves) in enumerate(shown))


@pytest.mark.parametrize(("shown", "scored"), [
    ([(2, 1), (2, 1)], 2),                  # double-header
    ([(2, 2), (2, 1)], 3),                  # double end and a matching single: triple-header
    ([(3, 1), (3, 1), (3, 1)], 3),          # three alike
    ([(3, 1), (3, 1), (3, 1), (3, 1)], 4),  # four alike
    ([(1, 1), (1, 1), (1, 1), (1, 2)], 5),  # three single 1-ends and a 1-1 end
    ([(6, 1), (6, 1)], 2),                  # a lone lead double's two sides
    ([(2, 1), (4, 1)], 0),
    ([(5, 2), (3, 1), (3, 1), (5, 0)], 2),  # a spinner's untouched side shows nothing
])
def test_matching_figures(shown: list[tuple[int, int]], scored: int) -> None:
    from engine.scoring import matching_points
    assert matching_points(bergen_ends(*shown)) == scored
