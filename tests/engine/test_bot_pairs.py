"""bench.bot_pairs: the two versions play the same games, a variant that changes nothing changes
no game, the code is left as it was, and the paired figures are the games' own."""

from __future__ import annotations

import pytest

import engine.bots.knowledge as knowledge
import engine.bots.search as search
from bench.bot_pairs import compare, main, parse_setting
from engine.cli.match import MatchGame


def _game(score: float, a_points: float, b_points: float) -> MatchGame:
    return MatchGame(score=score, a_points=a_points, b_points=b_points, hands=1,
                     a_think_max_ms=0.0, a_think_total_ms=0.0, a_moves=1, b_think_max_ms=0.0)


def test_paired_figures_are_worked_out_game_by_game() -> None:
    base = [_game(1.0, 20, 10), _game(0.0, 5, 15), _game(0.5, 10, 10), _game(1.0, 30, 0)]
    variant = [_game(1.0, 25, 10), _game(1.0, 20, 15), _game(0.5, 10, 10), _game(0.0, 0, 10)]
    # margins: base 10, -10, 0, 30; variant 15, 5, 0, -10; gains 5, 15, 0, -40: mean -5,
    # sample variance (100 + 400 + 25 + 1225) / 3 = 583.33, so 1.96 * sqrt(583.33 / 4) = 23.67
    figures = compare("block", 2, base, variant, 1.0)
    assert figures["games"] == 4
    assert figures["base_score"] == 0.625 and figures["variant_score"] == 0.625
    assert figures["same"] == 2
    assert figures["margin_diff"] == -5.0
    assert figures["margin_ci95"] == pytest.approx(23.67, abs=0.01)


def test_a_variant_that_changes_nothing_changes_no_game(capsys: pytest.CaptureFixture[str]) -> None:
    mix = knowledge.GREEDY_MIX
    main(["--set", f"engine.bots.knowledge.GREEDY_MIX={mix!r}", "--preset", "all-fives",
          "--players", "2", "--deals", "3", "--samples", "40"])
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert '"games": 6' in line and '"same": 6' in line and '"margin_diff": 0.0' in line


def test_the_variant_is_undone_after_its_games(capsys: pytest.CaptureFixture[str]) -> None:
    assert search.CAREFUL is True
    main(["--set", "engine.bots.search.CAREFUL=False", "--preset", "all-fives", "--players", "2",
          "--deals", "1", "--samples", "20"])
    assert '"games": 2' in capsys.readouterr().out
    assert search.CAREFUL is True


@pytest.mark.parametrize("text", ["engine.bots.search.CAREFUL", "CAREFUL=False",
                                  "engine.bots.search.NO_SUCH=1", "engine.bots.search.CAREFUL=x"])
def test_a_setting_that_names_nothing_or_no_value_is_refused(text: str) -> None:
    with pytest.raises((ValueError, SyntaxError)):
        parse_setting(text)
