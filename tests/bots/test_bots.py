"""Bots choose legal moves everywhere, from the seat's view alone; greedy by hand."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine import (
    EngineError,
    GameState,
    Play,
    Tile,
    apply,
    game_from_deal,
    legal_moves,
    move_from_data,
    new_game,
    to_transcript,
    view,
)
from engine.bots import BOT_LEVELS, choose_move
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES

FAST = {"think_ms": 10_000, "samples": 4}
"""Strong levels stopped by the sample budget (deterministic) and kept quick."""

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _advance(state: GameState, steps: int, rng: random.Random) -> GameState:
    for _ in range(steps):
        if state.game_over or state.round != 0:
            break
        moves = legal_moves(state)
        nxt, _ = apply(state, state.turn or 0, moves[rng.randrange(len(moves))])
        if nxt.round != 0 or nxt.game_over:
            break
        state = nxt
    return state



def play_checking_legality(state: GameState, level: str, seed: int, moves: int) -> None:
    """Let `level` play every seat for up to `moves` moves, asserting each move is legal."""
    for n in range(moves):
        if state.game_over:
            break
        seat = state.turn
        assert seat is not None
        move = choose_move(level, view(state, seat), seed + n, **FAST)
        assert move in legal_moves(state)
        state, _ = apply(state, seat, move)


@SETTINGS
@given(preset=st.sampled_from(PRESET_NAMES), players=st.sampled_from(PLAYER_COUNTS),
       seed=st.integers(0, 10_000), level=st.sampled_from(BOT_LEVELS))
def test_every_bot_plays_only_legal_moves(preset: str, players: int, seed: int,
                                          level: str) -> None:
    state = new_game(preset, players, seed)
    play_checking_legality(state, level, seed, 90)


def _replayed(state: GameState, hands: list[list[str]], boneyard: list[str]) -> GameState | None:
    record = to_transcript(state)
    rnd = record["rounds"][0]
    try:
        alt = game_from_deal(record["rules"], state.players, hands, boneyard, rnd["leader"])
        for m in rnd["moves"]:
            seat = m["seat"]
            alt, _ = apply(alt, seat, move_from_data({k: v for k, v in m.items() if k != "seat"}))
    except EngineError:
        return None
    return alt


def _other_deal(state: GameState, seat: int, rng: random.Random) -> GameState | None:
    """The same public history with the hidden tiles dealt differently, if one is found."""
    rnd = to_transcript(state)["rounds"][0]
    hands = [list(h) for h in rnd["hands"]]
    boneyard = list(rnd["boneyard"])
    hidden = {str(t) for s in range(state.players) if s != seat for t in state.hand(s)}
    undrawn = boneyard[len(boneyard) - state.boneyard_size:]
    hidden |= {str(Tile.parse(x)) for x in undrawn}
    places = [(s, i) for s, h in enumerate(hands) for i, t in enumerate(h)
              if str(Tile.parse(t)) in hidden]
    places += [(-1, i) for i, t in enumerate(boneyard) if str(Tile.parse(t)) in hidden]
    tiles = [hands[s][i] if s >= 0 else boneyard[i] for s, i in places]
    # Whole reshuffles first, then single swaps of two hidden tiles between two places (a deal
    # whose leader is decided by where one tile lies can refuse most reshuffles).
    orders = []
    for _ in range(30):
        shuffled = tiles[:]
        rng.shuffle(shuffled)
        orders.append(shuffled)
    swaps = [(a, b) for a in range(len(places)) for b in range(a + 1, len(places))
             if places[a][0] != places[b][0]]
    rng.shuffle(swaps)
    for a, b in swaps[:300]:
        swapped = tiles[:]
        swapped[a], swapped[b] = tiles[b], tiles[a]
        orders.append(swapped)
    for order in orders:
        new_hands = [h[:] for h in hands]
        new_bone = boneyard[:]
        for (s, i), t in zip(places, order, strict=True):
            if s >= 0:
                new_hands[s][i] = t
            else:
                new_bone[i] = t
        alt = _replayed(state, new_hands, new_bone)
        if alt is not None and view(alt, seat) == view(state, seat) and (
            alt.hand_masks != state.hand_masks or alt.boneyard_tiles != state.boneyard_tiles
        ):
            return alt
    return None


@SETTINGS
@given(preset=st.sampled_from(PRESET_NAMES), players=st.sampled_from(PLAYER_COUNTS),
       seed=st.integers(0, 10_000), steps=st.integers(0, 25), move_seed=st.integers(0, 99))
@example(preset="block", players=3, seed=4998, steps=1, move_seed=0)  # no reshuffle of 30 fits
def test_hidden_tiles_never_change_a_bots_move(preset: str, players: int, seed: int,
                                               steps: int, move_seed: int) -> None:
    rng = random.Random(seed)
    state = _advance(new_game(preset, players, seed), steps, rng)
    seat = state.turn
    assert seat is not None
    alt = _other_deal(state, seat, rng)
    if alt is None:
        # Nothing hidden can move without changing the history (rare); the first
        # position of a fresh deal always has a boneyard or other hands to reshuffle.
        state = new_game(preset, players, seed)
        seat = state.turn
        assert seat is not None
        alt = _other_deal(state, seat, rng)
    assert alt is not None
    assert view(alt, seat) == view(state, seat)
    for level in BOT_LEVELS:
        mine = choose_move(level, view(state, seat), move_seed, **FAST)
        other = choose_move(level, view(alt, seat), move_seed, **FAST)
        assert mine == other, level
        assert mine in legal_moves(alt)


def _position(moves: list[tuple[int, str, str | None]], hands: list[list[str]],
              boneyard: list[str], leader: int, spec: str = "all-fives") -> GameState:
    state = game_from_deal(spec, len(hands), hands, boneyard, leader)
    for seat, tile, on in moves:
        data = {"play": tile} if on is None else {"play": tile, "on": on}
        state, _ = apply(state, seat, move_from_data(data))
    return state


BONE_2P = ["6-6", "6-5", "6-3", "6-2", "6-1", "6-0", "5-2", "5-1", "4-3", "4-2", "4-1", "3-3",
           "3-1", "2-2"]


def test_greedy_takes_the_most_points() -> None:
    # Seat 0 leads 5-5 (spinner, counts 10). Seat 1 holds 5-0, 5-3 and blanks:
    # 5-0 on the spinner: 10 + 0 = 10 -> 10 points; 5-3: 10 + 3 = 13 -> 0 points.
    hands = [["5-5", "4-4", "3-2", "2-1", "1-1", "1-0", "0-0"],
             ["5-0", "5-3", "4-0", "3-0", "2-0", "6-4", "5-4"]]
    state = _position([(0, "5-5", None)], hands, BONE_2P, 0)
    assert choose_move("greedy", view(state, 1), 0) == Play(Tile.parse("5-0"), Tile.parse("5-5"))


def test_greedy_breaks_ties_by_the_heaviest_tile_then_doubles() -> None:
    # Lead 6-4 (ends 6 and 4, total 10). Seat 1 holds 4-4, 6-2, 4-0, 6-0, 5-3(no fit):
    # 4-4 on the 4: 6 + 8 = 14 -> 0;  6-2 on the 6: 2 + 4 = 6 -> 0;
    # 4-0 on the 4: 6 + 0 = 6 -> 0;   6-0 on the 6: 0 + 4 = 4 -> 0.
    # Nobody scores, so the heaviest tile goes: 4-4 (8 pips) and 6-2 (8 pips) tie on
    # weight, and the double comes first.
    hands = [["6-4", "5-5", "3-2", "2-1", "1-1", "1-0", "0-0"],
             ["4-4", "6-2", "4-0", "6-0", "5-3", "5-1", "3-1"]]
    bone = ["6-6", "6-5", "6-3", "6-1", "5-4", "5-2", "5-0", "4-3", "4-2", "4-1", "3-3",
            "3-0", "2-2", "2-0"]
    state = _position([(0, "6-4", None)], hands, bone, 0)
    assert choose_move("greedy", view(state, 1), 0) == Play(Tile.parse("4-4"), Tile.parse("6-4"))


def test_greedy_breaks_a_tie_between_ends_by_the_earliest_layout_tile() -> None:
    # Seat 0 leads 6-4; seat 1 plays 4-3 on its 4 (6 + 3 = 9 -> 0). Ends: 6 and 3.
    # Seat 0's only fitting tile is 6-3, which fits both ends:
    # on 6-4's 6: 3 + 3 = 6 -> 0;  on 4-3's 3: 6 + 6 = 12 -> 0. Same points, same tile:
    # the end on the tile placed first (6-4) is taken.
    hands = [["6-4", "6-3", "5-5", "5-4", "2-1", "1-0", "0-0"],
             ["4-3", "6-6", "6-5", "5-3", "4-1", "2-2", "3-0"]]
    dealt = {str(Tile.parse(t)) for h in hands for t in h}
    bone = [str(Tile(h, lo)) for h in range(7) for lo in range(h + 1)
            if str(Tile(h, lo)) not in dealt]
    state = _position([(0, "6-4", None), (1, "4-3", "6-4")], hands, bone, 0)
    assert {str(m.on) for m in legal_moves(state) if isinstance(m, Play)} == {"6-4", "4-3"}
    assert choose_move("greedy", view(state, 0), 0) == Play(Tile.parse("6-3"), Tile.parse("6-4"))


OVERRIDES = {
    "boneyard_reserve": [0, 2, 4], "spinners": ["none", "first_double", "all_doubles"],
    "partnerships": [True, False], "draw": ["until_playable", "none"],
    "scoring": ["fives", "threes", "fives_and_threes", "matching", "none"],
    "bonus": ["opponents", "opponents_minus_own", "all_hands", "fixed", "penalty"],
    "bonus_rounding": ["nearest", "none"], "blocked_tie": ["none", "split"],
    "game_end": ["round_end", "exact"], "lead": ["any", "double"],
    "first_leader": ["random", "highest_double"], "blocked_bonus": [True, False],
    "hand_size": [3, 5, 6], "target": [10, 40],
}


@st.composite
def rule_specs(draw: st.DrawFn) -> tuple[dict[str, object], int]:
    players = draw(st.sampled_from(PLAYER_COUNTS))
    spec: dict[str, object] = {"preset": draw(st.sampled_from(PRESET_NAMES))}
    for key in draw(st.lists(st.sampled_from(sorted(OVERRIDES)), max_size=5, unique=True)):
        spec[key] = draw(st.sampled_from(OVERRIDES[key]))
    try:
        from engine import rules_from_spec

        rules_from_spec(spec, players)
    except EngineError:
        spec = {"preset": spec["preset"]}
    return spec, players


@SETTINGS
@given(case=rule_specs(), seed=st.integers(0, 10_000), level=st.sampled_from(BOT_LEVELS))
def test_bots_stay_legal_under_rule_overrides(case: tuple[dict[str, object], int], seed: int,
                                              level: str) -> None:
    spec, players = case
    state = new_game(spec, players, seed)
    play_checking_legality(state, level, seed, 120)


def test_strong_is_a_pure_function_of_view_and_seed_under_a_sample_budget() -> None:
    rng = random.Random(4)
    state = _advance(new_game("all-fives", 2, 4), 6, rng)
    while len(legal_moves(state)) < 2:  # a real choice, so the search runs
        state = _advance(state, 1, rng)
    seat = state.turn
    assert seat is not None
    seen = view(state, seat)
    moves = {choose_move("strong", seen, 17, think_ms=600_000, samples=40) for _ in range(3)}
    assert len(moves) == 1
    assert moves.pop() in legal_moves(state)
