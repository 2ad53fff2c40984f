"""What one seat (or a spectator) may see, and positions rebuilt from it.

`view` shows a position to one seat (`views` to several at once) and `redact_events` its
events; a view is plain data and
never holds another seat's tile or a boneyard tile; finished rounds reveal their hands.

`determinize(view, hands, boneyard)` goes the other way: the `GameState` that shows `view`,
with the tiles the view hides dealt as given, so that a simulation of the rest of the hand
(engine.playout) runs through the rules themselves. `public_state(view)` is that position
with nothing hidden dealt yet (other hands empty, no boneyard), built once, and
`with_hidden(public, hands, boneyard)` deals it, cheaply and without checks. The layout is
rebuilt by playing the view's tiles through engine.kernel `play_tile` (`layout_steps`).
A rebuilt state knows only the current hand: its table has no earlier rounds, no deal and
seed 0, and a draw another seat made is logged with tile -1, so it is for simulating the
hand, not for transcripts. Imports only engine modules.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import is_
from typing import Any

from engine.errors import EngineError, InvalidNotation, InvalidTranscript
from engine.game import legal_moves
from engine.kernel import play_tile
from engine.layout import End, Ends, Node, Nodes, end_index, end_total
from engine.moves import move_to_data
from engine.rounds import heaviest_tile, seat_sides
from engine.rules import DEFAULT_PRESET, Rules, rules_from_spec
from engine.state import (
    DREW,
    PASSED,
    PLAYED,
    GameState,
    HandResult,
    LogEntry,
    make_state,
    make_table,
)
from engine.tiles import FULL_SET, NAMES, mask_tiles, tile_index


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
    return views(state, [viewer])[0]


def views(state: GameState, viewers: Sequence[int | None],
          previous: tuple[GameState, Mapping[str, Any]] | None = None) -> list[dict[str, object]]:
    """`view` for each of `viewers`, in order. What every viewer sees alike (layout, ends,
    rules, scores, finished rounds, the log of a round without draws) is built once and the
    same objects are shared by the views: treat them as read-only.

    `previous`: an earlier position of the same game and its spectator view. Whatever did not
    change since (the rules, finished rounds, each placed tile, each logged move) is taken
    from that view as the very same objects instead of being built again, so that comparing
    the two views costs in proportion to what changed."""
    for viewer in viewers:
        _check_viewer(state, viewer)
    table = state.table
    before: GameState | None = None
    seen: Mapping[str, Any] = {}
    if previous is not None and previous[1].get("seat") is None:  # a spectator's view only
        before, seen = previous
    old = before.table if before is not None else None
    shared: dict[str, object] = {
        "players": state.players,
        "sides": seen["sides"] if old is not None and old.sides is table.sides
        else [list(side) for side in table.sides],
        "rules": seen["rules"] if old is not None and old.rules is table.rules
        else rules_summary(state),
        "round": table.round,
        "leader": table.leader,
        "turn": state.turn,
        "scores": list(state.scores),
        "hand_counts": _counts(state.hand_masks),
        "boneyard": len(state.boneyard_tiles),
        "layout": _kept(state.nodes, before.nodes if before is not None else (),
                        seen.get("layout", ()), _layout_item),
        "ends": _kept(state.ends, before.ends if before is not None else (),
                      seen.get("ends", ()), _end_item),
        "end_total": end_total(state.ends),
    }
    public_history = _kept(state.log, before.log if before is not None else (),
                           seen.get("history", ()), _public_entry)
    drawers = {e[0] for e in state.log if e[1] == DREW}
    if old is not None and old.past is table.past:
        rounds = seen["rounds"]
    else:
        rounds = [result_data(r.result) for r in table.past if r.result is not None]
    legal: list[dict[str, object]] | None = None
    out: list[dict[str, object]] = []
    for viewer in viewers:
        if viewer is not None and viewer == state.turn:
            if legal is None:
                legal = _legal(state)
            seat_legal = legal
        else:
            seat_legal = []
        history = public_history if viewer not in drawers else [
            history_entry(e, viewer) if e[0] == viewer and e[1] == DREW else public
            for e, public in zip(state.log, public_history, strict=True)
        ]
        out.append({
            "seat": viewer,
            "players": shared["players"],
            "sides": shared["sides"],
            "rules": shared["rules"],
            "round": shared["round"],
            "leader": shared["leader"],
            "turn": shared["turn"],
            "scores": shared["scores"],
            "hand": None if viewer is None
            else _hand(state.hand_masks[viewer]),
            "hand_counts": shared["hand_counts"],
            "boneyard": shared["boneyard"],
            "layout": shared["layout"],
            "ends": shared["ends"],
            "end_total": shared["end_total"],
            "history": history,
            "legal": seat_legal,
            "rounds": rounds,
            "game_over": table.game_over,
            "winner": table.winner,
        })
    return out


def view_changes(before: GameState, state: GameState, viewers: Sequence[int | None]
                 ) -> list[list[tuple[Any, ...]]] | None:
    """What `view` shows differently after a move that kept the round going (`before` and
    `state` share their round's table, and a seat is to move in both), for each of
    `viewers`: the fields that may differ, in the view's key order, each as
    ``("=", key, before's value, state's value)`` (equal values are possible),
    ``("+", key, items)`` for a list that only grew by `items`, or ``("emptied", key)`` for a
    list that had items and has none. None for any other change
    (a round or the game ended): only whole views tell then. Fields not listed are the same
    in both views."""
    blocks = view_change_blocks(before, state, viewers)
    if blocks is None:
        return None
    return [[field for block in found for field in block] for found in blocks]


def view_change_blocks(before: GameState, state: GameState, viewers: Sequence[int | None]
                       ) -> list[list[list[tuple[Any, ...]]]] | None:
    """`view_changes`, each viewer's fields in blocks (their order is the fields'): a block
    that several viewers share is the very same list for each of them (the fields everyone
    sees alike, the history's new entries for those who drew none of them), so that whoever
    turns fields into something else can do it once per block."""
    table = state.table
    if table is not before.table or state.turn is None or before.turn is None:
        return None
    grown_nodes, grown_log = len(state.nodes) - len(before.nodes), len(state.log) - len(before.log)
    if grown_nodes < 0 or grown_log < 0 or not all(map(is_, state.nodes, before.nodes)) \
            or not all(map(is_, state.log, before.log)):
        return None
    # only the fields that differ: most moves score nothing, and only draws empty the boneyard
    head: list[tuple[Any, ...]] = [("=", "turn", before.turn, state.turn)]
    if state.scores != before.scores:
        head.append(("=", "scores", list(before.scores), list(state.scores)))
    masks, old_masks = state.hand_masks, before.hand_masks
    tail: list[tuple[Any, ...]] = []
    if masks != old_masks:
        tail.append(("=", "hand_counts", _counts(old_masks), _counts(masks)))
    if len(state.boneyard_tiles) != len(before.boneyard_tiles):
        tail.append(("=", "boneyard", len(before.boneyard_tiles), len(state.boneyard_tiles)))
    if grown_nodes:
        tail.append(("+", "layout", [_layout_item(n) for n in state.nodes[-grown_nodes:]]))
    if state.ends is not before.ends:
        tail.append(("=", "ends", [_end_item(e) for e in before.ends],
                     [_end_item(e) for e in state.ends]))
        old_total, total = end_total(before.ends), end_total(state.ends)
        if total != old_total:
            tail.append(("=", "end_total", old_total, total))
    logged = state.log[-grown_log:] if grown_log else ()
    public = [("+", "history", [_public_entry(e) for e in logged])] if logged else None
    drew = {e[0] for e in logged if e[1] == DREW}
    out: list[list[list[tuple[Any, ...]]]] = []
    for viewer in viewers:
        blocks = [head]
        if viewer is not None and masks[viewer] != old_masks[viewer]:
            blocks.append([("=", "hand", _hand(old_masks[viewer]), _hand(masks[viewer]))])
        blocks.append(tail)
        if public is not None:
            blocks.append(public if viewer not in drew else [
                ("+", "history", [history_entry(e, viewer) for e in logged])])
        if viewer is not None and viewer in (before.turn, state.turn):
            blocks.append([_legal_change(before, state, viewer)])
        out.append(blocks)
    return out


def game_change_blocks(before: GameState, state: GameState, viewers: Sequence[int | None]
                       ) -> list[list[list[tuple[Any, ...]]]] | None:
    """`view_change_blocks` for any change between two positions of one game: a move within a
    hand as there, and any other (a hand's last move, a deal, the game's end) as every field
    that may differ then, in the view's key order: ``("=", key, before's value, state's
    value)``, or for a list that now has fewer items ``("cut", key, its first items before,
    as many as it has now, how many it had, state's value)`` (what a list diff needs of the
    longer list: the layout and the history of a finished hand are not built again). None
    when the rules or the sides differ (not one game)."""
    found = view_change_blocks(before, state, viewers)
    if found is not None:
        return found
    old, table = before.table, state.table
    if old.rules is not table.rules or old.sides != table.sides:
        return None
    masks, old_masks = state.hand_masks, before.hand_masks
    head: list[tuple[Any, ...]] = [
        ("=", "round", old.round, table.round), ("=", "leader", old.leader, table.leader),
        ("=", "turn", before.turn, state.turn),
        ("=", "scores", list(before.scores), list(state.scores))]
    middle: list[tuple[Any, ...]] = [
        ("=", "hand_counts", _counts(old_masks), _counts(masks)),
        ("=", "boneyard", len(before.boneyard_tiles), len(state.boneyard_tiles)),
        _list_change("layout", before.nodes, [_layout_item(n) for n in state.nodes],
                     _layout_item),
        ("=", "ends", [_end_item(e) for e in before.ends], [_end_item(e) for e in state.ends]),
        ("=", "end_total", end_total(before.ends), end_total(state.ends))]
    public = [_list_change("history", before.log, [_public_entry(e) for e in state.log],
                           _public_entry)]
    drawers = {e[0] for e in before.log if e[1] == DREW} | {
        e[0] for e in state.log if e[1] == DREW}
    rounds = [result_data(r.result) for r in table.past if r.result is not None]
    if len(old.past) <= len(table.past) and all(map(is_, old.past, table.past)):
        # the rounds finished before are the very same: so are their entries (the prefix)
        earlier = rounds[:sum(r.result is not None for r in old.past)]
    else:
        earlier = [result_data(r.result) for r in old.past if r.result is not None]
    tail: list[tuple[Any, ...]] = [
        ("=", "rounds", earlier, rounds), ("=", "game_over", old.game_over, table.game_over),
        ("=", "winner", old.winner, table.winner)]
    out: list[list[list[tuple[Any, ...]]]] = []
    for viewer in viewers:
        blocks = [head]
        if viewer is not None:
            blocks.append([("=", "hand", _hand(old_masks[viewer]), _hand(masks[viewer]))])
        blocks.append(middle)
        if viewer in drawers:
            shown = functools.partial(_entry_for, viewer)
            blocks.append([_list_change("history", before.log, list(map(shown, state.log)),
                                        shown)])
        else:
            blocks.append(public)
        if viewer is not None and viewer in (before.turn, state.turn):
            blocks.append([("=", "legal", _legal(before) if viewer == before.turn else [],
                            _legal(state) if viewer == state.turn else [])])
        blocks.append(tail)
        out.append(blocks)
    return out


def _entry_for(viewer: int | None, entry: LogEntry) -> dict[str, object]:
    return history_entry(entry, viewer)


def _list_change(key: str, items: Sequence[Any], shown: list[Any],
                 show: Callable[[Any], Any]) -> tuple[Any, ...]:
    """`game_change_blocks`' field of a list whose items before are ``show(item)`` for each of
    ``items`` and ``shown`` now: "cut" when it is now shorter (only the first items before
    are shown), else "=" with the whole list before."""
    if len(shown) < len(items):
        return ("cut", key, [show(item) for item in items[:len(shown)]], len(items), shown)
    return ("=", key, [show(item) for item in items], shown)


def _legal_change(before: GameState, state: GameState, seat: int) -> tuple[Any, ...]:
    """`view_changes`' field for the legal moves of a seat that moves before or after."""
    if seat == before.turn == state.turn:  # the same seat moves again (after a draw)
        return ("=", "legal", _legal(before), _legal(state))
    if seat == state.turn:  # its turn begins: its moves, where there were none
        return ("+", "legal", _legal(state))
    return ("emptied", "legal")  # its turn ended: it had at least one move, now none


