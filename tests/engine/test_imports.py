"""engine/ imports only the standard library (msgpack only lazily, inside engine/files.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
LAZY_ALLOWED = {("files.py", "msgpack")}


def imported(tree: ast.AST) -> list[tuple[str, bool]]:
    """(top-level module, imported at module level?) for every import in the tree."""
    found: list[tuple[str, bool]] = []
    top_level = {id(node) for node in getattr(tree, "body", [])}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name.split(".")[0], id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], id(node) in top_level))
    return found


def test_engine_modules_import_only_the_standard_library() -> None:
    modules = sorted(ENGINE.rglob("*.py"))
    assert len(modules) > 10
    for path in modules:
        for name, at_top in imported(ast.parse(path.read_text(), str(path))):
            if name == "engine" or name in sys.stdlib_module_names:
                continue
            assert (path.name, name) in LAZY_ALLOWED and not at_top, f"{path.name} imports {name}"


def test_engine_uses_no_asyncio_and_no_global_random() -> None:
    for path in sorted(ENGINE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = [n for n, _ in imported(tree)]
        assert "asyncio" not in names, path.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "random"):
                assert node.attr == "Random", f"{path.name} uses random.{node.attr}"
            if isinstance(node, ast.ImportFrom) and node.module == "random":
                raise AssertionError(f"{path.name} imports from random")


def test_engine_ships_type_information() -> None:
    assert (ENGINE / "py.typed").exists()


def test_the_import_check_catches_a_third_party_import() -> None:
    tree = ast.parse("import msgpack\n\ndef f():\n    import redis\n")
    assert imported(tree) == [("msgpack", True), ("redis", False)]
