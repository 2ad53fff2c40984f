"""The example transcripts replay to exactly their expected output, in-process and via the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

from engine import EngineError, load_transcript, replay, replay_views

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "examples"
NAMES = sorted(p.name.removesuffix(".expected.json") for p in EXAMPLES.glob("*.expected.json"))


def expected(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / f"{name}.expected.json").read_text())
    return data


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], cwd=ROOT, input=stdin, capture_output=True,
        timeout=60, check=False,
    )


def test_every_example_is_here() -> None:
    assert len(NAMES) == 4


@pytest.mark.parametrize("name", NAMES)
def test_example_replays_to_expected(name: str) -> None:
    transcript = load_transcript((EXAMPLES / f"{name}.json").read_bytes())
    want = expected(name)
    if "error" in want:
        with pytest.raises(EngineError) as err:
            replay(transcript)
        got = {"round": err.value.round, "move": err.value.move, "code": err.value.code}
        assert {k: got[k] for k in want["error"]} == want["error"]
    else:
        assert replay(transcript) == want


@pytest.mark.parametrize("name", NAMES)
def test_cli_replay_prints_one_json_line(name: str) -> None:
    proc = run_cli("replay", str(EXAMPLES / f"{name}.json"))
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 1
    out = json.loads(lines[0])
    want = expected(name)
    assert proc.stderr == b""
    if "error" in want:
        assert proc.returncode == 1
        assert {k: out["error"][k] for k in want["error"]} == want["error"]
        assert set(out["error"]) == {"round", "move", "code", "message"}
    else:
        assert proc.returncode == 0
        assert out == want


def test_cli_reads_standard_input_and_msgpack() -> None:
    transcript = json.loads((EXAMPLES / "pagat-five-up-domino.json").read_text())
    proc = run_cli("replay", "-", stdin=msgpack.packb(transcript))
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == expected("pagat-five-up-domino")


def test_illegal_example_names_the_code() -> None:
    proc = run_cli("replay", str(EXAMPLES / "illegal-tile-not-in-hand.json"))
    assert json.loads(proc.stdout)["error"]["code"] == "not_in_hand"


@pytest.mark.parametrize(("data", "code"), [
    (b"", "bad_format"),
    (b"{not json", "bad_format"),
    (b"\xc1\xff\x00", "bad_format"),
    (b"[1, 2]", "bad_format"),
    (b'{"format": "other/2", "rules": "all-fives", "players": 2, "rounds": []}', "bad_format"),
    (b'{"rules": "no-such-game", "players": 2, "rounds": []}', "unknown_preset"),
    (b'{"rules": {"target": "x"}, "players": 2, "rounds": []}', "invalid_option"),
    (b'{"rules": "all-fives", "players": 5, "rounds": []}', "invalid_option"),
    (b'{"rules": "all-fives", "players": 2}', "bad_format"),
])
def test_bad_files_get_an_error_line_not_a_traceback(data: bytes, code: str) -> None:
    proc = run_cli("replay", "-", stdin=data)
    assert proc.returncode == 1
    assert proc.stderr == b""
    out = json.loads(proc.stdout)
    assert out["error"]["code"] == code
    assert out["error"]["round"] is None and out["error"]["move"] is None
    assert out["error"]["message"]


def test_missing_file_is_an_error_line() -> None:
    proc = run_cli("replay", str(EXAMPLES / "no-such-file.json"))
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error"]["code"] == "bad_file"


def test_replay_views_follow_every_move() -> None:
    transcript = load_transcript((EXAMPLES / "pagat-five-up-domino.json").read_bytes())
    views = replay_views(transcript)
    assert len(views) == 1 + 9
    assert views[0]["layout"] == []
    assert views[1]["layout"][0]["tile"] == "4-1"
    assert all(v["hand"] is None and v["legal"] == [] for v in views)
    assert views[-1]["rounds"][0]["totals"] == [9, 4]
