"""Presets by name (rules.md §7) and option validation (§9)."""

from __future__ import annotations

from typing import Any

import pytest

from engine import DEFAULT_PRESET, PRESETS, InvalidRules, new_game, rules_from_spec

# preset: (hand 2/3/4, partnerships, first_leader, spinners, scoring, scale, bonus, rounding,
#          next, after block, target 2/3/4, game_end)
TABLE: dict[str, tuple[Any, ...]] = {
    "all-fives": ((7, 5, 5), True, "random", "first_double", "fives", 1, "opponents",
                  "nearest", "winner", "winner", (150, 150, 150), "round_end"),
    "all-fives-bga": ((7, 5, 5), False, "random", "first_double", "fives", 5,
                      "opponents_minus_own", "nearest", "winner", "winner", (30, 30, 30),
                      "round_end"),
    "all-fives-classic": ((7, 5, 5), True, "random", "first_double", "fives", 1, "all_hands",
                          "nearest", "winner", "winner", (100, 100, 100), "round_end"),
    "all-fives-pagat": ((9, 7, 5), True, "random", "first_double", "fives", 1, "opponents",
                        "nearest", "winner", "random", (250, 200, 200), "round_end"),
    "dominoesstars": ((7, 5, 5), True, "random", "first_double", "fives", 1, "opponents",
                      "none", "winner", "last_player", (250, 200, 200), "round_end"),
    "muggins": ((7, 5, 5), True, "random", "none", "fives", 1, "opponents", "nearest",
                "winner", "winner", (200, 150, 150), "round_end"),
    "five-up": ((5, 5, 5), True, "random", "all_doubles", "fives", 5, "opponents", "nearest",
                "winner", "winner", (61, 61, 61), "round_end"),
    "all-threes": ((7, 5, 5), True, "random", "first_double", "threes", 3, "opponents",
                   "nearest", "winner", "winner", (50, 50, 50), "round_end"),
    "fives-and-threes": ((7, 5, 5), False, "random", "none", "fives_and_threes", 1, "fixed",
                         "nearest", "left", "left", (61, 61, 61), "exact"),
    "bergen": ((6, 6, 5), False, "highest_double", "none", "matching", 1, "fixed", "nearest",
               "left", "left", (15, 15, 15), "round_end"),
    "double-bergen": ((6, 6, 5), False, "random", "first_double", "matching", 1, "fixed",
                      "nearest", "left", "left", (15, 15, 15), "round_end"),
    "block": ((7, 5, 5), True, "highest_double", "none", "none", 1, "opponents_minus_own",
              "none", "winner", "winner", (50, 50, 50), "round_end"),
    "draw": ((7, 5, 5), True, "highest_double", "none", "none", 1, "opponents_minus_own",
             "none", "winner", "winner", (50, 50, 50), "round_end"),
    "block-penalty": ((7, 5, 5), True, "highest_double", "none", "none", 1, "penalty", "none",
                      "winner", "winner", (25, 25, 25), "round_end"),
}


def test_every_preset_of_the_table_and_no_other() -> None:
    assert set(PRESETS) == set(TABLE)
    assert DEFAULT_PRESET == "all-fives"


@pytest.mark.parametrize("name", sorted(TABLE))
@pytest.mark.parametrize("players", [2, 3, 4])
def test_preset_resolves_per_player_count(name: str, players: int) -> None:
    (hand, partners, first, spinners, scoring, scale, bonus, rounding, nxt, blocked, target,
     end) = TABLE[name]
    r = rules_from_spec(name, players)
    i = players - 2
    assert (r.hand_size, r.target) == (hand[i], target[i])
    assert r.partnerships is (partners and players == 4)
    assert (r.first_leader, r.spinners, r.scoring, r.scale) == (first, spinners, scoring, scale)
    assert (r.bonus, r.bonus_rounding, r.next_leader, r.blocked_next_leader, r.game_end) == (
        bonus, rounding, nxt, blocked, end)
    assert r.spec == name and r.preset == name and r.players == players


def test_row_specific_options() -> None:
    assert rules_from_spec("fives-and-threes", 2).draw == "none"
    assert rules_from_spec("fives-and-threes", 2).blocked_bonus is False
    assert rules_from_spec("block", 2).draw == "none"
    assert rules_from_spec("draw", 2).draw == "until_playable"
    assert rules_from_spec("all-fives-pagat", 3).blocked_tie == "split"
    db = rules_from_spec("double-bergen", 3)
    assert (db.lead, db.spinner_opening) == ("double", "all_four_first")
    assert rules_from_spec("all-fives", 2).boneyard_reserve == 0


