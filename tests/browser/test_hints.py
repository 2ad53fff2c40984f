"""Hints on a practice table, in Chromium: the lobby offers them only with a bot and no rating;
at the player's turn "Hint" marks the strong bot's tile in the hand and says the move; a
spectator has no hint button. Desktop and phone sizes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, PHONE, new_page
from tests.support.servers import ServiceProcess

SIZES = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


@pytest.mark.parametrize("size", SIZES)
def test_a_practice_table_gives_hints_to_its_player_only(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None],
    size: dict[str, Any],
) -> None:
    page = new_page(browser, **size)
    page.goto(f"{service.url}/#/")
    form = page.locator("form.create-form")
    form.locator("input[name=player]").fill("hana")
    form.locator("select[name=players]").select_option("2")
    hints = form.locator("input[name=hints]")
    form.locator("select[name=seat1]").select_option("human")
    expect(hints).to_be_disabled()  # no bot: no hints
    form.locator("select[name=seat1]").select_option("greedy")
    expect(hints).to_be_enabled()
    hints.check()
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#/t/\w+"))
    table = page.url.rsplit("/", 1)[1]
    expect(page.locator("#conn")).to_have_attribute("data-state", "online")
    expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
    button = page.locator("[data-action=hint]")
    expect(button).to_be_visible()
    button.click()
    said = page.locator(".hint-move")
    expect(said).to_have_text(re.compile(r"^Hint: "), timeout=15_000)
    for _ in range(8):  # a hand with no tile to play yet: draw as the hint says, and ask again
        if not said.inner_text().startswith("Hint: draw"):
            break
        before = page.locator(".table-page").get_attribute("data-v")
        page.locator("[data-action=draw]").click()
        page.wait_for_function(
            "v => document.querySelector('.table-page').dataset.v !== v", arg=before)
        button.click()
        expect(said).to_have_text(re.compile(r"^Hint: "), timeout=15_000)
    expect(said).to_have_text(re.compile(r"^Hint: play \d-\d( on \d-\d)?$"), timeout=15_000)
    tile = said.inner_text().split()[2]
    hinted = page.locator(".hand .hand-tile.hinted")
    expect(hinted).to_have_count(1)
    expect(hinted).to_have_attribute("data-tile", tile)
    expect(hinted).to_have_attribute("aria-label", re.compile("playable, suggested"))
    board_shows(page, said.inner_text())
    shots(page, f"hint-{'phone' if size is PHONE else 'desktop'}")
    # playing the hinted tile moves the table on; the old hint is gone
    before = page.locator(".table-page").get_attribute("data-v")
    hinted.click()
    ends = page.locator(".end-choice")
    if ends.count():
        ends.first.click()
    page.wait_for_function(
        "v => document.querySelector('.table-page').dataset.v !== v", arg=before)
    expect(page.locator(".hand .hand-tile.hinted")).to_have_count(0)
    # the next hint, on a board with tiles: its end is marked there
    expect(page.locator(".table-page.my-turn")).to_be_visible(timeout=15_000)
    button.click()
    expect(said).to_have_text(re.compile(r"^Hint: "), timeout=15_000)
    board_shows(page, said.inner_text())
    # a spectator of the same table has no hint button
    watcher = new_page(browser, **size)
    watcher.goto(f"{service.url}/#/t/{table}")
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    expect(watcher.locator(".board")).to_be_visible()
    expect(watcher.locator("[data-action=hint]")).to_have_count(0)


def board_shows(page: Page, hint: str) -> None:
    """The board marks the end a hint ("Hint: play 6-4 on 4-4") plays on, and nothing for a
    lead, a draw or a pass."""
    words = hint.split()
    suggested = page.locator(".board svg .tile.suggested")
    if "on" not in words:
        expect(suggested).to_have_count(0)
        return
    expect(suggested).to_have_count(1)
    expect(suggested).to_have_attribute("data-tile", words[words.index("on") + 1])
    expect(suggested).to_have_attribute("aria-label", re.compile("the hint plays here"))
