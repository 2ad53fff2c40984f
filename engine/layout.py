"""The layout: tiles on the table, their open ends and what each end counts (rules.md §2).

Representation (plain tuples, shared between states):
- a node is `(tile, parent, side, inner, spinner)`: tile index, index of the node it was
  played against (None for the lead), the side of that parent it covers, the half that
  touches the parent, and whether it is a spinner;
- an end is `(node, side, value, halves, tile)`: an open place on `node` (whose tile
  index is `tile`) on `side` ("L"/"R" horizontal, "U"/"D" vertical, "O" an ordinary
  tile's outer end) showing pip `value`; `halves` is how many halves it adds to the end
  total (2 for a double with one free horizontal side, 1 each for a lone lead double's
  two sides, 0 for a spinner's uncovered vertical side).
Ends of one node are kept in the order they are taken (L before R, U before D).
Imports only `engine.tiles`.
"""

from __future__ import annotations

from engine.tiles import HIGH, IS_DOUBLE, LOW, VALUE_MASK

Node = tuple[int, int | None, str | None, int | None, bool]
End = tuple[int, str, int, int, int]
Nodes = tuple[Node, ...]
Ends = tuple[End, ...]

_HORIZONTAL = ("L", "R", "O")


def lead(tile: int, spinner: bool) -> tuple[Nodes, Ends]:
    """The layout after leading `tile`."""
    return (
        ((tile, None, None, None, spinner),),
        ((0, "L", HIGH[tile], 1, tile), (0, "R", LOW[tile], 1, tile)),
    )


def attach(nodes: Nodes, ends: Ends, index: int, tile: int, spinner: bool) -> tuple[Nodes, Ends]:
    """The layout after playing `tile` on `ends[index]` (`spinner`: the new tile is one)."""
    parent, side, value, _, parent_tile = ends[index]
    node = len(nodes)
    if not IS_DOUBLE[parent_tile] and not IS_DOUBLE[tile]:  # the common case, kept short
        outer = LOW[tile] if HIGH[tile] == value else HIGH[tile]
        return (
            (*nodes, (tile, parent, side, value, spinner)),
            (*ends[:index], *ends[index + 1:], (node, "O", outer, 1, tile)),
        )
    rest = ends[:index] + ends[index + 1:]
    if IS_DOUBLE[parent_tile] and side in _HORIZONTAL:
        free = [i for i, e in enumerate(rest) if e[0] == parent and e[1] in _HORIZONTAL]
        if len(free) == 1:
            i = free[0]
            p, s, v, _, t = rest[i]
            rest = (*rest[:i], (p, s, v, 2, t), *rest[i + 1:])
        elif not free and nodes[parent][4]:
            up: End = (parent, "U", value, 0, parent_tile)
            rest = (*rest, up, (parent, "D", value, 0, parent_tile))
    if IS_DOUBLE[tile]:
        new_end: End = (node, "R" if spinner else "O", value, 2, tile)
    else:
        outer = LOW[tile] if HIGH[tile] == value else HIGH[tile]
        new_end = (node, "O", outer, 1, tile)
    return (*nodes, (tile, parent, side, value, spinner)), (*rest, new_end)


def end_total(ends: Ends) -> int:
    """The sum the open ends show (rules.md §2)."""
    total = 0
    for e in ends:
        total += e[2] * e[3]
    return total


def restricted(ends: Ends, all_four_first: bool) -> bool:
    """Under `all_four_first`, only the spinner (node 0) may take tiles while it has a free side."""
    if not all_four_first:
        return False
    return any(e[0] == 0 for e in ends)


def open_mask(ends: Ends, all_four_first: bool) -> int:
    """Bitmask of every tile that fits some end that may take a tile now."""
    only_spinner = all_four_first and restricted(ends, True)
    mask = 0
    for e in ends:
        if only_spinner and e[0] != 0:
            continue
        mask |= VALUE_MASK[e[2]]
    return mask


def find_end(ends: Ends, tile: int, on: int, all_four_first: bool) -> int:
    """Index of the end of layout tile `on` that `tile` takes, or -1."""
    only_spinner = all_four_first and restricted(ends, True)
    high, low = HIGH[tile], LOW[tile]
    for i, e in enumerate(ends):
        if e[4] == on and (e[2] == high or e[2] == low):
            if only_spinner and e[0] != 0:
                return -1
            return i
    return -1


def candidate_ons(ends: Ends, tile: int, all_four_first: bool) -> list[int]:
    """The distinct layout tiles that could take `tile` now."""
    only_spinner = restricted(ends, all_four_first)
    high, low = HIGH[tile], LOW[tile]
    found: list[int] = []
    for e in ends:
        fits = e[2] == high or e[2] == low
        if fits and not (only_spinner and e[0] != 0) and e[4] not in found:
            found.append(e[4])
    return found
