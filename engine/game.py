"""Playing: `new_game`, `game_from_deal`, `legal_moves` and `apply` (the hot path).

`apply` validates a move, leaves its input untouched and returns the new state plus
the events the move caused; when a hand ends it settles it and deals the next round.
Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import add

from engine.errors import IllegalMove, InvalidNotation, InvalidTranscript
from engine.layout import End, Ends, Nodes, attach, candidate_ons, find_end, lead, open_mask
from engine.moves import DRAW, LEADS, PASS, PLAYS, Draw, Move, Pass, Play
from engine.rounds import (
    close_round,
    deal,
    deal_next_round,
    game_result,
    may_draw,
    round_rng,
    settle,
    start_round,
)
from engine.rules import Rules, rules_from_spec
from engine.scoring import play_points
from engine.state import DREW, PASSED, PLAYED, GameState, LogEntry, Table, make_state
from engine.tiles import (
    BIT,
    DOUBLES_MASK,
    HIGH,
    IS_DOUBLE,
    LOW,
    NAMES,
    OTHER_HALF,
    VALUE_MASK,
    Tile,
    mask_pips,
)

Event = dict[str, object]


def new_game(spec: str | Mapping[str, object], players: int, seed: int) -> GameState:
    """A game whose every deal and chance choice derives from `seed`."""
    rules = rules_from_spec(spec, players)
    if type(seed) is not int:
        raise InvalidTranscript("bad_seed", f"the seed must be an integer, not {seed!r}")
    rng = round_rng(seed, 0)
    hands, boneyard = deal(rules, rng)
    sides = 2 if rules.partnerships else players
    return start_round(rules, seed, 0, tuple(range(players)), (), (0,) * sides, hands,
                       boneyard, None, rng)


def game_from_deal(
    spec: str | Mapping[str, object],
    players: int,
    hands: Sequence[Sequence[object]],
    boneyard: Sequence[object],
    leader: int,
    seed: int = 0,
) -> GameState:
    """A game whose first round is the given deal (later rounds are dealt from `seed`)."""
    from engine.rounds import check_deal

    rules = rules_from_spec(spec, players)
    dealt, rest = check_deal(rules, hands, boneyard)
    if type(leader) is not int or not 0 <= leader < players:
        raise InvalidTranscript("bad_leader", f"leader must be a seat from 0 to {players - 1}")
    sides = 2 if rules.partnerships else players
    return start_round(rules, seed, 0, tuple(range(players)), (), (0,) * sides, dealt, rest,
                       leader)


def legal_moves(state: GameState) -> list[Move]:
    """Every legal move of the seat to move (empty when the game is over)."""
    seat = state.turn
    if seat is None:
        return []
    hand = state.hand_masks[seat]
    if not state.nodes:
        return _lead_moves(state, hand)
    ends = state.ends
    out: list[Move]
    if len(ends) == 2 and not state.table.rules.all_four_first:  # a line: two ends
        end0, end1 = ends
        fits = hand & VALUE_MASK[end0[2]]
        out = list(_PLAYS_ON[end0[4]].get(fits) or _plays(fits, end0[4])) if fits else []
        if end1[0] != end0[0] or end1[2] != end0[2]:  # not a lone lead double's other side
            fits = hand & VALUE_MASK[end1[2]]
            if fits:
                out += _PLAYS_ON[end1[4]].get(fits) or _plays(fits, end1[4])
    else:
        out = _end_plays(ends, hand, state.table.rules.all_four_first)
    if out:
        return out
    rules = state.table.rules
    if rules.draw == "until_playable" and len(state.boneyard_tiles) > rules.boneyard_reserve:
        return [DRAW]
    return [PASS]


def _end_plays(ends: Ends, hand: int, four_first: bool) -> list[Move]:
    """The plays of `hand` on any layout: per end in order, each end's tiles ascending."""
    only_spinner = four_first and any(e[0] == 0 for e in ends)
    out: list[Move] = []
    seen = 0
    for node, _side, value, _halves, on in ends:
        if only_spinner and node:
            continue
        key = 1 << (node * 7 + value)
        if seen & key:
            continue
        seen |= key
        fits = hand & VALUE_MASK[value]
        if fits:
            out += _PLAYS_ON[on].get(fits) or _plays(fits, on)
    return out


_PLAYS_ON: tuple[dict[int, tuple[Play, ...]], ...] = tuple({} for _ in range(28))
"""_PLAYS_ON[on][fits]: the plays of the tiles in bitmask `fits` on layout tile `on`, in
tile order (filled as met; at most 2 x 127 masks per layout tile)."""