def _legal(state: GameState) -> list[dict[str, object]]:
    return [move_to_data(m) for m in legal_moves(state)]


def _hand(mask: int) -> list[str]:
    return [NAMES[t] for t in mask_tiles(mask)]


def _counts(masks: Sequence[int]) -> list[int]:
    return [m.bit_count() for m in masks]


def _layout_item(node: Node) -> dict[str, object]:
    tile, parent, side, inner, spinner = node
    return {"tile": NAMES[tile], "parent": parent, "side": side, "inner": inner,
            "spinner": spinner}


def _end_item(end: End) -> dict[str, object]:
    node, side, value, halves, _ = end
    return {"node": node, "side": side, "value": value, "count": value * halves}


def _public_entry(entry: LogEntry) -> dict[str, object]:
    return history_entry(entry, None)


def _kept(items: Sequence[Any], earlier: Sequence[Any], shown: Sequence[Any],
          show: Callable[[Any], Any]) -> list[Any]:
    """``[show(item) for item in items]``, taking ``shown[i]`` where ``items[i]`` is the very
    object ``earlier[i]`` was (``shown`` is what ``earlier`` looked like)."""
    if len(shown) != len(earlier):
        earlier = ()
    return [shown[i] if i < len(earlier) and earlier[i] is item else show(item)
            for i, item in enumerate(items)]


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


