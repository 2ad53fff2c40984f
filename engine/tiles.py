"""Tiles of the double-six set and their integer encoding used on the hot path.

A tile's `index` (0..27) is `high*(high+1)//2 + low`; hands are bitmasks over
those indexes (hand contents and pips come from per-7-bit tables). Imports only
`engine.errors`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.errors import InvalidNotation, shown

_DIGITS = "0123456789"


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """One domino. `Tile(4, 6) == Tile(6, 4)`; written with the higher half first."""

    high: int
    low: int
    index: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        high, low = self.high, self.low
        if (
            type(high) is not int
            or type(low) is not int
            or not 0 <= high <= 6
            or not 0 <= low <= 6
        ):
            raise InvalidNotation(
                "bad_tile", f"a tile has two halves from 0 to 6, not {shown(high)}, {shown(low)}"
            )
        if low > high:
            high, low = low, high
            object.__setattr__(self, "high", high)
            object.__setattr__(self, "low", low)
        object.__setattr__(self, "index", high * (high + 1) // 2 + low)

    @classmethod
    def parse(cls, text: object) -> Tile:
        """Read `"a-b"` (either half first); anything else raises `InvalidNotation`."""
        if (
            isinstance(text, str)
            and len(text) == 3
            and text[1] == "-"
            and text[0] in _DIGITS
            and text[2] in _DIGITS
        ):
            a, b = int(text[0]), int(text[2])
            if a <= 6 and b <= 6:
                return TILES[a * (a + 1) // 2 + b if a >= b else b * (b + 1) // 2 + a]
        raise InvalidNotation("bad_tile", f"{shown(text)} is not a tile (write it like \"6-4\")")

    @property
    def pips(self) -> int:
        return self.high + self.low

    @property
    def is_double(self) -> bool:
        return self.high == self.low

    def __str__(self) -> str:
        return f"{self.high}-{self.low}"


TILES: tuple[Tile, ...] = tuple(Tile(h, lo) for h in range(7) for lo in range(h + 1))
"""All 28 tiles; `TILES[i].index == i`."""

HIGH: tuple[int, ...] = tuple(t.high for t in TILES)
LOW: tuple[int, ...] = tuple(t.low for t in TILES)
PIPS: tuple[int, ...] = tuple(t.pips for t in TILES)
IS_DOUBLE: tuple[bool, ...] = tuple(t.is_double for t in TILES)
NAMES: tuple[str, ...] = tuple(str(t) for t in TILES)
DOUBLES_MASK: int = sum(1 << t.index for t in TILES if t.is_double)
FULL_SET: int = (1 << 28) - 1
VALUE_MASK: tuple[int, ...] = tuple(
    sum(1 << t.index for t in TILES if v in (t.high, t.low)) for v in range(7)
)
"""VALUE_MASK[v]: the bitmask of the tiles showing pip value v on either half."""
OTHER_HALF: tuple[tuple[int, ...], ...] = tuple(
    tuple(t.low if v == t.high else t.high for v in range(7)) for t in TILES
)
"""OTHER_HALF[i][v]: the half of tile i left showing when its half `v` is matched."""
BIT: tuple[int, ...] = tuple(1 << i for i in range(28))
"""BIT[i]: the bitmask of tile i alone."""


def tile_index(text: object) -> int:
    """The index of the tile written `text` (raises `InvalidNotation`)."""
    return Tile.parse(text).index


_TILES_BY_BYTE = tuple(
    tuple(tuple(7 * chunk + b for b in range(6, -1, -1) if bits >> b & 1) for bits in range(128))
    for chunk in range(4)
)
"""_TILES_BY_BYTE[c][bits]: the tiles of 7-bit chunk c of a hand mask, highest first."""
_PIPS_BY_BYTE = tuple(
    tuple(sum(PIPS[t] for t in tiles) for tiles in chunk) for chunk in _TILES_BY_BYTE
)
"""_PIPS_BY_BYTE[c][bits]: the pips of those tiles."""
_T0, _T1, _T2, _T3 = _TILES_BY_BYTE
_P0, _P1, _P2, _P3 = _PIPS_BY_BYTE


def mask_tile_tuple(mask: int) -> tuple[int, ...]:
    """The tile indexes set in a hand bitmask, highest tile first."""
    return _T3[mask >> 21] + _T2[mask >> 14 & 127] + _T1[mask >> 7 & 127] + _T0[mask & 127]


def mask_tiles(mask: int) -> list[int]:
    """The tile indexes set in a hand bitmask, highest tile first."""
    return list(mask_tile_tuple(mask))


def mask_pips(mask: int) -> int:
    """The pips of a hand bitmask."""
    return _P3[mask >> 21] + _P2[mask >> 14 & 127] + _P1[mask >> 7 & 127] + _P0[mask & 127]


def hand_mask(tiles: Iterable[int]) -> int:
    """The bitmask of a collection of tile indexes."""
    mask = 0
    for t in tiles:
        mask |= BIT[t]
    return mask