def test_overrides_on_top_of_a_preset() -> None:
    r = rules_from_spec({"preset": "all-fives", "target": 250}, 2)
    assert r.target == 250 and r.scoring == "fives"
    r = rules_from_spec({"preset": "block", "hand_size": {"4": 7}}, 4)
    assert r.hand_size == 7
    assert rules_from_spec({"preset": "block", "hand_size": {"4": 7}}, 2).hand_size == 7
    r = rules_from_spec({"target": {"2": 250, "3": 200, "4": 100}}, 4)
    assert (r.preset, r.target) == ("all-fives", 100)
    r = rules_from_spec({"preset": "all-fives", "partnerships": False}, 4)
    assert r.partnerships is False
    assert new_game({"preset": "all-fives", "partnerships": False}, 4, 1).sides == (
        (0,), (1,), (2,), (3,))


@pytest.mark.parametrize(("spec", "players", "option"), [
    ({"colour": "red"}, 2, "colour"),
    ({"target": "150"}, 2, "target"),
    ({"target": 0}, 2, "target"),
    ({"target": True}, 2, "target"),
    ({"target": {"5": 10}}, 2, "target"),
    ({"hand_size": 15}, 2, "hand_size"),
    ({"hand_size": 8}, 4, "hand_size"),
    ({"hand_size": 0}, 2, "hand_size"),
    ({"partnerships": 1}, 4, "partnerships"),
    ({"scoring": "sixes"}, 2, "scoring"),
    ({"scale": 3}, 2, "scale"),
    ({"scoring": "threes", "scale": 5}, 2, "scale"),
    ({"scoring": "matching", "scale": 5}, 2, "scale"),
    ({"spinner_opening": "all_four_first"}, 2, "spinner_opening"),
    ({"preset": "double-bergen", "spinners": "all_doubles"}, 2, "spinner_opening"),
    ({"boneyard_reserve": -1}, 2, "boneyard_reserve"),
    ({"bonus_points": -1}, 2, "bonus_points"),
    ({"bonus": "penalty", "game_end": "exact"}, 2, "game_end"),
    ({"lead": "double", "first_leader": "highest_double"}, 2, "lead"),
    ({"preset": "all-fives", "game_end": "exact", "target": 61}, 2, "target"),  # steps of 5
    ({"preset": "fives-and-threes", "scoring": "threes", "bonus": "all_hands"}, 3, "target"),
    ("all-fives", 1, "players"),
    ("all-fives", 5, "players"),
    ("all-fives", "2", "players"),
    (["all-fives"], 2, "rules"),
])
def test_invalid_options_name_the_option(spec: Any, players: Any, option: str) -> None:
    with pytest.raises(InvalidRules) as err:
        rules_from_spec(spec, players)
    assert err.value.code == "invalid_option"
    assert err.value.option == option
    assert err.value.message


@pytest.mark.parametrize("spec", ["no-such", {"preset": "no-such"}, {"preset": 3}])
def test_unknown_preset(spec: Any) -> None:
    with pytest.raises(InvalidRules) as err:
        rules_from_spec(spec, 2)
    assert (err.value.code, err.value.option) == ("unknown_preset", "preset")


def test_spec_is_kept_as_plain_data() -> None:
    spec = {"preset": "all-fives", "target": {"2": 250, "3": 200, "4": 200}}
    r = rules_from_spec(spec, 3)
    assert r.spec == spec and r.target == 200
    assert rules_from_spec(r.spec, 3) == r


def test_handed_out_specs_are_copies() -> None:
    from engine import new_game, state_to_data, to_transcript, view

    state = new_game({"preset": "all-fives", "target": {"2": 90}}, 2, 1)
    for data in (view(state, 0)["rules"]["spec"], state_to_data(state)["rules"],  # type: ignore[index]
                 to_transcript(state)["rules"]):
        data["target"]["2"] = 5
    assert rules_from_spec({"preset": "all-fives", "target": {"2": 90}}, 2).target == 90
    assert state.rules.spec == {"preset": "all-fives", "target": {"2": 90}}


def test_reachable_exact_targets_are_accepted() -> None:
    assert rules_from_spec({"preset": "block", "game_end": "exact", "target": 60}, 2).exact
    assert rules_from_spec({"preset": "fives-and-threes", "target": 7}, 2).target == 7
    assert rules_from_spec({"preset": "all-fives", "game_end": "exact", "scale": 5,
                            "target": 61}, 2).target == 61
