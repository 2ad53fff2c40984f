"""The table page in the corners a player runs into: a move made while the connection is down
that the game moved past, the chat after the game is over, the spectators' count, and what the
game-over screen says about a forfeit.

As in test_player_review.py, every check reads the page as a player sees it: the notice under
the hand, what the hand offers, what the game-over screen says, whether a click lands.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, PHONE, post_json
from tests.browser.test_between_hands import two_players
from tests.browser.test_client import open_table, version
from tests.browser.test_feedback import play_short_game, wait_for_turn
from tests.browser.test_player_review import against_bot, lost_on_time
from tests.browser.test_players import api, registered, take_seat, username
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

NAMES = {"0": "ann", "1": "bob"}


def lead_while_offline(page: Page) -> str:
    """Takes the page offline and leads a tile from its hand (the hand's first move: every
    tile may lead); returns the tile. The move waits, pending, for the connection."""
    page.context.set_offline(True)
    expect(page.locator("#conn")).not_to_have_attribute("data-state", "online")
    tile = page.locator(".hand-tile.playable").first
    played = tile.get_attribute("data-tile") or ""
    tile.click()
    expect(page.locator(".notice")).to_contain_text(
        "Your move goes out once the connection is back")
    return played


def seat_of(page: Page) -> str:
    return page.locator(".table-page").get_attribute("data-seat") or ""


def test_a_move_made_offline_that_the_game_moved_past_is_refused_with_a_notice(
    browser: Browser, service: ServiceProcess
) -> None:
    _, ann, bob = two_players(browser, service, DESKTOP, clock={
        "kind": "realtime", "move_s": 8, "reserve_s": 0}, on_timeout="bot")
    page = wait_for_turn([ann, bob])
    other = bob if page is ann else ann
    tile = lead_while_offline(page)
    # the page's clock runs out meanwhile: a bot moves for its seat, and the other seat is to move
    expect(other.locator(".table-page.my-turn")).to_have_count(1, timeout=15_000)

    page.context.set_offline(False)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
    notice = page.locator(".notice")
    expect(notice).to_contain_text(
        f"Your move {tile} was not played: the game moved on while you were offline")
    # the table shows where the game is now, and offers nothing until the seat's turn comes
    expect(page.locator(".table-page")).to_have_attribute("data-v", version(other))
    expect(page.locator(".hand-tile.playable")).to_have_count(0)
    expect(page.locator(".buttons")).to_have_text(f"{NAMES[seat_of(other)]} to play")
    expect(page.locator(".history li")).to_have_count(1)
    notice.get_by_role("button", name="dismiss").click()
    expect(notice).to_be_empty()


def test_a_move_made_offline_is_played_when_it_still_may_be_though_the_table_moved_on(
    browser: Browser, service: ServiceProcess
) -> None:
    table, ann, bob = two_players(browser, service, DESKTOP)
    page = wait_for_turn([ann, bob])
    other = bob if page is ann else ann
    name = NAMES[seat_of(page)]
    tile = lead_while_offline(page)
    before = int(version(page))
    # the other player leaves: a bot takes the seat (a new version), and it is still our turn
    token = other.evaluate("id => JSON.parse(localStorage.getItem(`allfives.seat.${id}`)).token",
                           table)
    post_json(f"{service.url}/api/tables/{table}/leave", {"token": token})
    assert get_json(f"{service.url}/api/tables/{table}")["v"] > before

    page.context.set_offline(False)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
    expect(page.locator(".history")).to_contain_text(f"{name} played {tile}")
    expect(page.locator(".hand .hand-tile")).to_have_count(6)
    expect(page.locator(".notice")).to_be_empty()


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read())


CHAT_UNCOVERED = """sel => {
  const node = document.querySelector(sel);
  const r = node.getBoundingClientRect();
  const points = [[0.5, 0.5], [0.1, 0.2], [0.9, 0.2], [0.1, 0.8], [0.9, 0.8]];
  return points.every(([x, y]) => {
    const at = document.elementFromPoint(r.left + r.width * x, r.top + r.height * y);
    return at !== null && (at === node || node.contains(at));
  });
}"""


def chat_is_free(page: Page, line: str) -> None:
    """Nothing covers the chat's input and Send button, and a line sent there is posted."""
    form = page.locator(".chat-form")
    form.scroll_into_view_if_needed()
    for part in (".chat-form input", ".chat-form button[type=submit]"):
        box = page.locator(part).bounding_box()
        assert box is not None
        for cover in page.locator(".overlay:not([hidden]) .dialog, .overlay [data-reopen]").all():
            other = cover.bounding_box()
            if other is None:
                continue
            apart = (other["x"] + other["width"] <= box["x"]
                     or box["x"] + box["width"] <= other["x"]
                     or other["y"] + other["height"] <= box["y"]
                     or box["y"] + box["height"] <= other["y"])
            assert apart, f"{part} at {box} is under the game-over UI at {other}"
        assert page.evaluate(CHAT_UNCOVERED, part), f"{part} is covered"
    form.locator("input").fill(line)
    form.locator("button[type=submit]").click()
    expect(page.locator(".chat-log li").last).to_have_text(f"ann {line}")


