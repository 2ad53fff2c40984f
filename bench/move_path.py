"""CPU of one move on the committing process, step by step, without Redis or sockets.

    python -m bench.move_path [--games 20] [--players 2] [--preset all-fives]

Plays whole games of random legal moves through the table record (as `TableService.play` does)
and times, per move: `engine.apply`, building every audience's document, diffing each against
the previous one, encoding the frames, the frames as the commit builds them (`move_frames`:
from the move's changes, `TableRecord.move_ops`, and from the documents' diffs at a hand's
end), and encoding the state blob and (when it changed) the lobby summary for the commit, and
what the commit writes instead (`state_and_summary_written`: the move appended to the stored
state when it keeps its hand going, else the whole state); and, for a process that starts a move
from the state another process committed (its notice), decoding that state blob, and what it does
instead (`state_noticed`: the appended move played onto the version before, else the decoding).
Prints one JSON line of microseconds per move (CPU time, best of 3 passes) and the bytes
written per move. Asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msgpack
import redis.asyncio

import engine
from server.record import PLAYING, TableRecord, audience_viewer, move_entry
from server.table_config import parse_create_request
from server.tables import TableService, lobby_meta

# id(record after a move) -> (seat, move, its entry), when the commit appends it
APPENDED: dict[int, tuple[int, engine.Move, bytes]] = {}


def recorded_moves(preset: str, players: int, games: int) -> list[list[TableRecord]]:
    """The records after each move of `games` random games (the first is the started table);
    the moves the commit appends to the stored state are kept in `APPENDED`."""
    rng = random.Random(7)
    service = TableService(redis.asyncio.Redis())  # never connects: only its rules are used
    config = parse_create_request({"players": players, "rules": preset})
    runs: list[list[TableRecord]] = []
    for g in range(games):
        record = TableRecord.new(f"bench{g:04d}", config, 0, rng.randrange(2**62), None)
        record = replace(record, status=PLAYING)
        states = [record]
        while not record.game.game_over:
            seat = record.game.turn
            move = rng.choice(engine.legal_moves(record.game))
            change = service.play(record, seat, move, None)
            record = change.record
            if change.move is not None:
                APPENDED[id(record)] = (seat, move, change.move)
            states.append(record)
        runs.append(states)
    return runs


def cpu_us(step: Callable[[TableRecord, TableRecord, dict[str, Any]], None],
           runs: list[list[TableRecord]], moves: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for states in runs:
            memo: dict[str, Any] = {}
            for before, after in itertools.pairwise(states):
                step(before, after, memo)
        best = min(best, time.process_time() - start)
    return round(best / moves * 1e6, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--preset", default="all-fives")
    args = parser.parse_args()
    runs = recorded_moves(args.preset, args.players, args.games)
    moves = sum(len(states) - 1 for states in runs)

    from server import protocol
    from server.diff import diff

    def apply(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        seat = before.game.turn
        move = engine.legal_moves(before.game)[0]
        engine.apply(before.game, seat, move)

    docs_cache: dict[int, dict[str, dict[str, Any]]] = {}

    def docs_of(record: TableRecord) -> dict[str, dict[str, Any]]:
        return docs_cache[id(record)]

    for states in runs:  # each version's documents built from the previous one's, as a commit does
        previous = None
        for record in states:
            docs_cache[id(record)] = record.documents(1, previous)
            previous = (record, docs_cache[id(record)]["s"])

    def documents(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        after.documents(1, (before, docs_of(before)["s"]))

    def diffs(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        old, new = docs_of(before), docs_of(after)
        for audience in new:
            diff(old[audience], new[audience])

    def frames(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        old, new = docs_of(before), docs_of(after)
        for audience in new:
            viewer = audience_viewer(audience, after.config.players)
            protocol.pack(protocol.diff(2, diff(old[audience], new[audience]),
                                        engine.redact_events([{"type": "play"}], viewer)))

    def move_frames(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        moved = after.move_ops(before, 2)
        if moved is None:  # a hand's end: the documents' diffs, as the commit does
            frames(before, after, memo)
            return
        for audience, ops in moved.items():
            viewer = audience_viewer(audience, after.config.players)
            protocol.pack(protocol.diff(2, ops, engine.redact_events([{"type": "play"}], viewer)))

    def blobs(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        after.to_blob()
        lobby_meta(before, after)

    def written(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        """What the commit writes: the move appended, or (a hand's end) the whole state."""
        moved = APPENDED.get(id(after))
        if moved is not None:
            move_entry(moved[0], moved[1], 0)
        else:
            after.to_blob()
        lobby_meta(before, after)

    stored = {id(after): after.to_blob() for states in runs for after in states[1:]}

    def decode(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        TableRecord.from_blob(stored[id(after)])

    def noticed(before: TableRecord, after: TableRecord, memo: dict[str, Any]) -> None:
        """What another process does with the notice: the appended move played onto the
        version before, or the whole state decoded."""
        moved = APPENDED.get(id(after))
        if moved is not None:
            before.replayed(msgpack.unpackb(moved[2]))
        else:
            TableRecord.from_blob(stored[id(after)])

    sizes = [len(blob) for blob in stored.values()]
    writes = [len(APPENDED[id(after)][2] if id(after) in APPENDED else stored[id(after)])
              for states in runs for after in states[1:]]
    print(json.dumps({
        "bench": "move_path", "preset": args.preset, "players": args.players, "moves": moves,
        "apply_us": cpu_us(apply, runs, moves),
        "documents_us": cpu_us(documents, runs, moves),
        "diff_us": cpu_us(diffs, runs, moves),
        "frames_us": cpu_us(frames, runs, moves),
        "move_frames_us": cpu_us(move_frames, runs, moves),
        "state_and_summary_blobs_us": cpu_us(blobs, runs, moves),
        "state_decode_us": cpu_us(decode, runs, moves),
        "state_blob_bytes_mean": round(sum(sizes) / len(sizes)),
        "state_and_summary_written_us": cpu_us(written, runs, moves),
        "state_noticed_us": cpu_us(noticed, runs, moves),
        "state_written_bytes_mean": round(sum(writes) / len(writes)),
        "appended_share": round(len(APPENDED) / moves, 3),
    }))


if __name__ == "__main__":
    main()
