"""The strong bot: determinized Monte Carlo over deals of the hidden tiles.

For each sampled deal (engine.bots.sampler) the seat's knowledge gives the full `GameState`
(`Knowledge.deal`), and every candidate play is evaluated by engine.playout `finish_hand`:
the candidate, then the hand played out (the other sides greedy, the mover's side cautious
where plays score: `outcome`), through the same rules kernel and settlement as `apply`. A
candidate's value is its side's points minus the mean of the other sides' points, bonus
included (a game won during the hand outweighs any points).
Every candidate sees the same deals. The search stops at the sample budget or at the time
budget, whichever comes first; with the clock out of the way it is a pure function of
(view, seed).

`estimate` is the search itself: every candidate's weighted mean value over the deals, with
its standard error and the mean points of every side (the post-game analysis reads these).
`search_move` runs the same search but stops playing out a candidate once the best leads it
by more than `PRUNE_Z` standard errors of their paired difference, so the candidates still
in the running get more deals in the time, and takes the best of those. Imports only engine
modules.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from engine.bots.knowledge import Knowledge
from engine.bots.sampler import sample_deal
from engine.moves import Move, Play
from engine.playout import CAUTIOUS, GREEDY, finish_hand
from engine.state import GameState

WIN = 1000
"""What winning the game during the hand adds to a side's points."""

CAREFUL = True
"""Whether the mover's side plays `CAUTIOUS` in the playouts (in games that score plays)."""
PRUNE = True
"""Whether `search_move` stops playing out candidates that are clearly worse than the best."""
PRUNE_MIN = 32
"""Deals every candidate sees before any is dropped."""
PRUNE_EVERY = 16
"""Deals between two looks at the candidates."""
PRUNE_Z = 3.0
"""A candidate is dropped when the best's paired lead over it is this many standard errors."""


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the search found for one candidate over the deals it sampled.

    `value` is the search's objective (as `points`, with `WIN` more for the side that wins
    the game during the hand); `points` is the mover's side's points over
    the rest of the hand (plays and bonus) minus the mean of the other sides', `stderr` its
    standard error over the deals (weighted: the effective number of deals); `gains` is every
    side's mean points; `wins` the chance the mover's side wins the game in the hand.
    """

    move: Play
    value: float
    points: float
    stderr: float
    gains: tuple[float, ...]
    wins: float
    deals: int


def _value(gains: Sequence[int], side: int) -> float:
    if len(gains) == 1:
        return float(gains[0])
    others = [g for k, g in enumerate(gains) if k != side]
    return gains[side] - sum(others) / len(others)


def outcome(move: Play, state: GameState) -> tuple[list[int], int | None]:
    """Every side's points from `move` in `state` (one deal of the hidden tiles, from
    `Knowledge.deal`) to the hand's end, and the side that won the game during the hand
    (None if nobody did).

    The other sides play greedily (engine.playout `GREEDY`). Where plays score, the
    mover's side plays `CAUTIOUS` (no count left for the next seat when it costs less than
    it scores): the search plays better than greedy, and so should its model of its own
    later plays. Where nothing scores during the hand that would be greedy's play anyway,
    and the side plays `GREEDY`."""
    table = state.table
    if table.rules.scoring == "none" or not CAREFUL:
        settled = finish_hand(state, GREEDY, first=move)
    else:
        mine = 0
        for s in table.sides[table.side_of[state.turn or 0]]:
            mine |= 1 << s
        settled = finish_hand(state, CAUTIOUS, first=move, careful=mine)
    gains = [t - s for t, s in zip(settled.totals, state.scores, strict=True)]
    return gains, settled.game_winner


def _with_win(gains: list[int], winner: int | None) -> list[int]:
    if winner is None:
        return gains
    return [g + WIN if k == winner else g for k, g in enumerate(gains)]


def estimate(
    knowledge: Knowledge,
    seed: int,
    started: float,
    think_ms: int,
    samples: int,
    candidates: Sequence[Play],
    infer: bool = True,
) -> list[Estimate]:
    """Every candidate's estimate over the same sampled deals, in `candidates`' order.

    Stops after `samples` deals or when the next playout would end past 90 % of `think_ms`
    after `started` (a `time.perf_counter()` reading), whichever comes first; at least one
    deal is always evaluated. With `infer`, each deal counts in proportion to how well it
    explains the other seats' past choices.
    """
    return _search(knowledge, seed, started, think_ms, samples, candidates, infer, False)[0]


Outcome = tuple[list[int], int | None]


def _objective(outcome: Outcome, side: int) -> float:
    return _value(_with_win(*outcome), side)


def _weights(logs: Sequence[float]) -> tuple[list[float], float, float]:
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]  # the likeliest deal weighs 1
    total = sum(weights)
    return weights, total, total * total / sum(w * w for w in weights)


def _survivors(active: list[int], values: list[list[float]], logs: list[float]) -> list[int]:
    """The candidates still worth playing out: those whose value is not clearly below the
    best's (paired over the same deals, by more than `PRUNE_Z` standard errors)."""
    weights, total, effective = _weights(logs)
    means = {i: sum(w * v for w, v in zip(weights, values[i], strict=True)) / total
             for i in active}
    best = max(active, key=lambda i: (means[i], -i))
    keep = []
    for i in active:
        if i == best:
            keep.append(i)
            continue
        diffs = [b - v for b, v in zip(values[best], values[i], strict=True)]
        mean = means[best] - means[i]
        var = sum(w * (d - mean) ** 2 for w, d in zip(weights, diffs, strict=True)) / total
        if var == 0.0:
            continue  # the same difference on every deal: the best is at least as good
        if mean <= PRUNE_Z * math.sqrt(var / effective):
            keep.append(i)
    return keep


