"""Ratings: the rating family of a table's rules and the OpenSkill update after a rated game.

Pure (no I/O). A player has one rating per family (``FAMILY_LABELS``); it is an OpenSkill
Plackett-Luce skill (``Skill``: mu, sigma and the number of rated games in the family), shown as
one number (``display``). ``side_ranks`` turns a finished table's result into the order of its
sides and ``rate`` applies one game to every seat's skill. The ``ratings`` table of
server/migrations/0003_ratings.sql stores what this module computes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

import engine
from server.table_config import family_of

MODEL = PlackettLuce()
"""The rating model: OpenSkill's Plackett-Luce with its defaults (mu 25, sigma 25/3,
beta = sigma / 2 = 25/6, tau = mu / 300)."""
MU = float(MODEL.mu)
SIGMA = float(MODEL.sigma)

FAMILY_LABELS: dict[str, str] = {
    "fives": "All Fives family",
    "threes": "All Threes",
    "fives-and-threes": "Fives and Threes",
    "bergen": "Bergen",
    "block": "Block and Draw",
}
"""Every rating family and the name a person reads for it: "fives" is every game scoring
multiples of five (all-fives and its variants, muggins, five-up), "block" the games whose plays
score nothing (block, draw, block-penalty)."""

PROVISIONAL_GAMES = 10
"""A rating is provisional (shown as such, kept off the leaderboards) until this many rated
games in its family."""

DISPLAY_BASE = 1500
DISPLAY_SCALE = 48
"""Shown points per unit of mu: 48 = 200 / beta, so 200 points are one beta (see `display`)."""

REASONS = ("game_end", "forfeit", "abandoned", "hand_limit")


def family_presets() -> dict[str, list[str]]:
    """Each family (in ``FAMILY_LABELS`` order) and the engine's presets that belong to it."""
    found: dict[str, list[str]] = {family: [] for family in FAMILY_LABELS}
    for name in engine.PRESETS:
        for players in (2, 3, 4):
            presets = found[family_of(name, players)]
            if name not in presets:
                presets.append(name)
    return found


@dataclass(frozen=True, slots=True)
class Skill:
    """One player's rating in one family: OpenSkill's mu and sigma, and rated games played."""

    mu: float
    sigma: float
    games: int

    @classmethod
    def new(cls) -> Skill:
        """The rating of a player who has not played a rated game in the family."""
        return cls(MU, SIGMA, 0)

    @property
    def rating(self) -> int:
        """The shown number (`display` of mu)."""
        return display(self.mu)

    @property
    def provisional(self) -> bool:
        return provisional(self.games)


def display(mu: float) -> int:
    """The shown rating: ``round(1500 + 48 * (mu - 25))`` — a new player shows 1500.

    48 points per unit of mu make 200 points one beta (25/6) of the model. What the model gives
    for a gap of 200 points (its ``predict_win`` for two players, which is
    ``Phi(gap_mu / sqrt(2 beta^2 + sigma_a^2 + sigma_b^2))``):

    - players whose ratings are settled (sigma -> 0): ``Phi(1/sqrt 2)`` = 76.0 % — Elo's
      figure for 200 points (also 76.0 %), so about 3:1. The curve follows Elo's closely
      elsewhere too: 100 points 63.8 % (Elo 64.0 %), 400 points 92.1 % (Elo 90.9 %).
    - ratings still uncertain, the model's own estimate is nearer even: 75.0 % when both
      sigmas are 1.3, 73.8 % at sigma 2 each, 71.7 % at 3 (about 100 games), 65 % at 6.4
      (about 10 games), 62.4 % for two new players (sigma 25/3).
    So "200 points is about a 3:1 chance, as in Elo" holds for established players; a
    provisional gap means less.
    """
    return round(DISPLAY_BASE + DISPLAY_SCALE * (mu - MU))


def provisional(games: int) -> bool:
    """Whether a rating after ``games`` rated games in its family is still provisional."""
    return games < PROVISIONAL_GAMES


def side_ranks(sides: Sequence[Sequence[int]], scores: Sequence[int],
               result: Mapping[str, Any]) -> list[int]:
    """The rank of each side for rating (1 = best; tied sides share a rank, the next rank
    counts them: 1, 2, 2, 4).

    ``result`` is the table's {"winner": side or None, "reason": ..., "seat": ...}:
    - "game_end", "hand_limit" (the game reached MAX_HANDS): the winner first, the other
      sides by their final score (higher is better, equal scores tie); two sides and no
      winner: a draw.
    - "forfeit": the side of the forfeiting ``seat`` last, whatever its score; the winner (if
      any) first; the others between, by score.
    - "abandoned": every side tied (a draw).
    """
    count = len(sides)
    if count < 2 or len(scores) != count:
        raise ValueError(f"{count} sides need as many scores, not {len(scores)}")
    reason = result.get("reason", "game_end")
    if reason not in REASONS:
        raise ValueError(f"unknown result reason {reason!r}")
    if reason == "abandoned":
        return [1] * count
    winner = result.get("winner")
    if winner is not None and not (isinstance(winner, int) and 0 <= winner < count):
        raise ValueError(f"winner {winner!r} is not a side")
    leaver: int | None = None
    seat = result.get("seat")
    if reason == "forfeit" and seat is not None:
        leaver = next((i for i, side in enumerate(sides) if seat in side), None)
        if leaver is None:
            raise ValueError(f"forfeiting seat {seat!r} is on no side")
        if winner == leaver:
            winner = None
    if winner is None and leaver is None and count == 2:
        return [1, 1]
    # Sort key: (0, 0) the winner, (1, -score) the others, (2, 0) the leaver.
    keys = [(1, -score) for score in scores]
    if winner is not None:
        keys[winner] = (0, 0)
    if leaver is not None:
        keys[leaver] = (2, 0)
    return [1 + sum(other < key for other in keys) for key in keys]


def rate(teams: Sequence[Sequence[Skill]], ranks: Sequence[int]) -> list[list[Skill]]:
    """Every skill after one game (games + 1): ``teams`` holds one team per side (its seats'
    skills), ``ranks`` each side's rank (`side_ranks`: lower is better, equal ranks tie)."""
    if len(teams) < 2 or len(ranks) != len(teams) or not all(teams):
        raise ValueError("rate needs two or more non-empty teams and a rank for each")
    before = [[MODEL.rating(mu=skill.mu, sigma=skill.sigma) for skill in team] for team in teams]
    after = MODEL.rate(before, ranks=[float(rank) for rank in ranks])
    return [[Skill(float(new.mu), float(new.sigma), old.games + 1)
             for old, new in zip(team, rated, strict=True)]
            for team, rated in zip(teams, after, strict=True)]
