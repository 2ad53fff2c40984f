"""Per-seat statistics of a game, computed from its transcript (docs/notation.md).

`seat_stats(transcript)` replays the transcript move by move through the engine and tallies,
for every seat, what the engine itself reports: the ``points`` of each ``play`` event (what
the play added to its side's score) and, at each ``hand_end`` event, how the hand ended, its
winning side and how the settlement changed every side's total. No scoring rule is written
here, so the numbers are exact for every preset and option set. The results are the
``game_players`` columns of the archive (server/migrations/0003_ratings.sql).

The walk is the one `engine.replay` makes (engine.transcript): each round starts from the
transcript's deal with `game_from_deal` (round 1) or `start_round` (later rounds, carrying the
scores, finished rounds and allowed leaders on), and each move goes through
`apply_until_hand_end`, the `apply` that stops at a hand's end instead of dealing the next
round from the seed. Pure: no I/O, imports only the engine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine import (
    EngineError,
    GameState,
    IllegalMove,
    InvalidNotation,
    InvalidTranscript,
    Move,
    game_from_deal,
    move_from_data,
    rules_from_spec,
)
from engine.game import apply_until_hand_end
from engine.rounds import check_deal, start_round

FORMAT = "dominoes-transcript/1"
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
    spec, players, rounds = _header(transcript)
    tallies = [_Tally() for _ in range(players)]
    state: GameState | None = None
    finished = True
    for r_index, rnd in enumerate(rounds):
        try:
            if state is not None and (state.game_over or not finished):
                why = "the game is over" if state.game_over else "the previous round is unfinished"
                raise InvalidTranscript("extra_round", f"no round may follow: {why}")
            state = _start(state, spec, players, rnd)
        except EngineError as exc:
            exc.round, exc.move = r_index, None
            raise
        finished = False
        for k, data in enumerate(rnd.get("moves", [])):
            try:
                if state.game_over:
                    raise IllegalMove("game_over", "the game is over; nothing may follow it")
                if finished:
                    raise IllegalMove("hand_over", "the hand has ended; nothing may follow it")
                seat, move = _parse_move(data, players)
                before = state.scores
                state, events = apply_until_hand_end(state, seat, move)
            except EngineError as exc:
                exc.round, exc.move = r_index, k
                raise
            finished = _tally(tallies, state, seat, before, events)
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


def _header(transcript: object) -> tuple[Any, int, list[Any]]:
    if not isinstance(transcript, Mapping):
        raise InvalidTranscript("bad_format", "a transcript is a JSON object")
    if "format" in transcript and transcript["format"] != FORMAT:
        raise InvalidTranscript("bad_format", f"format must be {FORMAT!r}")
    if "rules" not in transcript:
        raise InvalidTranscript("bad_format", "the transcript names no rules")
    spec, players = transcript["rules"], transcript.get("players")
    rules_from_spec(spec, players)  # type: ignore[arg-type]  # refuses a bad count
    rounds = transcript.get("rounds")
    if not isinstance(rounds, list):
        raise InvalidTranscript("bad_format", "rounds must be a list")
    if type(players) is not int:  # pragma: no cover - rules_from_spec refused it
        raise InvalidTranscript("bad_format", "players must be 2, 3 or 4")
    return spec, players, rounds


def _start(state: GameState | None, spec: Any, players: int, rnd: object) -> GameState:
    """The position at the start of round `rnd`, after the finished position `state`."""
    if not isinstance(rnd, Mapping):
        raise InvalidTranscript("bad_format", "a round is an object with hands, boneyard, leader")
    hands, boneyard, leader = rnd.get("hands"), rnd.get("boneyard"), rnd.get("leader")
    if not isinstance(hands, list) or not isinstance(boneyard, list):
        raise InvalidTranscript("bad_deal", "hands and boneyard are lists of tiles")
    if not all(isinstance(h, list) for h in hands):
        raise InvalidTranscript("bad_deal", "each hand is a list of tiles")
    if type(leader) is not int or not 0 <= leader < players:
        raise InvalidTranscript("bad_leader", f"leader must be a seat from 0 to {players - 1}")
    if not isinstance(rnd.get("moves", []), list):
        raise InvalidTranscript("bad_format", "moves must be a list")
    if state is None:
        return game_from_deal(spec, players, hands, boneyard, leader)
    table = state.table
    dealt, rest = check_deal(table.rules, hands, boneyard)
    return start_round(rules=table.rules, seed=table.seed, rnd=table.round + 1,
                       lead_from=table.lead_from, past=table.past, scores=state.scores,
                       deal_hands=dealt, deal_boneyard=rest, leader=leader)


def _parse_move(data: object, players: int) -> tuple[int, Move]:
    if not isinstance(data, Mapping):
        raise InvalidNotation("bad_move", "a move is an object with a seat")
    seat = data.get("seat")
    if type(seat) is not int or not 0 <= seat < players:
        raise InvalidNotation("bad_move", f"a move names its seat (0 to {players - 1})")
    return seat, move_from_data({k: v for k, v in data.items() if k != "seat"})
