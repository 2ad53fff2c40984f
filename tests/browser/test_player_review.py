"""What a demanding player runs into at the table: a second tab, a game lost on time, the
keyboard at the end of a game, chat and moves while the connection is down.

Every check reads the page as a player sees it: whether it offers a move, what the notice
under the hand says, where the keyboard focus is, what the chat box keeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, PHONE, _page_errors, post_json
from tests.browser.test_client import open_table, sit, version
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser


def against_bot(
    browser: Browser, service: ServiceProcess, size: dict[str, Any] = DESKTOP, **options: Any
) -> tuple[str, Page]:
    table = post_json(f"{service.url}/api/tables", {
        "rules": "all-fives", "players": 2, "bots": {"1": "greedy"}, "name": "Review", **options,
    })["id"]
    page = open_table(browser, service.url, table, **size)
    sit(page, 0, "ann")
    return table, page


def lost_on_time(browser: Browser, service: ServiceProcess) -> Page:
    """A game against a bot that seat 0 loses by letting its one-second clock run out."""
    _, page = against_bot(
        browser, service, clock={"kind": "realtime", "move_s": 1, "reserve_s": 0},
        on_timeout="forfeit",
    )
    expect(page.locator(".overlay .game-over")).to_be_visible(timeout=20_000)
    expect(page.locator(".game-over .reason")).to_contain_text("ran out of time")
    return page


def second_tab(page: Page) -> Page:
    """The same table in another tab of the same browser (same localStorage: same seat)."""
    other = page.context.new_page()
    other.on("pageerror", lambda error: _page_errors.append(f"{other.url}: {error}"))
    other.goto(page.url)
    return other


def test_a_tab_replaced_by_another_stops_offering_moves_and_can_take_the_table_back(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, first = against_bot(browser, service)
    expect(first.locator(".table-page.my-turn")).to_have_count(1)
    second = second_tab(first)
    expect(second.locator(".table-page.my-turn")).to_have_count(1)
    expect(first.locator("#conn")).to_have_attribute("data-state", "offline")

    # the first tab hears nothing any more: it must not look like it can still play
    expect(first.locator(".table-page.my-turn")).to_have_count(0)
    expect(first.locator(".hand-tile.playable")).to_have_count(0)
    expect(first.locator(".buttons")).not_to_contain_text("Your turn")
    expect(first.locator(".notice")).to_contain_text("open in another tab")
    assert not first.title().startswith("●"), first.title()
    shots(first, "review-01-replaced-tab")

    # and it takes the table back on request; then the other tab is the one told
    first.locator('.notice [data-action="reconnect"]').click()
    expect(first.locator("#conn")).to_have_attribute("data-state", "online")
    expect(first.locator(".table-page.my-turn")).to_have_count(1)
    expect(first.locator(".notice")).to_be_empty()
    expect(second.locator(".table-page.my-turn")).to_have_count(0)
    expect(second.locator('.notice [data-action="reconnect"]')).to_have_text("Play here")


def test_a_game_lost_on_time_no_longer_says_your_turn_nor_offers_to_leave(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = lost_on_time(browser, service)
    page.get_by_role("button", name="Look at the board").click()
    expect(page.locator(".overlay .game-over")).to_have_count(0)
    expect(page.locator(".table-page.my-turn")).to_have_count(0)
    expect(page.locator(".hand-tile.playable")).to_have_count(0)
    expect(page.locator(".buttons")).to_have_text("Game over")
    expect(page.locator(".seat-chip.turn")).to_have_count(0)
    expect(page.locator(".why")).to_be_hidden()
    # the game is over: there is no seat left to hand to a bot
    expect(page.locator(".scoreboard button.leave")).to_have_count(0)
    expect(page.locator("input[name=auto-draw]")).to_have_count(0)
    assert not page.title().startswith("●"), page.title()
    shots(page, "review-02-lost-on-time")


def focused(page: Page) -> str:
    return str(page.evaluate(
        "() => { const a = document.activeElement; return a ? a.outerHTML.slice(0, 90) : ''; }"
    ))


def test_the_game_over_dialog_takes_the_keyboard_focus_and_keeps_it(
    browser: Browser, service: ServiceProcess
) -> None:
    page = lost_on_time(browser, service)
    rematch = page.locator(".overlay [data-rematch]")
    expect(rematch).to_be_focused()
    # the dialog is drawn again once the deal is checked: the focus stays where it was
    expect(page.locator(".overlay .fair-deal")).to_have_attribute(
        "data-status", re.compile("verified|unavailable|error"))
    expect(rematch).to_be_focused()

    # closed to look at the board and opened again, by keyboard alone
    page.locator(".overlay [data-close]").focus()
    page.keyboard.press("Enter")
    reopen = page.locator(".overlay [data-reopen]")
    expect(reopen).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".overlay .game-over")).to_be_visible()
    expect(rematch).to_be_focused()
    assert page.evaluate("document.activeElement.closest('.game-over') !== null"), focused(page)


def test_a_chat_line_typed_while_offline_is_kept_to_send_again(
    browser: Browser, service: ServiceProcess
) -> None:
    _, page = against_bot(browser, service)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online")
    box = page.locator(".chat-form input")
    page.context.set_offline(True)
    expect(page.locator("#conn")).not_to_have_attribute("data-state", "online")
    box.fill("back in a second")
    box.press("Enter")
    # not sent: the line stays in the box and the page says so
    expect(box).to_have_value("back in a second")
    expect(page.locator(".chat-error")).to_contain_text("Not sent")
    expect(page.locator(".chat-log li")).to_have_count(0)

    page.context.set_offline(False)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
    box.press("Enter")
    expect(page.locator(".chat-log li").last).to_have_text("ann back in a second")
    expect(box).to_have_value("")
    expect(page.locator(".chat-error")).to_be_hidden()


def test_the_phone_table_says_when_the_connection_is_lost_and_a_move_waits_for_it(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, page = against_bot(browser, service, size=PHONE)
    expect(page.locator(".table-page.my-turn")).to_have_count(1)
    expect(page.locator(".notice")).to_be_empty()
    page.context.set_offline(True)
    notice = page.locator(".notice")
    expect(notice).to_contain_text("offline")
    expect(notice).to_be_in_viewport()

    before = version(page)
    playable = page.locator(".hand-tile.playable")
    if playable.count():
        playable.first.click()
        if page.locator(".buttons .end-choice").count():
            page.locator(".buttons .end-choice").first.click()
    else:
        page.locator(".buttons [data-action]").first.click()
    expect(notice).to_contain_text("Your move goes out once the connection is back")
    expect(notice).to_be_in_viewport(ratio=1)
    expect(page.locator(".hand")).to_be_in_viewport()
    shots(page, "review-03-phone-offline")

    page.context.set_offline(False)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
    page.wait_for_function(
        "v => Number(document.querySelector('.table-page').dataset.v) > Number(v)", arg=before,
        timeout=15_000,
    )
    expect(notice).to_be_empty()
    expect(page.locator(".history")).to_contain_text(re.compile(r"ann (played|drew|passed)"))
