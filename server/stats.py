"""Per-seat statistics of a game, computed from its transcript (docs/notation.md).

`seat_stats(transcript)` replays the transcript move by move through the engine and tallies,
for every seat, what the engine itself reports: the ``points`` of each ``play`` event (what
the play added to its side's score) and, at each ``hand_end`` event, how the hand ended, its
winning side and how the settlement changed every side's total. No scoring rule is written
here, so the numbers are exact for every preset and option set. The results are the
``game_players`` columns of the archive (server/migrations/0003_ratings.sql).

The walk is `engine.replay`'s own (`engine.walk`), told of every move with the positions
before and after it and its events. Pure: no I/O, imports only the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import engine
from engine import GameState

BIG_PLAY = 30
"""A play scoring at least this many points (as the score shows them) is a big play."""


@dataclass(frozen=True, slots=True)
class SeatStats:
    """One seat's statistics over a game (every number in the score's own units).

    - ``hands``: hands (rounds) that ended -- by a domino, a block, or the game reaching an
      exact target in the middle of a hand. The unfinished last round of an abandoned or
      forfeited game (or of a transcript cut short) is not counted, nor are its plays'
      effects on ``hands_won``; its plays' points do count in ``play_points``, ``best_play``
      and ``big_plays`` (they are in the score). Every seat has the same ``hands``.
    - ``hands_won``: hands whose winning side, as the engine reports it, is this seat's side:
      the side that dominoed, or the side with the fewest pips in a blocked hand (also when
      the rules pay it nothing, ``blocked_bonus: false``, and in penalty games). A tied block
      and a hand ended at an exact target have no winner and count for nobody.
    - ``won_domino`` / ``won_block``: of those, hands that ended by a domino (a seat of the
      side played out its last tile) / by a block; ``hands_won == won_domino + won_block``.
    - ``play_points``: the points this seat's own plays added to its side's score (a play's
      points voided by an exact target count 0; a domino's play counts what it kept).
    - ``bonus_points``: the points the hand-end settlements added to this seat's side's score,
      credited to every seat of the side: the bonus of each hand the side won, plus its share
      when a tied blocked hand is split (``blocked_tie: split``, where nobody wins the hand but
      the tied sides are paid). Bonuses voided by an exact target count 0. In penalty games
      (``bonus: penalty``) nobody is paid at a hand's end -- every side loses its own pips --
      so ``bonus_points`` is 0 and the penalties are in no column (the final score is the
      side's ``play_points`` minus them). Outside penalty games a side's final score is exactly
      the ``play_points`` of its seats plus its ``bonus_points``.
    - ``best_play``: the most points one play of this seat scored (0 if none scored).
    - ``big_plays``: plays of this seat that scored ``BIG_PLAY`` (30) points or more.
    """

    hands: int
    hands_won: int
    won_domino: int
    won_block: int
    play_points: int
    bonus_points: int
    best_play: int
    big_plays: int


class _Tally:
    """A seat's running counts while the transcript is walked."""

    __slots__ = ("best_play", "big_plays", "bonus_points", "hands", "hands_won",
                 "play_points", "won_block", "won_domino")

    def __init__(self) -> None:
        self.hands = self.hands_won = self.won_domino = self.won_block = 0
        self.play_points = self.bonus_points = self.best_play = self.big_plays = 0

    def frozen(self) -> SeatStats:
        return SeatStats(
            hands=self.hands, hands_won=self.hands_won, won_domino=self.won_domino,
            won_block=self.won_block, play_points=self.play_points,
            bonus_points=self.bonus_points, best_play=self.best_play,
            big_plays=self.big_plays,
        )


def seat_stats(transcript: Mapping[str, Any]) -> list[SeatStats]:
    """Every seat's `SeatStats` for the game `transcript` records, in seat order.

    The transcript may be of a finished, live or abandoned game (it may stop mid-round).
    Raises the engine's `EngineError` (with ``round``/``move`` set, as `engine.replay`
    does) when the transcript is not a valid game record.
    """
    tallies: list[_Tally] = []

    def seen(before: GameState, seat: int, after: GameState,
             events: list[dict[str, object]]) -> None:
        _tally(tallies, after, seat, before.scores, events)

    players = transcript.get("players") if isinstance(transcript, Mapping) else None
    tallies.extend(_Tally() for _ in range(players if type(players) is int else 0))
    engine.walk(transcript, seen)
    return [t.frozen() for t in tallies]


def _tally(tallies: list[_Tally], state: GameState, seat: int, before: Sequence[int],
           events: Sequence[Mapping[str, object]]) -> bool:
    """Count one move's events (`state` is the position after it, `before` the scores before
    it); whether the move ended the hand."""
    points = 0
    ended = False
    for event in events:
        kind = event["type"]
        if kind == "play":
            points = _int(event["points"])
            tally = tallies[_int(event["seat"])]
            tally.play_points += points
            tally.best_play = max(tally.best_play, points)
            if points >= BIG_PLAY:
                tally.big_plays += 1
        elif kind == "hand_end":
            ended = True
            _hand_end(tallies, state, seat, points, before, event)
    return ended


def _hand_end(tallies: list[_Tally], state: GameState, seat: int, points: int,
              before: Sequence[int], event: Mapping[str, object]) -> None:
    """Count a hand's end: `seat` made its last move, whose play kept `points` (0 for a
    draw); `before` were the scores before that move."""
    table = state.table
    sides, side_of = table.sides, table.side_of
    for tally in tallies:
        tally.hands += 1
    winner = event["winner"]
    if winner is not None:
        end = event["end"]
        for s in sides[_int(winner)]:
            tally = tallies[s]
            tally.hands_won += 1
            if end == "domino":
                tally.won_domino += 1
            elif end == "blocked":
                tally.won_block += 1
    if table.rules.bonus == "penalty":
        return  # every side pays its own pips: nothing is received (see SeatStats)
    totals = event["totals"]
    if not isinstance(totals, list):
        raise TypeError(f"hand_end totals are a list, not {totals!r}")
    mover = side_of[seat]
    for side, seats in enumerate(sides):
        # what the settlement added to the side: its new total less its total before the
        # hand's last move and that move's own points
        gain = _int(totals[side]) - before[side] - (points if side == mover else 0)
        for s in seats:
            tallies[s].bonus_points += gain


def _int(value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"the engine reported {value!r} where a number belongs")
    return value
