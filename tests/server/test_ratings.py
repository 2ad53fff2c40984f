"""Rating families, the shown rating, the order of a finished table's sides and the OpenSkill
update (server/ratings.py). Pure: no server, no database."""

from __future__ import annotations

import pytest
from openskill.models import PlackettLuce

import engine
from server import ratings
from server.ratings import Skill, display, family_of, family_presets, rate, side_ranks

EXPECTED_FAMILIES = {
    "all-fives": "fives", "all-fives-bga": "fives", "all-fives-classic": "fives",
    "all-fives-pagat": "fives", "dominoesstars": "fives", "muggins": "fives", "five-up": "fives",
    "all-threes": "threes", "fives-and-threes": "fives-and-threes", "bergen": "bergen",
    "double-bergen": "bergen", "block": "block", "draw": "block", "block-penalty": "block",
}


def test_every_preset_has_its_family() -> None:
    assert set(EXPECTED_FAMILIES) == set(engine.PRESETS)
    for preset, family in EXPECTED_FAMILIES.items():
        for players in (2, 3, 4):
            assert family_of(preset, players) == family, (preset, players)
            assert family_of({"preset": preset}, players) == family
    assert set(ratings.FAMILY_LABELS) == set(EXPECTED_FAMILIES.values())


def test_the_family_follows_the_scoring_actually_played() -> None:
    assert family_of({"preset": "all-fives", "target": 250}, 4) == "fives"
    assert family_of({"preset": "all-fives", "scoring": "threes"}, 2) == "threes"
    assert family_of({"preset": "block", "scoring": "fives"}, 3) == "fives"
    with pytest.raises(engine.InvalidRules):
        family_of("no-such-preset", 2)


def test_family_presets_lists_each_preset_once_in_engine_order() -> None:
    found = family_presets()
    assert list(found) == list(ratings.FAMILY_LABELS)
    assert found["fives"] == ["all-fives", "all-fives-bga", "all-fives-classic",
                              "all-fives-pagat", "dominoesstars", "muggins", "five-up"]
    assert found["block"] == ["block", "draw", "block-penalty"]
    assert sorted(p for presets in found.values() for p in presets) == sorted(engine.PRESETS)
    assert ratings.FAMILY_LABELS["fives"] == "All Fives family"
    assert ratings.FAMILY_LABELS["block"] == "Block and Draw"


def test_a_new_player_shows_1500() -> None:
    new = Skill.new()
    assert (new.mu, new.sigma, new.games) == (25.0, 25 / 3, 0)
    assert display(new.mu) == 1500 == new.rating
    assert display(25 + 25 / 6) == 1700  # one beta: 200 points
    assert display(24.0) == 1452


def test_200_points_are_about_3_to_1_as_in_elo() -> None:
    model = PlackettLuce()

    def chance(gap_points: int, sigma: float) -> float:
        stronger = model.rating(mu=25 + gap_points / ratings.DISPLAY_SCALE, sigma=sigma)
        weaker = model.rating(mu=25.0, sigma=sigma)
        return float(model.predict_win([[stronger], [weaker]])[0])

    elo = 1 / (1 + 10 ** (-200 / 400))  # 0.7597
    assert chance(200, 1e-9) == pytest.approx(elo, abs=0.002)  # settled: 0.7602
    assert chance(200, 1.3) == pytest.approx(0.75, abs=0.002)
    assert chance(200, 3.0) == pytest.approx(0.717, abs=0.002)
    assert chance(200, 25 / 3) == pytest.approx(0.624, abs=0.002)  # two new players
    assert chance(100, 1e-9) == pytest.approx(0.638, abs=0.002)
    assert chance(400, 1e-9) == pytest.approx(0.921, abs=0.002)


def test_provisional_until_ten_rated_games() -> None:
    assert ratings.PROVISIONAL_GAMES == 10
    assert ratings.provisional(0)
    assert ratings.provisional(9)
    assert not ratings.provisional(10)
    assert not ratings.provisional(11)
    assert Skill(25.0, 8.0, 9).provisional
    assert not Skill(25.0, 8.0, 10).provisional


