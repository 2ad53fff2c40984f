"""Invariants over random presets, player counts, seeds and random legal play."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    GameState,
    apply,
    legal_moves,
    redact_events,
    replay,
    state_from_data,
    state_to_data,
    to_transcript,
    view,
)
from engine.tiles import NAMES, mask_tiles
from tests.strategies import games, seeds

MAX_MOVES = 120


def tiles_everywhere(state: GameState) -> list[int]:
    tiles = [t for m in state.hand_masks for t in mask_tiles(m)]
    return tiles + list(state.boneyard_tiles) + [n[0] for n in state.nodes]


def strings(data: Any) -> set[str]:
    if isinstance(data, str):
        return {data}
    if isinstance(data, dict):
        return set().union(*(strings(v) for v in data.values())) if data else set()
    if isinstance(data, list):
        return set().union(*(strings(v) for v in data)) if data else set()
    return set()


def check_play_points(state: GameState, event: dict[str, Any]) -> None:
    rules = state.rules
    total, got = event["end_total"], event["points"]
    if rules.scoring == "fives":
        allowed = {0, total // rules.scale} if total % 5 == 0 else {0}
    elif rules.scoring == "threes":
        allowed = {0, total // rules.scale} if total % 3 == 0 else {0}
    elif rules.scoring == "fives_and_threes":
        full = (total // 5 if total % 5 == 0 else 0) + (total // 3 if total % 3 == 0 else 0)
        allowed = {0, full}
    elif rules.scoring == "matching":
        allowed = {0} | set(range(2, 2 * 14))
    else:
        allowed = {0}
    assert got in allowed, (rules.scoring, total, got)
    if rules.game_end != "exact":
        assert got == max(allowed) or rules.scoring == "matching"


def check_views(state: GameState) -> None:
    boneyard = {NAMES[t] for t in state.boneyard_tiles}
    hands = [{NAMES[t] for t in mask_tiles(m)} for m in state.hand_masks]
    for viewer in [None, *range(state.players)]:
        seen = view(state, viewer)
        visible = strings({k: v for k, v in seen.items() if k not in ("rounds", "rules")})
        hidden = boneyard.union(*(h for s, h in enumerate(hands) if s != viewer))
        assert not (visible & hidden), (viewer, visible & hidden)
        assert seen["hand_counts"] == [len(h) for h in hands]
        assert seen["boneyard"] == len(boneyard)
        assert bool(seen["legal"]) == (viewer is not None and viewer == state.turn)


def play_randomly(state: GameState, rng: random.Random, limit: int, deep: bool) -> GameState:
    for _ in range(limit):
        if state.game_over:
            break
        moves = legal_moves(state)
        assert moves
        before = state_to_data(state)
        seat = state.turn
        assert seat is not None
        new, events = apply(state, seat, rng.choice(moves))
        assert state_to_data(state) == before  # apply never mutates
        for event in events:
            if event["type"] == "play":
                check_play_points(state, event)
        for viewer in range(state.players):
            for event in redact_events(events, viewer):
                if event["type"] == "draw" and event["seat"] != viewer:
                    assert "tile" not in event
        state = new
        tiles = tiles_everywhere(state)
        assert sorted(tiles) == list(range(28))  # 28 tiles, each once
        if deep:
            check_views(state)
            data = json.loads(json.dumps(state_to_data(state)))
            assert state_from_data(data) == state
    return state


@settings(max_examples=60, deadline=None)
@given(games(), seeds)
def test_random_play_keeps_every_invariant(state: GameState, seed: int) -> None:
    play_randomly(state, random.Random(seed), MAX_MOVES, deep=True)


@settings(max_examples=30, deadline=None)
@given(games(), seeds)
def test_random_games_terminate_and_replay_to_the_same_scores(state: GameState, seed: int) -> None:
    rng = random.Random(seed)
    moves = 0
    played: list[list[int]] = [[]]
    while not state.game_over:
        moves += 1
        assert moves < 50_000
        seat = state.turn
        assert seat is not None
        state, events = apply(state, seat, rng.choice(legal_moves(state)))
        for event in events:
            if event["type"] == "play":
                played[-1].append(int(event["points"]))
            elif event["type"] in ("draw", "pass"):
                played[-1].append(0)
            elif event["type"] == "deal":
                played.append([])
    out = replay(json.loads(json.dumps(to_transcript(state))))
    assert [r["scores"] for r in out["rounds"]] == played
    assert [r["totals"] for r in out["rounds"]] == [list(r.totals) for r in state.results]
    assert state.winner is not None
    assert out["winner"] == state.winner
    assert out["rounds"][-1]["totals"] == list(state.scores)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_mid_game_transcripts_replay(data: st.DataObject) -> None:
    state = data.draw(games())
    state = play_randomly(state, random.Random(data.draw(seeds)), data.draw(
        st.integers(0, 80)), deep=False)
    out = replay(to_transcript(state))
    assert out["rounds"][-1]["totals"] == list(state.scores)


@settings(max_examples=40, deadline=None)
@given(games(), seeds, st.integers(min_value=0, max_value=3))
def test_play_out_hand_makes_the_moves_apply_would(state: GameState, seed: int, hands: int) -> None:
    from engine import play_out_hand

    for _ in range(hands + 1):
        if state.game_over:
            break
        fast = play_out_hand(state, random.Random(seed))
        rng = random.Random(seed)
        slow = state
        while True:
            moves = legal_moves(slow)
            assert slow.turn is not None
            slow, events = apply(slow, slow.turn, moves[int(rng.random() * len(moves))])
            if any(e["type"] == "hand_end" for e in events):
                break
        assert state_to_data(fast) == state_to_data(slow)
        state = fast
    if state.game_over:
        assert play_out_hand(state, random.Random(seed)) is state
