"""The engine's tests need nothing but the engine, pytest and hypothesis (and msgpack, which
reads msgpack transcripts): they run from a checkout without the project installed and without
the server's libraries, and no test folder shadows a package of the project (tests/ is a
package: tests/server is `tests.server`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCKED = ("server", "redis", "starlette", "uvicorn", "websockets", "httpx", "asyncpg")


def test_engine_tests_run_without_the_server_stack_or_an_install(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "engine", checkout / "engine")
    (checkout / "tests").mkdir()
    for name in ("__init__.py", "conftest.py", "strategies.py"):
        shutil.copy(REPO / "tests" / name, checkout / "tests" / name)
    shutil.copytree(REPO / "tests" / "engine", checkout / "tests" / "engine")
    shutil.copytree(REPO / "tests" / "data", checkout / "tests" / "data")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    blockers = tmp_path / "blockers"
    for name in BLOCKED:  # importing any of these fails, as in a venv that lacks them
        (blockers / name).mkdir(parents=True)
        (blockers / name / "__init__.py").write_text(
            f"raise ImportError('{name} is not installed here')\n")
    site = sysconfig.get_paths()["purelib"]  # pytest, hypothesis (-S: no .pth, no install)
    result = subprocess.run(
        [sys.executable, "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/engine/test_core.py", "tests/engine/test_examples.py"],
        cwd=checkout, env={"PYTHONPATH": f"{blockers}:{site}", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout


def test_tests_is_a_package_so_no_folder_shadows_the_server() -> None:
    assert (REPO / "tests" / "__init__.py").exists()
    import server

    assert Path(server.__file__).resolve().parent == REPO / "server"
