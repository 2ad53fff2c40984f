"""Post-game analysis: every choice of a game weighed by the strong search, from the mover's view.

`analyse(transcript)` replays a transcript (notation.md) and, at every move where the mover had
a choice of plays (two or more legal plays), asks the strong bot's search
(engine.bots.search `estimate`) what every legal play was worth: the expected points of the
mover's side minus the mean of the other sides' over the rest of the hand, plays and bonus,
with its standard error. The move played is compared with the best one: `loss` is how many
expected points it gave away, and a loss of at least `blunder_threshold(rules)` is a blunder.

The search at a move sees exactly what `engine.view(state, mover)` shows -- the mover's hand,
the layout, the public history -- and a seed made of the move's place in the game, never the
other hands or the boneyard (`analyse_position` takes only the view), so the analysis cannot
use a tile the mover could not know.

Budgets: `deals` per move (the search's sample budget) and `budget_ms` per game: each move gets
the game budget still left divided by the choices still to analyse (at most `MOVE_MS_MAX`), so a
game costs at most about `budget_ms` of CPU whatever its length. A move whose time runs out
before its deals are done is analysed on fewer deals (its `deals` says how many); with a budget
too large to bind, the analysis is a pure function of (transcript, seed).

Imports only engine modules.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.bots.knowledge import Knowledge, ModelError
from engine.bots.search import Estimate, estimate
from engine.bots.simple import greedy_ranking
from engine.game import legal_moves
from engine.moves import Move, Play, move_from_data, move_to_data
from engine.rules import Rules, rules_from_spec
from engine.state import GameState
from engine.transcript import walk
from engine.views import view

VERSION = 1
"""The analysis format's version (notation.md "Analysis")."""

DEALS = 300
"""Sampled deals per analysed move (the search's sample budget)."""

BUDGET_MS = 20_000
"""CPU milliseconds per game."""

MOVE_MS_MAX = 2_000
"""The most time one move may take, however much of the game's budget is left."""

_BLUNDER_POINTS: dict[str, float] = {
    "fives": 10, "threes": 6, "fives_and_threes": 3, "matching": 3, "none": 10,
}


def blunder_threshold(rules: Rules) -> float:
    """The expected loss (in the score's own units) from which a move is a blunder: two
    scoring counts in All Fives (10 points; 2 with `scale` 5), two in All Threes (6; 2 with
    `scale` 3), 3 points where plays score 1 to 8 (Fives and Threes, Bergen), and 10 pips
    where only the hand's end scores (Block, Draw)."""
    return _BLUNDER_POINTS[rules.scoring] / rules.scale


@dataclass(frozen=True, slots=True)
class _Choice:
    round: int
    index: int
    seat: int
    played: Move
    state: GameState
    hand_start: tuple[int, ...]


def move_seed(seed: int, round_index: int, move_index: int) -> int:
    """The search seed of one move: the analysis seed and the move's place in the game only."""
    return (seed * 1_000_003 + round_index) * 1_000 + move_index


def _option(found: Estimate) -> dict[str, Any]:
    return {"move": move_to_data(found.move), "points": round(found.points, 2),
            "stderr": round(found.stderr, 2), "wins": round(found.wins, 3)}


def analyse_position(position: Mapping[str, Any], played: Move, seed: int, *,
                     deals: int = DEALS, think_ms: int = MOVE_MS_MAX) -> dict[str, Any] | None:
    """One move analysed from `position`, the mover's `view` dict (and nothing else): every
    legal play's estimate best first, the index of the one `played` (`chosen`), its `loss`
    and the number of `deals` searched. None when there was no choice of plays or the
    position is one the bots cannot read."""
    started = time.perf_counter()
    try:
        knowledge = Knowledge.from_view(position)
        plays = [m for m in greedy_ranking(knowledge) if isinstance(m, Play)]
        if len(plays) < 2 or not isinstance(played, Play):
            return None
        chosen_end = knowledge.play_index(played)
        found = estimate(knowledge, seed, started, think_ms, deals, plays)
    except ModelError:
        return None
    # Best first; equal estimates keep the greedy order (the search's own tie order).
    order = sorted(range(len(found)), key=lambda i: (-found[i].points, i))
    ranked = [found[i] for i in order]
    chosen = next(k for k, f in enumerate(ranked)
                  if f.move.tile == played.tile and knowledge.play_index(f.move) == chosen_end)
    options = [_option(f) for f in ranked]
    loss = round(options[0]["points"] - options[chosen]["points"], 2)  # as shown
    return {"options": options, "chosen": chosen, "loss": loss,
            "gains": list(ranked[chosen].gains), "deals": ranked[0].deals}


