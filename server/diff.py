"""Generic diff and patch of plain data (dict/list/str/int/float/bool/None/bytes).

Implements the document diff of the wire protocol: a diff is a list of ops applied in order:

- ``["=", path, value]`` set the value at path (``[]`` = the whole document)
- ``["+", path, [items...]]`` append items to the list at path
- ``["-", path]`` delete the map key at path
- ``["~", path, n]`` truncate the list at path to length n

A path is a list of map keys and list indices. Knows nothing of games; imports no project module.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from operator import is_
from typing import Any

import msgpack

Op = list[Any]
Path = list[str | int]
Bodies = dict[int, tuple[object, bytes]]
"""Lists of ops already packed, by identity: id(ops) -> (the ops, the msgpack encoding of each
op in turn, without the list's own header)."""


def same(a: object, b: object) -> bool:
    """Deep equality that also tells apart types Python's ``==`` merges (True/1, 1/1.0).
    The very same object is the same without a look inside: documents that share their
    unchanged parts with the previous version (engine.views) compare in proportion to what
    changed."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        assert isinstance(a, dict) and isinstance(b, dict)
        if len(a) != len(b):
            return False
        return all(key in b and same(value, b[key]) for key, value in a.items())
    if kind is list:
        assert isinstance(a, list) and isinstance(b, list)
        if len(a) != len(b):
            return False
        return all(x is y or same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


Memo = dict[tuple[int, int, tuple[str | int, ...]], list[Op]]


def diff(old: object, new: object, memo: Memo | None = None) -> list[Op]:
    """The ops that turn ``old`` into ``new`` (empty when they are the same).

    ``memo``: shared by the diffs of documents that share parts (every audience's document of
    one version, engine.views): a pair of shared maps or lists at the same path is compared
    once and its ops reused. Only while all those documents are alive (ids are its keys)."""
    ops: list[Op] = []
    _diff(old, new, [], ops, memo)
    return ops


def diff_at(old: object, new: object, path: Sequence[str | int],
            bodies: Bodies | None = None) -> list[Op]:
    """`diff` of two values found at ``path`` in their documents: the same ops, with their
    paths from the documents' root. ``bodies``: where two lists were told apart by the size of
    their encodings, the encoding of the ops returned is kept there (they need not be packed
    again)."""
    if type(old) is list and type(new) is list and old is not new:
        return _diff_list(old, new, list(path), None, bodies)
    ops: list[Op] = []
    _diff(old, new, list(path), ops, None)
    return ops


def diff_cut_at(kept: list[Any], length: int, new: list[Any], path: Sequence[str | int],
                bodies: Bodies | None = None) -> list[Op]:
    """`diff_at` of a list of ``length`` items and a shorter one, ``new``, given only the
    first items of the longer (``kept``: as many as ``new`` has): a list diff looks at no
    item of the longer list beyond those (the rest can be dropped: "~"), so the rest need not
    be built."""
    if not len(kept) == len(new) < length:
        raise ValueError("kept must be as long as the new list, and that shorter than length")
    return _diff_list([*kept, *[None] * (length - len(kept))], new, list(path), None, bodies)


_PACKER = msgpack.Packer(use_bin_type=True)  # diffs are computed on one thread (the loop's)


def array_header_size(items: int) -> int:
    """The bytes of msgpack's header of an array of ``items``."""
    return 1 if items < 16 else 3 if items < 65536 else 5


def _size(ops: list[Op]) -> int:
    return len(_PACKER.pack(ops))


def _diff(old: object, new: object, path: Path, ops: list[Op], memo: Memo | None) -> None:
    # One pass: every node is visited once, except below an object shared by both (skipped);
    # leaves compare by type and value.
    if old is new:
        return
    kind = type(old)
    if kind is not type(new):
        ops.append(["=", path, new])
        return
    if kind is not dict and kind is not list:
        if old != new:
            ops.append(["=", path, new])
        return
    key = (id(old), id(new), tuple(path)) if memo is not None else None
    if key is not None and memo is not None:
        known = memo.get(key)
        if known is not None:
            ops.extend(known)
            return
    start = len(ops)
    if kind is dict:
        assert isinstance(old, dict) and isinstance(new, dict)
        for name in old:
            if name not in new:
                ops.append(["-", [*path, name]])
        for name, value in new.items():
            if name not in old:
                ops.append(["=", [*path, name], value])
            elif old[name] is not value:
                _diff(old[name], value, [*path, name], ops, memo)
    else:
        assert isinstance(old, list) and isinstance(new, list)
        ops.extend(_diff_list(old, new, path, memo))
    if key is not None and memo is not None:
        memo[key] = ops[start:]


def _diff_list(old: list[Any], new: list[Any], path: Path, memo: Memo | None,
               bodies: Bodies | None = None) -> list[Op]:
    n_old, n_new = len(old), len(new)
    if n_new >= n_old and all(map(is_, old, new)):  # the same items, and perhaps more
        return [["+", path, new[n_old:]]] if n_new > n_old else []
    changed: list[Op] = []
    for i in range(min(n_old, n_new)):
        if old[i] is not new[i]:
            _diff(old[i], new[i], [*path, i], changed, memo)
    if not changed and n_new >= n_old:  # an unchanged prefix: append what is new, if any
        return [["+", path, new[n_old:]]] if n_new > n_old else []
    ops: list[Op] = [["~", path, n_new]] if n_new < n_old else []
    ops += changed
    if n_new > n_old:
        ops.append(["+", path, new[n_old:]])
    whole: list[Op] = [["=", path, new]]
    # Element-wise changes can cost more than sending the list again (a tile taken from
    # the middle of a hand shifts every later element): keep whichever encodes shorter.
    if bodies is None:
        return whole if _size(whole) <= _size(ops) else ops
    whole_packed, ops_packed = _PACKER.pack(whole), _PACKER.pack(ops)
    if len(whole_packed) <= len(ops_packed):
        bodies[id(whole)] = (whole, whole_packed[1:])
        return whole
    bodies[id(ops)] = (ops, ops_packed[array_header_size(len(ops)):])
    return ops


class PatchError(ValueError):
    """An op that does not fit the document it is applied to."""


def apply_ops(doc: object, ops: Sequence[Sequence[Any]]) -> Any:
    """Apply ops to a copy of ``doc`` and return it (the input is never changed)."""
    result = copy.deepcopy(doc)
    for op in ops:
        result = _apply(result, op)
    return result


def _parent(doc: Any, path: Sequence[Any]) -> tuple[Any, Any]:
    if not path:
        raise PatchError("this op needs a non-empty path")
    node = doc
    for key in path[:-1]:
        node = _child(node, key)
    return node, path[-1]


def _child(node: Any, key: Any) -> Any:
    try:
        if isinstance(node, dict):
            return node[key]
        if isinstance(node, list) and isinstance(key, int) and not isinstance(key, bool):
            if key < 0:
                raise IndexError(key)
            return node[key]
    except (KeyError, IndexError) as exc:
        raise PatchError(f"no element {key!r} on the path") from exc
    raise PatchError(f"cannot step into {type(node).__name__} with {key!r}")


def _target(doc: Any, path: Sequence[Any]) -> Any:
    node = doc
    for key in path:
        node = _child(node, key)
    return node


def _apply(doc: Any, op: Sequence[Any]) -> Any:
    if not isinstance(op, Sequence) or isinstance(op, str | bytes) or len(op) < 2:
        raise PatchError(f"malformed op {op!r}")
    kind, path = op[0], op[1]
    if not isinstance(path, Sequence) or isinstance(path, str | bytes):
        raise PatchError(f"malformed path {path!r}")
    if kind == "=" and len(op) == 3:
        if not path:
            return op[2]
        parent, key = _parent(doc, path)
        if isinstance(parent, dict):
            parent[key] = op[2]
        else:
            _child(parent, key)
            parent[key] = op[2]
        return doc
    if kind == "+" and len(op) == 3:
        target = _target(doc, path)
        if not isinstance(target, list) or not isinstance(op[2], list):
            raise PatchError("'+' appends a list to a list")
        target.extend(op[2])
        return doc
    if kind == "-" and len(op) == 2:
        parent, key = _parent(doc, path)
        if not isinstance(parent, dict) or key not in parent:
            raise PatchError(f"no map key {key!r} to delete")
        del parent[key]
        return doc
    if kind == "~" and len(op) == 3:
        target = _target(doc, path)
        n = op[2]
        if not isinstance(target, list) or not isinstance(n, int) or not 0 <= n <= len(target):
            raise PatchError("'~' truncates a list to at most its length")
        del target[n:]
        return doc
    raise PatchError(f"unknown op {op!r}")
