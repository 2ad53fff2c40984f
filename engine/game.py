"""Playing: `new_game`, `game_from_deal`, `legal_moves` and `apply` (the hot path).

`apply` validates a move, leaves its input untouched and returns the new state plus
the events the move caused. A play is placed and scored by engine.kernel `play_tile`; a hand
that ends is settled by engine.rounds `settle`, and the next round is dealt at once.
Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.errors import IllegalMove, InvalidNotation, InvalidTranscript
from engine.kernel import may_draw, open_ends, play_tile, stuck
from engine.layout import Ends, Nodes, candidate_ons, find_end, open_mask
from engine.moves import DRAW, LEADS, PASS, PLAYS, Draw, Move, Pass, Play
from engine.rounds import close_round, deal, deal_round, round_rng, settle, start_round
from engine.rules import rules_from_spec
from engine.state import DREW, PASSED, PLAYED, GameState, Table, make_state
from engine.tiles import BIT, DOUBLES_MASK, HIGH, IS_DOUBLE, LOW, NAMES, VALUE_MASK, Tile

Event = dict[str, object]


def new_game(spec: str | Mapping[str, object], players: int, seed: int) -> GameState:
    """A game whose every deal and chance choice derives from `seed`."""
    rules = rules_from_spec(spec, players)
    if type(seed) is not int:
        raise InvalidTranscript("bad_seed", f"the seed must be an integer, not {seed!r}")
    rng = round_rng(seed, 0)
    hands, boneyard = deal(rules, rng)
    sides = 2 if rules.partnerships else players
    return start_round(rules=rules, seed=seed, rnd=0, lead_from=tuple(range(players)), past=(),
                       scores=(0,) * sides, deal_hands=hands, deal_boneyard=boneyard,
                       leader=None, rng=rng)


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
    return start_round(rules=rules, seed=seed, rnd=0, lead_from=tuple(range(players)), past=(),
                       scores=(0,) * sides, deal_hands=dealt, deal_boneyard=rest, leader=leader)


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
    if len(ends) == 2 and not state.table.rules.all_four_first:  # a line: open_ends written out
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
    if may_draw(state.table.rules, len(state.boneyard_tiles)):
        return [DRAW]
    return [PASS]


def _end_plays(ends: Ends, hand: int, four_first: bool) -> list[Move]:
    """The plays of `hand` on any layout: per open end in order, each end's tiles ascending."""
    out: list[Move] = []
    for index in open_ends(ends, four_first):
        _node, _side, value, _halves, on = ends[index]
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
        return _play(state, seat, move, True)  # type: ignore[arg-type]
    if kind is Draw:
        return _draw(state, seat, True)
    if kind is Pass:
        return _pass(state, seat)
    raise InvalidNotation("bad_move", f"{move!r} is not a move")


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
        return _play(state, seat, move, False)  # type: ignore[arg-type]
    if kind is Draw:
        return _draw(state, seat, False)
    if kind is Pass:
        return _pass(state, seat)
    raise InvalidNotation("bad_move", f"{move!r} is not a move")


def deal_next(state: GameState) -> tuple[GameState, list[Event]]:
    """The next round of a game left between rounds by `apply_until_hand_end` (turn None, not
    over), dealt from the game's seed exactly as `apply` would have dealt it at once."""
    table = state.table
    if table.game_over:
        raise IllegalMove("game_over", "the game is over")
    if state.turn is not None:
        raise IllegalMove("hand_in_play", "the hand is still being played")
    events: list[Event] = []
    new = deal_round(table, table.round + 1, table.lead_from, table.past, state.scores, events)
    return new, events


def _check_lead(table: Table, seat: int, tile: int, move: Play) -> None:
    rules = table.rules
    if move.on is not None:
        raise IllegalMove("bad_end", "the first tile of a round is not played on another")
    if table.lead_tile >= 0 and tile != table.lead_tile:
        must = NAMES[table.lead_tile]
        code = "must_lead_double" if IS_DOUBLE[table.lead_tile] else "must_lead_tile"
        raise IllegalMove(code, f"seat {seat} must lead {must}")
    if rules.lead == "double" and not IS_DOUBLE[tile]:
        raise IllegalMove("must_lead_double", "the round must be led with a double")


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


