"""Sampling deals of the unseen tiles that agree with everything a seat knows.

A sample gives every hidden slot of `Knowledge.slots` one unseen tile the slot allows,
and the rest to the boneyard in a random order. When no slot forbids an unseen tile, one
shuffle deals them all; otherwise slots are filled most-constrained first with a random
allowed tile (picked from the bitmask); if that greedy pass corners itself, augmenting
paths (bipartite matching) repair it, so sampling never stalls while a consistent
deal exists, and one always does (the real deal). Imports only `engine.bots`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engine.bots.knowledge import Knowledge


@dataclass(frozen=True, slots=True)
class Deal:
    """One guess at the hidden tiles: every seat's hand (bitmasks) and the boneyard order."""

    hands: tuple[int, ...]
    boneyard: tuple[int, ...]


def _tiles(mask: int) -> list[int]:
    out = []
    while mask:
        bit = mask & -mask
        out.append(bit.bit_length() - 1)
        mask ^= bit
    return out


def _augment(
    slot: int,
    forbids: list[int],
    tiles: list[int],
    owner: dict[int, int],
    seen: set[int],
    rng: random.Random,
) -> bool:
    order = [t for t in tiles if not forbids[slot] >> t & 1 and t not in seen]
    rng.shuffle(order)
    for t in order:
        seen.add(t)
        holder = owner.get(t)
        if holder is None or _augment(holder, forbids, tiles, owner, seen, rng):
            owner[t] = slot
            return True
    return False


def _nth(mask: int, k: int) -> int:
    """The tile of the k-th lowest set bit of `mask` (k < its bit count)."""
    while k:
        mask &= mask - 1
        k -= 1
    return (mask & -mask).bit_length() - 1


def sample_deal(knowledge: Knowledge, rng: random.Random) -> Deal:
    """A random deal of the unseen tiles consistent with `knowledge`."""
    unseen = knowledge.unseen
    slots = knowledge.slots
    nslots = len(slots)
    randbelow = rng._randbelow  # type: ignore[attr-defined]  # randrange's own, minus checks
    if all(not f & unseen for _, f in slots):
        # Nothing forbidden among the unseen tiles: a shuffle deals every slot.
        tiles = _tiles(unseen)
        rng.shuffle(tiles)
        hands = [0] * knowledge.rules.players
        hands[knowledge.seat] = knowledge.hand
        for (seat, _), t in zip(slots, tiles, strict=False):
            hands[seat] |= 1 << t
        return Deal(tuple(hands), tuple(tiles[nslots:]))
    forbids = [f for _, f in slots]
    order = sorted(
        range(nslots),
        key=lambda i: ((unseen & ~forbids[i]).bit_count(), rng.random()),
    )
    free = unseen
    owner: dict[int, int] = {}
    stuck: list[int] = []
    for i in order:
        allowed = free & ~forbids[i]
        if not allowed:
            stuck.append(i)
            continue
        t = _nth(allowed, randbelow(allowed.bit_count()))
        owner[t] = i
        free &= ~(1 << t)
    if stuck:
        tiles = _tiles(unseen)
        for i in stuck:
            if not _augment(i, forbids, tiles, owner, set(), rng):
                # No deal satisfies every constraint (a view this model misreads):
                # give the slot any free tile rather than fail.
                rest = [t for t in tiles if t not in owner]
                if rest:
                    owner[rest[rng.randrange(len(rest))]] = i
    hands = [0] * knowledge.rules.players
    hands[knowledge.seat] = knowledge.hand
    placed = 0
    for t, i in owner.items():
        hands[slots[i][0]] |= 1 << t
        placed |= 1 << t
    rest = _tiles(unseen & ~placed)
    rng.shuffle(rest)
    return Deal(tuple(hands), tuple(rest))