def direct(teams: list[list[tuple[float, float]]], ranks: list[int]) -> list[list[
        tuple[float, float]]]:
    """openskill itself, on the same literals."""
    model = PlackettLuce()
    rated = model.rate([[model.rating(mu=mu, sigma=sigma) for mu, sigma in team]
                        for team in teams], ranks=[float(rank) for rank in ranks])
    return [[(p.mu, p.sigma) for p in team] for team in rated]


def values(teams: list[list[Skill]]) -> list[list[tuple[float, float]]]:
    return [[(s.mu, s.sigma) for s in team] for team in teams]


def test_two_new_players_the_winner_gains_what_the_loser_loses() -> None:
    after = rate([[Skill.new()], [Skill.new()]], [1, 2])
    assert values(after) == direct([[(25.0, 25 / 3)], [(25.0, 25 / 3)]], [1, 2])
    (winner,), (loser,) = after
    assert winner.mu == pytest.approx(27.635389, abs=1e-5)
    assert loser.mu == pytest.approx(22.364611, abs=1e-5)
    assert winner.sigma == loser.sigma == pytest.approx(8.065901, abs=1e-5)
    assert winner.mu - 25 == pytest.approx(25 - loser.mu)
    assert (winner.games, loser.games) == (1, 1)
    assert (winner.rating, loser.rating) == (1626, 1374)
    # The order of the sides does not matter, only their ranks.
    assert values(rate([[Skill.new()], [Skill.new()]], [2, 1])) == values(after)[::-1]


def test_a_draw_of_equals_moves_no_one() -> None:
    (a,), (b,) = rate([[Skill.new()], [Skill.new()]], [1, 1])
    assert a.mu == b.mu == 25.0
    assert a.sigma == b.sigma == pytest.approx(8.065901, abs=1e-5)


def test_an_upset_moves_more_than_an_expected_win() -> None:
    strong, weak = Skill(30.0, 3.0, 50), Skill(20.0, 3.0, 50)
    (expected_w,), (expected_l,) = rate([[strong], [weak]], [1, 2])
    (upset_l,), (upset_w,) = rate([[strong], [weak]], [2, 1])
    assert upset_w.mu - weak.mu > expected_w.mu - strong.mu > 0
    assert (expected_w.games, upset_l.games) == (51, 51)
    assert values([[expected_w], [expected_l]]) == direct([[(30.0, 3.0)], [(20.0, 3.0)]], [1, 2])


def test_three_players_each_for_themselves() -> None:
    after = rate([[Skill.new()], [Skill.new()], [Skill.new()]], [1, 2, 3])
    assert values(after) == direct([[(25.0, 25 / 3)]] * 3, [1, 2, 3])
    mus = [team[0].mu for team in after]
    assert mus == pytest.approx([27.869049, 25.717262, 21.413689], abs=1e-5)
    # second and third tied
    tied = rate([[Skill.new()], [Skill.new()], [Skill.new()]], [1, 2, 2])
    assert [team[0].mu for team in tied] == pytest.approx([27.869049, 23.565476, 23.565476],
                                                          abs=1e-5)
    assert all(team[0].games == 1 for team in after)


def test_two_against_two() -> None:
    ada, bo = Skill.new(), Skill(28.0, 5.0, 30)
    cy, dee = Skill(22.0, 6.0, 12), Skill.new()
    after = rate([[ada, bo], [cy, dee]], [1, 2])
    assert values(after) == direct([[(25.0, 25 / 3), (28.0, 5.0)],
                                    [(22.0, 6.0), (25.0, 25 / 3)]], [1, 2])
    (ada2, bo2), (cy2, dee2) = after
    assert ada2.mu > ada.mu and bo2.mu > bo.mu
    assert cy2.mu < cy.mu and dee2.mu < dee.mu
    # the more certain partner moves less
    assert ada2.mu - ada.mu > bo2.mu - bo.mu
    assert [s.games for s in (ada2, bo2, cy2, dee2)] == [1, 31, 13, 1]
    new = rate([[Skill.new(), Skill.new()], [Skill.new(), Skill.new()]], [1, 2])
    assert [s.mu for team in new for s in team] == pytest.approx(
        [26.964295, 26.964295, 23.035705, 23.035705], abs=1e-5)


