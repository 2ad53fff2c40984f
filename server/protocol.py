"""The websocket wire protocol of docs/protocol.md in one place: what a client may send, what the
server sends back, and how a socket is closed.

- Client frames: one frozen dataclass per message type (`Hello`, `Move`, `Chat`, `Ping`, `Sync`,
  `Ready`, `Hint`) and `decode`, which turns one binary frame into one of them after checking
  every field, or raises `ProtocolError` (a `Rejected`: one refusal type for the whole server).
- Server frames: one builder per frame type (`welcome`, `snapshot`, `diff`, `accepted`,
  `rejected`, `error`, `hint`, `pong`, `chat`, `presence`), each returning the map that goes on
  the wire with its keys in the documented order; `pack` turns it into the frame's bytes.
- `Close`: every websocket close code the server uses, and `HELLO_CLOSES`, the close that
  follows each refused `hello`.

Imports nothing of the game: the content of a move (`{"play": ...}`) is the engine's notation
and is read by the table service (server.tables.parse_move); here it is only checked to be a
map with string keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import repeat
from typing import Any, TypeGuard

import msgpack

from server.diff import Bodies, array_header_size
from server.rejected import Rejected
from server.text import chat_text

PROTO = 1
"""The protocol version a `hello` must name."""
MAX_ID = 32
"""The most characters of a move's `id` (at least 1)."""
MAX_CHAT = 200
"""The most characters of a chat line (at least 1)."""
MAX_TABLE_ID = 64
MAX_TOKEN = 256
MAX_INVITE = 64
MAX_VERSION = 2**64 - 1
"""The largest version a client may name (msgpack's largest unsigned integer)."""
_object_new = object.__new__

Frame = dict[str, object]
"""A server frame before packing: a map whose first key is `t`."""


class Close(IntEnum):
    """The websocket close codes of docs/protocol.md §7. Every member's docstring says when the
    server uses it."""

    def __new__(cls, value: int, doc: str) -> Close:
        member = int.__new__(cls, value)
        member._value_ = value
        member.__doc__ = doc
        return member

    NORMAL = 1000, "Normal close: the client closed, or the server ended the conversation."
    GOING_AWAY = 1001, (
        "The server is going away (restart, deploy) or this process serves as many tables as "
        "it may (MAX_TABLES_PER_PROCESS, after `error unavailable`): reconnect with `since`.")
    POLICY = 1008, (
        "Policy: the origin is not allowed, no `hello` came within the deadline, or the `hello` "
        "named an unsupported `proto` (after `error unsupported_proto`).")
    TOO_BIG = 1009, "A client frame (binary or text) over MAX_FRAME bytes."
    INTERNAL = 1011, (
        "Internal error, or storage unavailable while a `hello` was answered (after "
        "`error unavailable`): reconnect with `since` after a pause.")
    REPLACED = 4000, "A newer connection authenticated with the same seat token."
    UNKNOWN_TABLE = 4001, (
        "The `hello` named a table that does not exist, or a private table without its "
        "invite or one of its seat tokens (after `error unknown_table`).")
    BAD_TOKEN = 4002, "The `hello`'s token holds no seat at the table (after `error bad_token`)."
    TOO_SLOW = 4003, "The socket's send queue had no room for an answer or a version."
    RATE_LIMIT = 4004, (
        "Messages kept coming over the rate limit after `error rate_limited`, or the address "
        "spent its bad-token budget (after `error rate_limited`).")
    SEAT_LEFT = 4005, (
        "This socket's token no longer holds its seat (the seat was left or given a new token; "
        "after `error seat_left` or `rejected seat_left`).")
    TOO_MANY_SPECTATORS = 4006, (
        "A spectator over the table's or its address's spectator cap (after "
        "`error too_many_spectators`).")
    TOO_MANY_CONNECTIONS = 4007, (
        "The address holds MAX_SOCKETS_PER_ADDRESS sockets on this process (after "
        "`error too_many_connections`, before any `hello`) or watches its share of the "
        "process's tables (after `error too_many_tables`).")
    LOG_IN_FIRST = 4008, (
        "The player socket /ws/me without a live session: no `session` cookie, or its session "
        "expired or was ended (log out, log out everywhere, a new password, a deleted account).")


