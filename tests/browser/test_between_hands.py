"""The pause between hands (issue "the table as players want it", §1, client side).

After a hand ends the table stays on it (`game.turn` null, the final layout on the board,
`table.next_hand` with a deadline and the seats that are ready). The hand-summary dialog
shows each side's points from plays and the bonus apart, a countdown, who is ready and a
Ready button (the `ready` frame); it closes when the next hand is dealt: once every
connected human seat is ready, or at the deadline. The service here runs with the pause
on (NEXT_HAND_S), unlike the other browser tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, PHONE, post_json
from tests.browser.test_client import board_tiles, open_table, play_one, sit
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

BETWEEN = ".overlay:not([hidden]) .between-hands"
MAX_STEPS = 300


@pytest.fixture
def paused_service(redis_url: str, client_build: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(redis_url, env={"NEXT_HAND_S": "20"}) as proc:
        yield proc


@pytest.fixture
def short_pause_service(redis_url: str, client_build: Path) -> Iterator[ServiceProcess]:
    with ServiceProcess(redis_url, env={"NEXT_HAND_S": "5"}) as proc:
        yield proc


def play_a_hand(pages: list[Page]) -> None:
    for _ in range(MAX_STEPS):
        if pages[0].locator(BETWEEN).count():
            return
        if not any(play_one(p) for p in pages):
            pages[0].wait_for_timeout(40)
    raise AssertionError("the hand did not end")


def two_players(
    browser: Browser, service: ServiceProcess, size: dict[str, Any], **options: Any
) -> tuple[str, Page, Page]:
    """A two-seat table (of `options`) with ann at seat 0 and bob at seat 1, each on a page of
    `size`, both dealt their hands."""
    table = post_json(
        f"{service.url}/api/tables",
        {"rules": "all-fives", "players": 2, "name": "Pause", **options},
    )["id"]
    ann = open_table(browser, service.url, table, **size)
    bob = open_table(browser, service.url, table, **size)
    sit(ann, 0, "ann")
    sit(bob, 1, "bob")
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
    return table, ann, bob


def test_the_hand_summary_waits_for_everyone_ready_then_the_next_hand_is_dealt(
    browser: Browser, paused_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table, ann, bob = two_players(browser, paused_service, DESKTOP)
    watcher = open_table(browser, paused_service.url, table, **DESKTOP)
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    play_a_hand([ann, bob])
    for page in (ann, bob, watcher):
        dialog = page.locator(BETWEEN)
        expect(dialog).to_be_visible()
        # the finished hand's layout stays on the board, nobody to move
        assert board_tiles(page), "the final layout is still shown"
        expect(page.locator(".table-page.my-turn")).to_have_count(0)
        expect(dialog.locator(".countdown")).to_have_text(
            re.compile(r"^Next hand in 0:(1\d|20|0\d)$")
        )
        # per side: the points from plays and the bonus apart, adding up to the side's score
        rows = dialog.locator(".hand-points tbody tr")
        expect(rows).to_have_count(2)
        scores = [int(s) for s in page.locator(".side-score strong").all_inner_texts()]
        for k in range(2):
            plays, bonus, total = (
                int(rows.nth(k).locator(c).inner_text()) for c in (".plays", ".bonus", ".total")
            )
            assert plays + bonus == total
            assert total == scores[k], (k, total, scores)
        expect(dialog.locator(".ready-list li")).to_have_count(2)
    expect(watcher.locator(f"{BETWEEN} [data-ready]")).to_have_count(0)  # spectators are not dealt
    # the countdown counts down
    first = ann.locator(f"{BETWEEN} .countdown").inner_text()
    ann.wait_for_timeout(1300)
    assert ann.locator(f"{BETWEEN} .countdown").inner_text() != first
    shots(ann, "bh-01-summary")

    ann.locator(f"{BETWEEN} [data-ready]").click()
    expect(ann.locator(f"{BETWEEN} .ready-wait")).to_have_text("Waiting for others…")
    expect(ann.locator(f"{BETWEEN} [data-ready]")).to_have_count(0)
    for page in (bob, watcher):
        expect(page.locator(f'{BETWEEN} .ready-list li[data-seat="0"]')).to_have_class(
            re.compile("is-ready")
        )
        expect(page.locator(f'{BETWEEN} .ready-list li[data-seat="1"]')).not_to_have_class(
            re.compile("is-ready")
        )
    # bob looks at the board and opens the summary again
    bob.get_by_role("button", name="Look at the board").click()
    expect(bob.locator(BETWEEN)).to_have_count(0)
    bob.get_by_role("button", name="Show the hand's summary").click()
    expect(bob.locator(BETWEEN)).to_be_visible()
    shots(bob, "bh-02-one-ready")

    bob.locator(f"{BETWEEN} [data-ready]").click()
    for page in (ann, bob, watcher):
        expect(page.locator(".overlay")).to_be_hidden()
        expect(page.locator(".info-bar .round")).to_have_text("Hand 2")
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
    # the next hand plays on
    assert any(play_one(p) for p in (ann, bob))


def test_at_the_deadline_the_next_hand_is_dealt_without_anyone_ready(
    browser: Browser, short_pause_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, ann, bob = two_players(browser, short_pause_service, PHONE)
    play_a_hand([ann, bob])
    expect(ann.locator(BETWEEN)).to_be_visible()
    expect(ann.locator(f"{BETWEEN} [data-ready]")).to_be_visible()
    width = ann.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, width
    shots(ann, "bh-03-summary-360")
    for page in (ann, bob):
        expect(page.locator(".overlay")).to_be_hidden(timeout=15_000)
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
        expect(page.locator(".info-bar .round")).to_have_text("Hand 2")
