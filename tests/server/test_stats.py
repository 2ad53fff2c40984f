"""server/stats.py: per-seat statistics of a game, from its transcript.

Hand-checked games (the expected numbers are worked out from docs/rules.md move by move, in
the comments), then whole games of every preset and player count played by the engine's
random and greedy policies with fixed seeds, checked against an independent recomputation
(tests/support/stats_oracle.py, built on `engine.replay`'s summary) and against invariants.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import engine
from server.stats import BIG_PLAY, SeatStats, seat_stats
from tests.support.stats_oracle import FIELDS, recompute

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"
Row = tuple[int, int, int, int, int, int, int, int]
"""(hands, hands_won, won_domino, won_block, play_points, bonus_points, best_play, big_plays)"""


def rows(stats: list[SeatStats]) -> list[Row]:
    return [dataclasses.astuple(s) for s in stats]


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / f"{name}.json").read_text())
    return data


_SET = [f"{a}-{b}" for a in range(7) for b in range(a + 1)]


def _name(tile: str) -> str:
    a, b = sorted(map(int, tile.split("-")), reverse=True)
    return f"{a}-{b}"


def rest(*hands: list[str]) -> list[str]:
    """The tiles no hand holds (a boneyard, in set order)."""
    dealt = {_name(t) for hand in hands for t in hand}
    return [t for t in _SET if t not in dealt]


def moves(*plays: tuple[int, str, str | None]) -> list[dict[str, Any]]:
    return [{"seat": seat, "play": tile, **({"on": on} if on else {})}
            for seat, tile, on in plays]


# --- the record itself -------------------------------------------------------------------------


def test_the_record_has_the_archive_columns_in_order_frozen_with_slots() -> None:
    assert tuple(f.name for f in dataclasses.fields(SeatStats)) == FIELDS == (
        "hands", "hands_won", "won_domino", "won_block", "play_points", "bonus_points",
        "best_play", "big_plays")
    assert all(f.type in (int, "int") for f in dataclasses.fields(SeatStats))
    stats = SeatStats(*range(8))
    assert not hasattr(stats, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.hands = 9  # type: ignore[misc]
    assert BIG_PLAY == 30


# --- hand-checked games ------------------------------------------------------------------------


def test_five_up_example_of_the_notation() -> None:
    # docs/notation.md's transcript (also tests/data/examples/pagat-five-up-domino.json): Five
    # Up, every double a spinner, points = end total / 5 when it is a multiple of 5.
    transcript = example("pagat-five-up-domino")
    assert transcript["rules"] == "five-up"
    # m0 s0 leads 1-4: ends 1 + 4 = 5 -> 1
    # m1 s1 1-1 on the 1: the spinner's free side shows 2, ends 4 + 2 = 6 -> 0
    # m2 s0 4-4 on the 4: the double shows 8, 8 + 2 = 10 -> 2
    # m3 s1 4-3 on 4-4's free side: 3 + 2 = 5 -> 1 (4-4's vertical sides show nothing yet)
    # m4 s0 1-2 on 1-1's free horizontal side: 3 + 2 = 5 -> 1
    # m5 s1 1-5 on 1-1's first vertical side: 3 + 2 + 5 = 10 -> 2
    # m6 s0 5-5 on 1-5: the double shows 10, 3 + 2 + 10 = 15 -> 3
    # m7 s1 5-0 on 5-5: 3 + 2 + 0 = 5 -> 1
    # m8 s0 1-3 on 1-1's other vertical side: 3 + 2 + 0 + 3 = 8 -> 0; s0's fifth tile: domino
    # s0 plays 1+2+1+3+0 = 7 (best 3); s1 plays 0+1+2+1 = 4 (best 2).
    # Bonus: s1 still holds 6-6 = 12 pips -> nearest 5 is 10 -> /5 = 2, to s0 (total 9 : 4).
    assert rows(seat_stats(transcript)) == [
        (1, 1, 1, 0, 7, 2, 3, 0),
        (1, 0, 0, 0, 4, 0, 2, 0),
    ]


BLOCKED_ROWS: list[Row] = [
    # All Fives, 2 players, boneyard_reserve 14 (no tile may be drawn):
    # m0 s0 3-2 lead: 3 + 2 = 5 -> 5      m1 s1 6-2 on the 2: 3 + 6 = 9 -> 0
    # m2 s0 6-3 on the 3: 6 + 6 = 12 -> 0 m3 s1 6-4 on 6-2: 6 + 4 = 10 -> 10
    # m4 s0 6-1 on 6-3: 1 + 4 = 5 -> 5    m5 s1 4-3 on 6-4: 1 + 3 = 4 -> 0
    # m6 s0 2-1 on 6-1: 2 + 3 = 5 -> 5    m7 s1 5-2 on 2-1: 5 + 3 = 8 -> 0
    # m8 s0 3-0 on 4-3: 5 + 0 = 5 -> 5    m9 s1 2-0 on 3-0: 5 + 2 = 7 -> 0
    # m10 s0 5-3 on 5-2: 3 + 2 = 5 -> 5. Ends 3 and 2: s0 holds 4-4, s1 6-6 and 5-4, nothing
    # fits and nothing may be drawn: blocked. Pips 8 against 21: s0 wins the block, paid the
    # opponent's 21 to the nearest 5 = 20. s0 plays 5 x 5 = 25 (best 5); s1 one 10.
    (1, 1, 0, 1, 25, 20, 5, 0),
    (1, 0, 0, 0, 10, 0, 10, 0),
]


def test_blocked_hand() -> None:
    assert rows(seat_stats(example("blocked-2p-all-fives"))) == BLOCKED_ROWS


BIG_ROUND: dict[str, Any] = {
    "hands": [["5-5", "5-4", "4-4", "3-3", "2-2", "1-0", "0-0"],
              ["6-5", "6-6", "5-3", "5-2", "3-1", "4-1", "6-1"]],
    "boneyard": rest(["5-5", "5-4", "4-4", "3-3", "2-2", "1-0", "0-0"],
                     ["6-5", "6-6", "5-3", "5-2", "3-1", "4-1", "6-1"]),
    "leader": 0,
    "moves": moves((0, "5-5", None), (1, "5-6", "5-5"), (0, "5-4", "5-5"), (1, "6-6", "5-6"),
                   (0, "4-4", "5-4"), (1, "5-3", "5-5"), (0, "3-3", "5-3"), (1, "5-2", "5-5"),
                   (0, "2-2", "5-2")),
}
"""An All Fives hand around a spinner, cut short after nine moves (an abandoned game):
m0 s0 leads 5-5, the spinner: 5 + 5 = 10 -> 10
m1 s1 6-5 on its right: its left side shows both halves, 10 + 6 = 16 -> 0
m2 s0 5-4 on its left: 6 + 4 = 10 -> 10 (the vertical sides show nothing yet)
m3 s1 6-6 on 6-5: 12 + 4 = 16 -> 0
m4 s0 4-4 on 5-4: 12 + 8 = 20 -> 20
m5 s1 5-3 up: 12 + 8 + 3 = 23 -> 0
m6 s0 3-3 on 5-3: 12 + 8 + 6 = 26 -> 0
m7 s1 5-2 down: 26 + 2 = 28 -> 0
m8 s0 2-2 on 5-2: 12 + 8 + 6 + 4 = 30 -> 30, a big play.
s0: 10 + 10 + 20 + 0 + 30 = 70, best 30, one big play; s1 nothing. The hand never ended."""


def test_an_abandoned_hand_counts_its_plays_but_not_as_a_hand() -> None:
    transcript = {"rules": "all-fives", "players": 2, "rounds": [BIG_ROUND]}
    assert rows(seat_stats(transcript)) == [
        (0, 0, 0, 0, 70, 0, 30, 1),
        (0, 0, 0, 0, 0, 0, 0, 0),
    ]


def test_a_second_round_adds_to_the_first() -> None:
    # The blocked game's next round (s0 won the block with the fewest pips, so s0 leads; the
    # reserve of 14 never matters, nobody draws) is the spinner hand above, abandoned.
    transcript = example("blocked-2p-all-fives")
    transcript["rounds"].append(copy.deepcopy(BIG_ROUND))
    assert rows(seat_stats(transcript)) == [
        (1, 1, 0, 1, 25 + 70, 20, 30, 1),
        (1, 0, 0, 0, 10 + 0, 0, 10, 0),
    ]


PARTNERS = [["6-4", "3-0", "1-0", "6-6", "5-0"], ["4-1", "5-2", "5-3", "4-2", "5-4"],
            ["6-3", "0-0", "6-1", "6-5", "3-1"], ["2-1", "5-5", "3-2", "4-4", "6-2"]]


def test_partnership_domino() -> None:
    # Muggins (no spinners), 4 players, seats 0+2 against 1+3; every play goes on a line end.
    transcript = {"rules": "muggins", "players": 4, "rounds": [{
        "hands": PARTNERS, "boneyard": rest(*PARTNERS), "leader": 0,
        "moves": moves(
            (0, "6-4", None),   # 6 + 4 = 10 -> 10 (s0)
            (1, "4-1", "6-4"),  # 6 + 1 = 7
            (2, "6-3", "6-4"),  # 3 + 1 = 4
            (3, "1-2", "4-1"),  # 3 + 2 = 5 -> 5 (s3)
            (0, "3-0", "6-3"),  # 0 + 2 = 2
            (1, "2-5", "1-2"),  # 0 + 5 = 5 -> 5 (s1)
            (2, "0-0", "3-0"),  # the double at the end shows 0 + 0: 0 + 5 = 5 -> 5 (s2)
            (3, "5-5", "2-5"),  # the double shows 10: 0 + 10 = 10 -> 10 (s3)
            (0, "0-1", "0-0"),  # 1 + 10 = 11
            (1, "5-3", "5-5"),  # 1 + 3 = 4
            (2, "1-6", "0-1"),  # 6 + 3 = 9
            (3, "3-2", "5-3"),  # 6 + 2 = 8
            (0, "6-6", "1-6"),  # 12 + 2 = 14
            (1, "2-4", "3-2"),  # 12 + 4 = 16
            (2, "6-5", "6-6"),  # 5 + 4 = 9
            (3, "4-4", "2-4"),  # 5 + 8 = 13
            (0, "5-0", "6-5"),  # 0 + 8 = 8; s0's fifth tile: domino for seats 0 and 2
        )}]}
    # Bonus: the opponents hold 5-4 (s1) and 6-2 (s3), 17 pips -> nearest 5 = 15, credited to
    # s0 and s2 alike. Team 0: 10 + 5 + 15 = 30; team 1: 5 + 15 = 20.
    assert rows(seat_stats(transcript)) == [
        (1, 1, 1, 0, 10, 15, 10, 0),
        (1, 0, 0, 0, 5, 0, 5, 0),
        (1, 1, 1, 0, 5, 15, 5, 0),
        (1, 0, 0, 0, 15, 0, 10, 0),
    ]
    assert engine.replay(transcript)["rounds"][0]["totals"] == [30, 20]


def test_three_players_split_a_tied_block() -> None:
    # pagat's All Fives with knocking (draw: none), 3 players, 7 tiles each. s0 leads 6-6 (the
    # first double, a spinner showing 6 + 6 = 12 -> 0). Every other six is in the boneyard,
    # which may not be drawn from: nobody can play, the hand is blocked at once.
    # Pips: s0 5-5 5-4 5-3 4-4 4-3 2-1 = 10+9+8+8+7+3 = 45; s1 5-2 4-2 3-3 4-0 2-2 1-0 1-1 =
    # 7+6+6+4+4+1+2 = 30; s2 2-0 3-0 3-1 3-2 4-1 5-0 5-1 = 2+3+4+5+5+5+6 = 30.
    # s1 and s2 tie lowest: nobody wins the hand; under blocked_tie split each gets half of
    # the third seat's 45 pips, 22.5 -> to the nearest 5, halves up = 25 (rules.md decision 9).
    hands = [["6-6", "5-5", "5-4", "5-3", "4-4", "4-3", "2-1"],
             ["5-2", "4-2", "3-3", "4-0", "2-2", "1-0", "1-1"],
             ["2-0", "3-0", "3-1", "3-2", "4-1", "5-0", "5-1"]]
    transcript = {"rules": {"preset": "all-fives-pagat", "draw": "none"}, "players": 3,
                  "rounds": [{"hands": hands, "boneyard": rest(*hands), "leader": 0,
                              "moves": moves((0, "6-6", None))}]}
    assert rest(*hands) == ["0-0", "6-0", "6-1", "6-2", "6-3", "6-4", "6-5"]
    assert rows(seat_stats(transcript)) == [
        (1, 0, 0, 0, 0, 0, 0, 0),
        (1, 0, 0, 0, 0, 25, 0, 0),
        (1, 0, 0, 0, 0, 25, 0, 0),
    ]


def test_penalty_block() -> None:
    # Block with penalty scoring, 2 players: s0 holds the highest double and must lead 6-6; no
    # other six is dealt and nobody may draw: blocked at once. Pips: s0 0-0 1-0 1-1 2-0 2-1 3-0
    # = 11, s1 5-5 5-4 5-3 4-4 4-3 3-3 5-2 = 55. Each side loses its own pips (-11, -55) and
    # nothing is paid, so no bonus; s0, with the fewest pips, still wins the block (and the
    # game: -55 is past -25).
    hands = [["6-6", "0-0", "1-0", "1-1", "2-0", "2-1", "3-0"],
             ["5-5", "5-4", "5-3", "4-4", "4-3", "3-3", "5-2"]]
    transcript = {"rules": "block-penalty", "players": 2,
                  "rounds": [{"hands": hands, "boneyard": rest(*hands), "leader": 0,
                              "moves": moves((0, "6-6", None))}]}
    assert rows(seat_stats(transcript)) == [
        (1, 1, 0, 1, 0, 0, 0, 0),
        (1, 0, 0, 0, 0, 0, 0, 0),
    ]
    assert engine.replay(transcript) == {"rounds": [
        {"scores": [0], "end": "blocked", "winner": 0, "bonus": 0, "totals": [-11, -55]}],
        "winner": 0}


def test_a_bad_transcript_is_refused_as_replay_refuses_it() -> None:
    transcript = example("illegal-tile-not-in-hand")
    with pytest.raises(engine.EngineError) as replayed:
        engine.replay(transcript)
    with pytest.raises(engine.EngineError) as counted:
        seat_stats(transcript)
    assert (counted.value.code, counted.value.round, counted.value.move) == (
        replayed.value.code, replayed.value.round, replayed.value.move)
    with pytest.raises(engine.InvalidTranscript):
        seat_stats({"rules": "all-fives", "players": 2, "rounds": "none"})
    with pytest.raises(engine.InvalidRules):
        seat_stats({"rules": "all-fives", "players": 5, "rounds": []})
    done = example("pagat-five-up-domino")
    done["rounds"][0]["moves"].append({"seat": 1, "play": "6-6", "on": "5-0"})
    with pytest.raises(engine.IllegalMove, match="hand has ended"):
        seat_stats(done)


# --- whole games against the oracle ------------------------------------------------------------

OVERRIDES: list[tuple[dict[str, Any], int]] = [
    ({"preset": "all-fives-pagat", "draw": "none"}, 3),  # tied blocks, split
    ({"preset": "fives-and-threes", "blocked_tie": "split", "blocked_bonus": True}, 3),
    ({"preset": "all-fives", "partnerships": False}, 4),
    ({"preset": "block-penalty", "scoring": "fives"}, 2),  # penalties and scoring plays
    ({"preset": "block-penalty", "scoring": "fives"}, 4),
    ({"preset": "all-fives-classic", "blocked_tie": "split", "draw": "none"}, 3),
]
GAMES: list[tuple[str | dict[str, Any], int]] = [
    *((name, players) for name in engine.PRESETS for players in (2, 3, 4)), *OVERRIDES]
SEEDS = range(4)
MAX_HANDS = 300


@cache
def played(spec_text: str, players: int, seed: int) -> dict[str, Any]:
    """A game's transcript, its hands played by RANDOM (even seeds) or GREEDY (odd seeds)."""
    spec = json.loads(spec_text)
    rng = random.Random(seed)
    policy = engine.GREEDY if seed % 2 else engine.RANDOM
    state = engine.new_game(spec, players, seed)
    for _ in range(MAX_HANDS):
        if state.game_over:
            break
        state = engine.play_out_hand(state, rng, policy)
    return engine.to_transcript(state)


