"""End of a hand and of the game (rules.md §4-§6): bonuses, blocks, ties, leaders, targets."""

from __future__ import annotations

from typing import Any

import pytest

from engine import InvalidTranscript, Pass, legal_moves, replay
from engine.scoring import rounded_half, rounded_pips
from tests.engine.scenario import deal, play, points

NO_DRAW_2P = 28 - 2 * 3  # boneyard_reserve that forbids drawing with 3 tiles each


def hand_end(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "hand_end")


@pytest.mark.parametrize(("pips", "bonus"), [(27, 25), (28, 30), (3, 5), (2, 0), (23, 25),
                                             (22, 20), (0, 0)])
def test_nearest_five_halves_up(pips: int, bonus: int) -> None:
    assert rounded_pips(pips, "nearest", 5, 1) == bonus
    assert rounded_pips(pips, "none", 5, 1) == pips


def test_rounding_other_units_and_half_shares() -> None:
    assert [rounded_pips(p, "nearest", 3, 3) for p in (1, 2, 4, 5)] == [0, 1, 1, 2]
    assert rounded_pips(13, "nearest", 5, 5) == 3
    assert rounded_half(23, "nearest", 5, 1) == 10   # 11.5 -> 10
    assert rounded_half(25, "nearest", 5, 1) == 15   # 12.5 -> 15 (halves up)
    assert rounded_half(23, "none", 5, 1) == 12


@pytest.mark.parametrize(("loser", "bonus"), [
    (["6-6", "6-5", "4-0"], 25),  # 27 pips
    (["6-6", "6-5", "5-0"], 30),  # 28 pips
])
def test_domino_bonus_rounds_opponents_pips(loser: list[str], bonus: int) -> None:
    state = deal({"preset": "all-fives", "hand_size": 3, "boneyard_reserve": NO_DRAW_2P},
                 [["1-1", "2-1", "3-2"], loser])
    state, events = play(state, ["1-1"])
    assert legal_moves(state) == [Pass()]
    state, more = play(state, ["pass", "2-1>1-1", "pass", "3-2>2-1"])
    events += more
    assert points(events) == [0, 0, 5]
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"]) == ("domino", 0, bonus)
    assert end["pips"] == [0, sum(int(t[0]) + int(t[2]) for t in loser)]
    assert end["totals"] == [5 + bonus, 0]
    assert state.round == 1 and state.leader == 0  # the winner leads next


@pytest.mark.parametrize(("loser", "bonus"), [("2-1", 5), ("1-1", 0)])
def test_single_tile_bonuses(loser: str, bonus: int) -> None:
    state = deal({"preset": "all-fives", "hand_size": 1}, [["3-2"], [loser]])
    state, events = play(state, ["3-2"])
    assert hand_end(events)["bonus"] == bonus
    assert state.scores == (5 + bonus, 0)


