"""Playouts: the current hand played to its end by a policy, fast (simulations and bots).

`play_out_hand(state, rng, policy)` finishes the hand and returns the state `apply` reaches
(the next round's, or the finished game's); `finish_hand(state, policy, rng, first)` makes
the same moves but stops at the hand's end and returns its `Settlement` (engine.rounds), with
no records, events or next deal -- the strong bot evaluates its candidates with it.

Policies: `RANDOM` makes exactly the moves `legal_moves` + `apply` would make for the same
random numbers (move k of the list, k = int(random() * len(list))); `GREEDY` makes the moves
the greedy bot would (`greedy_key`: most points now, then the heaviest tile, a double first,
the higher tile, the end on the layout tile placed first) and takes no random numbers.
`CAUTIOUS` (the strong bot's model of its own side's later plays) takes the most points now
less the most the next seat could score straight after, from the hand it holds in the
playout; then a play that leaves the next seat nothing that fits; then greedy's order. In
`finish_hand` it is played by the seats of the `careful` bitmask only, the others greedy; a
lead, and the draws for a double to lead, are greedy's.

Every tile goes through engine.kernel `play_tile`, as in `apply`; the position lives in local
variables instead of a new `GameState` and events for every move. `RANDOM` never builds the
list of moves: it counts the tiles that fit each open end (the list's order is per end, tiles
ascending) and takes tile k of them. The lead (and drawing for a double to lead) goes through
`legal_moves` and `apply`. The move that ends the hand is settled by engine.rounds `settle`,
and in `play_out_hand` recorded by `close_round` with the next deal, as `apply` does it; a
test checks that the state reached is the one `legal_moves` + `apply` reach. Imports engine
modules, `math` and `random` only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from math import floor

from engine.errors import IllegalMove
from engine.game import apply, legal_moves, resolve_play
from engine.kernel import BLOCKED, may_draw, open_ends, play_score, play_tile, stuck
from engine.layout import Ends, Node, end_total
from engine.moves import Move, Play
from engine.rounds import Settlement, close_round, settle
from engine.rules import Rules
from engine.state import DREW, PASSED, PLAYED, GameState, LogEntry, Table, make_state
from engine.tiles import BIT, IS_DOUBLE, PIPS, VALUE_MASK

RANDOM = "random"
GREEDY = "greedy"
CAUTIOUS = "cautious"
POLICIES: tuple[str, ...] = (RANDOM, GREEDY, CAUTIOUS)

_RANK_BITS: tuple[int, ...] = tuple(
    sorted(range(28), key=lambda t: (PIPS[t], IS_DOUBLE[t], t)).index(t) << 5 for t in range(28)
)
"""Greedy's order between tiles (heaviest, then doubles, then the higher tile), as bits 5-9."""


def greedy_points(rules: Rules, points: int, domino: bool, score: int) -> int:
    """The points greedy counts for a play scoring `points` (as scored) for a side at
    `score`: none when they would pass an exact target, a domino's together with a `fixed`
    bonus (any other bonus counts as nothing: the other hands are hidden)."""
    if rules.exact:
        bonus = rules.bonus_points if domino and rules.bonus == "fixed" else 0
        if score + points + bonus > rules.target:
            return 0
    return points


def greedy_key(points: int, tile: int, node: int) -> int:
    """Greedy's order as one number, the largest first: `points` (as `greedy_points` counts
    them), then the heaviest tile, a double before a non-double, the higher tile, and then the
    end on the layout tile placed first (`node`, the end's layout node; 0 for a lead)."""
    return points << 10 | _RANK_BITS[tile] | 31 - node


def _policy(policy: str) -> bool:
    """Whether `policy` is greedy or cautious (else random); raises ValueError for an unknown
    one."""
    if policy in (GREEDY, CAUTIOUS):
        return True
    if policy == RANDOM:
        return False
    raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")


def play_out_hand(state: GameState, rng: random.Random, policy: str = RANDOM) -> GameState:
    """Play `policy`'s moves until the current hand ends; return the state `apply` reaches.

    That state is the next round's (or the finished game's). A finished game is returned as
    is. `rng` is read only by `RANDOM`.
    """
    if state.table.game_over:
        return state
    greedy = _policy(policy)
    rand = rng.random
    state, first = _lead_phase(state, rand, greedy)
    result = _run(state, rand, greedy, first, True, -1 if policy == CAUTIOUS else 0)
    assert isinstance(result, GameState)
    return result


