"""Random-playout throughput of the rules engine, and a per-hand comparison with `dominoes`.

    python bench/engine.py [--seconds 1.0] [--rounds 3] [--presets all-fives,block]

1. For every preset, with 2 and 4 players: games, hands and moves per second of uniformly
   random legal play through the public API (`legal_moves` + `apply`).
2. Side by side: the PyPI package `dominoes` (a 4-player partnership Block engine; one of its
   games is one hand) against our `{"preset": "block", "hand_size": {"4": 7}}`, both playing
   random moves, compared per hand: ours through `legal_moves` + `apply` (every move builds a
   new state and its events) and through `play_out_hand` (the simulation path for bots).
   Rates use the process's CPU time, so other work on the machine distorts them less; the
   runs alternate in slices and the best slice of each is reported.
3. Where our time goes on that game: CPU microseconds per `legal_moves`, per `apply` of a
   move inside a hand, per `apply` of a hand's last move (settling it and dealing the next)
   and per `play_out_hand` (a whole hand), over positions recorded from random play.
Prints figures only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import PRESETS, GameState, Move, apply, legal_moves, new_game, play_out_hand
from engine.cli.selfplay import selfplay

BLOCK_7 = {"preset": "block", "hand_size": {"4": 7}}


def ours_hands(seconds: float, seed: int) -> tuple[int, int, float]:
    """Random hands of BLOCK_7 with 4 players for about `seconds`: (hands, moves, elapsed)."""
    rand = random.Random(seed).random
    hands = moves = 0
    game = seed
    state = new_game(BLOCK_7, 4, game)
    start = time.process_time()
    deadline = start + seconds
    while True:
        turn = state.turn
        assert turn is not None
        moves_now = legal_moves(state)
        state, events = apply(state, turn, moves_now[int(rand() * len(moves_now))])
        moves += 1
        if len(events) > 1:
            for event in events:
                if event["type"] == "hand_end":
                    hands += 1
            if state.game_over:
                game += 1
                state = new_game(BLOCK_7, 4, game)
            if time.process_time() > deadline:
                break
    return hands, moves, time.process_time() - start


def ours_playouts(seconds: float, seed: int) -> tuple[int, int, float]:
    """The same hands finished by `play_out_hand` (the simulation path): (hands, 0, elapsed)."""
    rng = random.Random(seed)
    hands = 0
    game = seed
    state = new_game(BLOCK_7, 4, game)
    start = time.process_time()
    deadline = start + seconds
    while time.process_time() < deadline:
        for _ in range(20):
            state = play_out_hand(state, rng)
            hands += 1
            if state.game_over:
                game += 1
                state = new_game(BLOCK_7, 4, game)
    return hands, 0, time.process_time() - start


def theirs_hands(seconds: float, seed: int) -> tuple[int, int, float]:
    """Random games (= hands) of `dominoes` for about `seconds`: (hands, moves, elapsed)."""
    import dominoes

    dominoes.players.rand.seed(seed)
    player = dominoes.players.random
    hands = moves = 0
    start = time.process_time()
    deadline = start + seconds
    while time.process_time() < deadline:
        game = dominoes.Game.new()
        while game.result is None:
            player(game)
            game.make_move(*game.valid_moves[0])
            moves += 1
        hands += 1
    return hands, moves, time.process_time() - start


def compare(seconds: float, rounds: int) -> dict[str, Any]:
    best: dict[str, float] = {"ours": 0.0, "dominoes": 0.0, "playout": 0.0}
    moves_rate: dict[str, float] = {"ours": 0.0, "dominoes": 0.0, "playout": 0.0}
    runs = (("dominoes", theirs_hands), ("ours", ours_hands), ("playout", ours_playouts))
    for r in range(rounds):
        for name, run in runs:
            hands, moves, elapsed = run(seconds, r)
            if hands / elapsed > best[name]:
                best[name] = hands / elapsed
                moves_rate[name] = moves / elapsed
    return {
        "game": "4-player partnership Block, 7 tiles each, random moves",
        "ours_hands_per_second": round(best["ours"]),
        "dominoes_hands_per_second": round(best["dominoes"]),
        "ratio": round(best["ours"] / best["dominoes"], 2) if best["dominoes"] else None,
        "ours_play_out_hand_hands_per_second": round(best["playout"]),
        "play_out_hand_ratio": (
            round(best["playout"] / best["dominoes"], 2) if best["dominoes"] else None
        ),
        "ours_moves_per_second": round(moves_rate["ours"]),
        "dominoes_moves_per_second": round(moves_rate["dominoes"]),
    }


def parts(rounds: int) -> dict[str, float]:
    """CPU microseconds per call of the hot paths on BLOCK_7 positions from random play."""
    rand = random.Random(7).random
    inside: list[tuple[GameState, int, Move]] = []
    last: list[tuple[GameState, int, Move]] = []
    starts: list[GameState] = []
    game = 0
    state = new_game(BLOCK_7, 4, game)
    while len(last) < 300:
        if not state.nodes:
            starts.append(state)
        turn = state.turn
        assert turn is not None
        moves = legal_moves(state)
        move = moves[int(rand() * len(moves))]
        new, events = apply(state, turn, move)
        if len(events) == 1:
            inside.append((state, turn, move))
        elif not new.game_over:
            last.append((state, turn, move))
        state = new
        if state.game_over:
            game += 1
            state = new_game(BLOCK_7, 4, game)

    def per_call(run: Callable[[], int]) -> float:
        best = float("inf")
        for _ in range(rounds):
            start = time.process_time()
            calls = run()
            best = min(best, (time.process_time() - start) / calls)
        return round(best * 1e6, 2)

    def run_legal() -> int:
        for position, _, _ in inside:
            legal_moves(position)
        return len(inside)

    def run_apply(triples: list[tuple[GameState, int, Move]]) -> Callable[[], int]:
        def run() -> int:
            for position, seat, move in triples:
                apply(position, seat, move)
            return len(triples)
        return run

    def run_playout() -> int:
        rng = random.Random(1)
        for position in starts:
            play_out_hand(position, rng)
        return len(starts)

    return {
        "legal_moves_us": per_call(run_legal),
        "apply_in_hand_us": per_call(run_apply(inside)),
        "apply_hand_end_and_deal_us": per_call(run_apply(last)),
        "play_out_hand_us_per_hand": per_call(run_playout),
    }


def per_preset(names: list[str], seconds: float) -> list[dict[str, Any]]:
    """selfplay figures per preset and seat count, rates in CPU time."""
    rows = []
    for name in names:
        for players in (2, 4):
            games = 1
            while True:
                start = time.process_time()
                report = selfplay(name, players, games, seed=1)
                cpu = time.process_time() - start
                if cpu >= seconds or games >= 100_000:
                    break
                games *= 2
            rows.append({"preset": name, "players": players, "games": report.games,
                         "games_per_second": report.games / cpu,
                         "hands_per_second": report.hands / cpu,
                         "moves_per_second": report.moves / cpu})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="alternating comparison slices")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma-separated presets")
    args = parser.parse_args()
    print("== random playouts per preset (games, hands, moves per CPU second)")
    print(f"{'preset':<20}{'seats':>6}{'games/s':>10}{'hands/s':>10}{'moves/s':>11}")
    for row in per_preset(args.presets.split(","), args.seconds):
        print(f"{row['preset']:<20}{row['players']:>6}{row['games_per_second']:>10.0f}"
              f"{row['hands_per_second']:>10.0f}{row['moves_per_second']:>11.0f}")
    print("== per hand against the PyPI package `dominoes` (same game, random players)")
    print(json.dumps(compare(args.seconds, args.rounds)))
    print("== CPU microseconds per call on that game")
    print(json.dumps(parts(max(args.rounds, 3))))


if __name__ == "__main__":
    main()
