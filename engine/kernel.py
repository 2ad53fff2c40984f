"""The rules kernel: a tile goes onto the layout, is scored, and may end the hand.

`play_tile` is the only code that places a tile (rules.md decisions 1-3: which sides a tile
shows, what each end counts, which doubles are spinners), scores the play (§3, the `scoring`
and `scale` options, an exact target's void plays, decision 10) and says whether the play ends
the hand: `DOMINO` (the hand is empty), `BLOCKED` (nobody can play or draw, decision 16) or
`TARGET` (an exact target reached in the middle of a hand). `apply` (engine.game) calls it for
every play; so does every playout (engine.playout), and through those the bots' search. The
settling of a hand that ended is engine.rounds `settle`.

`play_score` is what `play_tile` would score, without building anything (for the candidates
of a choice); `stuck` says whether a draw left the hand blocked, `may_draw` whether a seat that
cannot play may draw, and `open_ends` which ends may take a tile (one per layout tile and
value, the spinner's alone while `all_four_first` holds it open).

The layout is plain tuples (engine.layout); the new layout is built from the old one without
copying what did not change, and the common plays -- an ordinary tile on a line's end -- take
the short branches. Imports only engine modules.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.layout import End, Ends, Node, open_mask
from engine.rules import Rules
from engine.scoring import matching_points
from engine.tiles import BIT, HIGH, IS_DOUBLE, LOW, OTHER_HALF, VALUE_MASK

DOMINO, TARGET, BLOCKED = "domino", "target", "blocked"
"""How a play can end a hand (also the `end` of a finished round)."""

Placed = tuple[Node, Ends, int, int, str | None]
"""`play_tile`'s answer: (the new node, the new ends, the end total, the points, the hand's end
or None)."""

_HORIZONTAL = ("L", "R", "O")


def play_tile(rules: Rules, nodes: Sequence[Node], ends: Ends, index: int, tile: int,
              hands: Sequence[int] | None = None, seat: int = 0, score: int = 0,
              stock: int = 0) -> Placed:
    """Play `tile` on `ends[index]` (`index` -1: lead it onto the empty layout).

    Returns the node the tile becomes (append it to `nodes`), the new ends, their total and the
    points the play scores. With `hands` (every seat's bitmask before the play), `seat` (the
    player), `score` (its side's total) and `stock` (boneyard tiles left) it also says how the
    play ends the hand: `DOMINO` (its points are then as scored: `settle` voids them together
    with the bonus), `BLOCKED` or `TARGET`, else None; the points of a play that does not end
    the hand by domino are 0 when they would pass an exact target. Without `hands`, the points
    are as scored and the end is None. The caller has checked that the tile fits that end (and
    may be played); nothing here raises. The arguments are positional on the hot path.
    """
    if index < 0:  # the lead: L shows the high half, R the low half (decision 1)
        spinner = IS_DOUBLE[tile] and rules.spinners != "none"
        node: Node = (tile, None, None, None, spinner)
        new_ends: Ends = ((0, "L", HIGH[tile], 1, tile), (0, "R", LOW[tile], 1, tile))
    else:
        parent, side, value, _, _ = ends[index]
        double = IS_DOUBLE[tile]
        spinner = False
        if double:
            spinners = rules.spinners
            if spinners == "all_doubles":
                spinner = True
            elif spinners == "first_double":  # the first double played is the spinner
                for placed in nodes:
                    if placed[4]:
                        break
                else:
                    spinner = True
        node = (tile, parent, side, value, spinner)
        if side == "O":
            # the one free end of a tile in the line: nothing else on the layout changes (a
            # double there is never a spinner with other free sides)
            if double:
                new_end: End = (len(nodes), "R" if spinner else "O", value, 2, tile)
            else:
                new_end = (len(nodes), "O", OTHER_HALF[tile][value], 1, tile)
            if len(ends) == 2:
                new_ends = (ends[1 - index], new_end)
            else:
                new_ends = (*ends[:index], *ends[index + 1:], new_end)
        else:
            new_ends = _attach(nodes, ends, index, tile, spinner, len(nodes))
    line = len(new_ends) == 2
    if line:
        end0, end1 = new_ends
        total = end0[2] * end0[3] + end1[2] * end1[3]
    else:
        total = shown = 0  # shown: the tiles that fit some end (open_mask, unrestricted)
        for e in new_ends:
            total += e[2] * e[3]
            shown |= VALUE_MASK[e[2]]
    by_total = rules.points_by_total
    points = by_total[total] if by_total else matching_points(new_ends)
    if hands is None:
        return node, new_ends, total, points, None
    bit = BIT[tile]
    if hands[seat] == bit:
        return node, new_ends, total, points, DOMINO
    if points and rules.exact and score + points > rules.target:
        points = 0  # decision 10: a play that would overshoot scores nothing
    if not (rules.drawing and stock > rules.boneyard_reserve):  # may_draw, inlined
        if rules.all_four_first:
            fits = open_mask(new_ends, True) & ~bit
        elif line:
            fits = (VALUE_MASK[end0[2]] | VALUE_MASK[end1[2]]) & ~bit
        else:
            fits = shown & ~bit
        for h in hands:
            if h & fits:
                break
        else:
            return node, new_ends, total, points, BLOCKED
    if points and rules.exact and score + points == rules.target:
        return node, new_ends, total, points, TARGET
    return node, new_ends, total, points, None


def play_score(rules: Rules, nodes: Sequence[Node], ends: Ends, index: int, tile: int,
               total: int) -> int:
    """The points `play_tile` scores for this play (as scored: no exact-target voiding), with
    `total` the end total now; nothing is built.

    A tile on an ordinary tile's end ("O") changes only that end: the end total loses what the
    end showed and gains what the tile's outer side shows (both halves of a double, decision
    2), so under the `scoring` options that go by the total it is worked out from `total`;
    every other play is `play_tile`'s own. For scoring the candidates of a choice.
    """
    by_total = rules.points_by_total
    if by_total and index >= 0:
        end = ends[index]
        if end[1] == "O":
            value = end[2]
            shown = 2 * value if IS_DOUBLE[tile] else OTHER_HALF[tile][value]
            return by_total[total - value * end[3] + shown]
    return play_tile(rules, nodes, ends, index, tile)[3]


def _attach(nodes: Sequence[Node], ends: Ends, index: int, tile: int, spinner: bool,
            at: int) -> Ends:
    """The ends after playing `tile` (node `at`) on `ends[index]`, a side other than "O"."""
    parent, side, value, _, parent_tile = ends[index]
    rest = ends[:index] + ends[index + 1:]
    if IS_DOUBLE[parent_tile] and side in _HORIZONTAL:
        free = [i for i, e in enumerate(rest) if e[0] == parent and e[1] in _HORIZONTAL]
        if len(free) == 1:  # a lone lead double's other side now shows both halves
            i = free[0]
            p, s, v, _, t = rest[i]
            rest = (*rest[:i], (p, s, v, 2, t), *rest[i + 1:])
        elif not free and nodes[parent][4]:  # a spinner's vertical sides open
            up: End = (parent, "U", value, 0, parent_tile)
            rest = (*rest, up, (parent, "D", value, 0, parent_tile))
    if IS_DOUBLE[tile]:
        new_end: End = (at, "R" if spinner else "O", value, 2, tile)
    else:
        outer = LOW[tile] if HIGH[tile] == value else HIGH[tile]
        new_end = (at, "O", outer, 1, tile)
    return (*rest, new_end)


def may_draw(rules: Rules, stock: int) -> bool:
    """Whether a seat that cannot play may draw, with `stock` tiles left in the boneyard."""
    return rules.drawing and stock > rules.boneyard_reserve


def stuck(rules: Rules, ends: Ends, hands: Sequence[int], stock: int) -> bool:
    """Whether the hand is blocked: nobody may draw and no hand holds a tile that fits."""
    if rules.drawing and stock > rules.boneyard_reserve:  # may_draw, inlined
        return False
    fits = open_mask(ends, rules.all_four_first)
    for h in hands:  # noqa: SIM110 (faster than all() over a generator)
        if h & fits:
            return False
    return True


def open_ends(ends: Ends, all_four_first: bool) -> list[int]:
    """The indexes of the ends that may take a tile now, one per layout tile and value.

    The two sides of a lone lead double, or a spinner's sides, are one place to play (a
    `Play` names the layout tile, and takes its first end that fits); under `all_four_first`
    only the spinner (node 0) takes tiles while it has a free side. The ends of one node are
    next to each other (engine.layout), so a repeat is always the previous end. `legal_moves`
    and the playouts write this out for a line (two ends).
    """
    only_spinner = all_four_first and any(e[0] == 0 for e in ends)
    out: list[int] = []
    node = value = -1
    for i, end in enumerate(ends):
        if end[0] != node or end[2] != value:
            node = end[0]
            value = end[2]
            if not (only_spinner and node):
                out.append(i)
    return out
