"""`apply_until_hand_end` + `deal_next` (the server's pause between hands) reach exactly the
states `apply` reaches, which deals the next hand at once."""

from __future__ import annotations

import random

import pytest

import engine


def _playable() -> list[tuple[str, int]]:
    found = []
    for preset in sorted(engine.PRESETS):
        for players in (2, 3, 4):
            try:
                engine.rules_from_spec(preset, players)
            except engine.EngineError:
                continue  # not played by that many
            found.append((preset, players))
    return found


@pytest.mark.parametrize(("preset", "players"), _playable())
def test_pausing_between_hands_changes_nothing_else(preset: str, players: int) -> None:
    straight = engine.new_game(preset, players, 7)
    paused = straight
    rng = random.Random(players)
    pauses = 0
    while not straight.game_over:
        seat = straight.turn
        assert seat is not None
        move = rng.choice(engine.legal_moves(straight))
        straight, events = engine.apply(straight, seat, move)
        paused, paused_events = engine.apply_until_hand_end(paused, seat, move)
        if any(e["type"] == "hand_end" for e in events) and not straight.game_over:
            assert paused.turn is None and not paused.game_over  # between hands
            assert paused.round == straight.round - 1  # still on the finished hand
            with pytest.raises(engine.IllegalMove):
                engine.apply(paused, seat, move)
            paused, dealt = engine.deal_next(paused)
            paused_events += dealt
            pauses += 1
        assert paused_events == events
        assert engine.state_to_data(paused) == engine.state_to_data(straight)
    with pytest.raises(engine.IllegalMove):
        engine.deal_next(paused)
    assert pauses == len(straight.table.past) - 1


def test_deal_next_refuses_a_hand_in_play() -> None:
    state = engine.new_game("all-fives", 2, 1)
    with pytest.raises(engine.IllegalMove) as refused:
        engine.deal_next(state)
    assert refused.value.code == "hand_in_play"


@pytest.mark.parametrize("preset", ["block", "all-fives"])
def test_a_game_stopped_between_hands_has_a_transcript_of_its_hands_played(preset: str) -> None:
    """A game the server ends between two hands (a forfeit or the hand limit during the pause)
    has the transcript of the hands played, each once: it walks, and replays to the same
    scores."""
    state = engine.new_game(preset, 2, 11)
    rng = random.Random(3)
    hands = 0
    while hands < 2:
        if state.turn is None:
            state = engine.deal_next(state)[0]
        seat = state.turn
        assert seat is not None
        moves = engine.legal_moves(state)
        state = engine.apply_until_hand_end(state, seat, rng.choice(moves))[0]
        hands += state.turn is None
    transcript = engine.to_transcript(state)
    assert len(transcript["rounds"]) == 2
    replayed = engine.replay(transcript)
    assert len(replayed["rounds"]) == 2
    assert replayed["rounds"][-1]["totals"] == list(state.scores)
