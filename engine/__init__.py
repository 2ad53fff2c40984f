"""Rules engine for All Fives and its family of dominoes games (standard library only).

Pure functions over immutable state: `new_game` / `game_from_deal` make a game,
`legal_moves` lists the moves of the seat to move, `apply` returns the next state and
the events a move caused, `view` shows a position to one seat. Transcripts
(notation.md) are written by `to_transcript` and checked by `replay`; `verify` checks a
finished game's deals against the seed its transcript reveals and the `commitment` to it.

Simulations use the same rules: `play_out_hand` finishes a hand with `RANDOM` or `GREEDY`
moves, `finish_hand` reports the `Settlement` it reaches, and `determinize` rebuilds the
position a view shows with its hidden tiles dealt. One kernel places and scores every tile
(engine.kernel) and one function settles every hand (engine.rounds `settle`), for `apply`
and every playout alike. The bots are in engine.bots; the command line (`python -m engine`)
is engine.cli, the only part that reads or writes files or the terminal.
"""

from engine.commitment import commitment
from engine.data import (
    past_from_data,
    past_to_data,
    play_to_data,
    state_from_data,
    state_to_data,
    table_to_data,
)
from engine.errors import (
    EngineError,
    IllegalMove,
    InvalidNotation,
    InvalidRules,
    InvalidTranscript,
)
from engine.files import load_transcript
from engine.game import (
    apply,
    apply_until_hand_end,
    deal_next,
    game_from_deal,
    legal_moves,
    new_game,
)
from engine.moves import Draw, Move, Pass, Play, move_from_data, move_to_data
from engine.playout import GREEDY, RANDOM, finish_hand, play_out_hand
from engine.rounds import Settlement
from engine.rules import DEFAULT_PRESET, PRESETS, Rules, rules_from_spec
from engine.state import GameState, HandResult, RoundRecord
from engine.tiles import TILES, Tile
from engine.transcript import replay, replay_views, to_transcript, walk
from engine.verify import verify
from engine.views import (
    determinize,
    game_change_blocks,
    redact_events,
    view,
    view_change_blocks,
    view_changes,
    views,
)

__all__ = [
    "DEFAULT_PRESET",
    "GREEDY",
    "PRESETS",
    "RANDOM",
    "TILES",
    "Draw",
    "EngineError",
    "GameState",
    "HandResult",
    "IllegalMove",
    "InvalidNotation",
    "InvalidRules",
    "InvalidTranscript",
    "Move",
    "Pass",
    "Play",
    "RoundRecord",
    "Rules",
    "Settlement",
    "Tile",
    "apply",
    "apply_until_hand_end",
    "commitment",
    "deal_next",
    "determinize",
    "finish_hand",
    "game_change_blocks",
    "game_from_deal",
    "legal_moves",
    "load_transcript",
    "move_from_data",
    "move_to_data",
    "new_game",
    "past_from_data",
    "past_to_data",
    "play_out_hand",
    "play_to_data",
    "redact_events",
    "replay",
    "replay_views",
    "rules_from_spec",
    "state_from_data",
    "state_to_data",
    "table_to_data",
    "to_transcript",
    "verify",
    "view",
    "view_change_blocks",
    "view_changes",
    "views",
    "walk",
]
