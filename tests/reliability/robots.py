"""Scripted websocket clients that play or watch a whole game by themselves and survive crashes.

A `Robot` connects to one of several server URLs, says hello (with `since` = the version it
holds once it has one), keeps its document from snapshots and diffs, and, when it holds a seat
and it is its turn, plays a random legal move with a fresh id. When the connection drops it
reconnects (to the next URL that answers) and says hello with `since`; a move still waiting for
its answer is sent again with the same id, so it is applied at most once. It stops when the game
is over and every move it sent has its answer. Everything received is kept as raw bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

import msgpack
import websockets

from server.diff import apply_ops


class ProtocolBroken(AssertionError):
    """The server broke the protocol as a client sees it."""


@dataclass
class Sent:
    id: str
    v: int
    move: dict[str, Any]
    answer: dict[str, Any] | None = None


@dataclass
class Robot:
    urls: list[str]
    table: str
    token: str | None = None
    seed: int = 0
    label: str = ""
    frames: list[bytes] = field(default_factory=list)
    connections: int = 0
    snapshots_after_first: int = 0
    sent: dict[str, Sent] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    doc: dict[str, Any] | None = None
    v: int | None = None
    seat: int | None = None
    chat_every: int = 0  # send a chat line after every n-th own move (0 = never)
    from_start: bool = False  # first hello with since=0: every version from the first
    pause: float = 0.0  # seconds to think before each own move (keeps a game going for a while)

    def __post_init__(self) -> None:
        if self.from_start:
            self.doc, self.v = {}, 0
        self.rng = random.Random(self.seed)
        self._ids = itertools.count(1)
        self._url_turn = itertools.cycle(range(len(self.urls)))
        self.outstanding: Sent | None = None
        self.current_target = 0  # version the server announced in welcome
        self.socket: Any = None
        self.url = ""  # the server of the current (or last) connection

    # -- state ----------------------------------------------------------------------------
    @property
    def game_over(self) -> bool:
        game = self.doc["game"] if self.doc else None
        return bool(game and game["game_over"])

    @property
    def finished(self) -> bool:
        return self.game_over and self.outstanding is None

    def _apply(self, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if kind == "welcome":
            self.seat = message["seat"]
            self.current_target = message["v"]
        elif kind == "snapshot":
            if self.connections > 1:
                self.snapshots_after_first += 1
            self.doc, self.v = message["doc"], message["v"]
        elif kind == "diff":
            if self.doc is None or self.v is None:
                raise ProtocolBroken(f"{self.label}: diff {message['v']} before a snapshot")
            if message["v"] <= self.v:
                return
            if message["v"] != self.v + 1:
                raise ProtocolBroken(f"{self.label}: gap, holding {self.v}, got {message['v']}")
            self.doc = apply_ops(self.doc, message["ops"])
            self.v = message["v"]
        elif kind in ("accepted", "rejected"):
            sent = self.sent.get(message.get("id", ""))
            if sent is None:
                raise ProtocolBroken(f"{self.label}: answer to a move never sent: {message}")
            if kind == "rejected" and message["code"] == "unavailable":
                return  # storage was down; the move is sent again
            if sent.answer is not None and sent.answer != message:
                raise ProtocolBroken(f"{self.label}: two answers {sent.answer} and {message}")
            sent.answer = message
            if self.outstanding is sent:
                self.outstanding = None
        elif kind == "error":
            self.errors.append(message)

    def _choose(self) -> dict[str, Any] | None:
        if self.seat is None or self.outstanding is not None or self.doc is None:
            return None
        if self.v is None or self.v < self.current_target:
            return None  # still catching up
        game = self.doc["game"]
        if not game or game["game_over"] or game["turn"] != self.seat or not game["legal"]:
            return None
        return dict(self.rng.choice(game["legal"]))

    # -- the connection loop --------------------------------------------------------------
    async def _send(self, socket: Any, message: dict[str, Any]) -> None:
        await socket.send(msgpack.packb(message))

    async def _session(self, url: str) -> None:
        async with websockets.connect(url, max_size=2**24, open_timeout=3,
                                      close_timeout=1) as socket:
            self.socket, self.url = socket, url
            self.connections += 1
            await self._send(socket, {"t": "hello", "proto": 1, "table": self.table,
                                      "token": self.token, "since": self.v})
            if self.outstanding is not None:  # answer unknown: the same id again
                o = self.outstanding
                await self._send(socket, {"t": "move", "id": o.id, "v": o.v, "move": o.move})
            while not self.finished:
                try:
                    data = await asyncio.wait_for(socket.recv(), 2.0)
                except TimeoutError:
                    if self.outstanding is not None:  # e.g. answered unavailable
                        o = self.outstanding
                        await self._send(socket, {"t": "move", "id": o.id, "v": o.v,
                                                  "move": o.move})
                    continue
                if not isinstance(data, bytes):
                    raise ProtocolBroken(f"{self.label}: a text frame")
                self.frames.append(data)
                message = msgpack.unpackb(data, raw=False)
                self._apply(message)
                move = self._choose()
                if move is not None:
                    if self.pause:
                        await asyncio.sleep(self.pause)
                    sent = Sent(f"{self.label[:8]}-{next(self._ids)}", self.v or 0, move)
                    self.sent[sent.id] = sent
                    self.outstanding = sent
                    await self._send(socket, {"t": "move", "id": sent.id, "v": sent.v,
                                              "move": move})
                    own = sum(1 for s in self.sent.values())
                    if self.chat_every and own % self.chat_every == 0:
                        await self._send(socket, {"t": "chat", "text": f"move {own}, gl"})

    async def run(self, budget_s: float) -> None:
        """Play or watch until the game is over; reconnect on any drop. Bounded by `budget_s`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget_s
        while not self.finished:
            if loop.time() > deadline:
                raise TimeoutError(f"{self.label}: game not over after {budget_s}s (v {self.v})")
            url = self.urls[next(self._url_turn)]
            try:
                await self._session(url)
            except (OSError, TimeoutError, websockets.ConnectionClosed,
                    websockets.InvalidHandshake):
                await asyncio.sleep(0.05)
            finally:
                self.socket = None

    def acked(self) -> dict[str, tuple[int, dict[str, Any]]]:
        """id -> (version created, move) for every accepted move."""
        return {s.id: (s.answer["v"], s.move) for s in self.sent.values()
                if s.answer is not None and s.answer["t"] == "accepted"}


def move_events(frames: list[bytes]) -> dict[int, list[dict[str, Any]]]:
    """version -> the move events (play, draw, pass) of that diff, from one audience's frames."""
    out: dict[int, list[dict[str, Any]]] = {}
    for frame in frames:
        message = msgpack.unpackb(frame, raw=False)
        if message.get("t") == "diff":
            moves = [e for e in message["ev"] if e.get("type") in ("play", "draw", "pass")]
            if message["v"] in out and out[message["v"]] != moves:
                raise ProtocolBroken(f"version {message['v']} arrived with two different events")
            out[message["v"]] = moves
    return out


def same_move(event: dict[str, Any], seat: int, move: dict[str, Any]) -> bool:
    """Whether a move event is `seat` making `move` (a move as sent by a client)."""
    if event.get("seat") != seat:
        return False
    if "play" in move:
        return event["type"] == "play" and sorted(event["tile"]) == sorted(move["play"])
    if move.get("draw"):
        return event["type"] == "draw"
    return event["type"] == "pass"