def _plays(fits: int, on: int) -> tuple[Play, ...]:
    """The plays of the tiles in `fits` on `on` (and remembers them in `_PLAYS_ON`)."""
    out = []
    bits = fits
    while bits:
        bit = bits & -bits
        out.append(PLAYS[bit.bit_length() - 1][on])
        bits ^= bit
    plays = _PLAYS_ON[on][fits] = tuple(out)
    return plays


def _lead_moves(state: GameState, hand: int) -> list[Move]:
    table = state.table
    if table.lead_tile >= 0:
        return [LEADS[table.lead_tile]]
    if table.rules.lead == "double":
        hand &= DOUBLES_MASK
        if not hand:
            return [DRAW]
    out: list[Move] = []
    while hand:
        bit = hand & -hand
        out.append(LEADS[bit.bit_length() - 1])
        hand ^= bit
    return out


def apply(state: GameState, seat: int, move: Move) -> tuple[GameState, list[Event]]:
    """Play `move` for `seat`: the new state and the events; raises `IllegalMove` otherwise.

    When the move ends a hand and not the game, the next round is dealt at once.
    """
    if state.table.game_over:
        raise IllegalMove("game_over", "the game is over")
    if seat != state.turn or type(seat) is not int:
        raise IllegalMove("not_your_turn", f"it is seat {state.turn}'s turn, not seat {seat}'s")
    kind = type(move)
    if kind is Play:
        new, events = _play(state, seat, move)  # type: ignore[arg-type]
    elif kind is Draw:
        new, events = _draw(state, seat)
    elif kind is Pass:
        new, events = _pass(state, seat)
    else:
        raise InvalidNotation("bad_move", f"{move!r} is not a move")
    if new.turn is None and not new.table.game_over:
        new = deal_next_round(new)
        events.append({"type": "deal", "round": new.table.round, "leader": new.table.leader})
    return new, events


def apply_until_hand_end(
    state: GameState, seat: int, move: Move
) -> tuple[GameState, list[Event]]:
    """`apply`, except that a hand's end leaves the state between rounds (turn None)."""
    if state.table.game_over:
        raise IllegalMove("game_over", "the game is over")
    if seat != state.turn or type(seat) is not int:
        raise IllegalMove("not_your_turn", f"it is seat {state.turn}'s turn, not seat {seat}'s")
    kind = type(move)
    if kind is Play:
        return _play(state, seat, move)  # type: ignore[arg-type]
    if kind is Draw:
        return _draw(state, seat)
    if kind is Pass:
        return _pass(state, seat)
    raise InvalidNotation("bad_move", f"{move!r} is not a move")


def _lead(table: Table, seat: int, tile: int, move: Play) -> tuple[Nodes, Ends]:
    rules = table.rules
    if move.on is not None:
        raise IllegalMove("bad_end", "the first tile of a round is not played on another")
    if table.lead_tile >= 0 and tile != table.lead_tile:
        must = NAMES[table.lead_tile]
        code = "must_lead_double" if IS_DOUBLE[table.lead_tile] else "must_lead_tile"
        raise IllegalMove(code, f"seat {seat} must lead {must}")
    if rules.lead == "double" and not IS_DOUBLE[tile]:
        raise IllegalMove("must_lead_double", "the round must be led with a double")
    return lead(tile, IS_DOUBLE[tile] and rules.spinners != "none")


def _end_of(ends: Ends, tile: int, on: int) -> int:
    """Index of the first end of layout tile `on` that `tile` matches, or -1."""
    high = HIGH[tile]
    low = LOW[tile]
    if len(ends) == 2:  # a line, written out
        end = ends[0]
        if end[4] == on and (end[2] == high or end[2] == low):
            return 0
        end = ends[1]
        return 1 if end[4] == on and (end[2] == high or end[2] == low) else -1
    for i, end in enumerate(ends):
        if end[4] == on and (end[2] == high or end[2] == low):
            return i
    return -1


def _resolve_on(nodes: Nodes, ends: Ends, tile: int, on_tile: Tile | None,
                four_first: bool) -> tuple[int, int]:
    """(end index, layout tile) a play of `tile` on `on_tile` takes; raises when it cannot."""
    if on_tile is None:
        ons = candidate_ons(ends, tile, four_first)
        if not ons:
            raise IllegalMove("not_playable", f"{NAMES[tile]} does not match any open end")
        if len(ons) > 1:
            named = ", ".join(NAMES[t] for t in ons)
            raise IllegalMove("bad_end", f"{NAMES[tile]} fits on {named}: say which")
        on = ons[0]
    else:
        on = on_tile.index
    index = find_end(ends, tile, on, four_first)
    if index < 0:
        if not any(n[0] == on for n in nodes):
            raise IllegalMove("bad_end", f"{NAMES[on]} is not on the layout")
        raise IllegalMove("not_playable", f"{NAMES[tile]} does not fit an open end of {NAMES[on]}")
    return index, on