def finish_hand(state: GameState, policy: str = GREEDY, rng: random.Random | None = None,
                first: Play | None = None, careful: int = -1) -> Settlement:
    """Play the current hand to its end with `policy`, after `first` (a legal play of the seat
    to move) when given; return how the hand was settled.

    The settlement is the one `apply` would record (its `totals`, and `game_winner` when the
    game ended in the hand). `RANDOM` needs `rng`. With `CAUTIOUS`, the seats in `careful`
    (a bitmask, all of them by default) play cautiously and the others greedily. Raises
    `IllegalMove` for a finished game, a state between rounds, or a `first` that is not
    legal.
    """
    if state.table.game_over:
        raise IllegalMove("game_over", "the game is over")
    seat = state.turn
    if seat is None:
        raise IllegalMove("hand_over", "the hand has ended")
    greedy = _policy(policy)
    if not greedy and rng is None:
        raise ValueError("the random policy needs an rng")
    rand = rng.random if rng is not None else _no_numbers
    target: tuple[int, int] | None
    if first is not None:
        index, _ = resolve_play(state, seat, first)
        target = (index, first.tile.index)
    else:
        state, target = _lead_phase(state, rand, greedy)
    cautious = careful if policy == CAUTIOUS else 0
    result = _run(state, rand, greedy, target, False, cautious)
    assert isinstance(result, Settlement)
    return result


def _no_numbers() -> float:
    raise AssertionError("the greedy policy takes no random numbers")


def _lead_phase(state: GameState, rand: Callable[[], float],
                greedy: bool) -> tuple[GameState, tuple[int, int] | None]:
    """Before the lead: apply the draws for a double and return the lead as (-1, tile)."""
    while not state.nodes:
        seat = state.turn
        assert seat is not None
        moves = legal_moves(state)
        move = _greedy_lead(state, moves) if greedy else moves[int(rand() * len(moves))]
        if type(move) is Play:
            return state, (-1, move.tile.index)
        state = apply(state, seat, move)[0]
    return state, None


def _greedy_lead(state: GameState, moves: list[Move]) -> Move:
    best, chosen = -1, moves[0]
    rules = state.table.rules
    seat = state.turn
    assert seat is not None
    score = state.scores[state.table.side_of[seat]]
    for move in moves:
        if type(move) is Play:
            tile = move.tile.index
            points = play_score(rules, (), (), -1, tile, 0)
            domino = state.hand_masks[seat] == 1 << tile
            key = greedy_key(greedy_points(rules, points, domino, score), tile, 0)
            if key > best:
                best, chosen = key, move
    return chosen


def _run(state: GameState, rand: Callable[[], float], greedy: bool,
         first: tuple[int, int] | None, to_state: bool,
         cautious: int = 0) -> GameState | Settlement:
    """The playout loop, from a state whose layout has tiles unless `first` is the lead.

    `cautious` (a bitmask of seats, with `greedy`): those seats play `CAUTIOUS`."""
    table = state.table
    rules = table.rules
    players = rules.players
    four_first = rules.all_four_first
    exact = rules.exact
    side_of = table.side_of
    hands = list(state.hand_masks)
    boneyard = state.boneyard_tiles
    drawn = 0
    stock = len(boneyard)
    nodes = list(state.nodes)
    ends = state.ends
    scores = list(state.scores)
    log: list[LogEntry] = list(state.log) if to_state else []  # `settle` reads no log
    turn = state.turn
    assert turn is not None
    total = end_total(ends)  # the greedy policy scores its candidates from it
    index = tile = 0
    can_draw = may_draw(rules, stock)  # changes only when a tile is drawn
    while True:
        seat = turn
        hand = hands[seat]
        placed = None
        if first is not None:
            index, tile = first
            first = None
            placed = play_tile(rules, nodes, ends, index, tile, hands, seat,
                               scores[side_of[seat]], stock)
        elif cautious >> seat & 1:
            found = _cautious(rules, nodes, ends, total, hand,
                              hands[seat + 1 if seat + 1 < players else 0],
                              scores[side_of[seat]])
            if found is not None:
                index, tile = found
                placed = play_tile(rules, nodes, ends, index, tile, hands, seat,
                                   scores[side_of[seat]], stock)
        elif greedy:
            score = scores[side_of[seat]]
            only_spinner = four_first and any(e[0] == 0 for e in ends)
            best = -1
            last_node = last_value = -1
            for i, end in enumerate(ends):  # open_ends, written out
                on_node = end[0]
                if on_node == last_node and end[2] == last_value:
                    continue  # the same place as the previous end
                last_node = on_node
                last_value = end[2]
                if only_spinner and on_node:
                    continue
                fits = hand & VALUE_MASK[last_value]
                while fits:
                    bit = fits & -fits
                    fits ^= bit
                    t = bit.bit_length() - 1
                    points = play_score(rules, nodes, ends, i, t, total)
                    if exact:
                        points = greedy_points(rules, points, hand == bit, score)
                    key = points << 10 | _RANK_BITS[t] | 31 - on_node  # greedy_key, written out
                    if key > best:
                        best = key
                        index = i
                        tile = t
            if best >= 0:
                placed = play_tile(rules, nodes, ends, index, tile, hands, seat, score, stock)
        else:
            r = rand()  # every move takes one number, a draw or a pass too
            # The plays legal_moves would list, counted per end in its order (tiles ascending):
            # play k of `count` is tile k (counting up) of `fits`, the tiles that fit end `index`.
            if len(ends) == 2 and not four_first:  # open_ends written out for a line
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
                placed = play_tile(rules, nodes, ends, index, tile, hands, seat,
                                   scores[side_of[seat]], stock)
        if placed is not None:
            node, new_ends, end_total_now, points, ended = placed
            if ended is not None:
                hands[seat] = hand ^ BIT[tile]
                settled = settle(table, scores, hands, ended, seat, points)
                if not to_state:
                    return settled
                nodes.append(node)
                log.append((seat, PLAYED, tile, ends[index][4] if index >= 0 else -1,
                            settled.points, end_total_now))
                return _close(table, settled, scores, hands, boneyard[drawn:], nodes,
                              new_ends, log)
            if to_state:
                log.append((seat, PLAYED, tile, ends[index][4] if index >= 0 else -1, points,
                            end_total_now))
            hands[seat] = hand ^ BIT[tile]
            nodes.append(node)
            ends = new_ends
            total = end_total_now
            if points:
                scores[side_of[seat]] += points
            turn = seat + 1 if seat + 1 < players else 0
            continue
        if can_draw:  # the only legal move is a draw, or else a pass
            tile = boneyard[drawn]
            drawn += 1
            stock -= 1
            can_draw = may_draw(rules, stock)
            hands[seat] = hand | BIT[tile]
            if stuck(rules, ends, hands, stock):
                settled = settle(table, scores, hands, BLOCKED, seat, 0)
                if not to_state:
                    return settled
                log.append((seat, DREW, tile, -1, 0, -1))
                return _close(table, settled, scores, hands, boneyard[drawn:], nodes, ends,
                              log)
            if to_state:
                log.append((seat, DREW, tile, -1, 0, -1))
        else:
            if to_state:
                log.append((seat, PASSED, -1, -1, 0, -1))
            turn = seat + 1 if seat + 1 < players else 0


