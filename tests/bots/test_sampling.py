"""Sampled deals agree with everything the seat knows, and sampling never stalls."""

from __future__ import annotations

import math
import random

import pytest

from engine import Draw, Pass, apply, game_from_deal, legal_moves, move_from_data, new_game, view
from engine.bots.knowledge import GREEDY_MIX, Knowledge
from engine.bots.sampler import sample_deal
from engine.layout import open_mask
from engine.tiles import DOUBLES_MASK, FULL_SET, tile_index
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES

Event = tuple[int, str, int]
"""(seat, "draw" or "pass", bitmask of the tiles that fitted then)."""


def _mask(names: list[str]) -> int:
    return sum(1 << tile_index(n) for n in names)


def _check_sample(knowledge: Knowledge, seen: dict[str, object], events: list[Event],
                  hands: tuple[int, ...], boneyard: tuple[int, ...]) -> None:
    seat = knowledge.seat
    layout = _mask([n["tile"] for n in seen["layout"]])  # type: ignore[attr-defined]
    assert hands[seat] == _mask(seen["hand"])  # type: ignore[arg-type]
    assert [h.bit_count() for h in hands] == seen["hand_counts"]
    assert len(boneyard) == seen["boneyard"]
    everything = layout
    for h in hands:
        assert everything & h == 0
        everything |= h
    for t in boneyard:
        assert not everything >> t & 1
        everything |= 1 << t
    assert everything == FULL_SET
    for i, (s, kind, fitted) in enumerate(events):
        if s == seat:
            continue
        later_draws = sum(1 for s2, k2, _ in events[i + 1:] if s2 == s and k2 == "draw")
        fitting = (hands[s] & fitted).bit_count()
        if kind == "pass":
            # After a pass nothing more is drawn: the seat still holds only misfits.
            assert fitting == 0
        else:
            # Only tiles drawn after this draw can fit the ends open at it.
            assert fitting <= later_draws


def _play_and_check(preset: str, players: int, seed: int) -> int:
    state = new_game(preset, players, seed)
    rng = random.Random(seed)
    events: list[Event] = []
    round_no = 0
    checked = 0
    for _ in range(250):
        if state.game_over:
            break
        if state.round != round_no:
            round_no, events = state.round, []
        seat = state.turn
        assert seat is not None
        seen = view(state, seat)
        knowledge = Knowledge.from_view(seen)
        real = state.hand_masks
        for s in range(players):
            if s != seat:
                # The real deal is always one the slots allow (the model is sound).
                slots = [f for s2, f in knowledge.slots if s2 == s]
                assert len(slots) == real[s].bit_count()
        for k in range(2):
            deal = sample_deal(knowledge, random.Random(seed * 100 + k))
            _check_sample(knowledge, seen, events, deal.hands, deal.boneyard)
            checked += 1
        moves = legal_moves(state)
        move = moves[rng.randrange(len(moves))]
        if isinstance(move, Draw | Pass):
            fitted = (open_mask(state.ends, state.rules.spinner_opening == "all_four_first")
                      if state.nodes else DOUBLES_MASK)
            events.append((seat, "draw" if isinstance(move, Draw) else "pass", fitted))
        state, _ = apply(state, seat, move)
    return checked


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_sampled_deals_agree_with_the_seats_knowledge(preset: str, players: int) -> None:
    assert sum(_play_and_check(preset, players, seed) for seed in range(1)) > 15


def test_sampling_repairs_a_cornered_greedy_pass() -> None:
    # Four hidden tiles a, b, c, d (indexes 1, 2, 4, 5) and four slots, each allowing two:
    # s1 {a,b}, s2 {c,d}, s3 {a,c}, s4 {b,d}. Filling s1 with a and s2 with c leaves s3
    # nothing, so only matching repair finds the two deals that exist.
    tiles = [1, 2, 4, 5]
    unseen = sum(1 << t for t in tiles)

    def only(*allowed: int) -> int:
        return unseen & ~sum(1 << t for t in allowed)

    a, b, c, d = tiles
    slots = [(1, only(a, b)), (1, only(c, d)), (2, only(a, c)), (2, only(b, d))]
    knowledge = Knowledge(position=new_game("all-fives", 3, 0), seat=0,
                          hand=FULL_SET & ~unseen, hand_counts=[24, 2, 2], boneyard=0,
                          unseen=unseen, slots=slots, legal=[])
    seen_deals = set()
    for seed in range(60):
        deal = sample_deal(knowledge, random.Random(seed))
        h1, h2 = deal.hands[1], deal.hands[2]
        assert h1 & h2 == 0 and (h1 | h2) == unseen
        seen_deals.add((h1, h2))
    # By hand: seat 1 takes one tile of s1 {a,b} and one of s2 {c,d}; seat 2 gets the
    # other two, one for s3 {a,c} and one for s4 {b,d}.
    # seat 1 {a,d}: seat 2 {b,c}: c->s3, b->s4, valid.  seat 1 {b,c}: seat 2 {a,d}, valid.
    # seat 1 {a,c}: seat 2 {b,d} has nothing for s3.  seat 1 {b,d}: seat 2 {a,c}, nothing
    # for s4. So exactly two deals exist and sampling finds both.
    assert seen_deals == {(1 << a | 1 << d, 1 << b | 1 << c), (1 << b | 1 << c, 1 << a | 1 << d)}


def test_deals_that_explain_a_seats_choice_weigh_more() -> None:
    # Seat 0 leads 6-4 (ends 6 and 4); seat 1 answers 4-1 on the 4: 6 + 1 = 7, no points.
    # Had seat 1 held 6-1, it could have scored 5 (1 + 4) on the 6. Players are taken to
    # be greedy with chance `mix` (GREEDY_MIX), and otherwise to choose a play scoring p
    # with weight exp(p / 5) under all-fives, so:
    #   seat 1 held 4-1 and nothing else that fits: mix + (1 - mix) * 1 / 1 -> log 0;
    #   seat 1 also held 6-1 (greedy would have scored with it):
    #   (1 - mix) * e^0 / (e^0 + e^1) -> log = ln(1 - mix) - ln(1 + e).
    hands = [["6-4", "6-6", "5-4", "4-4", "3-2", "2-1", "1-1"],
             ["4-1", "5-5", "3-3", "2-2", "1-0", "2-0", "3-0"]]
    dealt = {t for h in hands for t in h}
    bone = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1) if f"{h}-{lo}" not in dealt]
    state = game_from_deal("all-fives", 2, hands, bone, 0)
    state, _ = apply(state, 0, move_from_data({"play": "6-4"}))
    state, _ = apply(state, 1, move_from_data({"play": "4-1", "on": "6-4"}))
    knowledge = Knowledge.from_view(view(state, 0))
    assert [(o.seat, o.tile) for o in knowledge.observations] == [(1, tile_index("4-1"))]
    no_alternative = _mask(["5-5", "3-3", "2-2", "1-0", "2-0", "3-0"])
    with_six_one = _mask(["5-5", "3-3", "2-2", "6-1", "2-0", "3-0"])
    mine = _mask(["6-6", "5-4", "4-4", "3-2", "2-1", "1-1"])
    assert knowledge.log_likelihood([mine, no_alternative]) == 0.0
    mix = GREEDY_MIX
    assert knowledge.log_likelihood([mine, with_six_one]) == pytest.approx(
        math.log(1 - mix) - math.log(1 + math.e))
