"""Post-game analysis (engine.analysis): the mover's view only, a known best move, the budget
and the `python -m engine analyse` output."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import engine
from engine.analysis import analyse, analyse_position, blunder_threshold
from engine.bots import choose_move
from engine.moves import move_from_data
from engine.tiles import NAMES

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_BOUND: dict[str, Any] = {"deals": 40, "budget_ms": 10**9}


def played_game(spec: str, players: int, seed: int, one_hand: bool = False) -> dict[str, Any]:
    """A game between greedy and random seats, as a transcript (with `one_hand`, its first
    hand and the next deal)."""
    rng = random.Random(seed)
    state = engine.new_game(spec, players, seed)
    while not state.table.game_over:
        seat = state.turn
        if seat is None:
            state = engine.deal_next(state)[0]
            if one_hand:
                break
            continue
        level = "greedy" if seat % 2 == 0 else "random"
        move = choose_move(level, engine.view(state, seat), rng.randrange(1 << 30))
        state = engine.apply_until_hand_end(state, seat, move)[0]
    return engine.to_transcript(state)


def test_an_analysis_lists_every_choice_with_its_options_best_first() -> None:
    transcript = played_game("all-fives", 2, 3)
    result = analyse(transcript, **SAMPLE_BOUND)
    assert result["version"] == 1 and result["complete"] is True
    assert result["blunder"] == 10
    moves = result["moves"]
    assert moves
    rounds = transcript["rounds"]
    for entry in moves:
        data = rounds[entry["round"]]["moves"][entry["move"]]
        assert data["seat"] == entry["seat"]
        options = entry["options"]
        assert len(options) >= 2
        points = [o["points"] for o in options]
        assert points == sorted(points, reverse=True)
        chosen = options[entry["chosen"]]["move"]
        assert chosen["play"] == data["play"]
        assert entry["loss"] == round(points[0] - points[entry["chosen"]], 2)
        assert entry["blunder"] == (entry["loss"] >= 10)
        assert entry["deals"] == 40
        assert len(entry["expected"]) == 2
    for summary in result["players"]:
        mine = [m for m in moves if m["seat"] == summary["seat"]]
        assert summary["moves"] == len(mine)
        assert summary["blunders"] == sum(m["blunder"] for m in mine)
        assert summary["best"] == sum(m["chosen"] == 0 for m in mine)
    assert sum(s["moves"] for s in result["players"]) == len(moves)


def hidden_swap(transcript: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """The one-hand transcript with a tile seat 1 never played swapped for a boneyard tile
    nobody drew, if the moves still replay (else None)."""
    rnd = transcript["rounds"][0]
    played = {m.get("play") for m in rnd["moves"]}
    draws = sum(1 for m in rnd["moves"] if m.get("draw"))
    kept = [t for t in rnd["hands"][1] if t not in played]
    undrawn = rnd["boneyard"][draws:]
    if not kept or not undrawn:
        return None
    a, b = rng.choice(kept), rng.choice(undrawn)
    other = json.loads(json.dumps(transcript))
    o = other["rounds"][0]
    o["hands"][1] = [b if t == a else t for t in o["hands"][1]]
    o["boneyard"] = [a if t == b else t for t in o["boneyard"]]
    try:
        engine.replay(other)
    except engine.EngineError:
        return None
    return other


def test_the_analysis_of_a_seat_does_not_depend_on_tiles_it_cannot_see() -> None:
    rng = random.Random(5)
    compared = 0
    for seed in range(40):
        transcript = played_game("all-fives", 2, seed, one_hand=True)
        other = hidden_swap(transcript, rng)
        if other is None:
            continue
        assert other != transcript
        mine = [m for m in analyse(transcript, **SAMPLE_BOUND)["moves"] if m["seat"] == 0]
        theirs = [m for m in analyse(other, **SAMPLE_BOUND)["moves"] if m["seat"] == 0]
        assert mine == theirs
        compared += len(mine)
        if compared >= 12:
            break
    assert compared >= 12


def test_a_position_with_a_known_best_move_gets_it() -> None:
    """Two tiles each, no drawing, seat 0 leads 5-5 or 6-1 (seat 1 holds 2-1 and 4-3).

    The 5-5 lead scores 10 at once (a spinner whose ends count 10); the 6-1 lead scores
    nothing and leaves the 5-5 with no five to go on. Whatever seat 1 holds, 6-1 gives away at
    least the 10 points of the lead, so 5-5 is best and 6-1 a blunder (threshold 10)."""
    spec = {"preset": "all-fives", "hand_size": {"2": 2}, "draw": "none"}
    hands = [["5-5", "6-1"], ["2-1", "4-3"]]
    boneyard = [t for t in NAMES if t not in hands[0] + hands[1]]
    state = engine.game_from_deal(spec, 2, hands, boneyard, 0)
    position = engine.view(state, 0)
    assert blunder_threshold(state.table.rules) == 10
    for play, chosen in (("5-5", 0), ("6-1", 1)):
        result = analyse_position(position, move_from_data({"play": play}), 1, deals=200,
                                  think_ms=10**9)
        assert result is not None
        assert [o["move"]["play"] for o in result["options"]] == ["5-5", "6-1"]
        assert result["chosen"] == chosen
        best, worse = result["options"]
        assert best["points"] - worse["points"] >= 10
        assert best["points"] - 3 * best["stderr"] > worse["points"] + 3 * worse["stderr"]
    assert result["loss"] >= 10


def test_a_tight_budget_limits_the_cost_and_says_so() -> None:
    transcript = played_game("all-fives", 2, 11)
    result = analyse(transcript, deals=100_000, budget_ms=300)
    assert result["complete"] is False
    assert result["moves"] and all(m["deals"] >= 1 for m in result["moves"])
    assert result["cpu_ms"] < 300 + 1000  # the budget, plus the walk and one move's overrun


def test_the_command_line_prints_the_analysis(tmp_path: Path) -> None:
    transcript = played_game("muggins", 3, 2, one_hand=True)
    path = tmp_path / "game.json"
    path.write_text(json.dumps(transcript))
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "analyse", str(path), "--deals", "30",
         "--budget-ms", "1000000", "--seed", "4"],
        cwd=ROOT, capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1
    printed = json.loads(lines[0])
    assert set(printed) == {"version", "seed", "deals", "budget_ms", "blunder", "complete",
                            "cpu_ms", "moves", "players"}
    assert printed["seed"] == 4 and printed["deals"] == 30
    assert [p["seat"] for p in printed["players"]] == [0, 1, 2]
    again = analyse(transcript, seed=4, deals=30, budget_ms=1_000_000)
    assert printed["moves"] == again["moves"]
    entry = printed["moves"][0]
    assert set(entry) == {"round", "move", "seat", "side", "options", "chosen", "loss",
                          "deals", "blunder", "expected"}
    assert set(entry["options"][0]) == {"move", "points", "stderr", "wins"}


def test_the_command_line_reports_a_bad_transcript(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"rules": "all-fives", "players": 9, "rounds": []}))
    proc = subprocess.run([sys.executable, "-m", "engine", "analyse", str(path)],
                          cwd=ROOT, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 1
    error = json.loads(proc.stdout.decode())["error"]
    assert error["code"]
