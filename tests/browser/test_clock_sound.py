"""Clocks and sounds at the table: a bot seat has no clock, the real-time seat to move shows
its move time and its reserve apart ("0:05 + 1:55"), the low-time warning is red on the seat
to move too, sounds (Web Audio, no files) start only after a gesture, and the mute toggle
survives a reload."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import new_page, post_json
from tests.browser.test_client import create_against_bot_from_lobby, open_table, play_one, sit
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

COUNT_CONTEXTS = """(() => {
    window.__contexts = 0;
    const Real = window.AudioContext;
    window.AudioContext = class extends Real {
        constructor(...a) { super(...a); window.__contexts += 1; }
    };
})();"""
RECORD_SOUNDS = """() => {
    window.__sounds = [];
    document.addEventListener('table-sound', (e) => window.__sounds.push(e.detail));
}"""


def play_a_tile(page: Page) -> None:
    """On this page's turns, draw until a tile fits, then play it (the first move of a turn
    may be a draw, which makes no `play` sound)."""
    for _ in range(30):
        expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
        fits = page.locator(".hand-tile.playable").count() > 0
        assert play_one(page)
        if fits:
            return
    raise AssertionError("no tile fitted in 30 moves")


def test_a_bot_seat_has_no_clock_and_the_seat_to_move_shows_move_time_plus_reserve(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(browser, viewport={"width": 1280, "height": 800})
    create_against_bot_from_lobby(page, service.url, clock="realtime")
    expect(page.locator('.seat-chip[data-seat="1"]')).to_be_visible()
    expect(page.locator('.seat-chip[data-seat="1"] .clock')).to_have_count(0)
    mine = page.locator('.seat-chip[data-seat="0"] .clock')
    expect(mine).to_have_count(1)
    expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
    expect(page.locator(".seat-chip.turn .clock")).to_have_text(
        re.compile(r"^\d+:\d\d \+ \d+:\d\d$"))
    expect(mine).to_have_attribute(
        "title", re.compile(r"move time \d+:\d\d, then reserve \d+:\d\d"))
    shots(page, "30-clock-move-plus-reserve")
    # once we have moved, our clock shows the reserve alone while the bot thinks
    assert play_one(page)
    expect(page.locator('.seat-chip[data-seat="1"] .clock')).to_have_count(0)


def test_the_low_time_warning_is_red_on_the_seat_to_move(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": "all-fives", "players": 2, "bots": {"1": "greedy"}, "name": "Blitz",
        "clock": {"kind": "realtime", "move_s": 3, "reserve_s": 0},
    })["id"]
    page = open_table(browser, service.url, table, viewport={"width": 390, "height": 844},
                      device_scale_factor=2, is_mobile=True, has_touch=True)
    sit(page, 0, "dot")
    low = page.locator(".me-chip .seat-chip.turn .clock.low")
    expect(low).to_be_visible(timeout=15_000)
    expect(low).to_have_text(re.compile(r"^0:0\d \+ 0:00$"))
    # read in one go in the page: the clock is drawn anew every tick, and a detached element
    # has no computed colour
    color = page.wait_for_function(
        "sel => { const e = document.querySelector(sel); return e && getComputedStyle(e).color; }",
        arg=".me-chip .seat-chip.turn .clock.low").json_value()
    r, g, b = (int(c) for c in re.findall(r"\d+", color)[:3])
    assert r >= 200 and g <= 120 and b <= 120, color
    shots(page, "31-clock-low-360")


def test_sounds_wait_for_a_gesture_and_the_mute_toggle_survives_a_reload(
    browser: Browser, service: ServiceProcess
) -> None:
    page = new_page(browser, viewport={"width": 1280, "height": 800})
    page.add_init_script(COUNT_CONTEXTS)
    create_against_bot_from_lobby(page, service.url)
    page.evaluate(RECORD_SOUNDS)
    toggle = page.locator(".sound-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    # the lobby's clicks were gestures: the context exists, made once and lazily
    assert page.evaluate("window.__contexts") == 1
    play_a_tile(page)
    page.wait_for_function("() => window.__sounds.some((s) => s.name === 'play' && s.played)")
    page.wait_for_function("() => window.__sounds.some((s) => s.name === 'turn' && s.played)",
                           timeout=15_000)

    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("localStorage.getItem('allfives.muted')") == "1"
    page.reload()
    expect(page.locator(".sound-toggle")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".sound-toggle")).to_have_class(re.compile(r"\bmuted\b"))
    page.evaluate(RECORD_SOUNDS)
    # no gesture since the reload: no audio context yet, and muted sounds do not play
    assert page.evaluate("window.__contexts") == 0
    play_a_tile(page)
    page.wait_for_function("() => window.__sounds.some((s) => s.name === 'play')")
    assert not any(s["played"] for s in page.evaluate("window.__sounds"))
    page.locator(".sound-toggle").click()
    expect(page.locator(".sound-toggle")).to_have_attribute("aria-pressed", "false")
    page.reload()
    expect(page.locator(".sound-toggle")).to_have_attribute("aria-pressed", "false")


def test_a_page_without_a_gesture_makes_no_audio_context(
    browser: Browser, service: ServiceProcess
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": "all-fives", "players": 2, "bots": {"1": "greedy"}, "name": "Quiet",
    })["id"]
    page = new_page(browser, viewport={"width": 1280, "height": 800})
    page.add_init_script(COUNT_CONTEXTS)
    page.goto(f"{service.url}/#/t/{table}")
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__contexts") == 0
