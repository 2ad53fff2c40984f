"""Bot strength and speed: the target matches, think-time overruns and playout speed.

    python -m bench.bots              # every figure at full size (tens of minutes)
    python -m bench.bots --quick      # small runs for a smoke check
    python -m bench.bots --only think,playouts

Prints one JSON line per figure:
- `greedy-vs-random`: all-fives, 2 players, 500 deals per hand (target >= 70 %);
- `strong-vs-greedy`: all-fives, 2 players, 300 deals, 100 ms per move (target >= 58 %);
- `strong-vs-greedy-games`: the same pairing over whole games (aim >= 80 %);
- `strong-vs-greedy-samples`: strong bound by 300 sampled deals per move instead of the
  clock (reproducible, and independent of the machine's load);
- `think`: strong at 300 ms per move, every move's wall time (target: max <= 360 ms);
- `playouts`: sampled deals and playouts per CPU second from real positions;
- `presets`: strong (100 ms) against greedy per hand on every preset with 2, 3 and 4
  players (`--deals` deals per cell, 50 unless given; target >= 60 % everywhere).
Matches run in `--jobs` processes; the machine's other work shows in wall times.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from engine import PRESETS, Play, apply, new_game, view
from engine.bots import choose_move
from engine.bots.knowledge import Knowledge
from engine.bots.sampler import sample_deal
from engine.bots.search import outcome
from engine.bots.simple import greedy_ranking
from engine.cli.match import run_match


def emit(name: str, figures: dict[str, Any]) -> None:
    print(json.dumps({"bench": name, **figures}), flush=True)


def think_times(games: int, think_ms: int) -> dict[str, Any]:
    """Wall time of every strong move with a choice to make, against greedy."""
    times: list[float] = []
    for g in range(games):
        state = new_game("all-fives", 2, 10_000 + g)
        n = 0
        while not state.game_over and state.round < 2:
            seat = state.turn
            assert seat is not None
            seen = view(state, seat)
            level = "strong" if seat == g % 2 else "greedy"
            t0 = time.perf_counter()
            move = choose_move(level, seen, n, think_ms)
            spent = (time.perf_counter() - t0) * 1000.0
            if level == "strong" and len(seen["legal"]) > 1:  # type: ignore[arg-type]
                times.append(spent)
            state, _ = apply(state, seat, move)
            n += 1
    times.sort()
    return {
        "think_ms": think_ms,
        "moves": len(times),
        "mean_ms": round(statistics.fmean(times), 1),
        "p99_ms": round(times[int(0.99 * (len(times) - 1))], 1),
        "max_ms": round(times[-1], 1),
        "over_120_percent": sum(1 for t in times if t > 1.2 * think_ms),
    }


def playout_speed(positions: int) -> dict[str, Any]:
    """Samples and playouts per second over positions of greedy games."""
    rng = random.Random(5)
    samples = playouts = 0
    sample_time = playout_time = 0.0
    state = new_game("all-fives", 2, 77)
    seen_positions = 0
    while seen_positions < positions:
        if state.game_over:
            state = new_game("all-fives", 2, 77 + seen_positions)
        seat = state.turn
        assert seat is not None
        knowledge = Knowledge.from_view(view(state, seat))
        candidates = [m for m in greedy_ranking(knowledge) if isinstance(m, Play)]
        if candidates:
            seen_positions += 1
            for _ in range(20):
                t0 = time.process_time()
                deal = sample_deal(knowledge, rng)
                t1 = time.process_time()
                dealt = knowledge.deal(deal.hands, deal.boneyard)
                for move in candidates:
                    outcome(move, dealt)
                t2 = time.process_time()
                samples += 1
                playouts += len(candidates)
                sample_time += t1 - t0
                playout_time += t2 - t1
        state, _ = apply(state, seat, choose_move("greedy", view(state, seat), 0))
    return {
        "positions": positions,
        "samples_per_second": round(samples / sample_time),
        "playouts_per_second": round(playouts / playout_time),
        "mean_candidates": round(playouts / samples, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small runs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="comma-separated figure names")
    parser.add_argument("--deals", type=int, default=None, help="deals per preset cell")
    parser.add_argument("--presets", help="comma-separated presets for `presets`")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    q = args.quick

    def wanted(name: str) -> bool:
        return only is None or name in only

    if wanted("greedy-vs-random"):
        emit("greedy-vs-random", run_match("all-fives", 2, "greedy", "random",
                                           50 if q else 500, seed=1, jobs=args.jobs))
    if wanted("strong-vs-greedy"):
        emit("strong-vs-greedy", run_match("all-fives", 2, "strong", "greedy",
                                           20 if q else 300, seed=11, think_ms=100,
                                           jobs=args.jobs))
    if wanted("strong-vs-greedy-games"):
        emit("strong-vs-greedy-games", run_match("all-fives", 2, "strong", "greedy",
                                                 4 if q else 60, seed=12, think_ms=100,
                                                 jobs=args.jobs, unit="game"))
    if wanted("strong-vs-greedy-samples"):
        emit("strong-vs-greedy-samples", run_match("all-fives", 2, "strong", "greedy",
                                                   20 if q else 150, seed=13, think_ms=600_000,
                                                   samples=300, jobs=args.jobs))
    if wanted("think"):
        emit("think", think_times(2 if q else 20, 300))
    if wanted("playouts"):
        emit("playouts", playout_speed(20 if q else 200))
    if only is not None and "presets" in only:  # long: only when asked for
        deals = args.deals or (4 if q else 50)
        names = args.presets.split(",") if args.presets else list(PRESETS)
        for name in names:
            for players in (2, 3, 4):
                emit("presets", run_match(name, players, "strong", "greedy", deals, seed=21,
                                          think_ms=100, jobs=args.jobs))


if __name__ == "__main__":
    main()
