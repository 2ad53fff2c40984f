"""The client works in Chromium under the service's Content-Security-Policy: the headers
arrive with the page and its script, and nothing the page does is refused by the policy."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect

from tests.browser.conftest import new_page
from tests.browser.test_client import create_against_bot_from_lobby, play_one
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser


def is_violation(message: ConsoleMessage) -> bool:
    text = message.text
    return "Content Security Policy" in text or "Content-Security-Policy" in text


def test_the_page_plays_under_its_policy_without_a_violation(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(browser, viewport={"width": 1200, "height": 820})
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if is_violation(m) else None)
    headers: dict[str, dict[str, str]] = {}

    def keep(response: Response) -> None:
        path = response.url.removeprefix(service.url).split("#")[0]
        if path in ("/", "/app.js", "/style.css"):
            headers[path] = response.headers

    page.on("response", keep)
    create_against_bot_from_lobby(page, service.url)
    assert set(headers) == {"/", "/app.js", "/style.css"}, sorted(headers)
    for path, got in headers.items():
        policy = got.get("content-security-policy", "")
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, path
        assert got.get("x-content-type-options") == "nosniff", path
        assert got.get("referrer-policy") == "same-origin", path

    # a move and a chat line go through the websocket under connect-src 'self'
    expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
    assert play_one(page)
    expect(page.locator(".board .tile").first).to_be_visible()
    page.locator(".chat-form input").fill("gg")
    page.locator(".chat-form input").press("Enter")
    expect(page.locator(".chat-log li").last).to_have_text("cy gg")
    shots(page, "12-under-csp")
    assert violations == []

    # The policy is really in force (and the console would report a refusal): an inline
    # script the page did not ship is refused.
    page.evaluate("""() => {
        const s = document.createElement('script');
        s.textContent = 'window.__inline = true';
        document.body.append(s);
    }""")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__inline === undefined")
    assert violations, "an inline script ran or was refused without a report"
