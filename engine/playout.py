"""Random playouts: finishing a hand with uniformly random legal moves, fast (for simulations).

`play_out_hand` makes exactly the moves `legal_moves` + `apply` would make for the same random
numbers (move k of the list, k = int(random() * len(list))), but keeps the position in local
variables instead of building a `GameState` and events for every move, and never builds the
list: it counts the tiles that fit each end (the list's order is per end, tiles ascending) and
takes tile k of them. A hand is blocked when no tile of the union of all hands fits. The move
that ends the hand (or the game) goes through `apply`, so settling, bonuses and the next deal
are the engine's own. Imports engine modules, `math` and `random` only.
"""

from __future__ import annotations

import random
from math import floor

from engine.game import apply, legal_moves
from engine.layout import End, Ends, Node, attach, open_mask
from engine.moves import DRAW, PLAYS
from engine.scoring import play_points
from engine.state import DREW, PASSED, PLAYED, GameState, LogEntry, make_state
from engine.tiles import BIT, IS_DOUBLE, OTHER_HALF, VALUE_MASK


def play_out_hand(state: GameState, rng: random.Random) -> GameState:
    """Play random legal moves until the current hand ends; return the state `apply` reaches.

    That state is the next round's (or the finished game's). A finished game is returned as is.
    """
    rand = rng.random
    while not state.nodes and not state.table.game_over:  # the lead, and drawing for it
        round_now = state.table.round
        moves = legal_moves(state)
        assert state.turn is not None
        state = apply(state, state.turn, moves[int(rand() * len(moves))])[0]
        if state.table.round != round_now:
            return state
    if state.table.game_over:
        return state
    table = state.table
    rules = table.rules
    players = rules.players
    four_first = rules.all_four_first
    drawing = rules.drawing
    reserve = rules.boneyard_reserve
    exact = rules.exact
    target = rules.target
    scoring = rules.scoring
    scale = rules.scale
    spinners = rules.spinners
    side_of = table.side_of
    hands = list(state.hand_masks)
    held = 0  # every tile in some hand: a hand is blocked when none of them fits
    for h in hands:
        held |= h
    boneyard = state.boneyard_tiles
    drawn = 0
    can_draw = drawing and len(boneyard) > reserve
    nodes = list(state.nodes)
    has_spinner = any(n[4] for n in nodes)
    ends = state.ends
    scores = list(state.scores)
    log: list[LogEntry] = list(state.log)
    turn = state.turn
    assert turn is not None
    while True:
        seat = turn
        hand = hands[seat]
        r = rand()  # every move takes one number, a draw or a pass too
        # The plays legal_moves would list, counted per end in its order (tiles ascending):
        # play k of `count` is tile k (counting up) of `fits`, the tiles that fit end `index`.
        if len(ends) == 2 and not four_first:  # a line: two ends (one choice for a lone double)
            end0, end1 = ends
            fits = hand & VALUE_MASK[end0[2]]
            same = end1[0] == end0[0] and end1[2] == end0[2]  # a lone lead double's sides
            fits1 = 0 if same else hand & VALUE_MASK[end1[2]]
            count0 = fits.bit_count()
            count = count0 + fits1.bit_count()
            index = k = 0
            if count:
                k = floor(r * count)  # = int() here (never negative), and cheaper
                if k >= count0:
                    fits, index, k = fits1, 1, k - count0
        else:
            count, fits, index, k = _choose(ends, hand, four_first, r)
        if count:
            while k:  # the k-th lowest tile of `fits`
                fits &= fits - 1
                k -= 1
            tile = (fits & -fits).bit_length() - 1
            parent, parent_side, value, _, on = ends[index]
            if parent_side == "O":  # the one free end of a tile in the line (see _play)
                node = len(nodes)
                if IS_DOUBLE[tile]:
                    spinner = spinners == "all_doubles" or (
                        spinners == "first_double" and not has_spinner)
                    new_end: End = (node, "R" if spinner else "O", value, 2, tile)
                else:
                    spinner = False
                    new_end = (node, "O", OTHER_HALF[tile][value], 1, tile)
                new_node: Node = (tile, parent, "O", value, spinner)
                if len(ends) == 2:
                    new_ends: Ends = (ends[1 - index], new_end)
                else:
                    new_ends = (*ends[:index], *ends[index + 1:], new_end)
            else:
                spinner = IS_DOUBLE[tile] and (spinners == "all_doubles" or (
                    spinners == "first_double" and not has_spinner))
                new_nodes, new_ends = attach(tuple(nodes), ends, index, tile, spinner)
                new_node = new_nodes[-1]
            if len(new_ends) == 2:
                end0, end1 = new_ends
                total = end0[2] * end0[3] + end1[2] * end1[3]
                mask = VALUE_MASK[end0[2]] | VALUE_MASK[end1[2]]
            else:
                total = mask = 0
                for e in new_ends:
                    total += e[2] * e[3]
                    mask |= VALUE_MASK[e[2]]
            if scoring == "none":
                points = 0
            elif scoring == "fives":
                points = total // scale if total % 5 == 0 else 0
            else:
                points = play_points(scoring, scale, total, new_ends)
            new_hand = hand ^ BIT[tile]
            side = side_of[seat]
            if points and exact and scores[side] + points > target:
                points = 0
            finished = not new_hand or (points and exact and scores[side] + points == target)
            if not finished and not can_draw:
                if four_first:
                    mask = open_mask(new_ends, True)
                finished = not (held ^ BIT[tile]) & mask
            if finished:
                before = make_state(table, seat, tuple(scores), tuple(hands), boneyard[drawn:],
                                    tuple(nodes), ends, tuple(log))
                return apply(before, seat, PLAYS[tile][on])[0]
            hands[seat] = new_hand
            held ^= BIT[tile]
            nodes.append(new_node)
            has_spinner = has_spinner or spinner
            ends = new_ends
            if points:
                scores[side] += points
            log.append((seat, PLAYED, tile, on, points, total))
            turn = seat + 1 if seat + 1 < players else 0
            continue
        if can_draw:  # the only legal move is a draw, or else a pass

            tile = boneyard[drawn]
            can_draw = len(boneyard) - drawn - 1 > reserve
            if not can_draw and not (held | BIT[tile]) & open_mask(ends, four_first):
                before = make_state(table, seat, tuple(scores), tuple(hands), boneyard[drawn:],
                                    tuple(nodes), ends, tuple(log))
                return apply(before, seat, DRAW)[0]
            hands[seat] = hand | BIT[tile]
            held |= BIT[tile]
            drawn += 1
            log.append((seat, DREW, tile, -1, 0, -1))
        else:
            log.append((seat, PASSED, -1, -1, 0, -1))
            turn = seat + 1 if seat + 1 < players else 0


def _choose(ends: Ends, hand: int, four_first: bool, r: float) -> tuple[int, int, int, int]:
    """(count, fits, index, k) as in `play_out_hand`, for any layout."""
    only_spinner = four_first and any(e[0] == 0 for e in ends)
    count = 0
    fitting: list[tuple[int, int]] = []  # (tiles that fit, end index)
    seen = 0
    for index, (node, _side, value, _halves, _on) in enumerate(ends):
        if not (only_spinner and node):
            key = 1 << (node * 7 + value)
            if not seen & key:
                seen |= key
                fits = hand & VALUE_MASK[value]
                if fits:
                    fitting.append((fits, index))
                    count += fits.bit_count()
    if not count:
        return 0, 0, 0, 0
    k = floor(r * count)
    for fits, index in fitting:
        if k < fits.bit_count():
            return count, fits, index, k
        k -= fits.bit_count()
    raise AssertionError("k < count")