def _cautious(rules: Rules, nodes: list[Node], ends: Ends, total: int, hand: int, after: int,
              score: int) -> tuple[int, int] | None:
    """`CAUTIOUS`'s play (end index, tile) from `hand`, or None when no tile fits.

    The most points now (as greedy counts them) less the most the next seat, holding
    `after`, could score straight after it; then a play that leaves the next seat no tile
    that fits; then greedy's order. A play that empties the hand leaves nothing to answer.
    """
    four_first = rules.all_four_first
    exact = rules.exact
    best: int | None = None
    chosen: tuple[int, int] | None = None
    for i in open_ends(ends, four_first):
        end = ends[i]
        fits = hand & VALUE_MASK[end[2]]
        while fits:
            bit = fits & -fits
            fits ^= bit
            t = bit.bit_length() - 1
            points = play_score(rules, nodes, ends, i, t, total)
            if exact:
                points = greedy_points(rules, points, hand == bit, score)
            blocks = 0
            if hand != bit:
                node, new_ends, new_total, _, _ = play_tile(rules, nodes, ends, i, t)
                nodes.append(node)
                reply = 0
                for j in open_ends(new_ends, four_first):
                    answers = after & VALUE_MASK[new_ends[j][2]]
                    if answers:
                        blocks = 1
                    while answers:
                        b = answers & -answers
                        answers ^= b
                        r = play_score(rules, nodes, new_ends, j, b.bit_length() - 1, new_total)
                        if r > reply:
                            reply = r
                nodes.pop()
                points -= reply
                blocks ^= 1
            key = (points << 11 | blocks << 10 | _RANK_BITS[t] | 31 - end[0])
            if best is None or key > best:
                best = key
                chosen = (i, t)
    return chosen


def _close(table: Table, settled: Settlement, scores: list[int], hands: list[int],
           boneyard: tuple[int, ...], nodes: list[Node], ends: Ends,
           log: list[LogEntry]) -> GameState:
    """The state `apply` reaches from the hand's last move: recorded, and the next deal."""
    after = make_state(table, None, tuple(scores), tuple(hands), boneyard, tuple(nodes), ends,
                       tuple(log))
    return close_round(after, settled, [], True)


def _choose(ends: Ends, hand: int, four_first: bool, r: float) -> tuple[int, int, int, int]:
    """(count, fits, index, k) as in the random branch of `_run`, for any layout."""
    count = 0
    fitting: list[tuple[int, int]] = []  # (tiles that fit, end index)
    for index in open_ends(ends, four_first):
        fits = hand & VALUE_MASK[ends[index][2]]
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
