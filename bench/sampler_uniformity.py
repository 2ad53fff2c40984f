"""Is the strong bot's sampler uniform over the deals that fit what a seat knows?

    python -m bench.sampler_uniformity [--preset fives-and-threes] [--players 3]
                                       [--positions 30] [--deals 20000] [--seed 11]

Plays greedy games of the preset and, at positions where at least two hidden slots of the
mover's `Knowledge` forbid some unseen tile (so the sampler's most-constrained-first filling
matters), estimates for every other seat and hidden tile the chance that the seat holds it:
from `sample_deal` twice (two independent runs: the noise of an estimate from that many
deals) and from rejection sampling (shuffle the unseen tiles into the slots, keep the deals
that every slot allows: exactly uniform). Prints one JSON line: the mean over positions of
the mean and the largest absolute difference per (seat, tile), sampler against uniform and
sampler against itself (a bias shows as the first above the second), and, for scale, the
sampler's deals weighed by the reading of the other seats' choices against the same deals
unweighed (how far the reading moves the chances the search plays with), with the share of the
deals the weighing leaves effective. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine
from engine.bots.knowledge import Knowledge
from engine.bots.sampler import sample_deal
from engine.bots.search import _weights
from engine.bots.simple import greedy_ranking
from engine.tiles import mask_tiles

Marginals = dict[tuple[int, int], float]


def sampled(knowledge: Knowledge, deals: int, rng: random.Random,
            read: bool = False) -> tuple[Marginals, float]:
    """The sampler's marginals, and the effective number of deals as a share of them
    ((sum of weights)² / sum of squared weights / deals); with `read`, each deal weighed as
    the search weighs it (by how well it explains the other seats' choices,
    `Knowledge.log_likelihood`), else all alike (1.0)."""
    counts: Counter[tuple[int, int]] = Counter()
    logs: list[float] = []
    hands: list[tuple[int, ...]] = []
    for _ in range(deals):
        deal = sample_deal(knowledge, rng)
        hands.append(deal.hands)
        logs.append(knowledge.log_likelihood(deal.hands) if read else 0.0)
    weights, total, effective = _weights(logs)  # the search's own weighing
    for weight, deal_hands in zip(weights, hands, strict=True):
        for seat, hand in enumerate(deal_hands):
            if seat != knowledge.seat:
                for tile in mask_tiles(hand):
                    counts[(seat, tile)] += weight
    return {key: n / total for key, n in counts.items()}, effective / deals


def uniform(knowledge: Knowledge, deals: int, rng: random.Random) -> Marginals | None:
    """Rejection sampling; None when fewer than `deals` fit within 200 tries each."""
    counts: Counter[tuple[int, int]] = Counter()
    tiles = list(mask_tiles(knowledge.unseen))
    kept = 0
    for _ in range(200 * deals):
        rng.shuffle(tiles)
        dealt = tiles[:len(knowledge.slots)]  # the rest is the boneyard
        if any(forbids >> tile & 1
               for (_, forbids), tile in zip(knowledge.slots, dealt, strict=True)):
            continue
        counts.update((seat, tile)
                      for (seat, _), tile in zip(knowledge.slots, dealt, strict=True))
        kept += 1
        if kept == deals:
            return {key: n / deals for key, n in counts.items()}
    return None


def distance(a: Marginals, b: Marginals) -> tuple[float, float]:
    gaps = [abs(a.get(key, 0.0) - b.get(key, 0.0)) for key in set(a) | set(b)]
    return sum(gaps) / len(gaps), max(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="fives-and-threes")
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--positions", type=int, default=30)
    parser.add_argument("--deals", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows: list[tuple[tuple[float, float], ...]] = []
    shares: list[float] = []  # the reading's effective deals as a share of the deals
    for _game in range(500):
        if len(rows) >= args.positions:
            break
        state = engine.new_game(args.preset, args.players, rng.randrange(2**62))
        while not state.table.game_over and state.turn is not None \
                and len(rows) < args.positions:
            seat = state.turn
            knowledge = Knowledge.from_view(engine.view(state, seat))
            constrained = sum(1 for _, forbids in knowledge.slots if forbids & knowledge.unseen)
            if constrained >= 2 and rng.random() < 0.25:
                exact = uniform(knowledge, args.deals, rng)
                if exact is not None:
                    first, _ = sampled(knowledge, args.deals, rng)
                    again, _ = sampled(knowledge, args.deals, rng)
                    read, effective = sampled(knowledge, args.deals, rng, True)
                    rows.append((distance(first, exact), distance(first, again),
                                 distance(first, read)))
                    shares.append(effective)
            state, _ = engine.apply(state, seat, greedy_ranking(knowledge)[0])
    print(json.dumps({
        "bench": "sampler_uniformity", "preset": args.preset, "players": args.players,
        "positions": len(rows), "deals": args.deals,
        "vs_uniform_mean": round(statistics.mean(r[0][0] for r in rows), 4),
        "vs_uniform_max": round(statistics.mean(r[0][1] for r in rows), 4),
        "vs_itself_mean": round(statistics.mean(r[1][0] for r in rows), 4),
        "vs_itself_max": round(statistics.mean(r[1][1] for r in rows), 4),
        "reading_mean": round(statistics.mean(r[2][0] for r in rows), 4),
        "reading_max": round(statistics.mean(r[2][1] for r in rows), 4),
        "reading_effective_share_median": round(statistics.median(shares), 2),
        "reading_effective_share_min": round(min(shares), 2)}))


if __name__ == "__main__":
    main()
