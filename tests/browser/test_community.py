"""End-to-end: the community features of the client against the real service (players.md
"Friends, messages and invitations", "Quick play", "Rematch", "Your turn", "Seasons").

Two players in two browser contexts register, befriend each other (mutual follow), message each
other live, one invites the other to a private table and the other accepts with one click, they
play the game to its end by clicking, then both press Rematch and land at the new table. Quick
play seats two browsers against each other. At a turn-clock table, a move by one player makes a
your-turn toast appear on the other's page (the lobby, at 360 px wide on a phone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import new_page
from tests.browser.test_client import play_one
from tests.browser.test_players import (
    DESKTOP,
    GAME_OVER,
    MOBILE,
    api,
    no_sideways_scroll,
    play_to_game_over,
    registered,
    username,
)
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

SHORT = {"preset": "all-fives", "target": 1}
TABLE_URL = re.compile(r"#/t/([^?/]+)")


@pytest.fixture
def community_service(redis_url: str, client_build: Path) -> Iterator[ServiceProcess]:
    env = {"RATE": "1000/2000", "NEXT_HAND_S": "0", "QUICKPLAY_TICK_S": "0.2",
           "MESSAGE_RATE": "100"}
    with ServiceProcess(redis_url, env=env) as proc:
        yield proc


def table_id(page: Page) -> str:
    found = TABLE_URL.search(page.url)
    assert found, page.url
    return found.group(1)


def sit_at_new_table(page: Page, body: dict[str, Any]) -> tuple[str, str | None]:
    """Creates a table from the page's context, takes seat 0 and keeps its token the way the
    client does (localStorage), then opens it; returns (id, invite)."""
    made = api(page, "POST", "/api/tables", body, status=201)
    joined = api(page, "POST", f"/api/tables/{made['id']}/join",
                 {"seat": 0, "name": "x", "invite": made["invite"]})
    page.evaluate(
        "([id, seat]) => localStorage.setItem(`allfives.seat.${id}`, JSON.stringify(seat))",
        [made["id"], {"seat": joined["seat"], "token": joined["token"], "name": "x"}])
    query = f"?invite={made['invite']}" if made["invite"] else ""
    page.goto(f"{page.url.split('#')[0]}#/t/{made['id']}{query}")
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "0")
    return made["id"], made["invite"]


def befriend(a: Page, b: Page, name_a: str, name_b: str) -> None:
    a.goto(a.url.split("#")[0] + "#/friends")
    a.locator("form.follow-form input[name=follow]").fill(name_b)
    a.locator("form.follow-form button[type=submit]").click()
    expect(a.locator(f'.friend-list.following li[data-name="{name_b}"]')).to_be_visible()
    b.goto(b.url.split("#")[0] + "#/friends")
    follower = b.locator(f'.friend-list.followers li[data-name="{name_a}"]')
    expect(follower).to_be_visible()
    follower.locator('[data-action="follow"]').click()
    # friends now, and a has a page open with the player socket: online
    friend = b.locator(f'.friend-list.friends li[data-name="{name_a}"]')
    expect(friend).to_have_class(re.compile(r"\bonline\b"))
    expect(a.locator(f'.friend-list.friends li[data-name="{name_b}"]')).to_have_class(
        re.compile(r"\bonline\b"), timeout=10_000)


def test_friends_message_invite_play_and_rematch(
    browser: Browser, community_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    service = community_service
    name_a, name_b = username("ann"), username("bob")
    a = registered(browser, service, name_a, **DESKTOP)
    b = registered(browser, service, name_b, **DESKTOP)
    # the header's Friends and Messages links, next to the account's
    expect(a.locator("#social")).to_contain_text("Friends")
    expect(a.locator("#social")).to_contain_text("Messages")

    befriend(a, b, name_a, name_b)
    shots(b, "40-friends-desktop")

    # a follow from the profile: the button shows the state
    a.goto(f"{service.url}/#/players/{name_b}")
    expect(a.locator(".follow-control [data-action=unfollow]")).to_be_visible()
    expect(a.locator(".follow-control .friend-tag")).to_be_visible()

    # messages, live both ways
    a.locator(".follow-control a", has_text="Message").click()
    expect(a).to_have_url(re.compile(rf"#/messages/{name_b}$"))
    a.locator("form.message-form input[name=text]").fill("hello bob")
    a.locator("form.message-form button[type=submit]").click()
    expect(a.locator(".message-log .message.mine .text")).to_have_text(["hello bob"])
    # a text the server refuses: its reason, on the page
    a.locator("form.message-form input[name=text]").fill("\u202e")
    a.locator("form.message-form button[type=submit]").click()
    expect(a.locator(".send-error")).to_contain_text("cannot be sent")

    badge = b.locator("#social .unread-badge")
    expect(badge).to_have_text("1")
    expect(b.locator(".toast.message-toast")).to_contain_text("hello bob")
    b.locator("#social a[data-nav=messages]").click()
    convo = b.locator(f'.conversation[data-name="{name_a}"]')
    expect(convo.locator(".badge")).to_have_text("1")
    convo.locator("a").click()
    expect(b.locator(".message-log .message.theirs .text")).to_have_text(["hello bob"])
    expect(badge).to_have_count(0)  # read: the badge goes
    b.locator("form.message-form input[name=text]").fill("hi ann")
    b.locator("form.message-form button[type=submit]").click()
    expect(a.locator(".message-log .message.theirs .text")).to_have_text(["hi ann"])
    expect(a.locator("#social .unread-badge")).to_have_count(0)  # read while open
    shots(a, "41-conversation-desktop")

    # history paging: 22 more messages, then "Older" brings the first ones back
    for i in range(22):
        api(a, "POST", f"/api/messages/{name_b}", {"text": f"line {i}"}, status=201)
    b.reload()
    log = b.locator(".message-log .message")
    expect(log).to_have_count(20)
    b.locator("[data-action=older]").click()
    expect(log).to_have_count(24)
    expect(log.first.locator(".text")).to_have_text("hello bob")
    expect(b.locator("[data-action=older]")).to_be_hidden()

    # an invitation to a private table, accepted with one click
    b.goto(f"{service.url}/#/")
    table, invite = sit_at_new_table(a, {"rules": SHORT, "players": 2, "private": True,
                                         "name": "Ann's fives"})
    assert invite
    box = a.locator(".invite-friend")
    expect(box).to_be_visible()
    box.locator("summary").click()
    box.locator("select[name=friend]").select_option(name_b)
    box.locator("[data-action=send-invite]").click()
    expect(box.locator(".invite-status")).to_have_text(f"Invitation sent to {name_b}.")
    toast = b.locator(".toast.invite-toast")
    expect(toast).to_contain_text(f"{name_a} invites you to Ann's fives")
    shots(b, "42-invite-toast-desktop")
    toast.locator("[data-action=accept-invite]").click()
    expect(b).to_have_url(re.compile(rf"#/t/{table}\?invite="))
    expect(b.locator(".table-page")).to_have_attribute("data-seat", "1")

    # the game, to its end
    play_to_game_over([a, b])
    for page in (a, b):
        expect(page.locator(f"{GAME_OVER} [data-rematch]")).to_be_visible()
    a.locator(f"{GAME_OVER} [data-rematch]").click()
    expect(b.locator(f"{GAME_OVER} .rematch-accepted")).to_contain_text(name_a)
    expect(a.locator(f"{GAME_OVER} .rematch-wait")).to_be_visible()
    shots(b, "43-rematch-asked-desktop")
    b.locator(f"{GAME_OVER} [data-rematch]").click()
    # both move to the new table, seated (every seat moved on by one)
    for page in (a, b):
        expect(page).not_to_have_url(re.compile(rf"#/t/{table}\b"), timeout=10_000)
        expect(page).to_have_url(TABLE_URL)
    assert table_id(a) == table_id(b) != table
    expect(a.locator(".table-page")).to_have_attribute("data-seat", "1")
    expect(b.locator(".table-page")).to_have_attribute("data-seat", "0")
    # private: the rematch has its own code, in the url
    assert "?invite=" in a.url and "?invite=" in b.url


def test_quick_play_seats_two_browsers_against_each_other(
    browser: Browser, community_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    pages = []
    for _ in range(2):
        page = new_page(browser, **DESKTOP)
        page.goto(f"{community_service.url}/#/")
        form = page.locator("form.quickplay-form")
        expect(form).to_be_visible()
        # rated only with an account
        expect(form.locator("input[name=rated]")).to_be_disabled()
        form.locator("select[name=qp-players]").select_option("2")
        pages.append(page)
    first, second = pages
    first.locator("form.quickplay-form button[type=submit]").click()
    looking = first.locator(".quickplay-status .looking")
    expect(looking).to_contain_text(re.compile(r"Looking for players… \(window ±\d+\)"))
    shots(first, "44-quickplay-looking-desktop")
    # cancel, then look again
    first.locator("[data-action=cancel-quickplay]").click()
    expect(looking).to_have_count(0)
    assert api(first, "GET", "/api/quickplay")["status"] == "idle"
    first.locator("form.quickplay-form button[type=submit]").click()
    expect(looking).to_be_visible()
    second.locator("form.quickplay-form button[type=submit]").click()
    for page in pages:
        expect(page).to_have_url(TABLE_URL, timeout=15_000)
    assert table_id(first) == table_id(second)
    for page in pages:
        expect(page.locator(".table-page")).not_to_have_attribute("data-seat", "spectator")
    seats = sorted(p.locator(".table-page").get_attribute("data-seat") or "" for p in pages)
    assert seats == ["0", "1"]
    # the game is on: one of them may move
    for _ in range(100):
        if sum(p.locator(".table-page.my-turn").count() for p in pages) == 1:
            break
        first.wait_for_timeout(100)
    else:
        raise AssertionError("nobody may move at the quick-play table")
    shots(first, "47-quickplay-table-desktop")


def test_your_turn_toast_on_another_page_and_the_phone(
    browser: Browser, community_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    service = community_service
    name_a, name_b = username("cat"), username("dan")
    a = registered(browser, service, name_a, **DESKTOP)
    b = registered(browser, service, name_b, **MOBILE)
    table, _ = sit_at_new_table(a, {"rules": SHORT, "players": 2, "name": "Slow fives",
                                    "clock": {"kind": "turn", "move_h": 24, "max_h": 72}})
    b.goto(f"{service.url}/#/t/{table}")
    b.locator('.waiting button[data-seat="1"]').click()
    expect(b.locator(".table-page")).to_have_attribute("data-seat", "1")

    def my_turn(page: Page) -> bool:
        tables = api(page, "GET", "/api/me/tables")["tables"]
        return any(t["id"] == table and t["turn"] for t in tables)

    # the other player (on the phone) goes to the lobby; the one to move plays until it is theirs
    if my_turn(b):
        assert play_one(b)
        for _ in range(100):
            if not my_turn(b):
                break
            assert play_one(b)
    b.goto(f"{service.url}/#/")
    expect(b.locator("form.quickplay-form")).to_be_visible()
    expect(b.locator(".toast.turn-toast")).to_have_count(0)
    for _ in range(100):
        if my_turn(b):
            break
        play_one(a)
    toast = b.locator(".toast.turn-toast")
    expect(toast).to_contain_text("Your turn at Slow fives")
    expect(toast).to_be_in_viewport()
    no_sideways_scroll(b)
    shots(b, "45-turn-toast-mobile")
    # never on the table on screen
    expect(a.locator(".toast.turn-toast")).to_have_count(0)
    toast.locator(f'a[data-table="{table}"]').click()
    expect(b).to_have_url(re.compile(rf"#/t/{table}$"))
    expect(b.locator(".table-page.my-turn")).to_be_visible()

    # friends see where each other sits: a link to watch the public table, by its name
    befriend(a, b, name_a, name_b)
    watch = b.locator(f'.friend-list.friends li[data-name="{name_a}"] a.watch-link')
    expect(watch).to_have_text("Slow fives")
    expect(watch).to_have_attribute("href", f"#/t/{table}")

    # the phone's friends and messages pages and the season board do not scroll sideways
    for path in ("#/friends", f"#/messages/{name_a}", "#/messages", "#/seasons/fives",
                 f"#/players/{name_a}"):
        b.goto(f"{service.url}/{path}")
        expect(b.locator("main .panel, main .page-panel").first).to_be_visible()
        b.wait_for_timeout(300)
        no_sideways_scroll(b)
    shots(b, "46-profile-follow-mobile")
    # the notification permission is asked from a button only
    b.goto(f"{service.url}/#/friends")
    expect(b.locator(".notify-control")).to_be_visible()


def test_season_tab_on_the_leaderboards(
    browser: Browser, community_service: ServiceProcess
) -> None:
    page = registered(browser, community_service, username("eve"), **DESKTOP)
    page.goto(f"{community_service.url}/#/leaderboards/fives")
    page.locator(".board-kinds a[data-board=season]").click()
    expect(page).to_have_url(re.compile(r"#/seasons/fives$"))
    expect(page.locator(".season-page h1")).to_contain_text(re.compile(r"Season \d{4}-\d{2}"))
    expect(page.locator(".season-page .board-box")).not_to_contain_text("Loading")
    expect(page.locator(".season-page .my-rank")).to_contain_text("no rated game")
    page.locator(".season-page .board-kinds a[data-board=ratings]").click()
    expect(page).to_have_url(re.compile(r"#/leaderboards/fives$"))
