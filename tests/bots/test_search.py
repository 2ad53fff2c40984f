"""The search's own rules: pruning a clearly worse candidate, reading greedy choices, and
the cautious playouts of the mover's side."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from engine import (
    GameState,
    Move,
    Play,
    Tile,
    apply,
    finish_hand,
    game_from_deal,
    legal_moves,
    move_from_data,
    playout,
    view,
)
from engine.bots import choose_move, search
from engine.bots import knowledge as knowledge_module
from engine.bots.knowledge import Knowledge
from engine.bots.simple import greedy_ranking
from engine.game import resolve_play
from engine.kernel import open_ends, play_tile
from engine.layout import end_total
from engine.playout import CAUTIOUS, greedy_key, greedy_points
from engine.tiles import VALUE_MASK, tile_index
from tests.bots.positions import PLAYER_COUNTS, PRESET_NAMES, positions

BONE_2P = ["6-6", "6-5", "6-3", "6-2", "6-1", "6-0", "5-2", "5-1", "4-3", "4-2", "4-1", "3-3",
           "3-1", "2-2"]


def _mask(names: list[str]) -> int:
    return sum(1 << tile_index(n) for n in names)


def _after_five_five() -> Knowledge:
    # Seat 0 leads 5-5 (a spinner, 10 on the table). Seat 1 may play 5-0 (10 + 0 = 10:
    # 10 points), 5-4 (14: none) or 5-3 (13: none).
    hands = [["5-5", "4-4", "3-2", "2-1", "1-1", "1-0", "0-0"],
             ["5-0", "5-3", "4-0", "3-0", "2-0", "6-4", "5-4"]]
    state = game_from_deal("all-fives", 2, hands, BONE_2P, 0)
    state, _ = apply(state, 0, move_from_data({"play": "5-5"}))
    return Knowledge.from_view(view(state, 1))


def test_estimate_plays_every_candidate_on_every_deal() -> None:
    knowledge = _after_five_five()
    candidates = [m for m in greedy_ranking(knowledge) if isinstance(m, Play)]
    found = search.estimate(knowledge, 3, time.perf_counter(), 100_000, 200, candidates)
    assert [f.move for f in found] == candidates
    assert [f.deals for f in found] == [200] * len(candidates)


def test_the_search_stops_playing_out_a_clearly_worse_candidate() -> None:
    # 5-3 leaves 13 on the table; 5-0 scores 10 at once. After the first deals the search
    # stops playing 5-3 out and spends the playouts on the others; the move chosen is the
    # best of those still in the running, over the same deals `estimate` would use.
    knowledge = _after_five_five()
    candidates = [m for m in greedy_ranking(knowledge) if isinstance(m, Play)]
    found, active = search._search(knowledge, 3, time.perf_counter(), 100_000, 400,
                                   candidates, True, True)
    worse = candidates.index(Play(Tile.parse("5-3"), Tile.parse("5-5")))
    assert worse not in active
    assert search.PRUNE_MIN <= found[worse].deals < 400
    assert all(found[i].deals == 400 for i in active)
    full = search.estimate(knowledge, 3, time.perf_counter(), 100_000, 400, candidates)
    for i in active:  # the same deals, so the same figures
        assert found[i].value == full[i].value
        assert found[i].points == full[i].points
    move = search.search_move(knowledge, 3, time.perf_counter(), 100_000, 400,
                              greedy_ranking(knowledge))
    assert move == Play(Tile.parse("5-0"), Tile.parse("5-5"))


def test_a_seat_that_played_light_when_it_held_heavier_is_less_likely_greedy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Block (no points during the hand), any first leader. Seat 0 leads 6-4 (ends 6 and
    # 4); seat 1 answers 4-1 on the 4. A greedy player plays its heaviest tile when
    # nothing scores, so had seat 1 held 6-6 (it fits the 6) it would have played that.
    # With a share `mix` of players taken to be greedy and the rest to choose uniformly
    # among their plays:
    #   seat 1 held no other tile that fits:  mix * 1 + (1 - mix) * 1 -> log 1 = 0;
    #   seat 1 also held 6-6:                 mix * 0 + (1 - mix) * 1/2.
    # A lighter tile that fits (4-0 on the 4) would not have been played before 4-1
    # (5 pips): greedy's choice stands, and only the uniform part sees two choices.
    mix = 0.75
    monkeypatch.setattr(knowledge_module, "GREEDY_MIX", mix)
    hands = [["6-4", "5-5", "5-4", "3-2", "2-1", "1-1", "3-3"],
             ["4-1", "5-3", "5-2", "2-2", "1-0", "2-0", "3-0"]]
    dealt = {t for h in hands for t in h}
    bone = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1) if f"{h}-{lo}" not in dealt]
    state = game_from_deal({"preset": "block", "first_leader": "random"}, 2, hands, bone, 0)
    state, _ = apply(state, 0, move_from_data({"play": "6-4"}))
    state, _ = apply(state, 1, move_from_data({"play": "4-1", "on": "6-4"}))
    knowledge = Knowledge.from_view(view(state, 0))
    assert [(o.seat, o.tile) for o in knowledge.observations] == [(1, tile_index("4-1"))]
    mine = _mask(["5-5", "5-4", "3-2", "2-1", "1-1", "3-3"])
    alone = _mask(["5-3", "5-2", "2-2", "1-0", "2-0", "3-0"])
    heavier = _mask(["6-6", "5-2", "2-2", "1-0", "2-0", "3-0"])
    lighter = _mask(["4-0", "5-2", "2-2", "1-0", "2-0", "3-0"])
    assert knowledge.log_likelihood([mine, alone]) == pytest.approx(0.0)
    assert knowledge.log_likelihood([mine, heavier]) == pytest.approx(math.log((1 - mix) / 2))
    assert knowledge.log_likelihood([mine, lighter]) == pytest.approx(
        math.log(mix + (1 - mix) / 2))


def _tiles(mask: int) -> list[int]:
    return [t for t in range(28) if mask >> t & 1]


def _cautious_move(state: GameState) -> Move:
    """CAUTIOUS's move written out with the engine's public pieces, slowly."""
    seat = state.turn
    assert seat is not None
    moves = legal_moves(state)
    plays = [m for m in moves if isinstance(m, Play)]
    if not plays:
        return moves[0]  # a forced draw or pass
    rules = state.table.rules
    after = state.hand_masks[(seat + 1) % rules.players]
    hand = state.hand_masks[seat]
    score = state.scores[state.table.side_of[seat]]
    best: tuple[int, int, int] | None = None
    chosen = plays[0]
    for move in plays:
        index, _ = resolve_play(state, seat, move)
        t = move.tile.index
        node, ends, _, points, _ = play_tile(rules, state.nodes, state.ends, index, t)
        points = greedy_points(rules, points, hand == 1 << t, score)
        blocks = 0
        if hand != 1 << t:
            nodes = [*state.nodes, node]
            replies = [play_tile(rules, nodes, ends, j, u)[3]
                       for j in open_ends(ends, rules.all_four_first)
                       for u in _tiles(after & VALUE_MASK[ends[j][2]])]
            points -= max(replies, default=0)
            blocks = 0 if replies else 1
        key = (points, blocks, greedy_key(0, t, state.ends[index][0]))
        if best is None or key > best:
            best, chosen = key, move
    return chosen


def test_a_cautious_play_leaves_no_count_for_the_next_seat() -> None:
    # Muggins (no spinner): seat 0 leads 6-4 (ends 6 and 4, 10 points). Seat 1 can only
    # play on the 4, 4-2 or 4-0, and neither scores: 6 + 2 = 8, 6 + 0 = 6.
    #   4-2 leaves ends 6 and 2: seat 0 then scores 10 with 2-2 (6 + 4) or 5 with 6-3;
    #   4-0 leaves ends 6 and 0: seat 0 holds no blank, and 6-3, 6-1, 6-2 make 3, 1, 2.
    # Greedy plays the heavier 4-2; CAUTIOUS plays 4-0 (0 - 0 beats 0 - 10).
    hands = [["6-4", "2-2", "6-3", "5-4", "6-1", "3-1", "6-2"],
             ["5-2", "4-2", "1-0", "4-0", "3-0", "2-1", "0-0"]]
    dealt = {t for h in hands for t in h}
    bone = [f"{h}-{lo}" for h in range(7) for lo in range(h + 1) if f"{h}-{lo}" not in dealt]
    state = game_from_deal("muggins", 2, hands, bone, 0)
    state, _ = apply(state, 0, move_from_data({"play": "6-4"}))
    assert choose_move("greedy", view(state, 1), 0) == Play(Tile.parse("4-2"), Tile.parse("6-4"))
    assert _cautious_move(state) == Play(Tile.parse("4-0"), Tile.parse("6-4"))
    _, tile = playout._cautious(state.table.rules, list(state.nodes), state.ends,
                                    end_total(state.ends), state.hand_masks[1],
                                    state.hand_masks[0], state.scores[1])
    assert tile == tile_index("4-0")


def _until_hand_end(state: GameState, careful: int) -> dict[str, Any]:
    """`apply` until the hand ends: the seats in `careful` cautious, the others greedy."""
    while True:
        seat = state.turn
        assert seat is not None
        if careful >> seat & 1:
            move = _cautious_move(state)
        else:
            move = choose_move("greedy", view(state, seat), 0)
        state, events = apply(state, seat, move)
        end = next((e for e in events if e["type"] == "hand_end"), None)
        if end is not None:
            return end


@pytest.mark.parametrize("players", PLAYER_COUNTS)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_a_cautious_playout_is_the_rules_played_by_apply(preset: str, players: int) -> None:
    compared = 0
    for n, state in enumerate(positions(preset, players, seed=9)):
        if n % 5 or not state.nodes:
            continue
        seat = state.turn
        assert seat is not None
        table = state.table
        careful = sum(1 << s for s in table.sides[table.side_of[seat]])
        for move in legal_moves(state):
            if not isinstance(move, Play):
                continue
            settled = finish_hand(state, CAUTIOUS, first=move, careful=careful)
            game, events = apply(state, seat, move)
            end = next((e for e in events if e["type"] == "hand_end"), None)
            if end is None:
                end = _until_hand_end(game, careful)
            assert list(settled.totals) == end["totals"], move
            compared += 1
    assert compared >= 2
