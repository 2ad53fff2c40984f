"""An independent recomputation of server/stats.py's per-seat statistics, for the tests.

server/stats.py walks a transcript move by move and reads the engine's events. This works
from the other end: the summary `engine.replay` prints (notation.md "Replaying") -- each
round's per-move ``scores``, its ``end``, ``winner``, ``bonus`` and running ``totals`` --
with each move's seat read from the transcript itself and each side's seats from the rules'
``partnerships`` flag (team 0 = seats 0 and 2, team 1 = seats 1 and 3, notation.md).

- the winner's bonus is the ``bonus`` replay reports (stats.py derives it from score diffs);
- a split share (a tied blocked hand, nobody's win) is what a side's round total grew by
  beyond its own plays in that round: ``totals[r] - totals[r - 1] - plays``;
- penalty games (``bonus: penalty``) pay no bonus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import engine

FIELDS = ("hands", "hands_won", "won_domino", "won_block", "play_points", "bonus_points",
          "best_play", "big_plays")


def recompute(transcript: Mapping[str, Any]) -> list[dict[str, int]]:
    """Every seat's statistics as a dict of server/stats.py's field names, in seat order."""
    players: int = transcript["players"]
    rules = engine.rules_from_spec(transcript["rules"], players)
    partnered = rules.partnerships

    def side(seat: int) -> int:
        return seat % 2 if partnered else seat

    n_sides = 2 if partnered else players
    members = {s: [seat for seat in range(players) if side(seat) == s] for s in range(n_sides)}
    report = engine.replay(dict(transcript))
    stats = [dict.fromkeys(FIELDS, 0) for _ in range(players)]
    plays: list[list[int]] = [[] for _ in range(players)]
    totals_before = [0] * n_sides
    for rnd, summary in zip(transcript["rounds"], report["rounds"], strict=True):
        seats = [move["seat"] for move in rnd["moves"]]
        assert len(seats) == len(summary["scores"])
        round_plays = [0] * n_sides
        for seat, points in zip(seats, summary["scores"], strict=True):  # draws/passes: 0
            plays[seat].append(points)
            round_plays[side(seat)] += points
        totals = summary["totals"]
        if summary["end"] != "unfinished":
            for seat in range(players):
                stats[seat]["hands"] += 1
            winner = summary["winner"]
            if winner is not None:
                for seat in members[winner]:
                    stats[seat]["hands_won"] += 1
                    stats[seat]["won_domino"] += int(summary["end"] == "domino")
                    stats[seat]["won_block"] += int(summary["end"] == "blocked")
                    if rules.bonus != "penalty":
                        stats[seat]["bonus_points"] += summary["bonus"]
            elif summary["end"] == "blocked" and rules.bonus != "penalty":
                for s in range(n_sides):  # split shares, if any
                    share = totals[s] - totals_before[s] - round_plays[s]
                    for seat in members[s]:
                        stats[seat]["bonus_points"] += share
        totals_before = list(totals)
    for seat in range(players):
        stats[seat]["play_points"] = sum(plays[seat])
        stats[seat]["best_play"] = max(plays[seat], default=0)
        stats[seat]["big_plays"] = len([p for p in plays[seat] if p >= 30])
    return stats