def _bad(message: str) -> InvalidTranscript:
    return InvalidTranscript("bad_state", f"the view describes no position: {message}")


def view_rules(view: Mapping[str, Any]) -> Rules:
    """The resolved rules a view shows (its `rules.spec`, else its preset)."""
    shown = view.get("rules") or {}
    spec = shown.get("spec", shown.get("preset", DEFAULT_PRESET))
    return rules_from_spec(spec if isinstance(spec, Mapping) else str(spec), int(view["players"]))


def layout_steps(rules: Rules, layout: Sequence[Mapping[str, Any]]) -> list[tuple[Nodes, Ends]]:
    """The layout after each tile of a view's `layout` (entry k: after k tiles), every tile
    played through the kernel on the end its entry names; raises `InvalidTranscript`
    (bad_state) for a layout the rules could not have built."""
    nodes: Nodes = ()
    ends: Ends = ()
    steps = [(nodes, ends)]
    for k, entry in enumerate(layout):
        tile = tile_index(entry["tile"])
        parent = entry.get("parent")
        if parent is None:
            if k:
                raise _bad(f"layout tile {k} names no parent")
            index = -1
        else:
            index = end_index(ends, int(parent), str(entry.get("side")))
            if index < 0:
                raise _bad(f"layout tile {k} covers no open end")
        node, ends, _, _, _ = play_tile(rules, nodes, ends, index, tile)
        shown = (tile, parent, entry.get("side"), entry.get("inner"), bool(entry.get("spinner")))
        if node != shown:
            raise _bad(f"layout tile {k} is not where the rules put it")
        nodes = (*nodes, node)
        steps.append((nodes, ends))
    return steps


