"""Command line: `python -m engine play|replay|verify|analyse|selfplay|match ...`
(notation.md, bots.md).

Each subcommand is a `register(subparsers)` function in `COMMANDS`; it sets `run`, which
takes the parsed arguments and returns the exit status. The subcommands live in this
package (`match`, `selfplay`, `terminal`), apart from the rules; only this package reads or
writes files, the terminal or standard streams.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.cli.match import add_rules_arguments, register_match
from engine.cli.terminal import register_play
from engine.errors import EngineError, InvalidRules
from engine.files import load_transcript
from engine.transcript import replay


def _print(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, separators=(", ", ": ")) + "\n")


def _error(code: str, message: str, rnd: int | None = None, move: int | None = None) -> int:
    _print({"error": {"round": rnd, "move": move, "code": code, "message": message}})
    return 1


def _on_transcript(file: str, work: Callable[[dict[str, Any]], Any]) -> tuple[bool, Any]:
    """`work` done on the transcript in `file` (JSON or msgpack; "-": standard input):
    (True, its result), or (False, None) once the error line is printed (a file that cannot
    be read, or the engine's refusal)."""
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        _error("bad_file", f"cannot read {file}: {exc.strerror or exc}")
        return False, None
    try:
        return True, work(load_transcript(data))
    except EngineError as exc:
        _error(exc.code, exc.message, exc.round, exc.move)
    except RecursionError:
        _error("bad_format", "the transcript is nested too deeply")
    return False, None


def run_replay(args: argparse.Namespace) -> int:
    """Replay a transcript; print the result line, or an error line and exit 1."""
    done, result = _on_transcript(args.file, replay)
    if not done:
        return 1
    _print(result)
    return 0


def register_replay(sub: Any) -> None:
    p = sub.add_parser("replay", help="check a transcript and print each round's scores")
    p.add_argument("file", help="transcript file (JSON or msgpack), or - for standard input")
    p.set_defaults(run=run_replay)


VERIFY_MISMATCH, VERIFY_ERROR = 1, 2


def run_verify(args: argparse.Namespace) -> int:
    """Check a finished game's deals against its revealed seed: exit 0 when everything
    matches, 1 on a mismatch, 2 when the file cannot be checked (notation.md "Fair deals")."""
    from engine.verify import verify

    done, result = _on_transcript(args.file, lambda t: verify(t, args.commitment))
    if not done:
        return VERIFY_ERROR
    _print(result)
    return 0 if result["verified"] else VERIFY_MISMATCH


def register_verify(sub: Any) -> None:
    p = sub.add_parser("verify", help="check a finished game's deals against its revealed seed")
    p.add_argument("file", help="transcript file (JSON or msgpack), or - for standard input")
    p.add_argument("--commitment", metavar="HEX",
                   help="the commitment the table showed when the game started")
    p.set_defaults(run=run_verify)


def run_analyse(args: argparse.Namespace) -> int:
    """Analyse a transcript (notation.md "Analysis"); print the analysis as one JSON line, or
    an error line and exit 1."""
    from engine.analysis import analyse

    if args.deals < 1 or args.budget_ms < 1:
        return _error("bad_budget", "--deals and --budget-ms must be at least 1")
    done, result = _on_transcript(args.file, lambda t: analyse(
        t, seed=args.seed, deals=args.deals, budget_ms=args.budget_ms))
    if not done:
        return 1
    _print(result)
    return 0


def register_analyse(sub: Any) -> None:
    from engine.analysis import BUDGET_MS, DEALS

    p = sub.add_parser("analyse", help="weigh every choice of a game with the strong search")
    p.add_argument("file", help="transcript file (JSON or msgpack), or - for standard input")
    p.add_argument("--deals", type=int, default=DEALS,
                   help=f"sampled deals per move (default {DEALS})")
    p.add_argument("--budget-ms", type=int, default=BUDGET_MS,
                   help=f"CPU milliseconds for the whole game (default {BUDGET_MS})")
    p.add_argument("--seed", type=int, default=0, help="the search's seed (default 0)")
    p.set_defaults(run=run_analyse)


def run_selfplay(args: argparse.Namespace) -> int:
    """Play random games; print one JSON line of figures; optionally write transcripts."""
    from engine.cli.selfplay import selfplay

    spec: Any = args.preset
    if args.rules is not None:
        try:
            spec = json.loads(args.rules)
        except ValueError as exc:
            return _error("bad_format", f"--rules is not JSON: {exc}")
    try:
        report = selfplay(spec, args.players, args.games, args.seed,
                          keep_transcripts=args.out is not None)
    except InvalidRules as exc:
        return _error(exc.code, exc.message)
    if args.out is not None:
        lines = "".join(json.dumps(t, separators=(",", ":")) + "\n" for t in report.transcripts)
        try:
            Path(args.out).write_text(lines, encoding="utf-8")
        except OSError as exc:
            return _error("bad_file", f"cannot write {args.out}: {exc.strerror or exc}")
    _print(report.summary())
    return 0


def register_selfplay(sub: Any) -> None:
    p = sub.add_parser("selfplay", help="play random games and print throughput figures")
    add_rules_arguments(p)
    p.add_argument("--players", type=int, default=2)
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write one transcript per line (JSON lines) to this file")
    p.set_defaults(run=run_selfplay)


COMMANDS: list[Callable[[Any], None]] = [
    register_replay, register_verify, register_analyse, register_selfplay, register_match,
    register_play,
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code
