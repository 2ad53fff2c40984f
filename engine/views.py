"""What one seat (or a spectator) may see: `view` and `redact_events`.

A view is plain data and never holds another seat's tile or a boneyard tile; finished
rounds reveal their hands. Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.errors import InvalidNotation
from engine.game import legal_moves
from engine.layout import end_total
from engine.moves import move_to_data
from engine.state import DREW, PLAYED, GameState, HandResult, LogEntry
from engine.tiles import NAMES, mask_tiles


def rules_summary(state: GameState) -> dict[str, object]:
    """The table's rules as shown to players: spec, preset and every resolved option."""
    rules = state.table.rules
    return {"spec": rules.spec_data(), "preset": rules.preset, **rules.options()}


def result_data(result: HandResult) -> dict[str, object]:
    """A finished round as plain data (hands revealed)."""
    return {
        "end": result.end, "winner": result.winner, "bonus": result.bonus,
        "pips": list(result.pips), "hands": [[NAMES[t] for t in h] for h in result.hands],
        "totals": list(result.totals),
    }


def history_entry(entry: LogEntry, viewer: int | None) -> dict[str, object]:
    """One move of the round's log as seen by `viewer`."""
    seat, kind, tile, on, points, total = entry
    if kind == PLAYED:
        return {"seat": seat, "play": NAMES[tile], "on": NAMES[on] if on >= 0 else None,
                "points": points, "end_total": total}
    if kind == DREW:
        if viewer == seat:
            return {"seat": seat, "draw": True, "tile": NAMES[tile]}
        return {"seat": seat, "draw": True}
    return {"seat": seat, "pass": True}


def _check_viewer(state: GameState, viewer: int | None) -> None:
    if viewer is not None and (type(viewer) is not int or not 0 <= viewer < state.players):
        raise InvalidNotation("bad_seat", f"no seat {viewer!r} at this table")


def view(state: GameState, viewer: int | None) -> dict[str, object]:
    """The position as `viewer` (a seat, or None for a spectator) may see it."""
    _check_viewer(state, viewer)
    table = state.table
    nodes = state.nodes
    layout = [
        {"tile": NAMES[tile], "parent": parent, "side": side,
         "inner": inner, "spinner": spinner}
        for tile, parent, side, inner, spinner in nodes
    ]
    ends = [
        {"node": node, "side": side, "value": value, "count": value * halves}
        for node, side, value, halves, _ in state.ends
    ]
    hand = None if viewer is None else [NAMES[t] for t in mask_tiles(state.hand_masks[viewer])]
    legal = (
        [move_to_data(m) for m in legal_moves(state)]
        if viewer is not None and viewer == state.turn else []
    )
    return {
        "seat": viewer,
        "players": state.players,
        "sides": [list(side) for side in table.sides],
        "rules": rules_summary(state),
        "round": table.round,
        "leader": table.leader,
        "turn": state.turn,
        "scores": list(state.scores),
        "hand": hand,
        "hand_counts": [m.bit_count() for m in state.hand_masks],
        "boneyard": len(state.boneyard_tiles),
        "layout": layout,
        "ends": ends,
        "end_total": end_total(state.ends),
        "history": [history_entry(e, viewer) for e in state.log],
        "legal": legal,
        "rounds": [result_data(r.result) for r in table.past if r.result is not None],
        "game_over": table.game_over,
        "winner": table.winner,
    }


def redact_events(
    events: Iterable[dict[str, object]], viewer: int | None
) -> list[dict[str, object]]:
    """The events as `viewer` may see them: a draw's tile only for the drawer."""
    out: list[dict[str, object]] = []
    for event in events:
        if event.get("type") == "draw" and event.get("seat") != viewer:
            event = {k: v for k, v in event.items() if k != "tile"}
        out.append(event)
    return out