def _play(state: GameState, seat: int, move: Play) -> tuple[GameState, list[Event]]:
    table = state.table
    rules = table.rules
    tile = move.tile.index
    hands = state.hand_masks
    hand = hands[seat]
    if not hand >> tile & 1:
        raise IllegalMove("not_in_hand", f"seat {seat} does not hold {NAMES[tile]}")
    nodes = state.nodes
    if nodes:
        ends = state.ends
        on_tile = move.on
        index = -1
        if on_tile is not None and not rules.all_four_first:
            index = _end_of(ends, tile, on_tile.index)
            on = on_tile.index
        if index < 0:
            index, on = _resolve_on(nodes, ends, tile, on_tile, rules.all_four_first)
        parent, parent_side, value, _, _ = ends[index]
        if parent_side == "O":
            # the common case, inlined: the one free end of a tile in the line (a double
            # there is never a spinner with other free sides; see layout.attach)
            node = len(nodes)
            if IS_DOUBLE[tile]:
                spinners = rules.spinners
                spinner = spinners == "all_doubles" or (
                    spinners == "first_double" and not any(n[4] for n in nodes)
                )
                new_end: End = (node, "R" if spinner else "O", value, 2, tile)
            else:
                spinner = False
                new_end = (node, "O", OTHER_HALF[tile][value], 1, tile)
            new_nodes = nodes + ((tile, parent, "O", value, spinner),)  # noqa: RUF005 (faster)
            if len(ends) == 2:
                new_ends: Ends = (ends[1 - index], new_end)
            else:
                new_ends = (*ends[:index], *ends[index + 1:], new_end)
        else:
            spinners = rules.spinners
            spinner = IS_DOUBLE[tile] and (spinners == "all_doubles" or (
                spinners == "first_double" and not any(n[4] for n in nodes)
            ))
            new_nodes, new_ends = attach(nodes, ends, index, tile, spinner)
    else:
        on = -1
        new_nodes, new_ends = _lead(table, seat, tile, move)
    if len(new_ends) == 2:
        end0, end1 = new_ends
        total = end0[2] * end0[3] + end1[2] * end1[3]
        fits = VALUE_MASK[end0[2]] | VALUE_MASK[end1[2]]
    else:
        total = fits = 0
        for e in new_ends:
            total += e[2] * e[3]
            fits |= VALUE_MASK[e[2]]
    scoring = rules.scoring
    if scoring == "none":
        points = 0
    elif scoring == "fives":
        points = total // rules.scale if total % 5 == 0 else 0
    else:
        points = play_points(scoring, rules.scale, total, new_ends)
    new_hand = hand ^ BIT[tile]
    listed = list(hands)
    listed[seat] = new_hand
    new_hands = tuple(listed)
    if not new_hand:
        return _domino(state, seat, tile, on, points, total, new_hands, new_nodes, new_ends)
    scores = state.scores
    side = -1
    if points:
        side = table.side_of[seat]
        if rules.exact and scores[side] + points > rules.target:
            points = 0
        else:
            scores = (*scores[:side], scores[side] + points, *scores[side + 1:])
    log = state.log + ((seat, PLAYED, tile, on, points, total),)  # noqa: RUF005 (faster)
    events: list[Event] = [{
        "type": "play", "seat": seat, "tile": NAMES[tile], "on": NAMES[on] if on >= 0 else None,
        "end_total": total, "points": points,
    }]
    boneyard = state.boneyard_tiles
    if not (rules.drawing and len(boneyard) > rules.boneyard_reserve):
        if rules.all_four_first:
            fits = open_mask(new_ends, True)
        for h in new_hands:
            if h & fits:
                break
        else:
            return _blocked(state, seat, new_hands, boneyard, new_nodes, new_ends, log, scores,
                            events), events
    if points and rules.exact and scores[side] == rules.target:
        pips = tuple(mask_pips(m) for m in new_hands)
        return close_round(state, new_hands, boneyard, new_nodes, new_ends, log, scores, "target",
                           None, 0, pips, (), side, events), events
    turn = seat + 1
    return make_state(table, turn if turn < rules.players else 0, scores, new_hands, boneyard,
                      new_nodes, new_ends, log), events


def _stuck(rules: Rules, hands: tuple[int, ...], ends: Ends) -> bool:
    mask = open_mask(ends, rules.all_four_first)
    return not any(h & mask for h in hands)


