"""Transcripts (notation.md): writing one from a game, replaying and checking one.

`replay` raises `EngineError` subclasses whose `round`/`move` locate the offending
round and move. Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.commitment import commitment, seed_text
from engine.errors import EngineError, IllegalMove, InvalidNotation, InvalidTranscript
from engine.game import apply_until_hand_end, game_from_deal
from engine.moves import move_from_data
from engine.rounds import check_deal, start_round
from engine.rules import Rules, rules_from_spec
from engine.state import DREW, PLAYED, GameState, LogEntry
from engine.tiles import NAMES
from engine.views import view

FORMAT = "dominoes-transcript/1"


def _move_data(entry: LogEntry) -> dict[str, object]:
    seat, kind, tile, on, _, _ = entry
    if kind == PLAYED:
        if on < 0:
            return {"seat": seat, "play": NAMES[tile]}
        return {"seat": seat, "play": NAMES[tile], "on": NAMES[on]}
    if kind == DREW:
        return {"seat": seat, "draw": True}
    return {"seat": seat, "pass": True}


def to_transcript(state: GameState, salt: str | None = None) -> dict[str, Any]:
    """The game so far as a notation.md transcript (the round in play too, if any: none once
    the game is over or between two hands).

    With `salt` (for a game that is over) it also reveals the seed, the salt and their
    commitment (notation.md "Fair deals").
    """
    table = state.table
    rounds = [
        (r.hands, r.boneyard, r.leader, r.moves) for r in table.past
    ]
    if not table.game_over and len(table.past) <= table.round:  # a round in play: not past
        rounds.append((table.deal_hands, table.deal_boneyard, table.leader, state.log))
    revealed: dict[str, object] = {}
    if salt is not None:
        revealed = {"seed": seed_text(table.seed), "salt": salt,
                    "commitment": commitment(table.seed, salt)}
    return {
        "format": FORMAT,
        "rules": table.rules.spec_data(),
        "players": table.rules.players,
        **revealed,
        "rounds": [
            {"hands": [[NAMES[t] for t in hand] for hand in hands],
             "boneyard": [NAMES[t] for t in boneyard],
             "leader": leader,
             "moves": [_move_data(m) for m in moves]}
            for hands, boneyard, leader, moves in rounds
        ],
    }


def _header(transcript: object) -> tuple[Any, int, list[Any]]:
    if not isinstance(transcript, Mapping):
        raise InvalidTranscript("bad_format", "a transcript is a JSON object")
    if "format" in transcript and transcript["format"] != FORMAT:
        raise InvalidTranscript("bad_format", f"format must be {FORMAT!r}")
    if "rules" not in transcript:
        raise InvalidTranscript("bad_format", "the transcript names no rules")
    spec = transcript["rules"]
    rules_from_spec(spec, transcript.get("players"))  # type: ignore[arg-type]
    rounds = transcript.get("rounds")
    if not isinstance(rounds, list):
        raise InvalidTranscript("bad_format", "rounds must be a list")
    return spec, transcript["players"], rounds


def _start(state: GameState | None, spec: Any, players: int, rnd: object) -> GameState:
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
    rules: Rules = table.rules
    dealt, rest = check_deal(rules, hands, boneyard)
    return start_round(rules=rules, seed=table.seed, rnd=table.round + 1,
                       lead_from=table.lead_from, past=table.past, scores=state.scores,
                       deal_hands=dealt, deal_boneyard=rest, leader=leader)


def _parse_move(data: object, players: int) -> tuple[int, Any]:
    if not isinstance(data, Mapping):
        raise InvalidNotation("bad_move", "a move is an object with a seat")
    seat = data.get("seat")
    if type(seat) is not int or not 0 <= seat < players:
        raise InvalidNotation("bad_move", f"a move names its seat (0 to {players - 1})")
    return seat, move_from_data({k: v for k, v in data.items() if k != "seat"})


MoveSeen = Callable[[GameState, int, GameState, list[dict[str, object]]], None]
"""Told of each move of a walk: (the position before it, its seat, the position after it,
its events)."""


def _walk(transcript: object, after: Callable[[GameState], None] | None,
          on_move: MoveSeen | None = None) -> dict[str, Any]:
    spec, players, rounds = _header(transcript)
    state: GameState | None = None
    out: list[dict[str, Any]] = []
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
        if after is not None:
            after(state)
        scores: list[int] = []
        end: dict[str, Any] | None = None
        for k, data in enumerate(rnd.get("moves", [])):
            try:
                if state.game_over:
                    raise IllegalMove("game_over", "the game is over; nothing may follow it")
                if end is not None:
                    raise IllegalMove("hand_over", "the hand has ended; nothing may follow it")
                seat, move = _parse_move(data, players)
                before = state
                state, events = apply_until_hand_end(state, seat, move)
            except EngineError as exc:
                exc.round, exc.move = r_index, k
                raise
            if on_move is not None:
                on_move(before, seat, state, events)
            points = 0
            for event in events:
                if event["type"] == "play":
                    points = int(event["points"])  # type: ignore[call-overload]
                elif event["type"] == "hand_end":
                    end = event
            scores.append(points)
            if after is not None:
                after(state)
        finished = end is not None
        if end is None:
            out.append({"scores": scores, "end": "unfinished", "winner": None, "bonus": 0,
                        "totals": list(state.scores)})
        else:
            out.append({"scores": scores, "end": end["end"], "winner": end["winner"],
                        "bonus": end["bonus"], "totals": end["totals"]})
    winner = state.winner if state is not None and state.game_over else None
    return {"rounds": out, "winner": winner}


def walk(transcript: Mapping[str, Any], on_move: MoveSeen) -> dict[str, Any]:
    """`replay`, telling ``on_move`` of every move as it is checked."""
    return _walk(transcript, None, on_move)


def replay(transcript: dict[str, Any]) -> dict[str, Any]:
    """Check every move of a transcript and report each round (notation.md "Replaying")."""
    return _walk(transcript, None)


def replay_views(transcript: dict[str, Any]) -> list[dict[str, Any]]:
    """Spectator views: the start of each round, then the position after each of its moves.

    After a round's last move the view shows the finished layout (turn None).
    """
    views: list[dict[str, Any]] = []
    _walk(transcript, lambda s: views.append(view(s, None)))
    return views
