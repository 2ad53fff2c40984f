"""`python -m engine selfplay`: its figures line and transcripts that replay to the same result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from engine import replay
from engine.cli.selfplay import selfplay

ROOT = Path(__file__).resolve().parents[2]


def test_selfplay_prints_figures_and_writes_replayable_transcripts(tmp_path: Path) -> None:
    out = tmp_path / "games.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "selfplay", "--preset", "five-up", "--players", "3",
         "--games", "4", "--seed", "9", "--out", str(out)],
        cwd=ROOT, capture_output=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    for key in ("games", "hands", "seconds", "games_per_second", "hands_per_second",
                "moves_per_second"):
        assert key in figures
    assert figures["games"] == 4 and figures["hands"] >= 4
    transcripts = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(transcripts) == 4
    report = selfplay("five-up", 3, 4, 9, keep_transcripts=True)
    assert report.hands == figures["hands"]
    for transcript in transcripts:
        result = replay(transcript)
        assert result["winner"] is not None
        assert len(result["rounds"]) >= 1


def test_selfplay_with_rules_json_and_bad_rules() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "selfplay", "--rules",
         '{"preset": "block", "hand_size": {"4": 7}}', "--players", "4", "--games", "2"],
        cwd=ROOT, capture_output=True, timeout=120, check=False,
    )
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["games"] == 2
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "selfplay", "--rules", '{"preset": "nope"}',
         "--players", "2", "--games", "1"],
        cwd=ROOT, capture_output=True, timeout=120, check=False,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "unknown_preset"


def test_selfplay_is_deterministic() -> None:
    a = selfplay("all-fives", 2, 3, 5, keep_transcripts=True)
    b = selfplay("all-fives", 2, 3, 5, keep_transcripts=True)
    assert a.transcripts == b.transcripts
    assert (a.games, a.hands, a.moves) == (b.games, b.hands, b.moves)
