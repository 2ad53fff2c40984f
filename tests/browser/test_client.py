"""End-to-end: real Chromium pages play, watch and resume against the real service.

Every move is made by clicking the page as a player would: a playable tile in the hand,
an end when several fit, or the draw / pass button. The pages learn everything from the
server (the hand, the legal moves), so the tests never decide a move themselves beyond
"the first thing the page offers".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError

from tests.browser.conftest import new_page, post_json
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

SUMMARY = ".overlay:not([hidden]) .round-summary"
MAX_STEPS = 200


def version(page: Page) -> str:
    return page.locator(".table-page").get_attribute("data-v") or ""



def play_my_moves(page: Page, limit: int) -> int:
    """Play up to `limit` of our own moves (waiting out the bot's), stopping at a hand summary;
    returns how many were played."""
    mine = 0
    for _ in range(MAX_STEPS):
        if mine >= limit or page.locator(".overlay:not([hidden])").count():
            break
        if play_one(page):
            mine += 1
        else:
            page.wait_for_timeout(50)
    return mine


def play_one(page: Page) -> bool:
    """If this page may move, make one move by clicking and wait for the new version."""
    before = click_move(page)
    if before is None:
        return False
    wait_past(page, before)
    return True


def wait_past(page: Page, before: str) -> None:
    try:
        page.wait_for_function(
            "v => document.querySelector('.table-page').dataset.v !== v", arg=before,
            timeout=15_000,
        )
    except PlaywrightError as e:
        seen = page.evaluate(
            """() => ({conn: document.getElementById('conn').dataset.state,
                v: document.querySelector('.table-page').dataset.v,
                buttons: document.querySelector('.buttons').innerText,
                notice: document.querySelector('.notice').innerText})"""
        )
        raise AssertionError(f"no new version after v{before}: {seen}") from e


def click_move(page: Page) -> str | None:
    """If this page may move, click one move; returns the version it was made against."""
    if page.locator(".table-page.my-turn").count() == 0:
        return None
    before = version(page)
    playable = page.locator(".hand-tile.playable")
    if playable.count():
        playable.first.click()
        ends = page.locator(".buttons .end-choice")
        if ends.count():
            # the candidate ends are highlighted on the board too
            expect(page.locator(".board .tile.candidate").first).to_be_visible()
            ends.first.click()
    elif page.locator('[data-action="draw"]').count():
        page.locator('[data-action="draw"]').click()
    elif page.locator('[data-action="pass"]').count():
        page.locator('[data-action="pass"]').click()
    else:
        return None
    return before


def play_until(pages: list[Page], done: Callable[[], bool], limit: int = MAX_STEPS) -> int:
    """Clicks moves on whichever page may move until `done()`; returns the moves made."""
    moves = 0
    for _ in range(limit):
        if done():
            return moves
        moved = False
        for page in pages:
            if play_one(page):
                moves += 1
                moved = True
                break
        if not moved:
            pages[0].wait_for_timeout(50)
    raise AssertionError(f"not done after {limit} steps")


def board_tiles(page: Page) -> list[tuple[str, str]]:
    tiles = page.evaluate(
        """() => [...document.querySelectorAll('.board .tile')]
            .map((t) => [t.dataset.tile, t.getAttribute('transform')])"""
    )
    return [(tile, transform) for tile, transform in tiles]


def open_table(browser: Browser, url: str, table: str, **context: Any) -> Page:
    page = new_page(browser, **context)
    page.goto(f"{url}/#/t/{table}")
    return page


def sit(page: Page, seat: int, name: str) -> None:
    page.locator(".waiting input[name=player]").fill(name)
    page.locator(f'.waiting button[data-seat="{seat}"]').click()
    expect(page.locator(".table-page")).to_have_attribute("data-seat", str(seat))


def record_connection_states(page: Page) -> None:
    page.evaluate(
        """() => {
        const badge = document.getElementById('conn');
        window.__conn = [badge.dataset.state];
        new MutationObserver(() => window.__conn.push(badge.dataset.state))
          .observe(badge, {attributes: true, attributeFilter: ['data-state']});
    }"""
    )


def two_players_and_a_spectator(browser: Browser, service: ServiceProcess) -> list[Page]:
    table = post_json(f"{service.url}/api/tables", {"rules": "all-fives", "players": 2,
                                                    "name": "Browser duel"})["id"]
    size = {"viewport": {"width": 1200, "height": 820}}
    ann = open_table(browser, service.url, table, **size)
    bob = open_table(browser, service.url, table, **size)
    sit(ann, 0, "ann")
    sit(bob, 1, "bob")
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
    watcher = open_table(browser, service.url, table, **size)
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    return [ann, bob, watcher]


def test_two_players_play_a_whole_hand_and_a_spectator_sees_the_same_layout(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    ann, bob, watcher = two_players_and_a_spectator(browser, service)
    expect(watcher.locator(".hand")).to_be_hidden()
    shots(ann, "01-hand-dealt")

    play_until([ann, bob], lambda: len(board_tiles(ann)) >= 6 or ann.locator(SUMMARY).count() > 0)
    if ann.locator(SUMMARY).count() == 0:
        v = version(ann)
        for page in (bob, watcher):
            expect(page.locator(".table-page")).to_have_attribute("data-v", v)
        assert board_tiles(watcher) == board_tiles(ann) == board_tiles(bob)
        assert watcher.locator(".end-total").inner_text() == ann.locator(".end-total").inner_text()
        shots(ann, "02-mid-hand-player")
        shots(watcher, "03-mid-hand-spectator")

    ann.locator(".chat-form input").fill("good luck")
    ann.locator(".chat-form input").press("Enter")
    for page in (ann, bob, watcher):
        expect(page.locator(".chat-log li").last).to_have_text("ann good luck")

    play_until([ann, bob], lambda: ann.locator(SUMMARY).count() > 0)
    for page in (ann, bob, watcher):
        expect(page.locator(SUMMARY)).to_be_visible()
        expect(page.locator(f"{SUMMARY} .reveal")).to_have_count(2)
    # everybody sees the same revealed hands and totals
    summary = ann.locator(SUMMARY).inner_text()
    assert bob.locator(SUMMARY).inner_text() == summary
    assert watcher.locator(SUMMARY).inner_text() == summary
    shots(ann, "04-hand-summary")
    ann.locator(".overlay [data-dismiss]").click()
    expect(ann.locator(".overlay")).to_be_hidden()
    expect(ann.locator(".hand .hand-tile")).to_have_count(7)


def test_pages_resume_by_themselves_after_a_server_restart_mid_hand(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    ann, bob, watcher = two_players_and_a_spectator(browser, service)
    play_until([ann, bob], lambda: len(board_tiles(ann)) >= 3)
    for page in (ann, bob, watcher):
        record_connection_states(page)
    v_before = int(version(ann))

    service.stop()
    for page in (ann, bob, watcher):
        expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting")
    # a move clicked while the server is down waits, and goes out once it is back
    mover = ann if ann.locator(".table-page.my-turn").count() else bob
    made_against = click_move(mover)
    assert made_against == str(v_before)
    service.start()

    for page in (ann, bob, watcher):
        expect(page.locator("#conn")).to_have_attribute("data-state", "online", timeout=15_000)
        states = page.evaluate("window.__conn")
        assert "reconnecting" in states, states
    wait_past(mover, made_against)
    assert int(version(mover)) == v_before + 1
    for page in (ann, bob, watcher):
        expect(page.locator(".table-page")).to_have_attribute("data-v", str(v_before + 1))
    shots(ann, "05-after-restart")

    play_until([ann, bob], lambda: ann.locator(SUMMARY).count() > 0)
    for page in (ann, bob, watcher):
        expect(page.locator(SUMMARY)).to_be_visible()
    assert watcher.locator(SUMMARY).inner_text() == ann.locator(SUMMARY).inner_text()


def create_against_bot_from_lobby(page: Page, url: str, clock: str = "none") -> None:
    page.goto(f"{url}/#/")
    form = page.locator("form.create-form")
    form.locator("input[name=player]").fill("cy")
    form.locator("select[name=preset]").select_option("all-fives")
    form.locator("select[name=players]").select_option("2")
    form.locator("select[name=seat1]").select_option("greedy")
    form.locator("select[name=clock]").select_option(clock)
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#/t/\w+"))
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "0")
    expect(page.locator(".hand .hand-tile")).to_have_count(7)
    expect(page.locator("#conn")).to_have_attribute("data-state", "online")


def test_a_table_against_a_bot_created_from_the_lobby(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(browser, viewport={"width": 1280, "height": 860})
    page.goto(f"{service.url}/#/")
    expect(page.locator("form.create-form")).to_be_visible()
    shots(page, "00-lobby")
    create_against_bot_from_lobby(page, service.url)
    mine = play_my_moves(page, 4)
    assert mine >= 1
    history = page.locator(".history li")
    assert history.count() >= mine
    shots(page, "06-against-bot")
    # a reload resumes the same seat with the token kept in localStorage (read the version
    # on our turn, when the bot cannot move)
    expect(page.locator(".table-page.my-turn")).to_be_visible()
    v = version(page)
    page.reload()
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "0")
    expect(page.locator(".table-page")).to_have_attribute("data-v", v)


def test_a_360_pixel_wide_page_is_playable(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(
        browser, viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True,
        has_touch=True,
    )
    create_against_bot_from_lobby(page, service.url, clock="realtime")
    # the seat to move shows its turn clock counting down from the document's deadline
    expect(page.locator(".seat-chip.turn .clock")).to_have_text(re.compile(r"\d+:\d\d"))
    mine = play_my_moves(page, 3)
    assert mine >= 1
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"page scrolls sideways: {width}px"
    edges = page.evaluate(
        """() => [...document.querySelectorAll('.hand .hand-tile')]
            .map((t) => { const r = t.getBoundingClientRect(); return [r.left, r.right]; })"""
    )
    assert edges, "the hand is shown"
    assert all(left >= 0 and right <= 360 for left, right in edges), edges
    board = page.locator(".board").bounding_box()
    assert board is not None and board["width"] <= 360
    shots(page, "07-mobile-360")


def play_one_by_keyboard(page: Page) -> bool:
    """Like play_one, with the keyboard only: arrows through the hand, Enter to play."""
    if page.locator(".table-page.my-turn").count() == 0:
        return False
    before = version(page)
    if page.locator(".hand-tile.playable").count():
        page.locator(".hand .hand-tile").first.focus()
        for _ in range(30):
            if page.evaluate("document.activeElement.classList.contains('playable')"):
                break
            page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        if page.locator(".board .tile.candidate").count():
            page.locator(".board .tile.candidate").first.focus()
            page.keyboard.press("Enter")
    else:
        action = page.locator("[data-action]")
        if action.count() == 0:
            return False
        action.first.focus()
        page.keyboard.press("Enter")
    page.wait_for_function(
        "v => document.querySelector('.table-page').dataset.v !== v", arg=before, timeout=10_000
    )
    return True


def test_a_game_played_by_keyboard_ends_and_replays_move_by_move(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": {"preset": "all-fives", "target": 5}, "players": 2, "bots": {"1": "greedy"},
        "name": "Short game",
    })["id"]
    page = open_table(browser, service.url, table, viewport={"width": 1200, "height": 820})
    sit(page, 0, "dee")
    for _ in range(MAX_STEPS):
        if page.locator(".game-over").count():
            break
        if page.locator(".overlay [data-dismiss]").count():
            page.keyboard.press("Enter")  # the summary's button has the focus
            continue
        if not play_one_by_keyboard(page):
            page.wait_for_timeout(50)
    game_over = page.locator(".overlay .game-over")
    expect(game_over).to_be_visible()
    expect(game_over.locator(".final-scores li")).to_have_count(2)
    expect(game_over.locator(".round-summary .reveal")).to_have_count(2)
    shots(page, "08-game-over")

    game_over.get_by_text("Watch the replay").click()
    expect(page).to_have_url(re.compile(rf"#/replay/{table}$"))
    counter = page.locator(".replay-controls .counter")
    expect(counter).to_have_text(re.compile(r"^1 / \d+$"))
    total = int(counter.inner_text().split("/")[1])
    assert total >= 2
    expect(page.locator(".board .tile")).to_have_count(0)  # the deal
    page.keyboard.press("ArrowRight")
    expect(counter).to_have_text(f"2 / {total}")
    expect(page.locator(".board .tile")).to_have_count(1)  # the lead
    page.keyboard.press("End")
    expect(counter).to_have_text(f"{total} / {total}")
    expect(page.locator(".final-tag")).to_be_visible()
    shots(page, "09-replay")
    page.get_by_role("button", name="previous move").click()
    expect(counter).to_have_text(f"{total - 1} / {total}")


def test_a_private_table_is_joined_through_its_invite_link(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    host = new_page(browser, viewport={"width": 1000, "height": 760})
    host.goto(f"{service.url}/#/")
    form = host.locator("form.create-form")
    form.locator("input[name=player]").fill("eve")
    form.locator("input[name=name]").fill("Secret fives")
    form.locator("select[name=seat1]").select_option("human")
    form.locator("input[name=private]").check()
    form.locator("button[type=submit]").click()
    link = host.locator(".waiting .invite-link")
    expect(link).to_have_value(re.compile(r"#/t/\w+\?invite=.+"))
    shots(host, "10-private-waiting-room")
    invite_url = link.input_value()

    # leaving frees the seat; sitting down again takes it back
    host.locator('[data-action="leave"]').click()
    expect(host.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    expect(host.locator('.waiting button[data-seat="0"]')).to_be_visible()
    sit(host, 0, "eve")

    # not listed in the lobby
    lobby = new_page(browser)
    lobby.goto(f"{service.url}/#/")
    expect(lobby.locator(".table-list")).not_to_contain_text("Loading")
    expect(lobby.locator(".table-list")).not_to_contain_text("Secret fives")

    guest = new_page(browser, viewport={"width": 1000, "height": 760})
    guest.goto(invite_url)
    sit(guest, 1, "fay")
    for page in (host, guest):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
        expect(page.locator(".waiting")).to_be_hidden()


def test_four_seats_sit_around_the_felt_with_partners_across(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table = post_json(f"{service.url}/api/tables", {
        "rules": "all-fives", "players": 4, "bots": {"1": "greedy", "2": "greedy", "3": "greedy"},
        "name": "Partners",
    })["id"]
    page = open_table(browser, service.url, table, viewport={"width": 1280, "height": 860})
    sit(page, 0, "gus")
    expect(page.locator(".hand .hand-tile")).to_have_count(5)  # 7/5/5 tiles: 4 players get 5
    # measured in one pass: the bots' moves redraw the seats
    seen = page.evaluate(
        """() => {
        const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.right]; };
        const chips = [...document.querySelectorAll('.seats .seat-chip')];
        const at = (pos) => chips.find((c) => c.dataset.pos === pos);
        return {
            places: Object.fromEntries(
                ['left', 'top', 'right'].map((p) => [p, at(p)?.dataset.seat])),
            board: box(document.querySelector('.board')),
            left: box(at('left')),
            right: box(at('right')),
        };
    }"""
    )
    assert seen["places"] == {"left": "1", "top": "2", "right": "3"}  # play passes to the left
    assert seen["left"][1] <= seen["board"][0] < seen["board"][1] <= seen["right"][0], seen
    # partners share a side: seats 0 and 2 against 1 and 3
    expect(page.locator(".side-score").first).to_contain_text("gus & ")
    for _ in range(MAX_STEPS):
        if len(board_tiles(page)) >= 6 or page.locator(".overlay:not([hidden])").count():
            break
        if not play_one(page):
            page.wait_for_timeout(50)
    shots(page, "11-four-seats")
