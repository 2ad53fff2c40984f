"""The replay viewer shows the post-game analysis (players.md "Analysis").

Short games (All Fives to 1 point: over after the first hand that scores) are played to their
end over the websocket against a strong bot by a seat that always plays its first legal move,
on a server that analyses them (ANALYSIS_WORKERS=1, ANALYSIS_DEALS=12); the page must then say
what the API says: the per-player summary, each analysed move's loss with the best play drawn
as a ghost tile on the board, the blunders marked and reachable, and the chart of each side's
expected points. On a server that analyses nothing the page says the analysis is in progress,
keeps asking, and stops once the page is left; an analysis that fails leaves the replay working.
At desktop (1280 x 800) and phone (360 x 740) sizes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import DESKTOP, PHONE, new_page
from tests.support.pg_server import PgServer
from tests.support.redis_server import RedisServer
from tests.support.servers import GameClient, ServiceProcess, create_and_sit, play_to_end

pytestmark = pytest.mark.browser

SHORT_GAME = {"preset": "all-fives", "target": 1}
MINUS = "\N{MINUS SIGN}"  # as the page writes a loss
SIZES = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read())


def finished_game(service: ServiceProcess) -> str:
    """A short game played to its end (seat 0 plays its first legal move, a strong bot seat 1);
    its id."""
    return finished_private_game(service, private=False)[0]


def finished_private_game(service: ServiceProcess, private: bool = True) -> tuple[str, str | None]:
    """`finished_game`, private: its id and invite. Played on a thread of its own: the sync
    Playwright API owns this one."""
    async def play() -> tuple[str, str | None]:
        async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
            table, invite, token = await create_and_sit(
                http, "ann", rules=SHORT_GAME, bots={"1": "strong"}, name="Analysed game",
                private=private)
            player = await GameClient.connect(service.ws_url)
            try:
                assert (await player.hello(table, token))["t"] == "welcome"
                await play_to_end({0: player}, [])
            finally:
                await player.close()
            return table, invite

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, play()).result(timeout=120)


def analysis_of(service: ServiceProcess, table: str, invite: str | None = None,
                within_s: float = 60.0) -> dict[str, Any]:
    """The game's analysis once it is done."""
    deadline = time.monotonic() + within_s
    query = f"?invite={invite}" if invite else ""
    while True:
        try:
            body: dict[str, Any] = get_json(f"{service.url}/api/games/{table}/analysis{query}")
            if body["status"] == "done":
                analysis: dict[str, Any] = body["analysis"]
                return analysis
            assert body["status"] == "pending", body
        except urllib.error.HTTPError as exc:
            assert exc.code == 404, exc  # archived a moment after the game ends
        assert time.monotonic() < deadline, "the analysis was not done in time"
        time.sleep(0.2)


def view_index(views: list[dict[str, Any]], round_: int, move: int) -> int:
    """The replay view before move `move` of round `round_`: the round's start is its first."""
    first = next(i for i, v in enumerate(views) if v["round"] == round_)
    assert views[first + move]["round"] == round_
    return first + move


def move_text(move: dict[str, Any]) -> str:
    return f"{move['play']} on {move['on']}" if move.get("on") else str(move["play"])


def loss_text(entry: dict[str, Any]) -> str:
    if entry["chosen"] == 0 or entry["loss"] <= 0:
        return "best move"
    # the client rounds as JavaScript's toFixed does: the exact binary value, a tie upwards
    # (11.25 shows as 11.3, where Python's round gives 11.2)
    shown = Decimal(entry["loss"]).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP).normalize()
    return f"{MINUS}{shown:f} points" + (", blunder" if entry["blunder"] else "")


