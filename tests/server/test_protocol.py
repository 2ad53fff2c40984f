"""server.protocol: every client message decodes to its dataclass, every bad field is refused with
its documented code (and nothing else), the builders give the documented frames byte for byte,
and every close code is documented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgpack
import pytest

from server import protocol
from server.connection import Close as ReexportedClose
from server.protocol import (
    MAX_CHAT,
    MAX_ID,
    Chat,
    Close,
    Hello,
    Hint,
    Move,
    Ping,
    ProtocolError,
    Ready,
    Sync,
    decode,
    hello_close,
)
from server.rejected import Rejected, server_full, unavailable

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def packed(message: object) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


def refused(message: object) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode(message if isinstance(message, bytes) else packed(message))
    return caught.value


# ---- decode: good messages ---------------------------------------------------------------------


@pytest.mark.parametrize(("message", "expected"), [
    ({"t": "hello", "proto": 1, "table": "k3f9x2", "token": "oB1", "since": 12, "invite": None},
     Hello(table="k3f9x2", token="oB1", since=12, invite=None)),
    ({"t": "hello", "proto": 1, "table": "k3f9x2"}, Hello(table="k3f9x2")),
    ({"t": "hello", "proto": 1, "table": "k3f9x2", "since": 0, "invite": "code"},
     Hello(table="k3f9x2", since=0, invite="code")),
    ({"t": "hello", "proto": 1, "table": "t", "since": 2**64 - 1},
     Hello(table="t", since=2**64 - 1)),
    ({"t": "hello", "proto": 1, "table": "t", "extra": [1]}, Hello(table="t")),  # ignored key
    ({"t": "move", "id": "m17", "v": 12, "move": {"play": "5-3", "on": "5-5"}},
     Move(id="m17", v=12, move={"play": "5-3", "on": "5-5"})),
    ({"t": "move", "id": "x" * MAX_ID, "v": 0, "move": {"draw": True}},
     Move(id="x" * MAX_ID, v=0, move={"draw": True})),
    ({"t": "move", "id": "m", "v": 3, "move": {"jump": 1}},  # notation: the table service's
     Move(id="m", v=3, move={"jump": 1})),
    ({"t": "chat", "text": "gg"}, Chat("gg")),
    ({"t": "chat", "text": " gg "}, Chat(" gg ")),  # relayed as sent
    ({"t": "chat", "text": "x" * MAX_CHAT}, Chat("x" * MAX_CHAT)),
    ({"t": "chat", "text": "👍🏽 ok"}, Chat("👍🏽 ok")),
    ({"t": "ping", "n": 5}, Ping(5)),
    ({"t": "ping", "n": -(2**63)}, Ping(-(2**63))),
    ({"t": "ping"}, Ping(None)),
    ({"t": "ping", "n": None}, Ping(None)),
    ({"t": "sync", "since": 12}, Sync(12)),
    ({"t": "sync", "since": 0}, Sync(0)),
    ({"t": "ready"}, Ready()),
    ({"t": "hint"}, Hint()),
    ({"t": "hint", "extra": 1}, Hint()),  # ignored key
])
def test_every_message_type_decodes_to_its_dataclass(message: dict[str, Any],
                                                     expected: object) -> None:
    assert decode(packed(message)) == expected


def test_decoded_messages_are_frozen() -> None:
    message = decode(packed({"t": "sync", "since": 1}))
    with pytest.raises(AttributeError):
        message.since = 2  # type: ignore[misc, union-attr]


# ---- decode: bad frames ------------------------------------------------------------------------


@pytest.mark.parametrize("frame", [
    b"\xc1\xff\x00", b"", packed([1, 2, 3]), packed("hello"), packed(None), packed({}),
    packed({"t": 5}), packed({"t": None}), packed({"t": "jump"}), packed({"t": "welcome"}),
    packed({"t": "hello", "proto": 1, "table": "t"}) + b"\x00",  # trailing bytes
])
def test_frames_that_are_no_message_are_bad_message_without_a_kind(frame: bytes) -> None:
    error = refused(frame)
    assert (error.code, error.kind, error.id, error.version) == ("bad_message", None, None, None)
    assert error.status == 400 and isinstance(error, Rejected)


HELLO = {"t": "hello", "proto": 1, "table": "k3f9x2"}


@pytest.mark.parametrize(("fields", "problem"), [
    ({"proto": "1"}, '"proto"'), ({"proto": None}, '"proto"'), ({"proto": True}, '"proto"'),
    ({"proto": 1.0}, '"proto"'),
    ({"table": 5}, '"table"'), ({"table": ""}, '"table"'), ({"table": "x" * 65}, '"table"'),
    ({"table": None}, '"table"'),
    ({"token": 7}, '"token"'), ({"token": ""}, '"token"'), ({"token": "x" * 257}, '"token"'),
    ({"token": b"raw"}, '"token"'),
    ({"since": -1}, '"since"'), ({"since": True}, '"since"'), ({"since": "3"}, '"since"'),
    ({"since": 1.5}, '"since"'),
    ({"invite": 3}, '"invite"'), ({"invite": ""}, '"invite"'), ({"invite": "x" * 65}, '"invite"'),
])
def test_every_bad_hello_field_is_bad_message(fields: dict[str, object], problem: str) -> None:
    error = refused({**HELLO, **fields})
    assert (error.code, error.kind, error.id) == ("bad_message", "hello", None)
    assert problem in error.message


def test_a_hello_without_a_table_or_proto_is_bad_message() -> None:
    for missing in ("proto", "table"):
        error = refused({k: v for k, v in HELLO.items() if k != missing})
        assert (error.code, error.kind) == ("bad_message", "hello")


def test_another_proto_is_unsupported_proto_before_any_other_field() -> None:
    for proto in (0, 2, -1, 2**40):
        error = refused({"t": "hello", "proto": proto, "table": 5})
        assert (error.code, error.kind) == ("unsupported_proto", "hello")
        assert hello_close(error) is Close.POLICY


MOVE = {"t": "move", "id": "m1", "v": 3, "move": {"pass": True}}


@pytest.mark.parametrize("bad_id", ["", "x" * (MAX_ID + 1), 7, 0, -5])
def test_a_malformed_move_id_is_refused_with_that_id(bad_id: object) -> None:
    error = refused({**MOVE, "id": bad_id})
    assert (error.code, error.kind, error.id) == ("bad_message", "move", bad_id)
    assert error.version is None


@pytest.mark.parametrize("bad_id", [None, True, 1.5, ["m"], {"a": 1}, b"m1"])
def test_a_move_without_a_usable_id_is_refused_without_one(bad_id: object) -> None:
    error = refused({**MOVE, "id": bad_id})
    assert (error.code, error.kind, error.id) == ("bad_message", "move", None)
    error = refused({k: v for k, v in MOVE.items() if k != "id"})
    assert (error.code, error.kind, error.id) == ("bad_message", "move", None)


@pytest.mark.parametrize(("fields", "problem"), [
    ({"v": -1}, '"v"'), ({"v": "3"}, '"v"'), ({"v": True}, '"v"'), ({"v": None}, '"v"'),
    ({"v": 2.0}, '"v"'),
    ({"move": "5-5"}, '"move"'), ({"move": None}, '"move"'), ({"move": [1]}, '"move"'),
    ({"move": {1: "5-5"}}, '"move"'),
])
def test_a_bad_version_or_payload_is_refused_with_the_move_id(
    fields: dict[str, object], problem: str,
) -> None:
    error = refused({**MOVE, **fields})
    assert (error.code, error.kind, error.id) == ("bad_message", "move", "m1")
    assert problem in error.message


@pytest.mark.parametrize("text", [
    "", "   ", "x" * (MAX_CHAT + 1), 5, None, ["gg"], "a\nb", "tab\there", "\u202egg",
    "\u200b", "\u0301gg", "a" + "\u0301" * 9,
])
def test_chat_text_against_the_rules_is_bad_message(text: object) -> None:
    error = refused({"t": "chat", "text": text})
    assert (error.code, error.kind) == ("bad_message", "chat")
    assert '"text"' in error.message


def test_a_chat_without_text_is_bad_message() -> None:
    assert refused({"t": "chat"}).code == "bad_message"


def test_text_that_is_not_utf8_is_no_message() -> None:
    lone_surrogate = b"\x82\xa1t\xa4chat\xa4text\xa3\xed\xa0\x80"
    assert (refused(lone_surrogate).code, refused(lone_surrogate).kind) == ("bad_message", None)


@pytest.mark.parametrize("n", ["five", True, 1.5, [1]])
def test_a_ping_with_a_bad_n_is_bad_message(n: object) -> None:
    error = refused({"t": "ping", "n": n})
    assert (error.code, error.kind) == ("bad_message", "ping")


@pytest.mark.parametrize("since", [None, -1, "x", True, 1.5])
def test_a_sync_with_a_bad_since_is_bad_message(since: object) -> None:
    error = refused({"t": "sync", "since": since})
    assert (error.code, error.kind) == ("bad_message", "sync")
    assert refused({"t": "sync"}).code == "bad_message"


# ---- builders ----------------------------------------------------------------------------------


def test_the_builders_give_the_documented_frames_in_their_key_order() -> None:
    frames = [
        (protocol.welcome("k3f9x2", 0, 15),
         {"t": "welcome", "proto": 1, "table": "k3f9x2", "seat": 0, "v": 15}),
        (protocol.welcome("k3f9x2", None, 15),
         {"t": "welcome", "proto": 1, "table": "k3f9x2", "seat": None, "v": 15}),
        (protocol.snapshot(15, {"v": 15, "game": None, "table": {}}),
         {"t": "snapshot", "v": 15, "doc": {"v": 15, "game": None, "table": {}}}),
        (protocol.diff(13, [["=", ["v"], 13]], []),
         {"t": "diff", "v": 13, "ops": [["=", ["v"], 13]], "ev": []}),
        (protocol.accepted("m17", 13), {"t": "accepted", "id": "m17", "v": 13}),
        (protocol.rejected("m17", "not_playable", "no", 12),
         {"t": "rejected", "id": "m17", "code": "not_playable", "message": "no", "v": 12}),
        (protocol.rejected(7, "bad_message", "bad id", None),
         {"t": "rejected", "id": 7, "code": "bad_message", "message": "bad id", "v": None}),
        (protocol.error("bad_message", "unknown message type 'jump'"),
         {"t": "error", "code": "bad_message", "message": "unknown message type 'jump'"}),
        (protocol.pong(5), {"t": "pong", "n": 5}),
        (protocol.pong(None), {"t": "pong", "n": None}),
        (protocol.hint(14, {"play": "6-4", "on": "4-4"}),
         {"t": "hint", "v": 14, "move": {"play": "6-4", "on": "4-4"}}),
        (protocol.chat(0, "ann", "gg", 1764470000123),
         {"t": "chat", "seat": 0, "name": "ann", "text": "gg", "ts": 1764470000123}),
        (protocol.presence([True, False], 3),
         {"t": "presence", "online": [True, False], "spectators": 3}),
    ]
    for built, documented in frames:
        assert list(built) == list(documented)  # the key order clients see
        assert protocol.pack(built) == msgpack.packb(documented, use_bin_type=True)
        assert msgpack.unpackb(protocol.pack(built), raw=False) == documented


def test_a_diff_packed_from_its_items_is_the_frame_packed_whole() -> None:
    turn = ["=", ["game", "turn"], 1]
    layout = ["+", ["game", "layout"], [{"tile": "6-4", "parent": 0, "side": "left"}]]
    play = {"type": "play", "seat": 0, "tile": "6-4"}
    many = [["=", ["game", "scores", k], k * 300] for k in range(20)]  # a 16-bit array header
    audiences = [
        ([["=", ["v"], 13], turn, layout, ["=", ["game", "hand"], ["6-6", "2-1"]]], [play]),
        ([["=", ["v"], 13], turn, layout], [play, {"type": "draw", "seat": 1}]),
        ([turn, *many, layout, turn], []),
        ([], [play]),
    ]
    packed: protocol.Packed = {}
    for version in (13, 70_000, 2**40):
        for ops, events in audiences:
            whole = protocol.pack(protocol.diff(version, ops, events))
            assert protocol.pack_diff(version, ops, events, packed) == whole
            assert protocol.pack_diff(version, ops, events, {}) == whole
    assert packed[id(turn)] == (turn, msgpack.packb(turn, use_bin_type=True))


def test_accepted_packed_from_its_parts_is_the_frame_packed_whole() -> None:
    for move_id in ("m", "m17", "é" * 10, "x" * 32):
        for version in (0, 127, 128, 70_000, 2**40, 2**64 - 1):
            assert protocol.pack_accepted(move_id, version) == \
                protocol.pack(protocol.accepted(move_id, version))


def test_a_move_decodes_the_same_however_it_is_checked() -> None:
    payload = {"play": "6-4", "on": "4-4"}
    decoded = protocol.decode(packed({"t": "move", "id": "m1", "v": 3, "move": payload}))
    assert decoded == Move(id="m1", v=3, move=payload)
    assert type(decoded) is Move and decoded.move is not payload
    with pytest.raises(AttributeError):
        decoded.v = 4  # type: ignore[misc]  # frozen like any Move
    for bad in ({"id": "", "v": 3}, {"id": "m1", "v": -1}, {"id": "m1", "v": True},
                {"id": "m1", "v": 3, "move": {1: "6-4"}}, {"id": "m1", "v": 3, "move": []}):
        with pytest.raises(ProtocolError):
            protocol.decode(packed({"t": "move", "move": payload, **bad}))


def test_a_diff_packed_by_groups_of_ops_is_the_frame_packed_whole() -> None:
    many = [["=", ["game", "scores", k], k] for k in range(20)]
    head = [["=", ["v"], 9]]
    groups = [head, [["=", ["game", "turn"], 1], ["=", ["game", "boneyard"], 3]], many, []]
    known = [["=", ["game", "hand"], ["6-6"]]]
    bodies: protocol.Bodies = {id(known): (known, msgpack.packb(known)[1:])}
    events = [{"type": "play", "seat": 0}]
    for found in (groups, [head, known], [head, known, many], []):
        flat = [op for group in found for op in group]
        assert protocol.pack_diff_groups(9, found, events, {}, bodies) == \
            protocol.pack(protocol.diff(9, flat, events))
    assert bodies[id(many)] == (many, msgpack.packb(many)[3:])


def test_connection_still_exports_close_and_pack() -> None:
    from server.connection import pack

    assert ReexportedClose is Close and pack is protocol.pack


# ---- refusals and close codes ------------------------------------------------------------------


def test_protocol_errors_are_rejected_and_carry_their_fields() -> None:
    error = ProtocolError("bad_message", "bad", id="m1", version=None, kind="move")
    assert isinstance(error, Rejected)
    assert (error.code, error.message, error.id, error.version, error.status) == (
        "bad_message", "bad", "m1", None, 400)


def test_refused_hellos_close_with_their_documented_codes() -> None:
    assert hello_close(Rejected("unknown_table", "x", status=404)) is Close.UNKNOWN_TABLE
    assert hello_close(Rejected("bad_token", "x", status=403)) is Close.BAD_TOKEN
    assert hello_close(Rejected("rate_limited", "x", status=429)) is Close.RATE_LIMIT
    assert hello_close(Rejected("seat_left", "x", status=403)) is Close.SEAT_LEFT
    assert hello_close(Rejected("too_many_spectators", "x")) is Close.TOO_MANY_SPECTATORS
    assert hello_close(Rejected("too_many_tables", "x")) is Close.TOO_MANY_CONNECTIONS
    assert hello_close(unavailable()) is Close.INTERNAL
    assert hello_close(server_full()) is Close.GOING_AWAY
    assert hello_close(Rejected("something_else", "x")) is Close.POLICY


def test_every_close_code_has_a_docstring_and_is_documented() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    section = docs[docs.index("## 7. Close codes"):]
    section = section[:section.index("\n## ", 1)]
    documented = {int(code) for code in re.findall(r"^\| (\d{4}) \|", section, re.MULTILINE)}
    assert documented == {int(code) for code in Close}
    for code in Close:
        assert code.__doc__ and code.__doc__ != Close.__doc__, code


def test_a_move_payload_parses_the_same_whether_seen_before_or_not() -> None:
    import engine
    from server.tables import parse_move

    payloads: list[dict[str, object]] = [
        {"play": "6-4", "on": "4-4"}, {"play": "4-6", "on": "4-4"}, {"play": "6-4"},
        {"play": "6-4", "on": None}, {"draw": True}, {"pass": True}, {"draw": 1},
        {"play": "6-4", "x": 1}, {"play": "6-4", "on": "4-4", "x": 1}, {"play": "7-4"},
        {"play": "6-4", "on": 5}, {"play": 64}, {}, {"on": "4-4"}]
    for _ in range(2):  # the second time, the plays parsed before are known
        for payload in payloads:
            try:
                expected: object = engine.move_from_data(payload)
            except engine.EngineError as exc:
                expected = exc.code
            try:
                found: object = parse_move(payload)
            except Rejected as rej:
                found = rej.code
            assert found == expected, payload
