"""Fair deals (notation.md "Fair deals"): `verify` recomputes the commitment and every round's
deal from a finished game's transcript, which reveals the seed and salt.

Every round's deal (hands and boneyard order) comes from the seed alone
(`engine.rounds.round_rng`); a leader chosen by chance comes from the seed and the rounds played
before, so leaders are checked by playing the transcript's moves in the game the seed deals.
Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.commitment import check_commitment, check_salt, commitment, parse_seed
from engine.errors import InvalidTranscript
from engine.game import apply, new_game
from engine.moves import move_from_data
from engine.rounds import check_deal, deal, round_rng
from engine.rules import rules_from_spec
from engine.state import GameState
from engine.tiles import NAMES
from engine.transcript import FORMAT, replay


def _mismatch(what: str, expected: object, found: object, rnd: int | None = None,
              seat: int | None = None) -> dict[str, Any]:
    return {"what": what, "round": rnd, "seat": seat, "expected": expected, "found": found}


def _revealed(transcript: Mapping[str, Any]) -> tuple[int, str, str]:
    missing = [k for k in ("seed", "salt", "commitment") if k not in transcript]
    if missing:
        raise InvalidTranscript(
            "no_seed", f"the transcript lacks {', '.join(missing)}: only the transcript of "
            "a finished game from the server reveals them")
    return (parse_seed(transcript["seed"]), check_salt(transcript["salt"]),
            check_commitment(transcript["commitment"]))


def _deal_mismatches(spec: Any, players: int, seed: int,
                     rounds: list[Any]) -> list[dict[str, Any]]:
    """Each round's hands (as sets) and boneyard (in order) against the seed's deal."""
    rules = rules_from_spec(spec, players)
    out: list[dict[str, Any]] = []
    for r, rnd in enumerate(rounds):
        if not isinstance(rnd, Mapping):
            raise _at(InvalidTranscript(
                "bad_format", "a round is an object with hands, boneyard, leader"), r)
        hands, boneyard = rnd.get("hands"), rnd.get("boneyard")
        if not isinstance(hands, list) or not isinstance(boneyard, list) or \
                not all(isinstance(h, list) for h in hands):
            raise _at(InvalidTranscript("bad_deal", "hands and boneyard are lists of tiles"), r)
        try:
            found_hands, found_rest = check_deal(rules, hands, boneyard)
        except InvalidTranscript as exc:
            raise _at(exc, r) from None
        want_hands, want_rest = deal(rules, round_rng(seed, r))
        for seat, (want, found) in enumerate(zip(want_hands, found_hands, strict=True)):
            if sorted(want) != sorted(found):
                out.append(_mismatch("hand", [NAMES[t] for t in want],
                                     [NAMES[t] for t in found], r, seat))
        if want_rest != found_rest:
            out.append(_mismatch("boneyard", [NAMES[t] for t in want_rest],
                                 [NAMES[t] for t in found_rest], r))
    return out


def _at(exc: InvalidTranscript, rnd: int) -> InvalidTranscript:
    exc.round, exc.move = rnd, None
    return exc


def _leader_mismatch(spec: Any, players: int, seed: int,
                     rounds: list[Any]) -> dict[str, Any] | None:
    """Play the transcript's moves in the game the seed deals; the first round whose leader is
    not the one the rules and the seed name (None when every leader is)."""
    state: GameState = new_game(spec, players, seed)
    for r, rnd in enumerate(rounds):  # the transcript replays: each round follows a finished one
        if rnd.get("leader") != state.table.leader:
            return _mismatch("leader", state.table.leader, rnd.get("leader"), r)
        for data in rnd.get("moves", []):
            seat = data["seat"]
            state, _ = apply(state, seat, move_from_data(
                {k: v for k, v in data.items() if k != "seat"}))
    return None


def verify(transcript: object, shown: str | None = None) -> dict[str, Any]:
    """Check a transcript's deals against its revealed seed (notation.md "Fair deals").

    Returns ``{"verified", "commitment", "rounds", "mismatches"}``; `shown` is the commitment
    the table showed when the game started, compared with the transcript's when given.
    Raises `EngineError` (with `round`/`move` where known) for a file that cannot be checked.
    """
    if not isinstance(transcript, Mapping):
        raise InvalidTranscript("bad_format", "a transcript is a JSON object")
    if "format" in transcript and transcript["format"] != FORMAT:
        raise InvalidTranscript("bad_format", f"format must be {FORMAT!r}")
    if "rules" not in transcript:
        raise InvalidTranscript("bad_format", "the transcript names no rules")
    spec, players = transcript["rules"], transcript.get("players")
    rules_from_spec(spec, players)  # type: ignore[arg-type]
    rounds = transcript.get("rounds")
    if not isinstance(rounds, list):
        raise InvalidTranscript("bad_format", "rounds must be a list")
    assert isinstance(players, int)
    seed, salt, committed = _revealed(transcript)
    if shown is not None:
        check_commitment(shown)
    mismatches: list[dict[str, Any]] = []
    computed = commitment(seed, salt)
    if computed != committed:
        mismatches.append(_mismatch("commitment", computed, committed))
    if shown is not None and shown != committed:
        mismatches.append(_mismatch("shown_commitment", shown, committed))
    deals = _deal_mismatches(spec, players, seed, rounds)
    mismatches += deals
    if not deals:
        replay(dict(transcript))  # every move legal, rounds in order (raises otherwise)
        leader = _leader_mismatch(spec, players, seed, rounds)
        if leader is not None:
            mismatches.append(leader)
    return {"verified": not mismatches, "commitment": committed, "rounds": len(rounds),
            "mismatches": mismatches}