@pytest.fixture(scope="module")
def analysing(client_build: Path, pg_server: PgServer) -> Iterator[ServiceProcess]:
    """A server that analyses its games, on a Redis of its own (the session's is emptied
    before each test that asks for it) and a database of its own (no other test's games wait
    in its analysis queue)."""
    if not pg_server.running:
        pg_server.start()
    database = pg_server.fresh_database()
    try:
        with RedisServer() as redis, ServiceProcess(redis.url, env={
                "ANALYSIS_WORKERS": "1", "ANALYSIS_DEALS": "12",
                "DATABASE_URL": database}) as proc:
            yield proc
    finally:
        pg_server.drop_database(database.rsplit("/", 1)[1])


@pytest.fixture(scope="module")
def analysed(analysing: ServiceProcess) -> dict[str, Any]:
    """A finished, analysed game with a blunder and a move, not the lead, that was not the
    best play: {"id", "analysis", "views"}."""
    for _ in range(8):
        table = finished_game(analysing)
        analysis = analysis_of(analysing, table)
        moves = analysis["moves"]
        if any(m["blunder"] for m in moves) and any(
                m["chosen"] != 0 and m["options"][0]["move"].get("on") for m in moves):
            views = get_json(f"{analysing.url}/api/tables/{table}/replay")["views"]
            return {"id": table, "analysis": analysis, "views": views}
    raise AssertionError("no game with a blunder in 8 tries")


def open_replay(browser: Browser, url: str, table: str, size: dict[str, Any]) -> Page:
    page = new_page(browser, **size)
    page.goto(f"{url}/#/replay/{table}")
    expect(page.locator(".replay-controls .counter")).to_have_text(re.compile(r"^1 / \d+$"))
    return page


def step_to(page: Page, index: int, total: int) -> None:
    """To view `index` by the keyboard: Home, then the right arrow."""
    page.locator(".replay-controls input[type=range]").focus()
    page.keyboard.press("Home")
    for _ in range(index):
        page.keyboard.press("ArrowRight")
    expect(page.locator(".replay-controls .counter")).to_have_text(f"{index + 1} / {total}")


def no_sideways_scroll(page: Page) -> None:
    wide = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert wide <= 1, f"the page scrolls sideways by {wide}px"