def resolve_play(state: GameState, seat: int, move: Play) -> tuple[int, int]:
    """(end index, layout tile) that `seat`'s `move` takes, (-1, -1) for the lead; raises
    `IllegalMove` when the play is not legal (decision 4)."""
    tile = move.tile.index
    if not state.hand_masks[seat] >> tile & 1:
        raise IllegalMove("not_in_hand", f"seat {seat} does not hold {NAMES[tile]}")
    table = state.table
    if not state.nodes:
        _check_lead(table, seat, tile, move)
        return -1, -1
    ends = state.ends
    on_tile = move.on
    four_first = table.rules.all_four_first
    if on_tile is not None and not four_first:
        index = _end_of(ends, tile, on_tile.index)
        if index >= 0:
            return index, on_tile.index
    return _resolve_on(state.nodes, ends, tile, on_tile, four_first)


def _play(state: GameState, seat: int, move: Play,
          next_deal: bool) -> tuple[GameState, list[Event]]:
    table = state.table
    rules = table.rules
    tile = move.tile.index
    hands = state.hand_masks
    hand = hands[seat]
    nodes = state.nodes
    ends = state.ends
    on_tile = move.on
    index = -1
    if hand >> tile & 1 and on_tile is not None and len(ends) == 2 and not rules.all_four_first:
        # the usual case, `_end_of` written out: a line, and the named tile's end takes it
        on = on_tile.index
        end = ends[0]
        if end[4] == on and (end[2] == HIGH[tile] or end[2] == LOW[tile]):
            index = 0
        else:
            end = ends[1]
            if end[4] == on and (end[2] == HIGH[tile] or end[2] == LOW[tile]):
                index = 1
    if index < 0:
        index, on = resolve_play(state, seat, move)
    scores = state.scores
    side = table.side_of[seat]
    boneyard = state.boneyard_tiles
    node, new_ends, total, points, ended = play_tile(
        rules, nodes, ends, index, tile, hands, seat, scores[side], len(boneyard))
    new_nodes = nodes + (node,)  # noqa: RUF005 (faster)
    listed = list(hands)
    listed[seat] = hand ^ BIT[tile]
    new_hands = tuple(listed)
    event: Event = {
        "type": "play", "seat": seat, "tile": NAMES[tile], "on": NAMES[on] if on >= 0 else None,
        "end_total": total, "points": points,
    }
    events = [event]
    if ended is None:
        if points:
            scores = (*scores[:side], scores[side] + points, *scores[side + 1:])
        log = state.log + ((seat, PLAYED, tile, on, points, total),)  # noqa: RUF005 (faster)
        turn = seat + 1
        return make_state(table, turn if turn < rules.players else 0, scores, new_hands,
                          boneyard, new_nodes, new_ends, log), events
    settled = settle(table, scores, new_hands, ended, seat, points)
    event["points"] = settled.points
    log = (*state.log, (seat, PLAYED, tile, on, settled.points, total))
    after = make_state(table, None, scores, new_hands, boneyard, new_nodes, new_ends, log)
    return close_round(after, settled, events, next_deal), events


def _draw(state: GameState, seat: int, next_deal: bool) -> tuple[GameState, list[Event]]:
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
        if not may_draw(rules, len(boneyard)):
            raise IllegalMove("cannot_draw", "no tile may be drawn: pass")
    tile = boneyard[0]
    hands = state.hand_masks
    new_hands = (*hands[:seat], hand | 1 << tile, *hands[seat + 1:])
    rest = boneyard[1:]
    log = (*state.log, (seat, DREW, tile, -1, 0, -1))
    events: list[Event] = [{"type": "draw", "seat": seat, "tile": NAMES[tile]}]
    if state.nodes and stuck(rules, state.ends, new_hands, len(rest)):
        settled = settle(table, state.scores, new_hands, "blocked", seat, 0)
        after = make_state(table, None, state.scores, new_hands, rest, state.nodes, state.ends,
                           log)
        return close_round(after, settled, events, next_deal), events
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
    if may_draw(rules, len(state.boneyard_tiles)):
        raise IllegalMove("must_draw", f"seat {seat} cannot play and must draw")
    log = (*state.log, (seat, PASSED, -1, -1, 0, -1))
    events: list[Event] = [{"type": "pass", "seat": seat}]
    return make_state(table, (seat + 1) % rules.players, state.scores, state.hand_masks,
                      state.boneyard_tiles, state.nodes, state.ends, log), events
