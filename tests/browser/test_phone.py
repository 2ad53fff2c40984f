"""The table on one screen: at 360x640, 390x844 and 1280x800 everything a move needs (the
hand, every side's score, the clock, the draw / pass buttons) is inside the viewport without
scrolling, hand tiles are at least 44 px tall on phones, the lobby's create button is in
sight, the board zooms on a double tap, and the phone's chat sits behind a button that
counts the lines arriving while it is closed."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import new_page
from tests.browser.test_client import create_against_bot_from_lobby, play_my_moves
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

SIZES = [(360, 640), (390, 844), (1280, 800)]


def device(width: int, height: int) -> dict[str, Any]:
    phone = width < 800
    return {"viewport": {"width": width, "height": height},
            "device_scale_factor": 2 if phone else 1, "is_mobile": phone, "has_touch": phone}


def inside(page: Page, selector: str) -> list[dict[str, float]]:
    """The bounding boxes of `selector`'s elements, each asserted inside the viewport."""
    size = page.viewport_size
    assert size is not None
    boxes = []
    for i in range(page.locator(selector).count()):
        box = page.locator(selector).nth(i).bounding_box()
        assert box is not None, f"{selector} #{i} is not shown"
        assert box["x"] >= -0.5 and box["y"] >= -0.5, (selector, box)
        assert box["x"] + box["width"] <= size["width"] + 0.5, (selector, box, size)
        assert box["y"] + box["height"] <= size["height"] + 0.5, (selector, box, size)
        boxes.append(box)
    assert boxes, f"no {selector} on the page"
    return boxes


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_everything_a_move_needs_is_on_one_screen(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None], width: int,
    height: int,
) -> None:
    page = new_page(browser, **device(width, height))
    page.goto(f"{service.url}/#/")
    submit = page.locator("form.create-form button[type=submit]")
    expect(submit).to_be_visible()
    inside(page, "form.create-form button[type=submit]")  # no scrolling to create a table
    shots(page, f"20-lobby-{width}x{height}")

    create_against_bot_from_lobby(page, service.url, clock="realtime")
    assert play_my_moves(page, 2) >= 1
    expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
    assert page.evaluate("scrollY") == 0
    # every side's score in the seat chips, the clock of the seat to move, the hand and
    # whatever the move offers (a playable tile, or the draw / pass button) on one screen
    scores = inside(page, ".seat-chip .score")
    assert len(scores) == 2
    expect(page.locator(".seat-chip.turn .clock")).to_have_text(re.compile(r"\d+:\d\d \+ \d+:\d\d"))
    inside(page, ".seat-chip.turn .clock")
    inside(page, ".hand")
    tiles = inside(page, ".hand .hand-tile")
    inside(page, ".buttons")
    inside(page, ".buttons button, .buttons .hint")
    if width < 800:
        assert all(t["height"] >= 44 for t in tiles), tiles
        inside(page, ".chat-toggle")
        expect(page.locator(".side .chat")).to_be_hidden()
    board = page.locator(".board").bounding_box()
    assert board is not None and board["height"] >= 0.3 * height - 40, board
    width_seen = page.evaluate("document.documentElement.scrollWidth")
    assert width_seen <= width, f"page scrolls sideways: {width_seen}px"
    shots(page, f"21-table-{width}x{height}")


def test_board_tiles_are_drawn_as_large_as_the_board_allows(
    browser: Browser, service: ServiceProcess
) -> None:
    page = new_page(browser, **device(360, 640))
    create_against_bot_from_lobby(page, service.url)
    play_my_moves(page, 1)
    expect(page.locator(".board .tile").first).to_be_visible()
    # Measured in one step in the page: the board is drawn anew at every move (the bot's
    # too), so a tile found in one call may be gone by the next.
    longest = page.wait_for_function(
        """() => { const t = document.querySelector('.board .tile');
                   const r = t && t.getBoundingClientRect();
                   return r && r.width > 0 ? Math.max(r.width, r.height) : null; }"""
    ).json_value()
    # a tile is two units long: much larger than the 37x19 px of the fixed 20 px unit (after
    # one move each, up to three tiles lie in a row with room for the next at both ends:
    # about 59 px a tile on this board; one or two tiles come out larger)
    assert longest >= 50, longest


def test_a_double_tap_zooms_the_board_and_another_zooms_back(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(browser, **device(360, 640))
    create_against_bot_from_lobby(page, service.url)
    play_my_moves(page, 1)
    expect(page.locator(".board .tile").first).to_be_visible()
    board = page.locator(".board")
    box = board.bounding_box()
    assert box is not None
    base = page.locator(".board svg").get_attribute("viewBox")
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.touchscreen.tap(x, y)
    page.touchscreen.tap(x, y)
    expect(board).to_have_class(re.compile(r"\bzoomed\b"))
    zoomed = page.locator(".board svg").get_attribute("viewBox")
    assert zoomed != base
    assert float(zoomed.split()[2]) < float(base.split()[2])  # a narrower part of the plane
    shots(page, "22-board-zoomed-360")
    page.wait_for_timeout(400)
    page.touchscreen.tap(x, y)
    page.touchscreen.tap(x, y)
    expect(board).not_to_have_class(re.compile(r"\bzoomed\b"))


def test_the_phone_chat_is_behind_a_button_with_an_unread_badge(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    phone = new_page(browser, **device(360, 640))
    create_against_bot_from_lobby(phone, service.url)
    table = phone.url.split("#/t/")[1]
    toggle = phone.locator(".chat-toggle")
    badge = toggle.locator(".badge")
    expect(phone.locator(".side .chat")).to_be_hidden()
    expect(badge).to_be_hidden()

    watcher = new_page(browser, viewport={"width": 1200, "height": 820})
    watcher.goto(f"{service.url}/#/t/{table}")
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    expect(watcher.locator(".chat-toggle")).to_be_hidden()  # a wide screen keeps the side panel
    for text in ("hello", "nice play"):
        watcher.locator(".chat-form input").fill(text)
        watcher.locator(".chat-form input").press("Enter")
    expect(badge).to_be_visible()
    expect(badge).to_have_text("2")
    expect(toggle).to_have_attribute("aria-label", "chat, 2 unread")
    shots(phone, "23-chat-badge-360")

    toggle.click()
    expect(phone.locator(".side .chat")).to_be_visible()
    expect(phone.locator(".chat-log li").last).to_have_text(re.compile(r"nice play$"))
    expect(badge).to_be_hidden()
    inside(phone, ".chat-form input")
    phone.locator(".chat-form input").fill("thanks")
    phone.locator(".chat-form input").press("Enter")
    expect(phone.locator(".chat-log li").last).to_have_text(re.compile(r"thanks$"))
    shots(phone, "24-chat-open-360")
    phone.locator(".chat-close").click()
    expect(phone.locator(".side .chat")).to_be_hidden()
    expect(badge).to_be_hidden()  # our own line is not news