@pytest.mark.parametrize("size", SIZES)
def test_the_replay_shows_each_move_s_loss_the_better_play_blunders_chart_and_summary(
    browser: Browser, analysing: ServiceProcess, analysed: dict[str, Any], size: dict[str, Any],
    shots: Callable[[Page, str], None],
) -> None:
    table, analysis, views = analysed["id"], analysed["analysis"], analysed["views"]
    total = len(views)
    page = open_replay(browser, analysing.url, table, size)
    expect(page.locator(".analysis")).to_be_visible()
    expect(page.locator(".analysis-note")).to_be_hidden()

    # the summary per player: the API's numbers
    rows = page.locator(".analysis-summary tbody tr")
    expect(rows).to_have_count(len(analysis["players"]))
    for p in analysis["players"]:
        row = page.locator(f'.analysis-summary tr[data-seat="{p["seat"]}"]')
        expect(row.locator("th")).to_have_text("ann" if p["seat"] == 0 else re.compile(r"\S"))
        expect(row.locator("td.moves")).to_have_text(str(p["moves"]))
        expect(row.locator("td.blunders")).to_have_text(str(p["blunders"]))
        expect(row.locator("td.best")).to_have_text(str(p["best"]))
        shown = row.locator("td.average-loss").inner_text().replace(MINUS, "-")
        assert abs(float(shown) - p["average_loss"]) < 0.006, (shown, p)

    # a move that was not the best play: its loss, and the best play's ghost on the board
    entry = next(m for m in analysis["moves"]
                 if m["chosen"] != 0 and m["options"][0]["move"].get("on"))
    at = view_index(views, entry["round"], entry["move"])
    step_to(page, at, total)
    box = page.locator(".analysis-move")
    expect(box).to_be_visible()
    expect(box.locator(".to-move")).to_contain_text("to move")
    expect(box.locator(".played")).to_contain_text(move_text(entry["options"][entry["chosen"]]["move"]))
    expect(box.locator(".loss")).to_have_text(loss_text(entry))
    best = entry["options"][0]["move"]
    expect(box.locator(".better")).to_contain_text(move_text(best))
    ghost = page.locator(
        f'.board svg .ghost-tile[data-ghost="{best["play"]}"][data-on="{best["on"]}"]')
    expect(ghost).to_have_count(1)
    # the ghost is not a layout tile
    expect(page.locator(".board .tile")).to_have_count(len(views[at]["layout"]))
    box.locator("details.options summary").click()
    options = box.locator(".option-list li")
    expect(options).to_have_count(len(entry["options"]))
    expect(options.nth(entry["chosen"])).to_have_class(re.compile(r"\bchosen\b"))
    expect(options.nth(0)).to_contain_text(re.compile(r"± "))
    # the chart of the hand: one line per side, the move marked, a text alternative
    chart = page.locator(".analysis-chart svg.series-chart")
    expect(chart.locator("path.chart-line")).to_have_count(len(views[0]["sides"]))
    expect(chart).to_have_attribute(
        "aria-label", re.compile(rf"^Expected points in hand {entry['round'] + 1}\b"))
    expect(chart.locator(".chart-dot.current")).to_have_count(len(views[0]["sides"]))
    in_hand = [m for m in analysis["moves"] if m["round"] == entry["round"]]
    expect(chart.locator("circle.chart-dot.series-0")).to_have_count(len(in_hand))
    # the chart by keyboard: it takes the focus, and its arrows step through the hand's
    # analysed moves (the replay follows; the focus stays on the redrawn chart)
    k = in_hand.index(entry)
    expect(chart).to_have_attribute("role", "slider")
    expect(chart).to_have_attribute("aria-valuenow", str(k + 1))
    chart.focus()
    page.keyboard.press("ArrowRight" if k + 1 < len(in_hand) else "ArrowLeft")
    other = in_hand[k + 1] if k + 1 < len(in_hand) else in_hand[k - 1]
    there = view_index(views, other["round"], other["move"])
    expect(page.locator(".replay-controls .counter")).to_have_text(f"{there + 1} / {total}")
    expect(page.locator(".analysis-chart svg.series-chart")).to_be_focused()
    page.keyboard.press("Home")
    first_move = view_index(views, in_hand[0]["round"], in_hand[0]["move"])
    expect(page.locator(".replay-controls .counter")).to_have_text(f"{first_move + 1} / {total}")
    step_to(page, at, total)
    shots(page, f"analysis-move-{'phone' if size is PHONE else 'desktop'}")

    # the best play made: said so, and no ghost
    top = next(m for m in analysis["moves"] if m["chosen"] == 0)
    step_to(page, view_index(views, top["round"], top["move"]), total)
    expect(box.locator(".loss")).to_have_text("best move")
    expect(box.locator(".better")).to_have_count(0)
    expect(page.locator(".board svg .ghost-tile")).to_have_count(0)

    # the blunders: marked on the slider's track and listed; a click jumps to one
    blunders = [m for m in analysis["moves"] if m["blunder"]]
    expect(page.locator(".slider-marks .mark.blunder")).to_have_count(len(blunders))
    jumps = page.locator(".blunder-jump")
    expect(jumps).to_have_count(len(blunders))
    first = blunders[0]
    jumps.first.click()
    there = view_index(views, first["round"], first["move"])
    expect(page.locator(".replay-controls .counter")).to_have_text(f"{there + 1} / {total}")
    expect(box).to_have_class(re.compile(r"\bblunder\b"))
    expect(box.locator(".loss")).to_have_text(loss_text(first))
    expect(box.locator(".loss")).to_contain_text("blunder")
    expect(jumps.first).to_have_attribute("aria-current", "true")
    b = first["options"][0]["move"]
    on = f'[data-on="{b["on"]}"]' if b.get("on") else ""
    expect(page.locator(f'.board svg .ghost-tile[data-ghost="{b["play"]}"]{on}')).to_have_count(1)
    # the keyboard reaches the list too
    jumps.first.focus()
    page.keyboard.press("ArrowRight")  # the page's keys step on from there
    expect(page.locator(".replay-controls .counter")).to_have_text(f"{there + 2} / {total}")
    page.keyboard.press("End")
    expect(page.locator(".final-tag")).to_be_visible()
    expect(box).to_be_hidden()  # no move is made from the final position
    no_sideways_scroll(page)
    shots(page, f"analysis-end-{'phone' if size is PHONE else 'desktop'}")


