"""`python -m engine play` driven through a pseudo-terminal for a whole game."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from engine.cli.terminal import layout_lines

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = "h for help, q to quit: "


def _play_in_pty(args: list[str], answers: list[str], default: str) -> tuple[int, str]:
    """Run `play`, answering each prompt from `answers` then with `default`."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine", "play", *args], cwd=ROOT,
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = ""
    answered = 0
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, "play printed nothing for two minutes:\n" + out[-2000:]
            try:
                chunk = os.read(master, 65536).decode("utf-8", "replace")
            except OSError:  # the child exited and closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if out.count(PROMPT) > answered and out.rstrip(" ").endswith(PROMPT.rstrip()):
                reply = answers[answered] if answered < len(answers) else default
                os.write(master, (reply + "\n").encode())
                answered += 1
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, out


def test_a_whole_game_against_bots_in_a_terminal() -> None:
    code, raw = _play_in_pty(
        ["--rules", '{"preset": "all-fives", "target": 40}', "--bots", "greedy", "--seed", "4"],
        answers=["x", "0", "h"], default="1")
    out = ANSI.sub("", raw)
    assert code == 0, out[-3000:]
    assert "'x' is not a move here: type a number from 1 to" in out
    assert "'0' is not a move here" in out
    assert "Type the number of a move" in out
    assert "Layout:" in out and "Your hand:" in out and "Your moves:" in out
    assert "Hand over" in out
    assert "Game over." in out
    assert "\x1b[1m" in raw  # a terminal gets colours


def test_no_colours_when_output_is_not_a_terminal() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "play", "--bots", "random"],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    out, _ = proc.communicate(b"q\n", timeout=60)
    assert proc.returncode == 0
    assert b"\x1b[" not in out
    assert b"Bye." in out


def test_quitting_at_the_prompt_ends_cleanly() -> None:
    code, out = _play_in_pty(["--bots", "random", "--seed", "1"], answers=["q"], default="q")
    assert code == 0
    assert "Bye." in out


def test_layout_drawing_names_the_spinner_arms() -> None:
    # Lead 5-5 (spinner); 5-3 on its left, 5-1 on its right; verticals now open.
    seen = {
        "layout": [
            {"tile": "5-5", "parent": None, "side": None, "inner": None, "spinner": True},
            {"tile": "5-3", "parent": 0, "side": "L", "inner": 5, "spinner": False},
            {"tile": "5-1", "parent": 0, "side": "R", "inner": 5, "spinner": False},
        ],
        "ends": [
            {"node": 1, "side": "O", "value": 3, "count": 3},
            {"node": 2, "side": "O", "value": 1, "count": 1},
            {"node": 0, "side": "U", "value": 5, "count": 0},
            {"node": 0, "side": "D", "value": 5, "count": 0},
        ],
    }
    assert layout_lines(seen) == [
        "spinner [5:5]*",
        "  left  [5|3] → 3",
        "  right [5|1] → 1",
        "  up    → 5 (open)",
        "  down  → 5 (open)",
    ]