def _log(history: Sequence[Mapping[str, Any]]) -> tuple[LogEntry, ...]:
    log: list[LogEntry] = []
    for entry in history:
        seat = int(entry["seat"])
        if "play" in entry:
            on = entry.get("on")
            log.append((seat, PLAYED, tile_index(entry["play"]),
                        -1 if on is None else tile_index(on), int(entry.get("points", 0)),
                        int(entry.get("end_total", 0))))
        elif "draw" in entry:
            drawn = entry.get("tile")
            log.append((seat, DREW, -1 if drawn is None else tile_index(drawn), -1, 0, -1))
        else:
            log.append((seat, PASSED, -1, -1, 0, -1))
    return tuple(log)


def public_state(view: Mapping[str, Any],
                 steps: Sequence[tuple[Nodes, Ends]] | None = None) -> GameState:
    """The position `view` shows, with the viewer's hand and nothing hidden dealt: the other
    hands are empty and the boneyard too (`with_hidden` deals them). `steps` is the view's
    `layout_steps` when the caller has them. Raises `InvalidTranscript` (bad_state) when the
    view does not describe a position."""
    try:
        rules = view_rules(view)
        seat = view.get("seat")
        players = rules.players
        hands = [0] * players
        if seat is not None:
            for name in view.get("hand") or ():
                hands[int(seat)] |= 1 << tile_index(name)
        if steps is None:
            steps = layout_steps(rules, view.get("layout") or [])
        nodes, ends = steps[-1]
        shown = [(e["node"], e["side"], e["value"], e["count"]) for e in view.get("ends") or ()]
        if shown != [(e[0], e[1], e[2], e[2] * e[3]) for e in ends]:
            raise _bad("its open ends are not the layout's")
        sides, side_of = seat_sides(rules)
        leader = int(view["leader"])
        turn = view.get("turn")
        table = make_table(
            rules=rules, seed=0, round=int(view.get("round", 0)), leader=leader,
            lead_from=(leader,), lead_tile=-1, deal_hands=(), deal_boneyard=(), past=(),
            game_over=bool(view.get("game_over")), winner=view.get("winner"), sides=sides,
            side_of=side_of)
        return make_state(table, None if turn is None else int(turn),
                          tuple(int(x) for x in view["scores"]), tuple(hands), (), nodes, ends,
                          _log(view.get("history") or []))
    except EngineError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise _bad(str(exc)) from exc