HELLO_CLOSES: Mapping[str, Close] = {
    "unsupported_proto": Close.POLICY,
    "unknown_table": Close.UNKNOWN_TABLE,
    "bad_token": Close.BAD_TOKEN,
    "rate_limited": Close.RATE_LIMIT,
    "seat_left": Close.SEAT_LEFT,
    "too_many_spectators": Close.TOO_MANY_SPECTATORS,
    "too_many_tables": Close.TOO_MANY_CONNECTIONS,
    "too_many_connections": Close.TOO_MANY_CONNECTIONS,
    "unavailable": Close.INTERNAL,
}
"""The close that follows `error <code>` when a `hello` is refused (any other code: POLICY). A
refused `hello` with `code` "unavailable" and a `retry_after` (the process is full) closes
GOING_AWAY instead, see `hello_close`."""


def hello_close(refusal: Rejected) -> Close:
    """The close code that follows a refused `hello`."""
    if refusal.code == "unavailable" and refusal.retry_after is not None:
        return Close.GOING_AWAY
    return HELLO_CLOSES.get(refusal.code, Close.POLICY)


# ---- client frames -----------------------------------------------------------------------------


class ProtocolError(Rejected):
    """A client frame that breaks the protocol. ``code`` is "bad_message" (or
    "unsupported_proto" for a `hello` naming another version); ``kind`` is the frame's `t` when
    it has a known one; ``id`` is a move's `id` as sent (a string or an integer) when the move
    had one, so that the refusal is answered `rejected` with it; ``version`` is always None (the
    table was not read)."""

    id: str | int | None
    kind: str | None

    def __init__(self, code: str, message: str, *, id: str | int | None = None,
                 version: int | None = None, kind: str | None = None) -> None:
        super().__init__(code, message, status=400, version=version)
        self.id = id
        self.kind = kind

    def __repr__(self) -> str:
        return f"ProtocolError({self.code!r}, {self.message!r}, id={self.id!r})"


@dataclass(frozen=True, slots=True)
class Hello:
    """`{"t": "hello", "proto": 1, "table": ..., "token": ..., "since": ..., "invite": ...}`."""

    table: str
    token: str | None = None
    since: int | None = None
    invite: str | None = None
    proto: int = PROTO


@dataclass(frozen=True, slots=True)
class Move:
    """`{"t": "move", "id": ..., "v": ..., "move": {...}}`: ``move`` is a map with string keys
    (its notation is the table service's to read)."""

    id: str
    v: int
    move: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Chat:
    """`{"t": "chat", "text": ...}`: ``text`` as sent, already checked against the text rules."""

    text: str


@dataclass(frozen=True, slots=True)
class Ping:
    """`{"t": "ping", "n": ...}`: ``n`` is echoed by the `pong` (None when it was left out)."""

    n: int | None = None


@dataclass(frozen=True, slots=True)
class Sync:
    """`{"t": "sync", "since": ...}`."""

    since: int


@dataclass(frozen=True, slots=True)
class Ready:
    """`{"t": "ready"}`: the seat is ready for the next hand (during the pause between hands)."""


@dataclass(frozen=True, slots=True)
class Hint:
    """`{"t": "hint"}`: the seat to move asks for the strong bot's move (practice tables)."""


ClientMessage = Hello | Move | Chat | Ping | Sync | Ready | Hint


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _version(value: object) -> TypeGuard[int]:
    return _is_int(value) and 0 <= value <= MAX_VERSION


def _short_text(value: object, limit: int) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= limit


