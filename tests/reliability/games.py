"""Games for the reliability gates: tables full of robots, and the end-of-game audit.

`seat_tables` creates tables over HTTP and gives each a robot per seat and some spectator
robots. `audit_table` checks one finished table against what its robots saw:

- the transcript replays through `engine.replay` (every move legal) and names the same winner
  the robots saw;
- the spectators saw every version once, in order, and their move events are exactly the
  transcript's moves (nothing lost, nothing twice);
- every accepted move is the move event of the version its `accepted` named, one version per id;
- every robot's document equals a fresh snapshot of its audience;
- no frame of any robot names a hidden tile.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgpack

import engine
from tests.reliability.leaks import check_frames
from tests.reliability.robots import Robot, move_events, same_move
from tests.support.servers import GameClient


async def seat_tables(http: httpx.AsyncClient, urls: list[str], *, tables: int,
                      players: int = 2, spectators: int = 1, target: int = 30,
                      chat_every: int = 0, pause: float = 0.0) -> dict[str, list[Robot]]:
    """`tables` tables with a robot in every seat (spread over `urls`) and spectator robots;
    the players think `pause` seconds before each move."""
    out: dict[str, list[Robot]] = {}
    for t in range(tables):
        created = await http.post("/api/tables", json={
            "rules": {"preset": "all-fives", "target": target}, "players": players,
            "name": f"table {t}"})
        assert created.status_code == 201, created.text
        table = created.json()["id"]
        robots = []
        for seat in range(players):
            joined = await http.post(f"/api/tables/{table}/join",
                                     json={"seat": seat, "name": f"p{seat}"})
            assert joined.status_code == 200, joined.text
            first = (t + seat) % len(urls)
            robots.append(Robot(urls[first:] + urls[:first], table, joined.json()["token"],
                                seed=1000 * t + seat, label=f"t{t}s{seat}",
                                chat_every=chat_every, pause=pause))
        for k in range(spectators):
            first = (t + k + 1) % len(urls)
            robots.append(Robot(urls[first:] + urls[:first], table, None, seed=-1,
                                label=f"t{t}w{k}", from_start=True))
        out[table] = robots
    return out


def flat_moves(transcript: dict[str, Any]) -> list[dict[str, Any]]:
    return [move for rnd in transcript["rounds"] for move in rnd["moves"]]


def event_matches_transcript(event: dict[str, Any], move: dict[str, Any]) -> bool:
    if event.get("seat") != move["seat"]:
        return False
    if "play" in move:
        return event["type"] == "play" and sorted(event["tile"]) == sorted(move["play"])
    if move.get("draw"):
        return event["type"] == "draw"
    return event["type"] == "pass"


async def audit_table(http: httpx.AsyncClient, ws_url: str, table: str,
                      robots: list[Robot]) -> dict[str, int]:
    """All the checks above for one finished table; returns counts for the report."""
    response = await http.get(f"/api/tables/{table}/transcript")
    assert response.status_code == 200, response.text
    transcript = response.json()
    result = engine.replay(transcript)
    moves = flat_moves(transcript)
    players = [r for r in robots if r.token is not None]
    watchers = [r for r in robots if r.token is None]
    watchers = [r for r in watchers if r.from_start]
    assert watchers, "the audit needs a spectator that saw every version"
    final = players[0].doc
    assert final is not None and final["game"]["game_over"]
    assert result["winner"] == final["game"]["winner"]

    # Spectators: versions in order, once each; their move events are the transcript's moves.
    for watcher in watchers:
        events = move_events(watcher.frames)
        versions = sorted(events)
        assert versions == list(range(1, versions[-1] + 1)), (
            watcher.label, versions, [m["t"] for m in decoded(watcher.frames)[:8]])
        seen = [e for v in versions for e in events[v]]
        assert len(seen) == len(moves), (watcher.label, len(seen), len(moves))
        for k, (event, move) in enumerate(zip(seen, moves, strict=True)):
            assert event_matches_transcript(event, move), (watcher.label, k, event, move)
        assert watcher.snapshots_after_first == 0, f"{watcher.label} resumed with a snapshot"

    # Every accepted move is exactly its version's move event; no id or version twice.
    events = move_events(watchers[0].frames)
    acked_versions: list[int] = []
    for robot in players:
        for sent_id, (version, move) in robot.acked().items():
            assert [same_move(e, robot.seat or 0, move) for e in events[version]] == [True], (
                robot.label, sent_id, version, events[version], move)
            acked_versions.append(version)
        unanswered = [s for s in robot.sent.values() if s.answer is None]
        assert not unanswered, (robot.label, unanswered)
        assert robot.snapshots_after_first == 0, f"{robot.label} resumed with a snapshot"
    assert len(acked_versions) == len(set(acked_versions)) == len(moves)

    # Every document equals a fresh snapshot of its audience.
    for robot in robots:
        fresh = await GameClient.connect(ws_url)
        await fresh.hello(table, robot.token)
        assert fresh.doc == robot.doc, robot.label
        assert fresh.v == robot.v
        await fresh.close()

    # No hidden tile in any frame any robot received.
    frames = 0
    for robot in robots:
        frames += check_frames(robot.label, robot.frames)
    return {"moves": len(moves), "frames": frames, "versions": players[0].v or 0,
            "connections": sum(r.connections for r in robots)}


def decoded(frames: list[bytes]) -> list[dict[str, Any]]:
    return [msgpack.unpackb(f, raw=False) for f in frames]