def _search(
    knowledge: Knowledge,
    seed: int,
    started: float,
    think_ms: int,
    samples: int,
    candidates: Sequence[Play],
    infer: bool,
    prune: bool,
) -> tuple[list[Estimate], list[int]]:
    """The estimates, and the candidates still in the running (all of them without
    `prune`; with it, a candidate clearly worse than the best stops being played out, and
    its estimate is over the deals it saw)."""
    # Aim a tenth short of the budget: a busy machine can pause the process between
    # the last check and the answer.
    deadline = started + 0.9 * think_ms / 1000.0
    side = knowledge.position.table.side_of[knowledge.seat]
    sides = len(knowledge.scores)
    rng = random.Random(seed)
    n = len(candidates)
    results: list[list[Outcome]] = [[] for _ in range(n)]  # per candidate, per deal
    values: list[list[float]] = [[] for _ in range(n)]
    active = list(range(n))
    logs: list[float] = []
    rollouts = 0
    spent = 0.0
    while len(logs) < samples:
        deal = sample_deal(knowledge, rng)
        state = knowledge.deal(deal.hands, deal.boneyard)
        row = []
        out_of_time = False
        for i in active:
            t0 = time.perf_counter()
            row.append(outcome(candidates[i], state))
            t1 = time.perf_counter()
            rollouts += 1
            spent += t1 - t0
            # Stop before a playout that would likely end past the deadline; a partial
            # deal is dropped so every candidate has seen the same deals.
            if logs and t1 + spent / rollouts > deadline:
                out_of_time = True
                break
        if out_of_time:
            break
        for i, result in zip(active, row, strict=True):
            results[i].append(result)
            values[i].append(_objective(result, side))
        logs.append(knowledge.log_likelihood(deal.hands) if infer else 0.0)
        if (prune and len(active) > 1 and len(logs) >= PRUNE_MIN
                and len(logs) % PRUNE_EVERY == 0):
            active = _survivors(active, values, logs)
        if time.perf_counter() + len(active) * spent / rollouts > deadline:
            break
    out = []
    for i, move in enumerate(candidates):
        rows = results[i]
        weights, total, effective = _weights(logs[:len(rows)])
        points = [_value(r[0], side) for r in rows]
        mean = sum(w * p for w, p in zip(weights, points, strict=True)) / total
        var = sum(w * (p - mean) ** 2 for w, p in zip(weights, points, strict=True)) / total
        wins = sum(w for w, r in zip(weights, rows, strict=True) if r[1] == side) / total
        value = sum(w * v for w, v in zip(weights, values[i], strict=True)) / total
        gains = tuple(sum(w * r[0][k] for w, r in zip(weights, rows, strict=True))
                      / total for k in range(sides))
        out.append(Estimate(move=move, value=value, points=mean,
                            stderr=math.sqrt(var / effective), gains=gains, wins=wins,
                            deals=len(rows)))
    return out, active


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
    and is the answer when there is nothing to search.
    """
    candidates = [move for move in preference if isinstance(move, Play)]
    if len(candidates) <= 1:
        return preference[0]
    found, active = _search(knowledge, seed, started, think_ms, samples, candidates, infer,
                            PRUNE)
    best = max(active, key=lambda i: (found[i].value, -i))
    return candidates[best]
