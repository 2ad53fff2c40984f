"""End-to-end: the player pages of the client against the real service (players.md).

Accounts are made through the pages (#/register, #/login) or, where a test is about something
else, through the same HTTP calls from the page's own context (its cookies). Games meant only to
fill a profile or a leaderboard are played over the websocket by tests/support/servers.py's
GameClient; the rated game whose rating changes the dialog shows is clicked through the pages.
Every page is checked at 360 px wide for sideways scrolling.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import new_page
from tests.browser.test_client import MAX_STEPS, play_one
from tests.support.servers import GameClient, ServiceProcess, play_to_end

pytestmark = pytest.mark.browser

PASSWORD = "correct horse 42"
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
MOBILE = {"viewport": {"width": 360, "height": 740}, "device_scale_factor": 2, "is_mobile": True,
          "has_touch": True}
SIZES = {"desktop": DESKTOP, "mobile": MOBILE}
GAME_OVER = ".overlay:not([hidden]) .game-over"
TINY = {"preset": "all-fives", "target": 5}
RATING_CHANGE = re.compile(r"^(\S+) 1500 → (\d+)\?? \(([+-]\d+|±0)\)$")


def username(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"


def no_sideways_scroll(page: Page) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 1280
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url} scrolls sideways: {scroll}px in {width}px"


def csp_violations(page: Page) -> list[str]:
    """The Content-Security-Policy refusals the page reports from now on (test_csp.py)."""
    seen: list[str] = []
    page.on("console", lambda m: seen.append(m.text) if "Content Security Policy" in m.text
            or "Content-Security-Policy" in m.text else None)
    return seen


def api(page: Page, method: str, path: str, body: Any = None, status: int = 200) -> Any:
    """An HTTP call from the page's context (its cookies), as the page's own script makes it."""
    found = re.match(r"https?://[^/#]+", page.url)
    assert found, "open a page of the service first"
    origin = found.group(0)
    response = page.request.fetch(
        f"{origin}{path}", method=method,
        headers={"Content-Type": "application/json", "Origin": origin},
        data=None if body is None else json.dumps(body),
    )
    assert response.status == status, f"{method} {path}: {response.status} {response.text()}"
    return response.json() if response.status != 204 else None


def registered(browser: Browser, service: ServiceProcess, name: str, **context: Any) -> Page:
    """A page logged in as a new account `name` (registered by the page's context)."""
    page = new_page(browser, **(context or DESKTOP))
    page.goto(f"{service.url}/#/")
    expect(page.locator("#nav")).to_contain_text("Log in")
    api(page, "POST", "/api/accounts", {"username": name, "password": PASSWORD}, status=201)
    page.reload()
    expect(page.locator("#nav .nav-user")).to_have_text(name)
    return page


def take_seat(page: Page, seat: int) -> None:
    page.locator(f'.waiting button[data-seat="{seat}"]').click()
    expect(page.locator(".table-page")).to_have_attribute("data-seat", str(seat))


def play_to_game_over(pages: list[Page]) -> int:
    """Clicks the first move any page offers (dismissing hand summaries) until the game is
    over on every page; returns the moves made."""
    moves = 0
    for _ in range(MAX_STEPS * 2):
        if all(p.locator(GAME_OVER).count() for p in pages):
            return moves
        moved = False
        for page in pages:
            if page.locator(GAME_OVER).count():
                continue
            dismiss = page.locator(".overlay:not([hidden]) [data-dismiss]")
            if dismiss.count():
                dismiss.click()
                moved = True
            elif play_one(page):
                moves += 1
                moved = True
        if not moved:
            pages[0].wait_for_timeout(50)
    raise AssertionError("the game did not end")


# ---- games played over the websocket, to fill profiles and leaderboards -----------------------

@pytest.fixture
def scripted_service(redis_url: str, client_build: Path) -> Iterator[ServiceProcess]:
    """The service for tests whose scripted clients move faster than people (RATE), with its
    leaderboards rebuilt twice a second rather than every minute (LEADERBOARD_REFRESH_S)."""
    env = {"RATE": "1000/2000", "LEADERBOARD_REFRESH_S": "0.5"}
    with ServiceProcess(redis_url, env=env) as proc:
        yield proc


def in_thread(coro: Any) -> Any:
    """Runs a coroutine to its end in a thread of its own (the sync Playwright API holds this
    thread's event loop)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(300)
    if "error" in out:
        raise out["error"]
    return out.get("value")


async def _account(url: str, name: str) -> httpx.AsyncClient:
    http = httpx.AsyncClient(base_url=url, headers={"Origin": url}, timeout=20)
    r = await http.post("/api/session", json={"username": name, "password": PASSWORD})
    if r.status_code == 401:
        r = await http.post("/api/accounts", json={"username": name, "password": PASSWORD})
    assert r.status_code in (200, 201), r.text
    return http


async def _play_games(url: str, ws_url: str, names: list[str | None], count: int,
                      rated: bool) -> list[str]:
    """`count` games of All Fives to 5 between accounts `names` (None: a greedy bot), every
    human seat playing its first legal move; returns the table ids."""
    clients = {i: await _account(url, n) for i, n in enumerate(names) if n is not None}
    bots = {str(i): "greedy" for i, n in enumerate(names) if n is None}
    ids = []
    try:
        for k in range(count):
            host = clients[min(clients)]
            r = await host.post("/api/tables", json={
                "rules": TINY, "players": len(names), "bots": bots, "rated": rated,
                "name": f"{'rated' if rated else 'casual'} game {k + 1}"})
            assert r.status_code == 201, r.text
            table = r.json()["id"]
            movers = {}
            for seat, http in clients.items():
                j = await http.post(f"/api/tables/{table}/join", json={"seat": seat, "name": "x"})
                assert j.status_code == 200, j.text
                client = await GameClient.connect(ws_url)
                await client.hello(table, j.json()["token"])
                movers[seat] = client
            await play_to_end(movers, [])
            for client in movers.values():
                await client.close()
            ids.append(table)
    finally:
        for http in clients.values():
            await http.aclose()
    return ids


def play_games(service: ServiceProcess, names: list[str | None], count: int,
               rated: bool = False) -> list[str]:
    return in_thread(_play_games(service.url, service.ws_url, names, count, rated))  # type: ignore[no-any-return]


def archived(page: Page, name: str, count: int) -> dict[str, Any]:
    """Waits until `name`'s profile counts `count` games (they are archived a moment after
    they end); returns the profile."""
    profile: dict[str, Any] = {}
    for _ in range(100):
        profile = api(page, "GET", f"/api/players/{name}")
        if sum(s.get("games", 0) for s in profile.get("stats", {}).values()) >= count:
            return profile
        page.wait_for_timeout(100)
    raise AssertionError(f"{name}'s games were not archived: {profile}")


# ---- the tests --------------------------------------------------------------------------------

@pytest.mark.parametrize("size", ["desktop", "mobile"])
def test_register_log_out_and_log_in_from_the_header(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None], size: str
) -> None:
    name = username("ann")
    page = new_page(browser, **SIZES[size])
    page.goto(f"{service.url}/#/")
    nav = page.locator("#nav")
    expect(nav).to_have_text(re.compile(r"Log in\s*·\s*Register"))
    expect(page.locator("form.create-form input[name=rated]")).to_be_disabled()
    no_sideways_scroll(page)

    nav.get_by_role("link", name="Register").click()
    expect(page).to_have_url(re.compile(r"#/register$"))
    form = page.locator("form.register-form")
    # a name the server refuses: its message, inline
    form.locator("input[name=username]").fill("x")
    form.locator("input[name=password]").fill(PASSWORD)
    form.locator("button[type=submit]").click()
    expect(form.locator(".form-error")).not_to_be_empty()
    expect(page).to_have_url(re.compile(r"#/register$"))
    no_sideways_scroll(page)
    shots(page, f"20-register-error-{size}")

    form.locator("input[name=username]").fill(name)
    form.locator("input[name=password]").fill(PASSWORD)
    form.locator("button[type=submit]").click()
    # back where the visitor was, logged in
    expect(page).to_have_url(re.compile(r"#/$"))
    expect(nav.locator(".nav-user")).to_have_text(name)
    expect(nav).to_have_text(re.compile(
        rf"{name}\s*·\s*Profile\s*·\s*My tables\s*·\s*Leaderboards\s*·\s*Log out"))
    player = page.locator("form.create-form input[name=player]")
    expect(player).to_have_value(name)
    expect(page.locator("form.create-form input[name=rated]")).to_be_enabled()
    no_sideways_scroll(page)
    shots(page, f"21-logged-in-lobby-{size}")

    # the session is the server's: a reload is still logged in
    page.reload()
    expect(nav.locator(".nav-user")).to_have_text(name)

    nav.get_by_role("button", name="Log out").click()
    expect(nav).to_have_text(re.compile(r"Log in\s*·\s*Register"))
    expect(page.locator("form.create-form input[name=rated]")).to_be_disabled()
    assert api(page, "GET", "/api/me", status=401)["error"]["code"] in ("not_logged_in",
                                                                         "session_expired")

    # log in from the leaderboards: a wrong password first, then the right one
    nav.get_by_role("link", name="Leaderboards").click()
    expect(page).to_have_url(re.compile(r"#/leaderboards$"))
    nav.get_by_role("link", name="Log in").click()
    login = page.locator("form.login-form")
    login.locator("input[name=username]").fill(name)
    login.locator("input[name=password]").fill("not the password")
    login.locator("button[type=submit]").click()
    error = login.locator(".form-error")
    expect(error).not_to_be_empty()
    assert "password" in error.inner_text().lower() or "wrong" in error.inner_text().lower()
    expect(page).to_have_url(re.compile(r"#/login$"))
    expect(nav).to_contain_text("Log in")
    shots(page, f"22-login-error-{size}")
    no_sideways_scroll(page)

    login.locator("input[name=username]").fill(name.upper())  # any case logs in
    login.locator("input[name=password]").fill(PASSWORD)
    login.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#/leaderboards$"))
    expect(nav.locator(".nav-user")).to_have_text(name)
    expect(page.locator(".leaderboard-page .tab.current")).to_have_attribute("data-family", "fives")


@pytest.mark.parametrize("size", ["desktop", "mobile"])
def test_a_rated_table_from_the_lobby_seats_accounts_with_their_ratings(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None], size: str
) -> None:
    ann_name, bob_name = username("ann"), username("bob")
    ann = registered(browser, service, ann_name, **SIZES[size])
    form = ann.locator("form.create-form")
    seat1 = form.locator("select[name=seat1]")
    expect(seat1).to_have_value("greedy")
    form.locator("input[name=rated]").check()
    # no bots at a rated table
    expect(seat1).to_be_disabled()
    expect(seat1).to_have_value("human")
    form.locator("input[name=rated]").uncheck()
    expect(seat1).to_be_enabled()
    expect(seat1).to_have_value("greedy")
    form.locator("input[name=rated]").check()
    form.locator("input[name=name]").fill("Rated duel")
    shots(ann, f"23-rated-form-{size}")
    form.locator("button[type=submit]").click()
    expect(ann).to_have_url(re.compile(r"#/t/\w+$"))
    table = ann.url.rsplit("/", 1)[1]
    expect(ann.locator(".table-page")).to_have_attribute("data-seat", "0")
    waiting = ann.locator(".waiting")
    expect(waiting.locator("h2 .tag.rated")).to_have_text("rated")
    expect(waiting.locator(".waiting-seats li").first).to_have_text(
        re.compile(rf"Seat 1: {ann_name}\s*1500\?"))
    summary = api(ann, "GET", f"/api/tables/{table}")
    assert summary["rated"] is True and not any(s["bot"] for s in summary["seats"])

    # a guest may watch but not sit
    guest = new_page(browser, **SIZES[size])
    guest.goto(f"{service.url}/#/t/{table}")
    expect(guest.locator(".waiting .rated-note")).to_contain_text("only players with an account")
    guest.locator('.waiting button[data-seat="1"]').click()
    expect(guest.locator(".waiting .form-error")).to_contain_text("log in")
    expect(guest.locator(".table-page")).to_have_attribute("data-seat", "spectator")

    bob = registered(browser, service, bob_name, **SIZES[size])
    bob.goto(f"{service.url}/#/t/{table}")
    expect(bob.locator(".waiting input[name=player]")).to_have_value(bob_name)
    take_seat(bob, 1)
    for page, me, other in ((ann, ann_name, bob_name), (bob, bob_name, ann_name)):
        expect(page.locator(".hand .hand-tile")).to_have_count(7)
        mine = page.locator('.me .seat-chip[data-pos="bottom"]')
        expect(mine.locator(".seat-name")).to_have_text(me)
        expect(mine.locator(".seat-rating")).to_have_text("1500?")
        theirs = page.locator('.seats .seat-chip[data-pos="top"]')
        expect(theirs.locator(".seat-name")).to_have_text(other)
        expect(theirs.locator(".seat-rating")).to_have_text("1500?")
        no_sideways_scroll(page)
    shots(ann, f"24-rated-table-{size}")


def test_a_rated_game_played_to_the_end_shows_every_rating_change_then_the_profile(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    ann_name, bob_name = username("ann"), username("bob")
    ann = registered(browser, service, ann_name)
    bob = registered(browser, service, bob_name)
    refused = csp_violations(ann)
    table = api(ann, "POST", "/api/tables", {"rules": TINY, "players": 2, "rated": True,
                                             "name": "Quick rated"}, status=201)["id"]
    for page, seat in ((ann, 0), (bob, 1)):
        page.goto(f"{service.url}/#/t/{table}")
        take_seat(page, seat)
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile").first).to_be_visible()
    assert play_to_game_over([ann, bob]) > 0

    # the ratings arrive a moment after the game-over frame, and the open dialog shows them
    for page in (ann, bob):
        section = page.locator(f"{GAME_OVER} .rating-changes")
        expect(section).to_be_visible()
        expect(section).to_have_attribute("data-status", "done", timeout=20_000)
        lines = section.locator("li")
        expect(lines).to_have_count(2)
        texts = [t.strip() for t in lines.all_inner_texts()]
        seen = {}
        for text in texts:
            m = RATING_CHANGE.match(re.sub(r"\s+", " ", text))
            assert m, texts
            seen[m.group(1)] = int(m.group(2)) - 1500
        assert set(seen) == {ann_name, bob_name}, texts
        # one won and one lost: one went up and the other down
        assert sorted(d > 0 for d in seen.values()) == [False, True], texts
    shots(ann, "25-rated-game-over")
    winner_gain = {n: d for n, d in seen.items()}

    # the profile: the rating with its history chart, the stats, the game with its replay
    ann.locator(GAME_OVER).get_by_role("link", name="Your profile").click()
    expect(ann).to_have_url(re.compile(rf"#/players/{ann_name}$"))
    profile = ann.locator(".profile")
    expect(profile.locator(".player-name")).to_contain_text(ann_name)
    expect(profile.locator(".joined")).to_contain_text("Joined")
    card = profile.locator('.family-card[data-family="fives"]')
    expect(card.locator(".family-rating .rating")).to_have_text(
        f"{1500 + winner_gain[ann_name]}?")
    expect(card.locator("svg.rating-chart path.chart-line")).to_have_count(1)
    # from the first rating to the one after the game
    expect(card.locator("svg.rating-chart circle.chart-dot")).to_have_count(2)
    assert re.fullmatch(r"M[\d.]+ [\d.]+ L[\d.]+ [\d.]+",
                        card.locator("path.chart-line").get_attribute("d") or "")
    ys = [float(y) for y in card.locator("circle.chart-dot").evaluate_all(
        "dots => dots.map((d) => d.getAttribute('cy'))")]
    assert (ys[1] < ys[0]) == (winner_gain[ann_name] > 0), ys  # up is a higher rating
    stats = dict(zip(card.locator("table.stats th").all_inner_texts(),
                     card.locator("table.stats td").all_inner_texts(), strict=True))
    assert stats["Games"] == "1", stats
    assert (stats["Wins"], stats["Losses"]) in (("1", "0"), ("0", "1")), stats
    assert stats["Win rate"] in ("100%", "0%"), stats
    game = profile.locator(f'.game-item[data-game="{table}"]')
    expect(game).to_contain_text("Quick rated")
    expect(game.locator(".tag.rated")).to_be_visible()
    expect(game.locator(".rating-change")).to_have_text(
        re.compile(rf"1500 → {1500 + winner_gain[ann_name]} \([+-]\d+\)"))
    expect(game.locator(".outcome")).to_have_text("Won" if winner_gain[ann_name] > 0 else "Lost")
    shots(ann, "26-profile")
    game.get_by_role("link", name="Replay").click()
    expect(ann).to_have_url(re.compile(rf"#/replay/{table}$"))
    expect(ann.locator(".replay-page .counter")).to_have_text(re.compile(r"1 / \d+"))
    assert refused == [], refused  # the chart and the dialogs are drawn under the policy

    # another visitor sees the same profile; an unknown name is said so
    guest = new_page(browser, **MOBILE)
    guest.goto(f"{service.url}/#/players/{bob_name}")
    expect(guest.locator('.family-card[data-family="fives"] .rating')).to_have_text(
        f"{1500 + winner_gain[bob_name]}?")
    expect(guest.locator(".player-name .tag")).to_have_count(0)  # not "you"
    no_sideways_scroll(guest)
    shots(guest, "27-profile-mobile")
    guest.goto(f"{service.url}/#/players/nobody_{uuid.uuid4().hex[:6]}")
    expect(guest.locator(".profile .form-error")).to_contain_text("no player")


def test_the_profile_pages_through_older_games_with_more(
    browser: Browser, scripted_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    name = username("cy")
    ids = play_games(scripted_service, [name, None], 12)
    page = new_page(browser, **MOBILE)
    page.goto(f"{scripted_service.url}/#/")
    profile = archived(page, name, 12)
    assert len(profile["recent"]) < 12, "the profile lists fewer games than were played"
    page.goto(f"{scripted_service.url}/#/players/{name}")
    items = page.locator(".game-list .game-item")
    expect(items).to_have_count(len(profile["recent"]))
    # newest first
    assert items.first.get_attribute("data-game") == ids[-1]
    card = page.locator('.family-card[data-family="fives"]')
    expect(card.locator(".family-rating")).to_contain_text("No rated games")
    games_row = card.locator("table.stats tr",
                             has=page.locator("th", has_text=re.compile("^Games$")))
    expect(games_row.locator("td")).to_have_text("12")
    more = page.locator("button[data-action=more]")
    expect(more).to_be_visible()
    more.click()
    expect(items).to_have_count(12)
    expect(more).to_be_hidden()
    shown = [items.nth(i).get_attribute("data-game") for i in range(12)]
    assert shown == list(reversed(ids)), shown
    assert all(items.nth(i).locator("a", has_text="Replay").count() == 1 for i in range(12))
    no_sideways_scroll(page)
    shots(page, "28-profile-more-mobile")


def test_the_leaderboard_ranks_players_and_shows_your_rank(
    browser: Browser, scripted_service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    ann_name, bob_name = username("ann"), username("bob")
    # players come on the board once no longer provisional (meta ratings.provisional_games)
    page = new_page(browser, **DESKTOP)
    page.goto(f"{scripted_service.url}/#/")
    needed = api(page, "GET", "/api/meta")["ratings"]["provisional_games"]
    play_games(scripted_service, [ann_name, bob_name], needed, rated=True)
    archived(page, ann_name, needed)
    # the board is a snapshot, rebuilt every LEADERBOARD_REFRESH_S
    for _ in range(100):
        board = api(page, "GET", "/api/leaderboards/fives")
        if {p["name"] for p in board["players"]} >= {ann_name, bob_name}:
            break
        page.wait_for_timeout(200)
    else:
        raise AssertionError(f"not on the board: {board}")

    page.goto(f"{scripted_service.url}/#/login")
    page.locator("form.login-form input[name=username]").fill(ann_name)
    page.locator("form.login-form input[name=password]").fill(PASSWORD)
    page.locator("form.login-form button[type=submit]").click()
    expect(page.locator("#nav .nav-user")).to_have_text(ann_name)
    page.locator("#nav").get_by_role("link", name="Leaderboards").click()
    expect(page).to_have_url(re.compile(r"#/leaderboards$"))
    rows = page.locator("table.leaderboard tbody tr")
    expect(rows).to_have_count(len(board["players"]))
    mine = page.locator("table.leaderboard tr.is-me")
    expect(mine).to_have_attribute("data-player", ann_name)
    # the highlighted row is a table row like the others: its cells side by side, on one line
    tops = mine.locator("td").evaluate_all(
        "cells => cells.map((c) => Math.round(c.getBoundingClientRect().top))")
    assert len(set(tops)) == 1 and len(tops) == 4, tops
    assert (mine.bounding_box() or {"height": 999})["height"] < 60
    rank = next(p["rank"] for p in board["players"] if p["name"] == ann_name)
    expect(page.locator(".my-rank")).to_contain_text(f"Your rank: {rank}")
    first = board["players"][0]
    expect(rows.first).to_have_text(re.compile(rf"1\s*{first['name']}\s*{first['rating']}\s*{first['games']}"))
    shots(page, "29-leaderboard")

    # family tabs: another family has nobody yet
    tabs = page.locator(".tabs .tab")
    assert tabs.count() == len(api(page, "GET", "/api/meta")["families"])
    page.locator('.tabs .tab[data-family="bergen"]').click()
    expect(page).to_have_url(re.compile(r"#/leaderboards/bergen$"))
    expect(page.locator(".tab.current")).to_have_attribute("data-family", "bergen")
    expect(page.locator(".leaderboard-page .empty")).to_be_visible()
    expect(page.locator(".my-rank")).not_to_contain_text("Your rank")

    # a name on the board opens the profile
    page.goto(f"{scripted_service.url}/#/leaderboards/fives")
    page.locator("table.leaderboard").get_by_role("link", name=bob_name).click()
    expect(page).to_have_url(re.compile(rf"#/players/{bob_name}$"))
    expect(page.locator('.family-card[data-family="fives"] .rating')).to_have_text(
        re.compile(r"^\d+$"))

    phone = new_page(browser, **MOBILE)
    phone.goto(f"{scripted_service.url}/#/leaderboards/fives")
    expect(phone.locator("table.leaderboard tbody tr")).to_have_count(len(board["players"]))
    no_sideways_scroll(phone)
    shots(phone, "30-leaderboard-mobile")


@pytest.mark.parametrize("size", ["desktop", "mobile"])
def test_my_tables_open_a_seat_here_and_on_another_device(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None], size: str
) -> None:
    name = username("dee")
    here = registered(browser, service, name, **SIZES[size])
    # a game against a bot, from the lobby
    form = here.locator("form.create-form")
    form.locator("input[name=name]").fill("Mine vs bot")
    form.locator("select[name=seat1]").select_option("greedy")
    form.locator("button[type=submit]").click()
    expect(here).to_have_url(re.compile(r"#/t/\w+$"))
    table = here.url.rsplit("/", 1)[1]
    expect(here.locator(".hand .hand-tile")).to_have_count(7)
    expect(here.locator(".table-page.my-turn")).to_be_visible()

    resumes: list[str] = []
    here.on("request", lambda r: resumes.append(r.url) if r.url.endswith("/resume") else None)
    here.locator("#nav").get_by_role("link", name="My tables").click()
    row = here.locator(f'.my-table[data-table="{table}"]')
    expect(row).to_contain_text("Mine vs bot")
    expect(row.locator(".turn-tag")).to_have_text("Your turn")
    expect(row).to_contain_text(f"{name} 1500? (you)")
    no_sideways_scroll(here)
    shots(here, f"31-my-tables-{size}")
    # this browser keeps the seat's token: Open goes straight to the table
    row.get_by_role("button", name="Open").click()
    expect(here.locator(".table-page")).to_have_attribute("data-seat", "0")
    expect(here.locator("#conn")).to_have_attribute("data-state", "online")
    assert resumes == []

    # another device logged into the account: no token there, so Open asks for one
    there = new_page(browser, **SIZES[size])
    there.goto(f"{service.url}/#/login")
    there.locator("form.login-form input[name=username]").fill(name)
    there.locator("form.login-form input[name=password]").fill(PASSWORD)
    there.locator("form.login-form button[type=submit]").click()
    expect(there.locator("#nav .nav-user")).to_have_text(name)
    there.goto(f"{service.url}/#/me/tables")
    other = there.locator(f'.my-table[data-table="{table}"]')
    expect(other.locator(".turn-tag")).to_have_text("Your turn")
    with there.expect_response(lambda r: r.url.endswith(f"/api/tables/{table}/resume")) as answer:
        other.get_by_role("button", name="Open").click()
    assert answer.value.status == 200
    expect(there).to_have_url(re.compile(rf"#/t/{table}$"))
    expect(there.locator(".table-page")).to_have_attribute("data-seat", "0")
    expect(there.locator(".table-page.my-turn")).to_be_visible()
    saved = there.evaluate(f"JSON.parse(localStorage.getItem('allfives.seat.{table}'))")
    assert saved["seat"] == 0 and saved["token"] == answer.value.json()["token"]
    # the new token holds the seat: the first device's page watches now, and this one plays
    expect(here.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    assert play_one(there)
    shots(there, f"32-resumed-elsewhere-{size}")


def test_a_guest_sees_its_tables_too(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    page = new_page(browser, **MOBILE)
    page.goto(f"{service.url}/#/me/tables")
    expect(page.locator(".my-tables .empty")).to_be_visible()
    page.goto(f"{service.url}/#/")
    form = page.locator("form.create-form")
    form.locator("input[name=player]").fill("gil")
    form.locator("select[name=seat1]").select_option("human")
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#/t/\w+$"))
    table = page.url.rsplit("/", 1)[1]
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "0")
    page.goto(f"{service.url}/#/me/tables")
    row = page.locator(f'.my-table[data-table="{table}"]')
    expect(row.locator(".turn-tag")).to_have_text("Waiting for players")
    expect(page.locator(".my-tables-page")).to_contain_text("as a guest")
    no_sideways_scroll(page)
    row.get_by_role("button", name="Open").click()
    expect(page.locator(".waiting")).to_be_visible()
    expect(page.locator(".table-page")).to_have_attribute("data-seat", "0")
