"""The strong bot: determinized Monte Carlo over deals of the hidden tiles.

For each sampled deal (engine.bots.sampler) the seat's knowledge gives the full `GameState`
(`Knowledge.deal`), and every candidate play is evaluated by engine.playout `finish_hand`:
the candidate, then the hand played out with every seat greedy, through the same rules
kernel and settlement as `apply`. A candidate's value is its side's points minus the mean of
the other sides' points, bonus included (a game won during the hand outweighs any points).
Every candidate sees the same deals. The search stops at the sample budget or at the time
budget, whichever comes first; with the clock out of the way it is a pure function of
(view, seed).

`estimate` is the search itself: every candidate's weighted mean value over the deals, with
its standard error and the mean points of every side (the post-game analysis reads these);
`search_move` takes the best of them. Imports only engine modules.
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

POLICY = "greedy"
CAREFUL = "all"
HAND_WIN = 0.0


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
    `Knowledge.deal`) to the hand's end played out greedily, and the side that won the
    game during the hand (None if nobody did)."""
    if POLICY == "greedy":
        settled = finish_hand(state, GREEDY, first=move)
    else:
        if CAREFUL == "all":
            mask = -1
        else:
            table = state.table
            side = table.side_of[state.turn or 0]
            mask = sum(1 << s for s in table.sides[side])
        settled = finish_hand(state, CAUTIOUS, first=move, careful=mask)
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
    # Aim a tenth short of the budget: a busy machine can pause the process between
    # the last check and the answer.
    deadline = started + 0.9 * think_ms / 1000.0
    side = knowledge.position.table.side_of[knowledge.seat]
    sides = len(knowledge.scores)
    rng = random.Random(seed)
    rows: list[list[tuple[list[int], int | None]]] = []  # per deal, per candidate
    logs: list[float] = []
    rollouts = 0
    spent = 0.0
    while len(rows) < samples:
        deal = sample_deal(knowledge, rng)
        state = knowledge.deal(deal.hands, deal.boneyard)
        row = []
        out_of_time = False
        for move in candidates:
            t0 = time.perf_counter()
            row.append(outcome(move, state))
            t1 = time.perf_counter()
            rollouts += 1
            spent += t1 - t0
            # Stop before a playout that would likely end past the deadline; a partial
            # deal is dropped so every candidate has seen the same deals.
            if rows and t1 + spent / rollouts > deadline:
                out_of_time = True
                break
        if out_of_time:
            break
        rows.append(row)
        logs.append(knowledge.log_likelihood(deal.hands) if infer else 0.0)
        if time.perf_counter() + len(candidates) * spent / rollouts > deadline:
            break
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]  # the likeliest deal weighs 1
    total = sum(weights)
    effective = total * total / sum(w * w for w in weights)
    out = []
    for i, move in enumerate(candidates):
        points = [_value(row[i][0], side) for row in rows]
        mean = sum(w * p for w, p in zip(weights, points, strict=True)) / total
        var = sum(w * (p - mean) ** 2 for w, p in zip(weights, points, strict=True)) / total
        wins = sum(w for w, row in zip(weights, rows, strict=True) if row[i][1] == side) / total
        values = [_value(_with_win(*row[i]), side) for row in rows]
        if HAND_WIN:
            values = [v + HAND_WIN * ((p > 0) - (p < 0)) for v, p in zip(values, points, strict=True)]
        value = sum(w * v for w, v in zip(weights, values, strict=True)) / total
        gains = tuple(sum(w * row[i][0][k] for w, row in zip(weights, rows, strict=True))
                      / total for k in range(sides))
        out.append(Estimate(move=move, value=value, points=mean,
                            stderr=math.sqrt(var / effective), gains=gains, wins=wins,
                            deals=len(rows)))
    return out


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
    found = estimate(knowledge, seed, started, think_ms, samples, candidates, infer)
    best = max(range(len(found)), key=lambda i: (found[i].value, -i))
    return candidates[best]