def decode(data: bytes) -> ClientMessage:
    """One client frame, every field checked; raises ProtocolError naming the first problem.
    Keys a message does not define are ignored."""
    try:
        message = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError("bad_message", "frame is not msgpack") from exc
    if not isinstance(message, dict):
        raise ProtocolError("bad_message", "frame is not a map")
    kind = message.get("t")
    if kind == "move":  # the frame every move sends: its usual form checked at once
        client_id, version, move = message.get("id"), message.get("v"), message.get("move")
        if type(client_id) is str and 0 < len(client_id) <= MAX_ID and type(version) is int \
                and 0 <= version <= MAX_VERSION and type(move) is dict \
                and all(map(isinstance, move, _STR)):
            return _new_move(client_id, version, move)
        return _move(message)  # the same checks in full, naming the first that fails
    if not isinstance(kind, str):
        raise ProtocolError("bad_message", 'frame has no string "t"')
    if kind == "hello":
        return _hello(message)
    if kind == "move":
        return _move(message)
    if kind == "chat":
        try:
            return Chat(chat_text(message.get("text"), MAX_CHAT))
        except ValueError as exc:
            raise ProtocolError("bad_message", str(exc), kind=kind) from None
    if kind == "ping":
        n = message.get("n")
        if n is not None and not _is_int(n):
            raise ProtocolError("bad_message", '"n" must be an integer', kind=kind)
        return Ping(n)
    if kind == "sync":
        since = message.get("since")
        if not _version(since):
            raise ProtocolError("bad_message", '"since" must be a version (integer >= 0)',
                                kind=kind)
        return Sync(since)
    if kind == "ready":
        return Ready()
    if kind == "hint":
        return Hint()
    raise ProtocolError("bad_message", f"unknown message type {kind[:40]!r}")


_STR = repeat(str)
_MoveSlots: Any = type("_MoveSlots", (), {"__slots__": Move.__slots__})  # (engine.state.twin:
# this module imports nothing of the game)


def _new_move(client_id: str, version: int, move: Mapping[str, object]) -> Move:
    """`Move(client_id, version, move)`, fast (every move): the slots filled on a twin class,
    then the class set (as engine.state builds its records)."""
    made = _object_new(_MoveSlots)
    made.id = client_id
    made.v = version
    made.move = move
    made.__class__ = Move
    found: Move = made
    return found


def _hello(message: Mapping[Any, object]) -> Hello:
    def bad(text: str) -> ProtocolError:
        return ProtocolError("bad_message", text, kind="hello")

    proto, table, token, since, invite = (
        message.get("proto"), message.get("table"), message.get("token"),
        message.get("since"), message.get("invite"),
    )
    if not _is_int(proto):
        raise bad('"proto" must be an integer')
    if proto != PROTO:
        raise ProtocolError("unsupported_proto", f"this server speaks proto {PROTO}",
                            kind="hello")
    if not _short_text(table, MAX_TABLE_ID):
        raise bad('"table" must be a table id')
    if token is not None and not _short_text(token, MAX_TOKEN):
        raise bad('"token" must be a string or null')
    if since is not None and not _version(since):
        raise bad('"since" must be a version (integer >= 0) or null')
    if invite is not None and not _short_text(invite, MAX_INVITE):
        raise bad('"invite" must be a string or null')
    return Hello(table=table, token=token, since=since, invite=invite, proto=proto)


def _move(message: Mapping[Any, object]) -> Move:
    client_id, version, move = message.get("id"), message.get("v"), message.get("move")
    if not _short_text(client_id, MAX_ID):
        problem = f'"id" must be a string of 1 to {MAX_ID} characters'
        if isinstance(client_id, str) or _is_int(client_id):
            raise ProtocolError("bad_message", problem, id=client_id, kind="move")
        raise ProtocolError("bad_message", problem, kind="move")  # no id to answer with
    if not _version(version):
        raise ProtocolError("bad_message", '"v" must be a version (integer >= 0)',
                            id=client_id, kind="move")
    if not isinstance(move, dict) or not all(isinstance(key, str) for key in move):
        raise ProtocolError("bad_message", '"move" must be a map', id=client_id, kind="move")
    return Move(id=client_id, v=version, move=move)


# ---- server frames -----------------------------------------------------------------------------


def pack(frame: Mapping[str, object]) -> bytes:
    """The bytes of one frame (a msgpack map, strings as str, bytes as bin)."""
    return msgpack.packb(frame, use_bin_type=True)


Packed = dict[int, tuple[object, bytes]]
"""Items of frames already packed, by identity: id(item) -> (the item, its bytes)."""

_PACKER = msgpack.Packer(use_bin_type=True)  # `pack_diff`'s, on the event loop's thread only
_DIFF_HEAD = bytes(_PACKER.pack_map_header(4) + _PACKER.pack("t") + _PACKER.pack("diff")
                   + _PACKER.pack("v"))
