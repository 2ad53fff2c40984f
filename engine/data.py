"""Lossless plain-data form of a `GameState` (dict/list/str/int/bool/None, msgpack-safe).

Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from typing import Any, cast

from engine.errors import EngineError, InvalidTranscript
from engine.rounds import seat_sides
from engine.rules import rules_from_spec
from engine.state import GameState, HandResult, LogEntry, RoundRecord, Table

FORMAT = "dominoes-state/1"


def _result_to_data(r: HandResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"end": r.end, "winner": r.winner, "bonus": r.bonus, "pips": list(r.pips),
            "hands": [list(h) for h in r.hands], "totals": list(r.totals)}


def past_to_data(past: tuple[RoundRecord, ...]) -> list[dict[str, Any]]:
    """The finished rounds of a table, as `state_to_data` writes them under ``past``."""
    return [
        {"hands": [list(h) for h in r.hands], "boneyard": list(r.boneyard),
         "leader": r.leader, "moves": [list(m) for m in r.moves],
         "result": _result_to_data(r.result)}
        for r in past
    ]


def state_to_data(state: GameState, *, with_past: bool = True) -> dict[str, Any]:
    """Everything needed to rebuild `state` exactly, as plain data: `table_to_data` and
    `play_to_data` together. ``with_past=False`` leaves out ``past`` (the finished rounds,
    `past_to_data`), for a caller that stores them apart: they do not change until the next
    round ends."""
    data = {**table_to_data(state.table), **play_to_data(state)}
    if with_past:
        data["past"] = past_to_data(state.table.past)
    return data


def table_to_data(t: Table) -> dict[str, Any]:
    """The part of `state_to_data` that the round's `Table` holds (without ``past``): the
    same for every move of a round, so a caller may encode it once per round."""
    return {
        "format": FORMAT,
        "rules": t.rules.spec_data(),
        "players": t.rules.players,
        "seed": t.seed,
        "round": t.round,
        "leader": t.leader,
        "lead_from": list(t.lead_from),
        "lead_tile": t.lead_tile,
        "deal_hands": [list(h) for h in t.deal_hands],
        "deal_boneyard": list(t.deal_boneyard),
        "game_over": t.game_over,
        "winner": t.winner,
    }


def play_to_data(state: GameState) -> dict[str, Any]:
    """The part of `state_to_data` that moves change."""
    return {
        "turn": state.turn,
        "scores": list(state.scores),
        "hands": list(state.hand_masks),
        "boneyard": list(state.boneyard_tiles),
        "nodes": [list(n) for n in state.nodes],
        "ends": [list(e) for e in state.ends],
        "log": [list(e) for e in state.log],
    }


_INT = {int}  # the one type a stored integer may have (not bool, not float)


def _ints(items: Any) -> tuple[int, ...]:
    out = tuple(items)
    if not set(map(type, out)) <= _INT:
        raise TypeError("expected integers")
    return out


def _log(items: Any) -> tuple[LogEntry, ...]:
    # Checked as a whole (every entry 6 integers long): a state holds every move of the game.
    out = tuple(map(tuple, items))
    if not set(map(len, out)) <= {6}:
        raise ValueError("a log entry has 6 fields")
    if not set(map(type, chain.from_iterable(out))) <= _INT:
        raise TypeError("expected integers")
    return cast(tuple[LogEntry, ...], out)


def _result(d: Any) -> HandResult | None:
    if d is None:
        return None
    return HandResult(str(d["end"]), d["winner"], int(d["bonus"]), _ints(d["pips"]),
                      tuple(_ints(h) for h in d["hands"]), _ints(d["totals"]))


def past_from_data(items: Any) -> tuple[RoundRecord, ...]:
    """The finished rounds `past_to_data` wrote (raises `InvalidTranscript` bad_state)."""
    try:
        return tuple(
            RoundRecord(tuple(_ints(h) for h in r["hands"]), _ints(r["boneyard"]),
                        int(r["leader"]), _log(r["moves"]), _result(r["result"]))
            for r in items
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InvalidTranscript("bad_state", f"not a stored game state: {exc}") from exc


def state_from_data(data: Mapping[str, Any],
                    past: tuple[RoundRecord, ...] | None = None) -> GameState:
    """Rebuild the state `state_to_data` described (raises `InvalidTranscript` bad_state).
    ``past``: its finished rounds, already rebuilt by `past_from_data` from what was stored
    apart (``data`` then needs no ``past``)."""
    try:
        if data["format"] != FORMAT:
            raise ValueError(f"format must be {FORMAT}")
        rules = rules_from_spec(data["rules"], data["players"])
        sides, side_of = seat_sides(rules)
        if past is None:
            past = past_from_data(data["past"])
        table = Table(
            rules=rules, seed=int(data["seed"]), round=int(data["round"]),
            leader=int(data["leader"]), lead_from=_ints(data["lead_from"]),
            lead_tile=int(data["lead_tile"]),
            deal_hands=tuple(_ints(h) for h in data["deal_hands"]),
            deal_boneyard=_ints(data["deal_boneyard"]), past=past,
            game_over=bool(data["game_over"]), winner=data["winner"], sides=sides,
            side_of=side_of,
        )
        nodes = tuple(
            (int(n[0]), n[1], n[2], n[3], bool(n[4])) for n in data["nodes"]
        )
        ends = tuple(
            (int(e[0]), str(e[1]), int(e[2]), int(e[3]), int(e[4])) for e in data["ends"]
        )
        return GameState(
            table=table, turn=data["turn"], scores=_ints(data["scores"]),
            hand_masks=_ints(data["hands"]), boneyard_tiles=_ints(data["boneyard"]),
            nodes=nodes, ends=ends, log=_log(data["log"]),
        )
    except EngineError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InvalidTranscript("bad_state", f"not a stored game state: {exc}") from exc