@pytest.mark.parametrize("size", SIZES)
def test_the_analysis_shows_as_in_progress_and_is_asked_for_until_the_page_is_left(
    browser: Browser, service: ServiceProcess, size: dict[str, Any],
) -> None:
    table = finished_game(service)  # ANALYSIS_WORKERS=0: it stays pending
    page = new_page(browser, **size)
    with page.expect_request(re.compile(r"/api/games/\w+/analysis")):
        page.goto(f"{service.url}/#/replay/{table}")
    note = page.locator(".analysis-note")
    expect(note).to_have_text(re.compile("Analysis in progress"))
    expect(page.locator(".analysis")).to_be_hidden()
    # the replay works meanwhile
    counter = page.locator(".replay-controls .counter")
    expect(counter).to_have_text(re.compile(r"^1 / \d+$"))
    page.keyboard.press("ArrowRight")
    expect(counter).to_have_text(re.compile(r"^2 / \d+$"))
    # asked again a few seconds later
    with page.expect_request(re.compile(r"/api/games/\w+/analysis"), timeout=8000):
        pass
    # and not once the page is left
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/analysis" in r.url else None)
    page.goto(f"{service.url}/#/")
    expect(page.locator(".replay-page")).to_have_count(0)
    page.wait_for_timeout(4000)
    assert asked == []
    no_sideways_scroll(page)


def answering(status: int, body: Any) -> Callable[[Route], None]:
    def answer(route: Route) -> None:
        route.fulfill(status=status, content_type="application/json", body=json.dumps(body))
    return answer


def test_a_failed_analysis_leaves_a_note_and_the_replay_working(
    browser: Browser, analysing: ServiceProcess, analysed: dict[str, Any],
) -> None:
    for status, body, words in (
        (200, {"id": analysed["id"], "status": "failed", "analysis": None}, "could not be made"),
        (500, {"error": {"code": "internal", "message": "boom"}}, "could not be loaded"),
    ):
        page = new_page(browser, **DESKTOP)

        page.route(re.compile(r".*/api/games/\w+/analysis.*"), answering(status, body))
        page.goto(f"{analysing.url}/#/replay/{analysed['id']}")
        expect(page.locator(".analysis-note")).to_contain_text(words)
        expect(page.locator(".analysis")).to_be_hidden()
        counter = page.locator(".replay-controls .counter")
        total = len(analysed["views"])
        expect(counter).to_have_text(f"1 / {total}")  # the replay loaded (the note can be first)
        page.keyboard.press("End")
        expect(counter).to_have_text(f"{total} / {total}")
        expect(page.locator(".analysis-move")).to_be_hidden()


def test_a_private_game_s_analysis_is_read_with_its_invite(
    browser: Browser, analysing: ServiceProcess,
) -> None:
    table, invite = finished_private_game(analysing)
    assert invite
    analysis = analysis_of(analysing, table, invite)
    page = new_page(browser, **PHONE)
    page.goto(f"{analysing.url}/#/replay/{table}?invite={invite}")
    expect(page.locator(".replay-controls .counter")).to_have_text(re.compile(r"^1 / \d+$"))
    rows = page.locator(".analysis-summary tbody tr")
    expect(rows).to_have_count(len(analysis["players"]))
    expect(rows.first.locator("td.moves")).to_have_text(str(analysis["players"][0]["moves"]))