def test_the_chat_stays_usable_once_the_game_is_over(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, page = against_bot(browser, service, rules={"preset": "all-fives", "target": 20})
    play_short_game(page)
    expect(page.locator(".overlay .game-over")).to_be_visible()
    chat_is_free(page, "good game")
    shots(page, "polish-01-game-over-and-chat")
    page.get_by_role("button", name="Look at the board").click()
    expect(page.locator(".overlay [data-reopen]")).to_be_visible()
    chat_is_free(page, "thanks")
    shots(page, "polish-02-final-board-and-chat")
    page.get_by_role("button", name="Show the result").click()
    expect(page.locator(".overlay .game-over")).to_be_visible()


def test_the_phone_chat_sheet_is_not_under_the_closed_game_over_dialog(
    browser: Browser, service: ServiceProcess
) -> None:
    _, page = against_bot(browser, service, size=PHONE,
                          rules={"preset": "all-fives", "target": 20})
    play_short_game(page)
    page.get_by_role("button", name="Look at the board").click()
    expect(page.locator(".overlay [data-reopen]")).to_be_visible()
    page.locator(".chat-toggle").click()
    chat_is_free(page, "good game")
    page.locator(".chat-close").click()
    page.get_by_role("button", name="Show the result").click()
    expect(page.locator(".overlay .game-over")).to_be_visible()


def test_the_spectators_count_shows_only_while_somebody_watches(
    browser: Browser, service: ServiceProcess
) -> None:
    table, page = against_bot(browser, service)
    # the presence frame has come: the player's own seat shows connected
    expect(page.locator('.me .seat-chip[data-pos="bottom"] .dot.on')).to_have_count(1)
    watching = page.locator(".watching")
    expect(watching).to_have_count(0)

    watcher = open_table(browser, service.url, table, **DESKTOP)
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    expect(watching).to_have_text("1 watching")
    watcher.close()
    expect(watching).to_have_count(0)


def test_a_time_forfeit_says_the_clock_ran_out(browser: Browser, service: ServiceProcess) -> None:
    page = lost_on_time(browser, service)
    expect(page.locator(".game-over .reason")).to_have_text("ann ran out of time and forfeited.")
    page.reload()
    expect(page.locator(".game-over .reason")).to_have_text("ann ran out of time and forfeited.")


def test_a_rated_game_left_says_the_player_left_not_that_time_ran_out(
    browser: Browser, service: ServiceProcess
) -> None:
    ann_name, bob_name = username("ann"), username("bob")
    ann = registered(browser, service, ann_name)
    table = api(ann, "POST", "/api/tables", {"rules": "all-fives", "players": 2, "rated": True,
                                             "name": "Rated polish"}, status=201)["id"]
    ann.goto(f"{service.url}/#/t/{table}")
    take_seat(ann, 0)
    bob = registered(browser, service, bob_name)
    bob.goto(f"{service.url}/#/t/{table}")
    take_seat(bob, 1)
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)

    ann.once("dialog", lambda dialog: dialog.accept())
    ann.locator(".scoreboard button.leave").click()
    left = f"{ann_name} left the game and forfeited."
    expect(bob.locator(".game-over .reason")).to_have_text(left)
    expect(ann.locator(".game-over .reason")).to_have_text(left)
    # the ratings come one version later: the reason stays
    for page in (ann, bob):
        expect(page.locator(".rating-changes")).to_have_attribute("data-status", "done",
                                                                  timeout=20_000)
        expect(page.locator(".game-over .reason")).to_have_text(left)
    # a page opened afterwards says so too (the cause is in the table's result)
    bob.reload()
    expect(bob.locator(".game-over .reason")).to_have_text(left)
