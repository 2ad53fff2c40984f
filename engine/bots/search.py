"""The strong bot: determinized Monte Carlo over deals of the hidden tiles.

For each sampled deal (engine.bots.sampler) the seat's knowledge gives the full `GameState`
(`Knowledge.deal`), and every candidate play is evaluated by engine.playout `finish_hand`:
the candidate, then the hand played out with every seat greedy, through the same rules
kernel and settlement as `apply`. A candidate's value is its side's points minus the mean of
the other sides' points, bonus included (a game won during the hand outweighs any points).
Every candidate sees the same deals. The search stops at the sample budget or at the time
budget, whichever comes first; with the clock out of the way it is a pure function of
(view, seed). Imports only engine modules.
"""

from __future__ import annotations

import math
import random
import time

from engine.bots.knowledge import Knowledge
from engine.bots.sampler import sample_deal
from engine.moves import Move, Play
from engine.playout import GREEDY, finish_hand
from engine.state import GameState

WIN = 1000
"""What winning the game during the hand adds to a side's points."""


def _value(gains: list[int], side: int) -> float:
    if len(gains) == 1:
        return float(gains[0])
    others = [g for k, g in enumerate(gains) if k != side]
    return gains[side] - sum(others) / len(others)


def evaluate(knowledge: Knowledge, move: Play, state: GameState) -> float:
    """The value of playing `move` in `state` (one deal of the hidden tiles, from
    `Knowledge.deal`) and then playing the hand out greedily."""
    settled = finish_hand(state, GREEDY, first=move)
    gains = [t - s for t, s in zip(settled.totals, state.scores, strict=True)]
    if settled.game_winner is not None:
        gains[settled.game_winner] += WIN
    return _value(gains, state.table.side_of[knowledge.seat])


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
    candidates = [move for move in preference if isinstance(move, Play)]
    if len(candidates) <= 1:
        return preference[0]
    rng = random.Random(seed)
    sums = [0.0] * len(candidates)
    done = 0
    rollouts = 0
    spent = 0.0
    while done < samples:
        deal = sample_deal(knowledge, rng)
        state = knowledge.deal(deal.hands, deal.boneyard)
        values = []
        out_of_time = False
        for move in candidates:
            t0 = time.perf_counter()
            values.append(evaluate(knowledge, move, state))
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
    return candidates[best]
