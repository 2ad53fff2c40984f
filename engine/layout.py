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
Ends of one node are next to each other, in the order they are taken (L before R, U before
D): a lone lead double's two sides are the first two ends, and a spinner's vertical sides
open together, at the end of the tuple.
Tiles are placed by engine.kernel `play_tile` alone; this module reads layouts. Imports only
`engine.tiles`.
"""

from __future__ import annotations

from engine.tiles import HIGH, LOW, VALUE_MASK

Node = tuple[int, int | None, str | None, int | None, bool]
End = tuple[int, str, int, int, int]
Nodes = tuple[Node, ...]
Ends = tuple[End, ...]


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


def end_index(ends: Ends, node: int, side: str) -> int:
    """Index of the open end on `side` of layout node `node`, or -1."""
    for i, e in enumerate(ends):
        if e[0] == node and e[1] == side:
            return i
    return -1
