"""The strong bot: determinized Monte Carlo over deals of the hidden tiles.

For each sampled deal (engine.bots.sampler) every candidate move is played, then the
hand is played out with every seat greedy (engine.bots.playout). A candidate's value
is its side's points minus the mean of the other sides' points, bonus included (a
game won during the hand outweighs any points). Every candidate sees the same deals.
The search stops at the sample budget or at the time budget, whichever comes first;
with the clock out of the way it is a pure function of (view, seed).
Imports only `engine.moves` and `engine.bots`.
"""

from __future__ import annotations

import math
import random
import time

from engine.bots.knowledge import Knowledge
from engine.bots.playout import finish_hand, playout
from engine.bots.sampler import sample_deal
from engine.bots.table import SimMove
from engine.moves import Move


def _value(gains: list[int], side: int) -> float:
    if len(gains) == 1:
        return float(gains[0])
    others = [g for k, g in enumerate(gains) if k != side]
    return gains[side] - sum(others) / len(others)


def evaluate(knowledge: Knowledge, move: SimMove, hands: list[int], boneyard: list[int]) -> float:
    """The value of playing `move` then playing the hand out greedily (hands are consumed)."""
    rules = knowledge.rules
    side_of = rules.side_of()
    seat = knowledge.seat
    side = side_of[seat]
    table = knowledge.table.copy()
    scores = knowledge.scores[:]
    start = scores[:]
    tile, kind, idx = move
    pts = table.points_after(tile, kind, idx, rules)
    hands[seat] &= ~(1 << tile)
    if not hands[seat]:
        gains = finish_hand(hands, scores, start, rules, side_of, seat, pts)
        return _value(gains, side)
    if rules.exact and scores[side] + pts > rules.target:
        pts = 0
    table.play(tile, kind, idx, rules)
    scores[side] += pts
    if rules.exact and pts and scores[side] == rules.target:
        return 1000.0 + pts
    later = playout(table, hands, boneyard, (seat + 1) % rules.players, scores, rules, side_of)
    later[side] += pts
    return _value(later, side)


def search_move(
    knowledge: Knowledge,
    seed: int,
    started: float,
    think_ms: int,
    samples: int,
    preference: list[Move],
    infer: bool = True,
) -> Move:
    """The candidate with the best mean value over the sampled deals.

    `preference` lists the legal moves best first (the greedy order); it breaks ties
    and is the answer when there is nothing to search. With `infer`, each deal counts
    in proportion to how well it explains the other seats' past choices.
    """
    # Aim a tenth short of the budget: a busy machine can pause the process between
    # the last check and the answer.
    deadline = started + 0.9 * think_ms / 1000.0
    candidates: list[tuple[Move, SimMove]] = []
    for move in preference:
        sim = knowledge.sim_move(move)
        if sim is not None:
            candidates.append((move, sim))
    if len(candidates) <= 1:
        return preference[0]
    rng = random.Random(seed)
    sums = [0.0] * len(candidates)
    done = 0
    rollouts = 0
    spent = 0.0
    while done < samples:
        deal = sample_deal(knowledge, rng)
        values = []
        out_of_time = False
        for _, sim in candidates:
            t0 = time.perf_counter()
            values.append(evaluate(knowledge, sim, list(deal.hands), list(deal.boneyard)))
            t1 = time.perf_counter()
            rollouts += 1
            spent += t1 - t0
            # Stop before a playout that would likely end past the deadline; a partial
            # deal is dropped so every candidate has seen the same deals.
            if done and t1 + spent / rollouts > deadline:
                out_of_time = True
                break
        if out_of_time:
            break
        weight = math.exp(knowledge.log_likelihood(deal.hands)) if infer else 1.0
        for i, v in enumerate(values):
            sums[i] += weight * v
        done += 1
        if time.perf_counter() + len(candidates) * spent / rollouts > deadline:
            break
    best = max(range(len(candidates)), key=lambda i: (sums[i], -i))
    return candidates[best][0]