def _domino(state: GameState, seat: int, tile: int, on: int, points: int, total: int,
            hands: tuple[int, ...], nodes: Nodes, ends: Ends) -> tuple[GameState, list[Event]]:
    table = state.table
    rules = table.rules
    side = table.side_of[seat]
    log = (*state.log, (seat, PLAYED, tile, on, points, total))
    outcome = settle(state, hands, "domino", seat, log)
    gains = list(outcome.gains)
    bonus = outcome.bonus
    scores = state.scores
    if rules.exact and scores[side] + points + gains[side] > rules.target:
        points = gains[side] = bonus = 0
        log = (*state.log, (seat, PLAYED, tile, on, 0, total))
    new_scores = tuple(map(add, scores, gains))
    new_scores = (*new_scores[:side], new_scores[side] + points, *new_scores[side + 1:])
    events: list[Event] = [{
        "type": "play", "seat": seat, "tile": NAMES[tile], "on": NAMES[on] if on >= 0 else None,
        "end_total": total, "points": points,
    }]
    winner = game_result(rules, new_scores)
    return close_round(state, hands, state.boneyard_tiles, nodes, ends, log, new_scores, "domino",
                       outcome.winner, bonus, outcome.pips, outcome.next_lead, winner,
                       events), events


def _blocked(state: GameState, seat: int, hands: tuple[int, ...], boneyard: tuple[int, ...],
             nodes: Nodes, ends: Ends, log: tuple[LogEntry, ...], scores: tuple[int, ...],
             events: list[Event]) -> GameState:
    rules = state.table.rules
    outcome = settle(state, hands, "blocked", seat, log)
    gains = list(outcome.gains)
    bonus = outcome.bonus
    if rules.exact:
        for i, gain in enumerate(gains):
            if scores[i] + gain > rules.target:
                gains[i] = 0
                if i == outcome.winner:
                    bonus = 0
    new_scores = tuple(map(add, scores, gains))
    winner = game_result(rules, new_scores)
    return close_round(state, hands, boneyard, nodes, ends, log, new_scores, "blocked",
                       outcome.winner, bonus, outcome.pips, outcome.next_lead, winner, events)


def _draw(state: GameState, seat: int) -> tuple[GameState, list[Event]]:
    table = state.table
    rules = table.rules
    hand = state.hand_masks[seat]
    boneyard = state.boneyard_tiles
    turn = seat
    if not state.nodes:
        if rules.lead != "double" or hand & DOUBLES_MASK:
            raise IllegalMove("must_play", f"seat {seat} must lead a tile")
        if not boneyard:
            raise IllegalMove("cannot_draw", "the boneyard is empty")
        if not IS_DOUBLE[boneyard[0]]:
            turn = (seat + 1) % rules.players
    else:
        if hand & open_mask(state.ends, rules.all_four_first):
            raise IllegalMove("must_play", f"seat {seat} holds a tile that fits and must play")
        if not may_draw(rules, boneyard):
            raise IllegalMove("cannot_draw", "no tile may be drawn: pass")
    tile = boneyard[0]
    hands = state.hand_masks
    new_hands = (*hands[:seat], hand | 1 << tile, *hands[seat + 1:])
    rest = boneyard[1:]
    log = (*state.log, (seat, DREW, tile, -1, 0, -1))
    events: list[Event] = [{"type": "draw", "seat": seat, "tile": NAMES[tile]}]
    if state.nodes and not may_draw(rules, rest) and _stuck(rules, new_hands, state.ends):
        return _blocked(state, seat, new_hands, rest, state.nodes, state.ends, log, state.scores,
                        events), events
    return make_state(table, turn, state.scores, new_hands, rest, state.nodes, state.ends,
                      log), events


def _pass(state: GameState, seat: int) -> tuple[GameState, list[Event]]:
    table = state.table
    rules = table.rules
    if not state.nodes:
        if rules.lead == "double" and not state.hand_masks[seat] & DOUBLES_MASK:
            raise IllegalMove("must_draw", f"seat {seat} holds no double and must draw for one")
        raise IllegalMove("must_play", f"seat {seat} must lead a tile")
    if state.hand_masks[seat] & open_mask(state.ends, rules.all_four_first):
        raise IllegalMove("must_play", f"seat {seat} holds a tile that fits and must play")
    if may_draw(rules, state.boneyard_tiles):
        raise IllegalMove("must_draw", f"seat {seat} cannot play and must draw")
    log = (*state.log, (seat, PASSED, -1, -1, 0, -1))
    events: list[Event] = [{"type": "pass", "seat": seat}]
    return make_state(table, (seat + 1) % rules.players, state.scores, state.hand_masks,
                      state.boneyard_tiles, state.nodes, state.ends, log), events