def cut(transcript: Mapping[str, Any], fraction: float) -> dict[str, Any]:
    """The transcript stopped `fraction` of the way through its moves (an abandoned game)."""
    cut_copy = copy.deepcopy(dict(transcript))
    total = sum(len(r["moves"]) for r in cut_copy["rounds"])
    keep = int(total * fraction)
    rounds: list[dict[str, Any]] = []
    for rnd in cut_copy["rounds"]:
        if keep <= 0 and rounds:
            break
        rnd["moves"] = rnd["moves"][:max(keep, 0)]
        keep -= len(rnd["moves"])
        rounds.append(rnd)
    cut_copy["rounds"] = rounds
    return cut_copy


def check(transcript: Mapping[str, Any]) -> list[SeatStats]:
    """seat_stats against the oracle and the invariants; returns the stats."""
    stats = seat_stats(transcript)
    assert [dataclasses.asdict(s) for s in stats] == recompute(transcript)
    players = transcript["players"]
    rules = engine.rules_from_spec(transcript["rules"], players)
    report = engine.replay(dict(transcript))
    sides = [(0, 2), (1, 3)] if rules.partnerships else [(s,) for s in range(players)]
    finished = [r for r in report["rounds"] if r["end"] != "unfinished"]
    finals = report["rounds"][-1]["totals"] if report["rounds"] else [0] * len(sides)
    assert len(stats) == players
    for s in stats:
        assert s.hands == len(finished)
        assert s.hands_won == s.won_domino + s.won_block
        assert 0 <= s.best_play <= s.play_points
        assert s.bonus_points >= 0
        assert s.big_plays * BIG_PLAY <= s.play_points
        assert (s.best_play >= BIG_PLAY) == (s.big_plays > 0)
    assert sum(stats[side[0]].hands_won for side in sides) <= len(finished)
    assert sum(stats[side[0]].hands_won for side in sides) == len(
        [r for r in finished if r["winner"] is not None])
    for index, side in enumerate(sides):
        first = stats[side[0]]
        for seat in side:  # partners share every hand's result and bonus
            assert (stats[seat].hands_won, stats[seat].won_domino, stats[seat].won_block,
                    stats[seat].bonus_points) == (first.hands_won, first.won_domino,
                                                  first.won_block, first.bonus_points)
        plays = sum(stats[seat].play_points for seat in side)
        if rules.bonus == "penalty":  # only losses at a hand's end
            assert first.bonus_points == 0
            assert finals[index] <= plays
        else:  # every point of the score is a play's or a hand-end payment's
            assert plays + first.bonus_points == finals[index]
        if not (rules.blocked_tie == "split" and players == 3) and rules.bonus != "penalty":
            assert first.bonus_points == sum(
                r["bonus"] for r in finished if r["winner"] == index)
    return stats


