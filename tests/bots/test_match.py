"""`python -m engine match`: seatings, reproducible figures, interval and Elo arithmetic."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.match import elo, run_match, side_score, wilson

ROOT = Path(__file__).resolve().parents[2]
STABLE = ("games", "a_wins", "b_wins", "ties", "a_win_rate", "ci95", "a_points_per_hand",
          "b_points_per_hand", "elo_diff", "hands")


def _stable(result: dict[str, object]) -> dict[str, object]:
    return {k: result[k] for k in STABLE}


def test_wilson_interval_by_hand() -> None:
    # 50 of 100, z = 1.96: centre 0.5, half-width 1.96*sqrt(0.0025 + 3.8416/40000)/1.038416
    # = 0.096169.
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.403831, abs=1e-5)
    assert high == pytest.approx(0.596169, abs=1e-5)
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0


def test_a_score_is_its_result_against_each_other_side() -> None:
    assert side_score([10.0, 5.0], 0) == 1.0
    assert side_score([5.0, 5.0], 1) == 0.5
    # Three sides: A (side 0) beats side 1 and loses to side 2: one win in two.
    assert side_score([10.0, 5.0, 20.0], 0) == 0.5
    # Level with side 1, above side 2: (1/2 + 1) / 2.
    assert side_score([10.0, 10.0, 0.0], 0) == 0.75


def test_elo_by_hand_and_clamped() -> None:
    assert elo(0.75) == pytest.approx(400 * math.log10(3))
    assert elo(0.5) == 0.0
    assert elo(1.0) == 800.0
    assert elo(0.0) == -800.0
    assert elo(0.9999999) == 800.0


def test_match_is_reproducible_for_a_seed() -> None:
    first = run_match("all-fives", 2, "greedy", "random", 5, seed=3)
    again = run_match("all-fives", 2, "greedy", "random", 5, seed=3)
    assert _stable(first) == _stable(again)
    assert first["games"] == 10  # five deals, two seatings
    other = run_match("all-fives", 2, "greedy", "random", 5, seed=4)
    assert _stable(other) != _stable(first)


def test_strong_match_is_reproducible_when_samples_bound_the_search() -> None:
    kwargs = {"think_ms": 60_000, "samples": 3}
    first = run_match("all-fives", 2, "strong-fast", "greedy", 2, seed=8, **kwargs)
    again = run_match("all-fives", 2, "strong-fast", "greedy", 2, seed=8, **kwargs)
    assert _stable(first) == _stable(again)


@pytest.mark.parametrize(("preset", "players", "seatings"), [
    ("all-fives", 3, 3),    # A takes each seat in turn
    ("all-fives", 4, 2),    # partnerships swapped
    ("bergen", 4, 4),       # no partnerships: every seat in turn
])
def test_every_deal_is_played_once_per_seating(preset: str, players: int, seatings: int) -> None:
    result = run_match(preset, players, "greedy", "random", 2, seed=1)
    assert result["games"] == 2 * seatings
    assert result["a_wins"] + result["b_wins"] + result["ties"] == result["games"]


def test_game_unit_plays_to_the_target() -> None:
    result = run_match({"preset": "all-fives", "target": 30}, 2, "greedy", "random", 2,
                       seed=2, unit="game")
    assert result["games"] == 4
    assert result["hands"] >= 4


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", "match", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)


def test_cli_prints_one_json_line_and_jobs_do_not_change_it() -> None:
    base = ["--preset", "all-fives", "--players", "2", "--a", "greedy", "--b", "random",
            "--deals", "6", "--seed", "9"]
    single = _cli(*base)
    assert single.returncode == 0, single.stderr
    lines = single.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    low, high = result["ci95"]
    assert 0.0 <= low <= result["a_win_rate"] <= high <= 1.0
    assert -800 <= result["elo_diff"] <= 800
    assert result["games"] == 12
    parallel = _cli(*base, "--jobs", "2")
    assert parallel.returncode == 0, parallel.stderr
    assert _stable(json.loads(parallel.stdout)) == _stable(result)


def test_cli_refuses_bad_rules_with_a_code() -> None:
    out = _cli("--rules", '{"preset": "nope"}', "--a", "greedy", "--b", "random")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "unknown_preset"