_OPS_KEY = bytes(_PACKER.pack("ops"))
_EV_KEY = bytes(_PACKER.pack("ev"))


def pack_diff(v: int, ops: Sequence[object], ev: Sequence[object], packed: Packed) -> bytes:
    """`pack(diff(v, ops, ev))`, the very same bytes, built from each op's and each event's
    own encoding (a msgpack array is its header followed by its items'): an item found in
    ``packed`` (by identity) is not packed again. The frames of one version share ``packed``:
    its audiences' ops and events are largely the very same objects. Not thread-safe (one
    packer): call it on the event loop's thread."""
    parts = [_DIFF_HEAD, _PACKER.pack(v), _OPS_KEY, _PACKER.pack_array_header(len(ops))]
    _pack_items(ops, parts, packed)
    parts += (_EV_KEY, _PACKER.pack_array_header(len(ev)))
    _pack_items(ev, parts, packed)
    return b"".join(parts)


def pack_diff_groups(v: int, groups: Sequence[Sequence[object]], ev: Sequence[object],
                     packed: Packed, bodies: Bodies) -> bytes:
    """`pack_diff` of the ops of ``groups`` one after the other, each group packed once for
    every frame that shares it (``bodies``, by identity, as server.diff keeps them: the
    group's ops' encodings without the group's own array header)."""
    count = 0
    for group in groups:
        count += len(group)
    parts = [_DIFF_HEAD, _PACKER.pack(v), _OPS_KEY, _PACKER.pack_array_header(count)]
    pack = _PACKER.pack
    for group in groups:
        found = bodies.get(id(group))
        if found is None or found[0] is not group:
            found = bodies[id(group)] = (group, pack(group)[array_header_size(len(group)):])
        parts.append(found[1])
    parts += (_EV_KEY, _PACKER.pack_array_header(len(ev)))
    _pack_items(ev, parts, packed)
    return b"".join(parts)


def _pack_items(items: Sequence[object], parts: list[bytes], packed: Packed) -> None:
    pack = _PACKER.pack
    for item in items:
        found = packed.get(id(item))
        if found is None or found[0] is not item:
            found = packed[id(item)] = (item, pack(item))
        parts.append(found[1])


def welcome(table: str, seat: int | None, v: int) -> Frame:
    return {"t": "welcome", "proto": PROTO, "table": table, "seat": seat, "v": v}


def snapshot(v: int, doc: Mapping[str, Any]) -> Frame:
    return {"t": "snapshot", "v": v, "doc": doc}


def diff(v: int, ops: Sequence[object], ev: Sequence[object]) -> Frame:
    return {"t": "diff", "v": v, "ops": ops, "ev": ev}


def accepted(id: str, v: int) -> Frame:
    return {"t": "accepted", "id": id, "v": v}


_ACCEPTED_HEAD = bytes(_PACKER.pack_map_header(3) + _PACKER.pack("t") + _PACKER.pack("accepted")
                       + _PACKER.pack("id"))
_V_KEY = bytes(_PACKER.pack("v"))


def pack_accepted(id: str, v: int) -> bytes:
    """`pack(accepted(id, v))`, the very same bytes, from its constant parts (every move is
    answered with one). On the event loop's thread only, as `pack_diff`."""
    return _ACCEPTED_HEAD + _PACKER.pack(id) + _V_KEY + _PACKER.pack(v)


def rejected(id: str | int, code: str, message: str,
             v: int | None) -> Frame:
    return {"t": "rejected", "id": id, "code": code, "message": message, "v": v}


def error(code: str, message: str) -> Frame:
    return {"t": "error", "code": code, "message": message}


def hint(v: int, move: Mapping[str, object]) -> Frame:
    return {"t": "hint", "v": v, "move": move}


def pong(n: int | None) -> Frame:
    return {"t": "pong", "n": n}


def chat(seat: int | None, name: str, text: str, ts: int) -> Frame:
    return {"t": "chat", "seat": seat, "name": name, "text": text, "ts": ts}


def presence(online: Sequence[bool], spectators: int) -> Frame:
    return {"t": "presence", "online": online, "spectators": spectators}
