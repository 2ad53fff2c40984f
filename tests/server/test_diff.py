"""The generic document diff: ops as the protocol describes them, and the patch round trip."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.diff import Bodies, PatchError, apply_ops, diff, diff_at, same

scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6) | (
    st.floats(allow_nan=False, allow_infinity=False)
)
plain = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=4), children, max_size=5),
    max_leaves=25,
)


def test_same_document_gives_no_ops() -> None:
    doc = {"v": 3, "hand": ["6-4", "5-5"], "clock": {"deadline": None}}
    assert diff(doc, {"v": 3, "hand": ["6-4", "5-5"], "clock": {"deadline": None}}) == []


def test_changed_scalar_is_set_at_its_path() -> None:
    assert diff({"game": {"turn": 0}}, {"game": {"turn": 1}}) == [["=", ["game", "turn"], 1]]


def test_list_that_grows_at_the_end_is_appended() -> None:
    old = {"history": [{"seat": 0, "play": "5-5"}]}
    new = {"history": [{"seat": 0, "play": "5-5"}, {"seat": 1, "draw": True}]}
    assert diff(old, new) == [["+", ["history"], [{"seat": 1, "draw": True}]]]


def test_removed_key_is_deleted_and_new_key_set() -> None:
    assert diff({"a": 1, "b": 2}, {"b": 2, "c": 3}) == [["-", ["a"]], ["=", ["c"], 3]]


def test_same_length_list_is_patched_per_index() -> None:
    old = {"counts": [7, 7, 7, 7, 7, 7, 7, 7]}
    new = {"counts": [7, 7, 7, 6, 7, 7, 7, 7]}
    assert diff(old, new) == [["=", ["counts", 3], 6]]


def test_shorter_list_with_same_prefix_is_truncated() -> None:
    old = {"ends": [{"v": 1}, {"v": 2}, {"v": 3}, {"v": 4}, {"v": 5}]}
    new = {"ends": [{"v": 1}, {"v": 2}]}
    assert diff(old, new) == [["~", ["ends"], 2]]


def test_type_change_between_equal_python_values_is_seen() -> None:
    assert diff({"x": 1}, {"x": True}) == [["=", ["x"], True]]
    assert diff({"x": 1}, {"x": 1.0}) == [["=", ["x"], 1.0]]


def test_whole_document_replaced_when_types_differ() -> None:
    assert diff([1, 2], {"a": 1}) == [["=", [], {"a": 1}]]


def test_apply_ops_does_not_change_its_input() -> None:
    doc: dict[str, Any] = {"l": [1, 2], "m": {"k": 1}}
    out = apply_ops(doc, [["+", ["l"], [3]], ["-", ["m", "k"]], ["~", ["l"], 1]])
    assert out == {"l": [1], "m": {}}
    assert doc == {"l": [1, 2], "m": {"k": 1}}


@pytest.mark.parametrize(
    "ops",
    [
        [["+", ["missing"], [1]]],
        [["-", ["l"], 1, 2]],
        [["~", ["l"], 5]],
        [["=", ["l", 9], 0]],
        [["?", ["l"]]],
        [["-", []]],
        ["="],
        [["=", "l", 1]],
        [["+", ["m"], [1]]],
    ],
)
def test_ops_that_do_not_fit_raise_patch_error(ops: list[Any]) -> None:
    with pytest.raises(PatchError):
        apply_ops({"l": [1, 2], "m": {}}, ops)


@settings(max_examples=300, deadline=None)
@given(plain, plain)
def test_apply_of_diff_reproduces_the_new_document(old: Any, new: Any) -> None:
    ops = diff(old, new)
    assert same(apply_ops(old, ops), new)
    if same(old, new):
        assert ops == []


def documented_diff(old: Any, new: Any, path: list[Any]) -> list[Any]:
    """docs/protocol.md §3, step by step, written from the text (not from server.diff)."""
    if same(old, new):
        return []
    if type(old) is not type(new):
        return [["=", path, new]]
    if isinstance(old, dict):
        ops: list[Any] = [["-", [*path, k]] for k in old if k not in new]
        for k in new:
            ops += ([["=", [*path, k], new[k]]] if k not in old
                    else documented_diff(old[k], new[k], [*path, k]))
        return ops
    if isinstance(old, list):
        m, n = len(old), len(new)
        changes: list[Any] = []
        for i in range(min(m, n)):
            changes += documented_diff(old[i], new[i], [*path, i])
        if not changes and n >= m:
            return [["+", path, new[m:]]] if n > m else []
        candidate = ([["~", path, n]] if n < m else []) + changes \
            + ([["+", path, new[m:]]] if n > m else [])
        whole = [["=", path, new]]
        return whole if len(msgpack.packb(whole)) <= len(msgpack.packb(candidate)) else candidate
    return [["=", path, new]]


@settings(max_examples=400, deadline=None)
@given(plain, plain)
def test_the_server_computes_diffs_exactly_as_the_protocol_document_says(old: Any,
                                                                         new: Any) -> None:
    assert diff(old, new) == documented_diff(old, new, [])


def test_game_documents_diff_exactly_as_the_protocol_document_says() -> None:
    from tests.server.test_documents import played_records

    for preset, players in (("all-fives", 2), ("draw", 4), ("bergen", 3)):
        records = played_records(preset, players, seed=11)
        old_docs = records[0].documents(1)
        for version, record in enumerate(records[1:], start=2):
            docs = record.documents(version, (records[version - 2], old_docs["s"]))
            for audience, doc in docs.items():
                assert diff(old_docs[audience], doc) == documented_diff(old_docs[audience], doc,
                                                                        [])
            old_docs = docs


@settings(max_examples=200, deadline=None)
@given(st.lists(plain, max_size=20), st.lists(plain, max_size=20))
def test_a_list_diff_keeps_the_encoding_it_chose_by(old: list[Any], new: list[Any]) -> None:
    bodies: Bodies = {}
    ops = diff_at(old, new, ("game", "hand"), bodies)
    assert ops == diff({"game": {"hand": old}}, {"game": {"hand": new}})
    for kept, body in bodies.values():
        assert kept is ops
        assert msgpack.packb(ops) == msgpack.Packer().pack_array_header(len(ops)) + body