@pytest.mark.parametrize(("spec", "players"), GAMES,
                         ids=[f"{s if isinstance(s, str) else json.dumps(s)}-{p}p"
                              for s, p in GAMES])
def test_whole_games_match_the_oracle(spec: str | dict[str, Any], players: int) -> None:
    for seed in SEEDS:
        transcript = played(json.dumps(spec), players, seed)
        report = engine.replay(transcript)
        assert report["winner"] is not None or len(report["rounds"]) > MAX_HANDS  # played out
        check(transcript)
        for fraction in (0.0, 0.3, 0.77):
            check(cut(transcript, fraction))


def test_the_games_cover_every_kind_of_hand() -> None:
    """The seeded games meet what the statistics distinguish: dominoes and blocks won,
    tied blocks, split shares, hands ended at an exact target, big plays, penalties."""
    seen: set[str] = set()
    for spec, players in GAMES:
        rules = engine.rules_from_spec(spec, players)
        for seed in SEEDS:
            transcript = played(json.dumps(spec), players, seed)
            stats = seat_stats(transcript)
            for r in engine.replay(transcript)["rounds"]:
                seen.add(f"{r['end']}-{'won' if r['winner'] is not None else 'none'}")
            if any(s.big_plays for s in stats):
                seen.add("big play")
            if any(s.bonus_points > 0 and s.hands_won == 0 for s in stats):
                seen.add("split share")
            if rules.bonus == "penalty" and any(s.hands_won for s in stats):
                seen.add("penalty win")
            if rules.partnerships:
                seen.add("partners")
    assert seen >= {"domino-won", "blocked-won", "blocked-none", "target-none",
                    "big play", "split share", "penalty win", "partners"}