def with_hidden(public: GameState, hands: Sequence[int], boneyard: Sequence[int]) -> GameState:
    """`public` (from `public_state`) with every seat's hand (bitmasks) and the boneyard (in
    drawing order) as given; no checks (see `determinize`)."""
    table = public.table
    if not public.nodes and table.round == 0 and table.rules.first_leader == "highest_double":
        lead_tile = heaviest_tile(hands[table.leader])  # round 1's leader leads its heaviest
        if lead_tile != table.lead_tile:
            table = make_table(
                rules=table.rules, seed=table.seed, round=table.round, leader=table.leader,
                lead_from=table.lead_from, lead_tile=lead_tile, deal_hands=table.deal_hands,
                deal_boneyard=table.deal_boneyard, past=table.past, game_over=table.game_over,
                winner=table.winner, sides=table.sides, side_of=table.side_of)
    return make_state(table, public.turn, public.scores, tuple(hands), tuple(boneyard),
                      public.nodes, public.ends, public.log)


def determinize(view: Mapping[str, Any], hands: Sequence[int],
                boneyard: Sequence[int]) -> GameState:
    """The `GameState` that shows `view` to its seat, with `hands` (every seat's tiles as a
    bitmask) and `boneyard` (tile indexes, the next draw first) for the tiles it hides.

    Raises `InvalidTranscript` (bad_state) when the view describes no position, or the deal
    does not fit it: the viewer's hand, every hand's size, the boneyard's size, and each of
    the 28 tiles exactly once, on the layout, in a hand or in the boneyard.
    """
    public = public_state(view)
    players = public.table.rules.players
    if len(hands) != players:
        raise _bad(f"{len(hands)} hands for {players} seats")
    seat = view.get("seat")
    if seat is not None and hands[int(seat)] != public.hand_masks[int(seat)]:
        raise _bad("the viewer's hand is not the one given")
    counts = [int(c) for c in view["hand_counts"]]
    if [h.bit_count() for h in hands] != counts or len(boneyard) != int(view["boneyard"]):
        raise _bad("the hands or the boneyard are not the sizes the view shows")
    seen = 0
    for n in public.nodes:
        seen |= 1 << n[0]
    placed = seen.bit_count()
    for h in hands:
        seen |= h
    for t in boneyard:
        seen |= 1 << t
    if seen != FULL_SET or placed + sum(counts) + len(boneyard) != 28:
        raise _bad("the 28 tiles are not each dealt once")
    return with_hidden(public, hands, boneyard)