def _choices(transcript: Mapping[str, Any]) -> list[_Choice]:
    """Every move of the transcript made with a choice of two or more plays."""
    out: list[_Choice] = []
    starts: dict[int, tuple[int, ...]] = {}
    rounds = transcript.get("rounds") or []

    def seen(before: GameState, seat: int, _after: GameState, _events: object) -> None:
        r = before.table.round
        starts.setdefault(r, before.scores)
        k = len(before.log)
        if sum(isinstance(m, Play) for m in legal_moves(before)) < 2:
            return
        data = {key: v for key, v in rounds[r]["moves"][k].items() if key != "seat"}
        out.append(_Choice(r, k, seat, move_from_data(data), before, starts[r]))

    walk(transcript, seen)
    return out


def _summary(moves: Sequence[Mapping[str, Any]], players: int) -> list[dict[str, Any]]:
    out = []
    for seat in range(players):
        mine = [m for m in moves if m["seat"] == seat]
        loss = sum(m["loss"] for m in mine)
        out.append({"seat": seat, "moves": len(mine),
                    "average_loss": round(loss / len(mine), 2) if mine else 0.0,
                    "blunders": sum(m["blunder"] for m in mine),
                    "best": sum(m["chosen"] == 0 for m in mine)})
    return out


def analyse(transcript: Mapping[str, Any], *, seed: int = 0, deals: int = DEALS,
            budget_ms: int = BUDGET_MS) -> dict[str, Any]:
    """The analysis of a transcript (notation.md "Analysis"): one entry per move made with a
    choice, a summary per seat, and what it cost. Raises the engine's errors for a transcript
    that does not replay."""
    started = time.process_time()
    choices = _choices(transcript)  # checks every move, the header included
    rules = rules_from_spec(transcript["rules"], transcript["players"])
    threshold = blunder_threshold(rules)
    moves: list[dict[str, Any]] = []
    complete = True
    for n, choice in enumerate(choices):
        state = choice.state
        left_ms = budget_ms - 1000 * (time.process_time() - started)
        think_ms = int(min(MOVE_MS_MAX, max(1.0, left_ms / (len(choices) - n))))
        result = analyse_position(view(state, choice.seat), choice.played,
                                  move_seed(seed, choice.round, choice.index),
                                  deals=deals, think_ms=think_ms)
        if result is None:
            continue
        complete = complete and result["deals"] >= deals
        side = state.table.side_of[choice.seat]
        so_far = [s - h for s, h in zip(state.scores, choice.hand_start, strict=True)]
        expected = [round(p + g, 2) for p, g in zip(so_far, result.pop("gains"), strict=True)]
        moves.append({"round": choice.round, "move": choice.index, "seat": choice.seat,
                      "side": side, **result, "blunder": result["loss"] >= threshold,
                      "expected": expected})
    return {
        "version": VERSION, "seed": seed, "deals": deals, "budget_ms": budget_ms,
        "blunder": threshold, "complete": complete,
        "cpu_ms": round(1000 * (time.process_time() - started)),
        "moves": moves, "players": _summary(moves, rules.players),
    }


__all__ = ["BUDGET_MS", "DEALS", "MOVE_MS_MAX", "VERSION", "analyse", "analyse_position",
           "blunder_threshold", "move_seed"]
