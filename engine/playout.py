"""Random playouts: finishing a hand with uniformly random legal moves, fast (for simulations).

`play_out_hand` makes exactly the moves `legal_moves` + `apply` would make for the same random
numbers (move k of the list, k = int(random() * len(list))), but keeps the position in local
variables instead of building a `GameState` and events for every move. The move that ends the
hand (or the game) goes through `apply`, so settling, bonuses and the next deal are the
engine's own. Imports engine modules and `random` only.
"""

from __future__ import annotations

import random

from engine.game import apply, legal_moves
from engine.layout import attach, open_mask
from engine.moves import DRAW, PLAYS
from engine.scoring import play_points
from engine.state import DREW, PASSED, PLAYED, GameState, LogEntry, make_state
from engine.tiles import HIGH, IS_DOUBLE, LOW, VALUE_MASK


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
    boneyard = state.boneyard_tiles
    drawn = 0
    nodes = list(state.nodes)
    ends = state.ends
    scores = list(state.scores)
    log: list[LogEntry] = list(state.log)
    turn = state.turn
    assert turn is not None
    while True:
        seat = turn
        hand = hands[seat]
        only_spinner = four_first and any(e[0] == 0 for e in ends)
        options: list[int] = []  # tile * 64 + end index, in legal_moves' order
        seen = 0
        for index, (node, _side, value, _halves, _on) in enumerate(ends):
            if only_spinner and node:
                continue
            key = 1 << (node * 7 + value)
            if seen & key:
                continue
            seen |= key
            fits = hand & VALUE_MASK[value]
            while fits:
                bit = fits & -fits
                options.append((bit.bit_length() - 1) * 64 + index)
                fits ^= bit
        if options:
            tile, index = divmod(options[int(rand() * len(options))], 64)
            parent, parent_side, value, _, on = ends[index]
            if IS_DOUBLE[tile] or IS_DOUBLE[on]:
                spinner = IS_DOUBLE[tile] and (spinners == "all_doubles" or (
                    spinners == "first_double" and not any(n[4] for n in nodes)))
                new_nodes, new_ends = attach(tuple(nodes), ends, index, tile, spinner)
                new_node = new_nodes[-1]
            else:
                outer = LOW[tile] if HIGH[tile] == value else HIGH[tile]
                new_node = (tile, parent, parent_side, value, False)
                new_ends = (*ends[:index], *ends[index + 1:], (len(nodes), "O", outer, 1, tile))
            total = 0
            mask = 0
            for e in new_ends:
                total += e[2] * e[3]
                mask |= VALUE_MASK[e[2]]
            if scoring == "fives":
                points = total // scale if total % 5 == 0 else 0
            elif scoring == "none":
                points = 0
            else:
                points = play_points(scoring, scale, total, new_ends)
            new_hand = hand ^ (1 << tile)
            side = side_of[seat]
            if points and exact and scores[side] + points > target:
                points = 0
            finished = new_hand == 0 or (points and exact and scores[side] + points == target)
            if not finished and not (drawing and len(boneyard) - drawn > reserve):
                if four_first:
                    mask = open_mask(new_ends, True)
                hands[seat] = new_hand
                finished = True
                for h in hands:
                    if h & mask:
                        finished = False
                        break
                hands[seat] = hand
            if finished:
                before = make_state(table, seat, tuple(scores), tuple(hands), boneyard[drawn:],
                                    tuple(nodes), ends, tuple(log))
                return apply(before, seat, PLAYS[tile][on])[0]
            hands[seat] = new_hand
            nodes.append(new_node)
            ends = new_ends
            scores[side] += points
            log.append((seat, PLAYED, tile, on, points, total))
            turn = seat + 1 if seat + 1 < players else 0
            continue
        rand()  # the only legal move is a draw or a pass: the choice still takes a number
        if drawing and len(boneyard) - drawn > reserve:
            tile = boneyard[drawn]
            if not (drawing and len(boneyard) - drawn - 1 > reserve):
                mask = open_mask(ends, four_first)
                if not any((h | (1 << tile) if s == seat else h) & mask
                           for s, h in enumerate(hands)):
                    before = make_state(table, seat, tuple(scores), tuple(hands),
                                        boneyard[drawn:], tuple(nodes), ends, tuple(log))
                    return apply(before, seat, DRAW)[0]
            hands[seat] = hand | 1 << tile
            drawn += 1
            log.append((seat, DREW, tile, -1, 0, -1))
        else:
            log.append((seat, PASSED, -1, -1, 0, -1))
            turn = seat + 1 if seat + 1 < players else 0
