"""The hidden-information gate: which tiles an audience may see in a frame, and log lines.

`LeakCheck` follows one audience's frames (in the order received, across reconnects) and keeps
that audience's document. Every tile named anywhere in a frame must be public at that moment
(on the layout before or after the frame) or the audience's own (its hand before or after).
Finished rounds are revealed on purpose: a `hand_end` event and the `rounds` list may name every
tile, but only in a frame that ends a hand (or in a snapshot, for rounds already over).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from server.diff import apply_ops

TILE = re.compile(r"(?<![\w.:-])([0-6])-([0-6])(?![\w.:-])")


def normal(a: str, b: str) -> str:
    high, low = max(a, b), min(a, b)
    return f"{high}-{low}"


def tiles_in(value: Any) -> Iterator[str]:
    """Every tile name inside any string of a decoded frame (both ways round, normalised)."""
    if isinstance(value, str):
        for match in TILE.finditer(value):
            yield normal(match.group(1), match.group(2))
    elif isinstance(value, bytes):
        yield from tiles_in(value.decode("utf-8", errors="replace"))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from tiles_in(key)
            yield from tiles_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from tiles_in(item)


def _visible(doc: dict[str, Any] | None) -> set[str]:
    """Tiles this document may show: its layout and its own hand."""
    if not doc or not doc.get("game"):
        return set()
    game = doc["game"]
    shown = {normal(*node["tile"].split("-")) for node in game["layout"]}
    shown |= {normal(*tile.split("-")) for tile in game.get("hand") or []}
    return shown


def _played(message: dict[str, Any]) -> set[str]:
    """Tiles this diff says were just played (public; the last play of a hand is on no
    layout once the next round is dealt in the same version)."""
    if message.get("t") != "diff":
        return set()
    return {normal(*e["tile"].split("-")) for e in message.get("ev", [])
            if isinstance(e, dict) and e.get("type") == "play"}


def _own_draws(message: dict[str, Any], seat: int | None) -> set[str]:
    """Tiles the audience itself drew in this diff (its hand may already be a new deal)."""
    if message.get("t") != "diff" or seat is None:
        return set()
    return {normal(*e["tile"].split("-")) for e in message.get("ev", [])
            if isinstance(e, dict) and e.get("type") == "draw" and e.get("seat") == seat
            and isinstance(e.get("tile"), str)}


def _without_reveals(message: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The frame without the parts that reveal finished rounds, and whether it ends a hand."""
    ends_hand = False
    if message.get("t") == "diff":
        events = []
        for event in message.get("ev", []):
            if isinstance(event, dict) and event.get("type") == "hand_end":
                ends_hand = True
            else:
                events.append(event)
        ops = []
        for op in message.get("ops", []):
            path = op[1] if len(op) > 1 else []
            if list(path[:2]) == ["game", "rounds"]:
                ops.append(["rounds", "reveal"])
                continue
            if len(op) > 2 and isinstance(op[2], dict) and list(path) in ([], ["game"]):
                value = dict(op[2])
                if path == [] and isinstance(value.get("game"), dict):
                    value["game"] = {**value["game"], "rounds": []}
                elif path == ["game"]:
                    value["rounds"] = []
                op = [op[0], path, value]
            ops.append(op)
        return {**message, "ev": events, "ops": ops}, ends_hand
    if message.get("t") == "snapshot":
        doc = message.get("doc") or {}
        if isinstance(doc.get("game"), dict):
            doc = {**doc, "game": {**doc["game"], "rounds": []}}
        return {**message, "doc": doc}, False
    return message, False


class LeakCheck:
    """Follows one audience; `feed(frame)` raises AssertionError on a hidden tile."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.doc: dict[str, Any] | None = {}  # version 0: version 1 replaces the whole doc
        self.v: int | None = 0
        self.frames = 0

    def feed(self, frame: bytes) -> None:
        self.frames += 1
        message = msgpack.unpackb(frame, raw=False)
        before_doc = self.doc
        before = _visible(before_doc)
        kind = message.get("t")
        if kind == "snapshot":
            self.doc, self.v = message["doc"], message["v"]
        elif kind == "diff" and self.doc is not None and message["v"] == (self.v or 0) + 1:
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]
        after = _visible(self.doc)
        stripped, ends_hand = _without_reveals(message)
        if not ends_hand and any(op == ["rounds", "reveal"] for op in stripped.get("ops", [])):
            raise AssertionError(f"{self.label}: finished rounds changed without a hand end: "
                                 f"{message!r}")
        game = (self.doc or {}).get("game") or {}
        allowed = before | after | _played(message) | _own_draws(message, game.get("seat"))
        named = set(tiles_in(stripped))
        hidden = named - allowed
        if hidden:
            raise AssertionError(
                f"{self.label}: frame names hidden tiles {sorted(hidden)} "
                f"(visible {sorted(allowed)}): {message!r}"
            )


def check_frames(label: str, frames: Iterable[bytes]) -> int:
    """Run `frames` (one audience, in order) through a LeakCheck; returns how many."""
    check = LeakCheck(label)
    for frame in frames:
        check.feed(frame)
    return check.frames


def log_lines_naming_tiles(text: str) -> list[str]:
    """Server log lines that name a tile (none should: logs never name tiles)."""
    return [line for line in text.splitlines() if TILE.search(line)]
