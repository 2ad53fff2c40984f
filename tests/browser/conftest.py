"""Browser test fixtures: the built client, the real service, and Debian's Chromium.

- ``client_build``: makes sure client_js/dist is built (npm ci + build when missing).
- ``service``: ``python -m server`` on a free port over the test Redis (tests/support/servers.py).
- ``browser``: one Chromium per module through the sync Playwright API (no asyncio here).
- ``shots``: a function saving a page screenshot under artifacts/screenshots/.
- ``new_page(browser, **context_options)``: a page in a fresh context (own localStorage);
  every uncaught page error fails the test, and the contexts are closed after it.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from tests.support.servers import ServiceProcess

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "client_js"
SHOTS = REPO / "artifacts" / "screenshots"
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 360, "height": 740}, "device_scale_factor": 2, "is_mobile": True,
         "has_touch": True}
"""Context options of a desktop window and of a 360 x 740 touch phone."""
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def client_build() -> Path:
    """The built client, built again when a source is newer than the bundle."""
    dist = CLIENT / "dist"
    built = dist / "app.js"
    sources = [*(CLIENT / "src").rglob("*"), CLIENT / "package.json"]
    if not built.exists() or max(p.stat().st_mtime for p in sources) > built.stat().st_mtime:
        if not (CLIENT / "node_modules").exists():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True)
        subprocess.run(["npm", "run", "build"], cwd=CLIENT, check=True)
    return dist


@pytest.fixture
def service(redis_url: str, client_build: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(redis_url) as proc:
        yield proc


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


_opened: list[BrowserContext] = []
_page_errors: list[str] = []


def new_page(browser: Browser, **options: Any) -> Page:
    context = browser.new_context(**options)
    _opened.append(context)
    page = context.new_page()
    page.on("pageerror", lambda error: _page_errors.append(f"{page.url}: {error}"))
    return page


@pytest.fixture(autouse=True)
def no_page_errors() -> Iterator[None]:
    _page_errors.clear()
    yield
    while _opened:
        _opened.pop().close()
    assert _page_errors == [], "uncaught errors in the page"


@pytest.fixture
def shots() -> Callable[[Page, str], None]:
    SHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: Page, name: str) -> None:
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    return save


def post_json(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as res:
        return json.loads(res.read())