def test_blocked_hand_with_equal_pips_has_no_winner() -> None:
    state = deal({"preset": "all-fives", "hand_size": 2, "boneyard_reserve": 24},
                 [["1-0", "5-5"], ["2-0", "6-4"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"], end["pips"]) == ("blocked", None, 0, [10, 10])
    assert end["hands"] == [["5-5"], ["6-4"]]
    assert state.scores == (0, 0)
    assert state.table.lead_from == (0, 1)  # any seat of a tied side may lead


def test_blocked_partnership_pays_team_pips_and_lowest_partner_leads() -> None:
    state = deal({"preset": "all-fives", "hand_size": 2, "boneyard_reserve": 20},
                 [["1-0", "6-6"], ["2-0", "5-5"], ["3-3", "4-4"], ["6-5", "5-4"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert end["pips"] == [12, 10, 14, 20]
    assert (end["end"], end["winner"], end["bonus"]) == ("blocked", 0, 30)  # team 30 -> 30
    assert state.scores == (30, 0)
    assert state.leader == 0  # 12 pips beats partner's 14


def test_blocked_tie_split_three_players() -> None:
    spec = {"preset": "all-fives-pagat", "hand_size": 2, "boneyard_reserve": 22}
    state = deal(spec, [["1-0", "6-0"], ["2-0", "3-3"], ["6-6", "6-5"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert end["pips"] == [6, 6, 23]
    assert (end["end"], end["winner"], end["bonus"]) == ("blocked", None, 0)
    assert end["totals"] == [10, 10, 0]  # 23 / 2 = 11.5 -> 10 each


def test_bga_blocked_figures_scale_five() -> None:
    state = deal({"preset": "all-fives-bga", "boneyard_reserve": 14}, [
        ["3-2", "6-3", "6-1", "2-1", "3-0", "5-3", "4-4"],
        ["6-2", "6-4", "4-3", "5-2", "2-0", "6-6", "5-4"],
    ])
    state, events = play(state, ["3-2", "6-2>3-2", "6-3>3-2", "6-4>6-2", "6-1>6-3", "4-3>6-4",
                                 "2-1>6-1", "5-2>2-1", "3-0>4-3", "2-0>3-0", "5-3>5-2"])
    assert points(events) == [1, 0, 0, 2, 1, 0, 1, 0, 1, 0, 1]
    end = hand_end(events)
    assert end["pips"] == [8, 21]
    assert (end["end"], end["winner"], end["bonus"]) == ("blocked", 0, 3)  # 21-8=13 -> 15 -> 3
    assert state.scores == (8, 2)


def test_opponents_minus_own_subtracts_the_winners_pips() -> None:
    spec = {"preset": "all-fives-bga", "hand_size": 2, "boneyard_reserve": 24}
    state = deal(spec, [["1-0", "4-4"], ["2-0", "6-6"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert end["winner"] == 0 and end["pips"] == [8, 12] and end["bonus"] == 1  # 4 -> 5 -> 1


def test_opponents_minus_own_never_pays_negative_in_partnerships() -> None:
    state = deal({"preset": "block", "hand_size": 1}, [["6-6"], ["1-0"], ["5-5"], ["2-0"]])
    state, events = play(state, ["6-6"])
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"]) == ("domino", 0, 0)  # 1 + 2 - 10 < 0
    assert end["totals"] == [0, 0]


def test_all_hands_bonus_counts_the_winners_pips_too() -> None:
    spec = {"preset": "all-fives-classic", "hand_size": 2, "boneyard_reserve": 24}
    state = deal(spec, [["1-0", "4-4"], ["2-0", "6-6"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert (end["winner"], end["bonus"]) == (0, 20)  # 8 + 12


def test_dominoesstars_raw_bonus_and_last_player_leads_after_block() -> None:
    spec = {"preset": "dominoesstars", "hand_size": 2, "boneyard_reserve": 24}
    state = deal(spec, [["1-0", "4-4"], ["2-0", "6-6"]], leader=0)
    state, events = play(state, ["1-0", "2-0>1-0"])
    end = hand_end(events)
    assert (end["winner"], end["bonus"]) == (0, 12)  # raw pips, not rounded
    assert state.leader == 1  # seat 1 played the last tile


def test_penalty_game_every_side_loses_its_pips_and_ends_at_minus_target() -> None:
    state = deal({"preset": "block-penalty", "hand_size": 2, "target": 5},
                 [["3-2", "6-5"], ["6-6", "1-0"]], leader=1)
    state, events = play(state, ["6-6", "6-5>6-6"])
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"]) == ("blocked", 1, 0)
    assert end["totals"] == [-5, -1]
    assert state.game_over and state.winner == 1


def test_fixed_bonus_and_no_bonus_for_a_blocked_win_in_fives_and_threes() -> None:
    spec = {"preset": "fives-and-threes", "hand_size": 2}
    state = deal(spec, [["1-0", "4-4"], ["2-0", "6-6"]])
    state, events = play(state, ["1-0", "2-0>1-0"])
    assert points(events) == [0, 1]  # 3 -> 1
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"], end["totals"]) == ("blocked", 0, 0, [0, 1])
    assert state.leader == 1  # left of the previous leader
    state = deal({"preset": "bergen", "hand_size": 1}, [["3-2"], ["6-5"]], leader=1)
    state, events = play(state, ["6-5"])
    assert (hand_end(events)["winner"], hand_end(events)["bonus"]) == (1, 1)


def test_highest_double_leads_round_one() -> None:
    state = deal({"preset": "block", "hand_size": 2}, [["5-5", "1-0"], ["6-6", "2-0"]],
                 leader=1)
    assert [str(m.tile) for m in legal_moves(state)] == ["6-6"]  # type: ignore[union-attr]
    with pytest.raises(InvalidTranscript) as err:
        deal({"preset": "block", "hand_size": 2}, [["5-5", "1-0"], ["6-6", "2-0"]], leader=0)
    assert err.value.code == "bad_leader"


def test_without_doubles_the_heaviest_tile_leads_6_3_before_5_4() -> None:
    state = deal({"preset": "block", "hand_size": 2}, [["5-4", "1-0"], ["6-3", "2-0"]],
                 leader=1)
    assert [str(m.tile) for m in legal_moves(state)] == ["6-3"]  # type: ignore[union-attr]


def test_block_game_scores_opponents_minus_own_raw() -> None:
    state = deal({"preset": "block", "hand_size": 2}, [["5-5", "5-0"], ["6-6", "6-1"]],
                 leader=1)
    state, events = play(state, ["6-6", "pass", "6-1>6-6"])
    end = hand_end(events)
    assert (end["end"], end["winner"], end["bonus"]) == ("domino", 1, 15)  # 15 - 0
    assert state.scores == (0, 15)


def multi_round(leader_1: int, extra: bool = False) -> dict[str, Any]:
    rest = ["6-6", "6-5", "6-4", "6-3", "6-2", "6-1", "6-0", "5-4", "5-3", "5-2", "5-1", "5-0",
            "4-4", "4-3", "4-2", "4-1", "4-0", "3-3", "3-2", "3-1", "3-0", "2-2", "2-1", "2-0",
            "1-1", "1-0", "0-0", "5-5"]
    def rnd(a: str, b: str, leader: int, moves: list[dict[str, Any]]) -> dict[str, Any]:
        return {"hands": [[a], [b]], "boneyard": [t for t in rest if t not in (a, b)],
                "leader": leader, "moves": moves}
    rounds = [
        rnd("5-5", "6-6", 0, [{"seat": 0, "play": "5-5"}]),
        rnd("6-4", "0-0", leader_1, [{"seat": leader_1, "play": "6-4" if leader_1 == 0
                                      else "0-0"}]),
    ]
    if extra:
        rounds.append(rnd("1-0", "2-0", 0, []))
    return {"format": "dominoes-transcript/1",
            "rules": {"preset": "all-fives", "target": 30, "hand_size": 1},
            "players": 2, "rounds": rounds}


def test_multi_round_game_ends_at_the_target() -> None:
    assert replay(multi_round(0)) == {
        "rounds": [
            {"scores": [10], "end": "domino", "winner": 0, "bonus": 10, "totals": [20, 0]},
            {"scores": [10], "end": "domino", "winner": 0, "bonus": 0, "totals": [30, 0]},
        ],
        "winner": 0,
    }


def test_replay_refuses_a_leader_the_rules_do_not_allow_and_rounds_after_the_end() -> None:
    with pytest.raises(InvalidTranscript) as err:
        replay(multi_round(1))
    assert (err.value.code, err.value.round, err.value.move) == ("bad_leader", 1, None)
    with pytest.raises(InvalidTranscript) as err:
        replay(multi_round(0, extra=True))
    assert (err.value.code, err.value.round, err.value.move) == ("extra_round", 2, None)


def test_round_end_target_tie_plays_another_hand() -> None:
    from engine.rounds import game_result
    from engine.rules import rules_from_spec
    rules = rules_from_spec("all-fives", 2)
    assert game_result(rules, (150, 150)) is None
    assert game_result(rules, (155, 150)) == 0
    assert game_result(rules, (145, 140)) is None


def double_bergen_rounds(second: tuple[str, str], leader: int) -> dict[str, Any]:
    def rnd(a: str, b: str, lead: int, moves: list[dict[str, Any]]) -> dict[str, Any]:
        rest = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1)]
        return {"hands": [[a], [b]], "boneyard": [t for t in rest if t not in (a, b)],
                "leader": lead, "moves": moves}
    return {"rules": {"preset": "double-bergen", "hand_size": 1}, "players": 2, "rounds": [
        rnd("3-3", "6-5", 0, [{"seat": 0, "play": "3-3"}]),
        rnd(second[0], second[1], leader, []),
    ]}


def test_double_bergen_next_leader_is_left_then_the_first_seat_holding_a_double() -> None:
    out = replay(double_bergen_rounds(("1-0", "2-2"), 1))
    assert out["rounds"][0] == {"scores": [2], "end": "domino", "winner": 0, "bonus": 1,
                                "totals": [3, 0]}
    assert out["rounds"][1]["end"] == "unfinished"
    # left of seat 0 is seat 1, who holds no double: the next seat holding one leads
    replay(double_bergen_rounds(("6-6", "1-0"), 0))
    with pytest.raises(InvalidTranscript) as err:
        replay(double_bergen_rounds(("6-6", "1-0"), 1))
    assert (err.value.code, err.value.round) == ("bad_leader", 1)


def test_penalty_game_with_play_scoring_also_ends_at_plus_target() -> None:
    state = deal({"preset": "block-penalty", "scoring": "fives", "target": 10, "hand_size": 1},
                 [["5-5"], ["1-0"]])
    state, events = play(state, ["5-5"])
    assert points(events) == [10]
    assert hand_end(events)["totals"] == [10, -1]
    assert state.game_over and state.winner == 0