def test_rate_refuses_mismatched_input() -> None:
    with pytest.raises(ValueError):
        rate([[Skill.new()], [Skill.new()]], [1])
    with pytest.raises(ValueError):
        rate([[Skill.new()]], [1])
    with pytest.raises(ValueError):
        rate([[Skill.new()], []], [1, 2])


TWO = [[0], [1]]
PAIRS = [[0, 2], [1, 3]]
THREE = [[0], [1], [2]]


def end(winner: int | None) -> dict[str, object]:
    return {"winner": winner, "reason": "game_end", "seat": None}


def test_a_finished_game_ranks_the_winner_first() -> None:
    assert side_ranks(TWO, [150, 90], end(0)) == [1, 2]
    assert side_ranks(TWO, [90, 150], end(1)) == [2, 1]
    assert side_ranks(PAIRS, [100, 250], end(1)) == [2, 1]
    assert side_ranks(THREE, [80, 150, 120], end(1)) == [3, 1, 2]
    assert side_ranks(THREE, [100, 150, 100], end(1)) == [2, 1, 2]  # the others tie
    assert side_ranks(THREE, [150, 150, 90], end(0)) == [1, 2, 3]  # the winner, even on a tie


def test_two_sides_and_no_winner_is_a_draw() -> None:
    assert side_ranks(TWO, [150, 150], end(None)) == [1, 1]
    assert side_ranks(PAIRS, [0, 0], end(None)) == [1, 1]
    assert side_ranks(THREE, [150, 150, 90], end(None)) == [1, 1, 3]


def test_a_forfeit_ranks_the_leavers_side_last_even_when_it_leads() -> None:
    assert side_ranks(TWO, [140, 20], {"winner": 1, "reason": "forfeit", "seat": 0}) == [2, 1]
    assert side_ranks(PAIRS, [140, 20], {"winner": 1, "reason": "forfeit", "seat": 2}) == [2, 1]
    # three players: seat 1 leaves while leading; the best of the others wins
    assert side_ranks(THREE, [60, 140, 90], {"winner": 2, "reason": "forfeit", "seat": 1}) \
        == [2, 3, 1]
    # no winner among the others (tied): they share first place, the leaver is last
    assert side_ranks(THREE, [90, 140, 90], {"winner": None, "reason": "forfeit", "seat": 1}) \
        == [1, 3, 1]


def test_an_abandoned_game_is_a_draw() -> None:
    result = {"winner": None, "reason": "abandoned", "seat": None}
    assert side_ranks(TWO, [140, 20], result) == [1, 1]
    assert side_ranks(THREE, [0, 50, 10], result) == [1, 1, 1]


def test_side_ranks_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError):
        side_ranks(TWO, [1, 2, 3], end(0))
    with pytest.raises(ValueError):
        side_ranks(TWO, [1, 2], {"winner": 0, "reason": "resigned", "seat": None})
    with pytest.raises(ValueError):
        side_ranks(TWO, [1, 2], end(2))
    with pytest.raises(ValueError):
        side_ranks(TWO, [1, 2], {"winner": 0, "reason": "forfeit", "seat": 5})


def test_ranks_feed_rate() -> None:
    sides, scores = THREE, [60, 140, 90]
    ranks = side_ranks(sides, scores, {"winner": 2, "reason": "forfeit", "seat": 1})
    after = rate([[Skill.new()] for _ in sides], ranks)
    first, leaver, winner = (team[0].mu for team in after)
    assert winner > first > 25 > leaver
