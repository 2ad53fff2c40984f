"""End-to-end: a page plays a game to its end against a bot and checks the deal itself.

The page notes the table's commitment while the game is on; the game-over dialog then says
"Deal verified" after hashing the seed and salt the transcript reveals. The test checks the
same numbers on its own (hashlib, from the text of docs/notation.md), follows the dialog's
"how to check it yourself" link, and opens the finished table in a fresh browser, which did
not see the game and must say it compared with the commitment shown now only.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from collections.abc import Callable

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import post_json
from tests.browser.test_client import MAX_STEPS, open_table, play_one, sit
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

GAME_OVER = ".overlay .game-over"


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as res:
        data: dict[str, object] = json.loads(res.read())
        return data


def play_to_game_over(page: Page) -> None:
    for _ in range(MAX_STEPS):
        if page.locator(GAME_OVER).count():
            return
        if page.locator(".overlay [data-dismiss]").count():
            page.locator(".overlay [data-dismiss]").click()
            continue
        if not play_one(page):
            page.wait_for_timeout(50)
    raise AssertionError("the game did not end")


def test_a_finished_game_says_deal_verified_and_how_to_check_it(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": {"preset": "all-fives", "target": 5}, "players": 2, "bots": {"1": "greedy"},
        "name": "Fair game",
    })["id"]
    page = open_table(browser, service.url, table, viewport={"width": 1200, "height": 820})
    sit(page, 0, "fay")
    expect(page.locator(".hand .hand-tile").first).to_be_visible()
    noted = page.evaluate(f"localStorage.getItem('allfives.commitment.{table}')")
    assert isinstance(noted, str) and re.fullmatch(r"[0-9a-f]{64}", noted)

    play_to_game_over(page)
    fair = page.locator(f"{GAME_OVER} .fair-deal")
    expect(fair).to_have_attribute("data-status", "verified", timeout=10_000)
    expect(fair.locator("h3")).to_have_text("Deal verified")
    expect(fair).to_contain_text("commitment this browser noted while the game was on")
    expect(fair).to_contain_text("Only the commitment is checked here")
    expect(fair.locator(".commitment code")).to_have_text(noted)
    shots(page, "10-deal-verified")

    # The same check, made here from the documented text alone.
    transcript = get_json(f"{service.url}/api/tables/{table}/transcript")
    text = f"dominoes-deal/1:{transcript['seed']}:{transcript['salt']}"
    assert hashlib.sha256(text.encode("ascii")).hexdigest() == noted == transcript["commitment"]
    href = fair.locator("a[download]").get_attribute("href")
    assert href == f"/api/tables/{table}/transcript"

    fair.get_by_text("how to check it yourself").click()
    expect(page).to_have_url(re.compile(rf"#/fair/{table}$"))
    expect(page.locator(".fair-page h1")).to_have_text("Fair deals: check them yourself")
    expect(page.locator(".fair-page .seed")).to_have_text(str(transcript["seed"]))
    expect(page.locator(".fair-page .computed")).to_have_text(noted)
    expect(page.locator(".fair-page")).to_contain_text("python3 -m engine verify")
    shots(page, "11-fair-page")


def test_a_browser_that_never_saw_the_game_says_what_it_compared(
    browser: Browser, service: ServiceProcess
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": {"preset": "all-fives", "target": 5}, "players": 2, "bots": {"1": "greedy"},
    })["id"]
    player = open_table(browser, service.url, table)
    sit(player, 0, "gus")
    play_to_game_over(player)
    expect(player.locator(f"{GAME_OVER} .fair-deal")).to_have_attribute(
        "data-status", "verified", timeout=10_000)

    latecomer = open_table(browser, service.url, table)
    fair = latecomer.locator(f"{GAME_OVER} .fair-deal")
    expect(fair).to_have_attribute("data-status", "verified", timeout=10_000)
    expect(fair.locator("h3")).to_have_text("Seed matches the commitment shown now")
    expect(fair).to_contain_text("did not see the table before the game ended")
    expect(fair).not_to_contain_text("Deal verified")
