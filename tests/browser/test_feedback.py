"""The table says what is going on (issue "the table as players want it", §3 and §5).

Every check reads the page as a player sees it: the game named in the tab title and the
rules panel, why tiles are dimmed, counters that mean nothing hidden, ghost tiles at the
candidate ends, the score pop at the scoring end with its sum, "draw until playable",
focus back to the hand, contrast on the felt, a spectator's seat to watch from, the replay's
autoplay and hands, the game-over dialog closed and reopened, and the lobby's filters.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DESKTOP, PHONE, new_page, post_json
from tests.browser.test_client import board_tiles, open_table, play_one, sit, version, wait_past
from tests.support.servers import ServiceProcess

pytestmark = pytest.mark.browser

OVERLAY = ".overlay:not([hidden]):not(.collapsed)"
MAX_STEPS = 300


def table_of(
    service: ServiceProcess,
    rules: Any,
    players: int = 2,
    name: str = "ann's table",
    bots: dict[str, str] | None = None,
) -> str:
    return str(
        post_json(
            f"{service.url}/api/tables",
            {"rules": rules, "players": players, "bots": bots or {}, "name": name},
        )["id"]
    )


def two_humans(
    browser: Browser, service: ServiceProcess, rules: Any, size: dict[str, Any] = DESKTOP
) -> tuple[str, Page, Page]:
    table = table_of(service, rules)
    ann = open_table(browser, service.url, table, **size)
    bob = open_table(browser, service.url, table, **size)
    sit(ann, 0, "ann")
    sit(bob, 1, "bob")
    for page in (ann, bob):
        expect(page.locator(".hand .hand-tile").first).to_be_visible()
    return table, ann, bob


def against_bot(
    browser: Browser, service: ServiceProcess, rules: Any, size: dict[str, Any] = DESKTOP
) -> tuple[str, Page]:
    table = table_of(service, rules, bots={"1": "greedy"})
    page = open_table(browser, service.url, table, **size)
    sit(page, 0, "ann")
    expect(page.locator(".hand .hand-tile").first).to_be_visible()
    return table, page


def mover(pages: list[Page]) -> Page | None:
    for page in pages:
        if page.locator(".table-page.my-turn").count():
            return page
    return None


def wait_for_turn(pages: list[Page], timeout_s: float = 15) -> Page:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        page = mover(pages)
        if page is not None:
            return page
        pages[0].wait_for_timeout(50)
    raise AssertionError("nobody's turn")


def dismiss_summary(pages: list[Page]) -> None:
    for page in pages:
        if page.locator(".overlay [data-dismiss]").count():
            page.locator(".overlay [data-dismiss]").click()


def luminance(rgb: list[float]) -> float:
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: list[float], b: list[float]) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


COLOUR_JS = """
(sel) => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p[3] ?? 1]; };
  const el = document.querySelector(sel);
  if (!el) return null;
  const felt = document.querySelector('.felt');
  const fs = getComputedStyle(felt);
  // the felt's gradient stops (its lightest one lies under the middle of the board)
  const stops = [...fs.backgroundImage.matchAll(/rgba?\\([^)]+\\)/g)].map((m) => parse(m[0]));
  // backgrounds between the element and the felt, innermost first
  const layers = [];
  for (let n = el; n && n !== felt; n = n.parentElement) {
    const bg = parse(getComputedStyle(n).backgroundColor);
    if (bg && bg[3] > 0) layers.push(bg);
  }
  return {color: parse(getComputedStyle(el).color), stops, layers,
          muted: fs.getPropertyValue('--muted').trim(),
          feltVar: fs.getPropertyValue('--felt').trim(),
          text: el.textContent};
}
"""


def hex_rgb(value: str) -> list[float]:
    value = value.lstrip("#")
    return [int(value[i : i + 2], 16) for i in (0, 2, 4)]


def composite(layers: list[list[float]], base: list[float]) -> list[float]:
    out = list(base[:3])
    for layer in reversed(layers):  # outermost first
        a = layer[3]
        out = [layer[i] * a + out[i] * (1 - a) for i in range(3)]
    return out


# ---- §3: say what is going on ---------------------------------------------------------------


def test_a_bergen_table_names_its_game_its_target_and_why_tiles_are_dimmed(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, ann, bob = two_humans(browser, service, "bergen")
    for page in (ann, bob):
        expect(page).to_have_title(re.compile(r"ann's table · Bergen$"))
        panel = page.locator(".rules-panel")
        expect(panel.locator(".game-label")).to_have_text("Bergen")
        expect(panel.locator(".game-target")).to_have_text(re.compile(r"to 15"))
        expect(panel.locator(".rules-lines li").first).to_be_visible()
        expect(panel).to_contain_text("ends match")  # the meta's scoring: matching
        expect(panel).to_contain_text("highest double leads")
        # Bergen scores matching ends: the ends' total means nothing; it draws: a boneyard
        expect(page.locator(".info-bar .ends")).to_have_count(0)
        expect(page.locator(".info-bar .boneyard")).to_be_visible()
    leader = wait_for_turn([ann, bob])
    playable = leader.locator(".hand-tile.playable")
    assert playable.count() == 1, "Bergen's first lead is one tile"
    tile = playable.first.get_attribute("data-tile")
    assert tile is not None
    a, b = tile.split("-")
    words = (
        f"Bergen: lead your highest double ({tile})" if a == b else f"Bergen: only {tile} may lead"
    )
    expect(leader.locator(".why")).to_have_text(words)
    other = bob if leader is ann else ann
    expect(other.locator(".why")).to_be_hidden()  # not its turn: nothing dimmed for a reason
    expect(leader).to_have_title(re.compile(r"^● Your turn · ann's table · Bergen$"))
    shots(leader, "fb-01-bergen-lead")


def test_block_hides_the_ends_and_the_boneyard_and_says_pass_when_nothing_fits(
    browser: Browser, service: ServiceProcess
) -> None:
    _, ann, bob = two_humans(browser, service, "block")
    for page in (ann, bob):
        expect(page).to_have_title(re.compile(r"· Block$"))
        expect(page.locator(".info-bar .round")).to_be_visible()
        expect(page.locator(".info-bar .ends")).to_have_count(0)
        expect(page.locator(".info-bar .boneyard")).to_have_count(0)
        expect(page.locator(".rules-panel")).to_contain_text("No drawing")
    # play until somebody must pass: the page says why
    for _ in range(MAX_STEPS):
        turn = mover([ann, bob])
        if turn is not None and turn.locator('[data-action="pass"]').count():
            expect(turn.locator(".why")).to_have_text(
                "Nothing fits (no drawing in this game): pass"
            )
            return
        if ann.locator(OVERLAY).count() or bob.locator(OVERLAY).count():
            dismiss_summary([ann, bob])
            continue
        if turn is None or not play_one(turn):
            ann.wait_for_timeout(30)
    raise AssertionError("nobody had to pass")


def test_target_reached_mid_hand_is_announced(browser: Browser, service: ServiceProcess) -> None:
    # a target of 5 is reached by the first scoring play; the game ends with the hand. A hand
    # that ends with its first scoring play shows no banner: deal another game then.
    for _game in range(5):
        _, ann, bob = two_humans(browser, service, {"preset": "all-fives", "target": 5})
        for _ in range(MAX_STEPS):
            if ann.locator(".game-over").count():
                break
            scores = [int(s) for s in ann.locator(".side-score strong").all_inner_texts()]
            if scores and max(scores) >= 5 and not ann.locator(OVERLAY).count():
                expect(ann.locator(".target-banner")).to_have_text(
                    "Target reached: the game ends after this hand"
                )
                expect(bob.locator(".target-banner")).to_be_visible()
                return
            if ann.locator(OVERLAY).count() or bob.locator(OVERLAY).count():
                break  # the hand is over (its summary covers the next deal): another game
            page = mover([ann, bob])
            if page is None or not play_one(page):
                ann.wait_for_timeout(30)
    raise AssertionError("no game of five reached its target before its hand ended")


def test_a_tile_with_two_ends_shows_a_ghost_at_each_and_a_ghost_click_plays_there(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, ann, bob = two_humans(browser, service, "all-fives")
    for _ in range(MAX_STEPS):
        dismiss_summary([ann, bob])
        page = wait_for_turn([ann, bob])
        before = version(page)
        playable = page.locator(".hand-tile.playable")
        if playable.count() == 0:
            action = page.locator(".buttons [data-action]")
            action.first.click()
            wait_past(page, before)
            continue
        chosen = None
        for i in range(playable.count()):
            playable.nth(i).click()
            if page.locator(".buttons .end-choice").count():
                chosen = playable.nth(i)
                break
            if version(page) != before or page.locator(".table-page.my-turn").count() == 0:
                break
        if chosen is None:
            if version(page) == before and page.locator(".table-page.my-turn").count():
                page.wait_for_function(
                    "v => document.querySelector('.table-page').dataset.v !== v", arg=before
                )
            continue
        if page.locator(".hand button").count() < 2:  # its last tile: the hand would end
            page.locator(".buttons .end-choice").first.click()
            wait_past(page, before)
            continue
        ghosts = page.locator(".board .ghost-tile")
        ends = page.locator(".buttons .end-choice").count()
        assert 1 <= ghosts.count() <= ends
        tile = chosen.get_attribute("data-tile")
        for g in range(ghosts.count()):
            assert ghosts.nth(g).get_attribute("data-ghost") == tile
        # a ghost lies on no layout tile
        overlap = page.evaluate(
            """() => { const tiles = [...document.querySelectorAll('.board .tile .face')]
                 .map((t) => t.getBoundingClientRect());
               return [...document.querySelectorAll('.board .ghost-tile .face')].some((g) => {
                 const r = g.getBoundingClientRect();
                 return tiles.some((t) => r.left < t.right - 2 && t.left < r.right - 2
                   && r.top < t.bottom - 2 && t.top < r.bottom - 2); }); }"""
        )
        assert not overlap
        shots(page, "fb-02-ghosts")
        ghost = ghosts.first
        where = ghost.get_attribute("transform")
        on = ghost.get_attribute("data-on")
        n = len(board_tiles(page))
        ghost.click()
        wait_past(page, before)
        placed = board_tiles(page)
        assert len(placed) == n + 1
        assert placed[-1][0] == tile
        assert placed[-1][1] == where, "the tile lies where its ghost was"
        history = page.locator(".history li").last.inner_text()
        assert f"played {tile} on {on}" in history
        expect(page.locator(".board .ghost-tile")).to_have_count(0)
        return
    raise AssertionError("no tile with two ends came up")


# ---- §5: feedback and flow -------------------------------------------------------------------


def test_the_score_pop_sits_at_the_scoring_end_shows_the_sum_and_goes_with_the_next_move(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, ann, bob = two_humans(browser, service, "all-fives")
    for _ in range(MAX_STEPS):
        dismiss_summary([ann, bob])
        page = wait_for_turn([ann, bob])
        play_one(page)
        pop = ann.locator(".score-pop")
        if pop.count() == 0:
            continue
        expect(pop).to_have_count(1)
        main = pop.locator(".pop-main").inner_text()
        assert re.fullmatch(r".+ \+\d+", main), main
        total = ann.locator(".end-total").inner_text()
        last = ann.locator(".history li").last.inner_text()
        if "played" not in last:
            continue  # the hand ended with that play: the pop has no sum
        expect(pop.locator(".pop-sum")).to_have_text(
            re.compile(rf"^(\d+ \+ )*\d+( = )?{total}$|^{total}$")
        )
        parts = pop.locator(".pop-sum").inner_text().split(" = ")
        assert sum(int(x) for x in parts[0].split(" + ")) == int(total)
        # anchored at the tile just played, not over the middle of the board
        geo = ann.evaluate(
            """() => { const p = document.querySelector('.score-pop').getBoundingClientRect();
                 const t = document.querySelector('.board .tile.last').getBoundingClientRect();
                 return {px: p.left + p.width / 2, pb: p.bottom,
                         tx: t.left + t.width / 2, tt: t.top}; }"""
        )
        assert abs(geo["px"] - geo["tx"]) < 3, geo
        assert geo["pb"] <= geo["tt"] + 1, geo
        shots(ann, "fb-03-score-pop")
        # still there a second later (it outlived nothing), gone with the next move
        ann.wait_for_timeout(1800)
        expect(ann.locator(".score-pop")).to_have_count(1)
        nxt = wait_for_turn([ann, bob])
        v = version(ann)
        play_one(nxt)
        ann.wait_for_function("v => document.querySelector('.table-page').dataset.v !== v", arg=v)
        scored = "· +" in ann.locator(".history li").last.inner_text()
        if not scored and not ann.locator(OVERLAY).count():
            expect(ann.locator(".score-pop")).to_have_count(0)
        return
    raise AssertionError("nobody scored")


def test_draw_until_playable_draws_by_itself_and_the_page_says_why(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, ann, bob = two_humans(browser, service, "all-fives", size=PHONE)
    toggle = ann.locator(".auto-draw input")
    expect(toggle).not_to_be_checked()
    for _ in range(MAX_STEPS):
        dismiss_summary([ann, bob])
        page = wait_for_turn([ann, bob])
        if page is ann and ann.locator('[data-action="draw"]').count():
            break
        if page is bob and bob.locator('[data-action="draw"]').count():
            before = version(bob)
            bob.locator('[data-action="draw"]').click()
            wait_past(bob, before)
            continue
        play_one(page)
    else:
        raise AssertionError("ann never had to draw")
    expect(ann.locator(".why")).to_have_text("Nothing fits: draw")
    shots(ann, "fb-04-nothing-fits-360")
    width = ann.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, width
    held = ann.locator(".hand .hand-tile").count()
    toggle.check()
    # the page draws on its own until a tile fits (or only passing is left)
    ann.wait_for_function(
        """() => { const p = document.querySelector('.table-page');
             // still ann's turn, nothing pending: a tile to play, or only a pass left
             return p.classList.contains('my-turn') && Boolean(
               document.querySelector('.hand-tile.playable')
               || document.querySelector('[data-action="pass"]')); }""",
        timeout=20_000,
    )
    seen = ann.evaluate("""() => ({hand: document.querySelector('.hand').innerText,
        tiles: document.querySelectorAll('.hand .hand-tile').length,
        buttons: document.querySelector('.buttons').innerText,
        notice: document.querySelector('.notice').innerText,
        history: [...document.querySelectorAll('.history li')].map((l) => l.innerText).slice(-5),
        turn: document.querySelector('.table-page').className})""")
    assert ann.locator(".hand .hand-tile").count() > held, (held, seen)
    draws = [t for t in ann.locator(".history li").all_inner_texts() if t == "ann drew"]
    assert draws, "the draws are in the hand's history"
    expect(ann.locator('[data-action="draw"]')).to_have_count(0)
    # the choice is kept for the next time
    assert ann.evaluate("localStorage.getItem('dominoes.autoDraw')") == "1"


def test_focus_goes_back_to_the_hand_on_your_turn(
    browser: Browser, service: ServiceProcess
) -> None:
    _, page = against_bot(browser, service, "all-fives")
    for _ in range(20):
        dismiss_summary([page])
        if not page.locator(".table-page.my-turn").count():
            page.wait_for_timeout(50)
            continue
        before = version(page)
        playable = page.locator(".hand-tile.playable")
        if playable.count() == 0:
            page.locator(".buttons [data-action]").first.click()
            wait_past(page, before)
            continue
        playable.first.click()
        if page.locator(".buttons .end-choice").count():
            page.locator(".buttons .end-choice").first.click()
        wait_past(page, before)
        if page.locator(OVERLAY).count():
            continue
        expect(page.locator(".table-page.my-turn")).to_have_count(1)
        focused = page.evaluate(
            "() => Boolean(document.activeElement && document.activeElement.closest('.hand'))"
        )
        assert focused, page.evaluate("document.activeElement.outerHTML.slice(0, 80)")
        # and the keyboard plays on from there
        page.keyboard.press("End")
        assert page.evaluate("document.activeElement.closest('.hand') !== null")
        return
    raise AssertionError("no second turn")


def test_text_on_the_felt_reaches_wcag_aa(browser: Browser, service: ServiceProcess) -> None:
    _, ann, _bob = two_humans(browser, service, "all-fives")
    expect(ann.locator(".board-empty")).to_have_text("Waiting for the lead")
    empty = ann.evaluate(COLOUR_JS, ".board-empty")
    lightest = max(empty["stops"], key=luminance)  # the middle of the felt, under the words
    assert contrast(empty["color"], lightest) >= 4.5, (empty, contrast(empty["color"], lightest))
    felt = hex_rgb(empty["feltVar"])
    muted = hex_rgb(empty["muted"])
    assert contrast(muted, felt) >= 4.5, contrast(muted, felt)
    # every muted text drawn on the felt (seat chips, the info bar), over its own backgrounds
    selectors = [".info-bar .last-move", ".seat-chip .clock", ".seat-chip small"]
    page = wait_for_turn([ann, _bob])
    play_one(page)
    for sel in selectors:
        seen = ann.evaluate(COLOUR_JS, sel)
        if seen is None:
            continue
        for stop in seen["stops"]:
            bg = composite(seen["layers"], stop)
            assert contrast(seen["color"], bg) >= 4.5, (sel, seen, bg)


def test_a_spectator_chooses_the_seat_to_watch_from(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    table = table_of(
        service, "all-fives", players=4, bots={"1": "greedy", "2": "greedy", "3": "greedy"}
    )
    player = open_table(browser, service.url, table, **DESKTOP)
    sit(player, 0, "ann")
    watcher = open_table(browser, service.url, table, **DESKTOP)
    expect(watcher.locator(".table-page")).to_have_attribute("data-seat", "spectator")
    expect(watcher.locator('.me-chip .seat-chip[data-pos="bottom"]')).to_have_attribute(
        "data-seat", "0"
    )
    expect(player.locator(".view-from")).to_have_count(0)  # a player sits where they sit
    watcher.locator("select[name=view-from]").select_option("2")
    expect(watcher.locator('.me-chip .seat-chip[data-pos="bottom"]')).to_have_attribute(
        "data-seat", "2"
    )
    places = watcher.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.seats .seat-chip')]
             .map((c) => [c.dataset.pos, c.dataset.seat]))"""
    )
    assert places == {"left": "3", "top": "0", "right": "1"}, places
    shots(watcher, "fb-05-watch-from-seat-3")
    watching = watcher.locator(".watching")
    if watching.count():  # the presence frame counts spectators (server side, §6)
        expect(watching).to_have_text(re.compile(r"^\d+ watching$"))
        assert int(watching.inner_text().split()[0]) >= 1


def play_short_game(page: Page) -> None:
    for _ in range(MAX_STEPS):
        if page.locator(".game-over").count():
            return
        dismiss_summary([page])
        if not play_one(page):
            page.wait_for_timeout(40)
    raise AssertionError("the game did not end")


def test_game_over_closes_to_the_board_and_reopens_and_the_replay_autoplays_every_hand(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    _, page = against_bot(browser, service, {"preset": "all-fives", "target": 40})
    play_short_game(page)
    over = page.locator(".overlay .game-over")
    expect(over).to_be_visible()
    page.get_by_role("button", name="Look at the board").click()
    expect(over).to_have_count(0)
    expect(page.locator(".overlay")).to_have_class(re.compile(r"collapsed"))
    tiles = board_tiles(page)
    assert tiles, "the final board is there to look at"
    # the board is not covered: its tiles take clicks (no overlay over them)
    hit = page.evaluate(
        """() => { const r = document.querySelector('.board .tile').getBoundingClientRect();
             const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
             return Boolean(at && at.closest('.board')); }"""
    )
    assert hit
    shots(page, "fb-06-final-board")
    page.get_by_role("button", name="Show the result").click()
    expect(over).to_be_visible()
    hands = over.locator(".round-summary h2").first.inner_text()
    last_hand = int(re.search(r"Hand (\d+)", hands).group(1))  # type: ignore[union-attr]

    over.get_by_text("Watch the replay").click()
    counter = page.locator(".replay-controls .counter")
    expect(counter).to_have_text(re.compile(r"^1 / \d+$"))
    total = int(counter.inner_text().split("/")[1])
    # every control draws its icon itself: no symbol that a font on the machine may lack
    next_hand = page.locator(".replay-controls .next-hand")
    expect(next_hand).to_have_text("Next hand")
    expect(next_hand.locator("svg")).to_have_count(1)
    # next hand: from the deal of hand 1 to the first view of hand 2
    if last_hand >= 2:
        page.get_by_role("button", name=re.compile("Next hand")).click()
        expect(page.locator(".replay-page .info-bar")).to_contain_text("Hand 2")
        at = int(counter.inner_text().split("/")[0])
        assert 1 < at < total
    page.keyboard.press("Home")
    page.get_by_role("button", name="autoplay").click()
    expect(page.get_by_role("button", name="autoplay")).to_have_attribute("aria-pressed", "true")
    page.wait_for_timeout(1600)
    stepped = int(counter.inner_text().split("/")[0])
    assert stepped >= 2, "autoplay steps on by itself"
    page.get_by_role("button", name="autoplay").click()
    expect(page.get_by_role("button", name="autoplay")).to_have_attribute("aria-pressed", "false")
    paused = counter.inner_text()
    page.wait_for_timeout(900)
    assert counter.inner_text() == paused
    page.keyboard.press("End")
    expect(page.locator(".replay-all .round-summary")).to_have_count(last_hand)
    shots(page, "fb-07-replay-all-hands")


def test_the_lobby_filters_and_sorts_its_tables(
    browser: Browser, service: ServiceProcess, shots: Callable[[Page, str], None]
) -> None:
    made = {}
    made["fives4"] = table_of(service, "all-fives", 4, name="F four")
    time.sleep(0.01)
    made["bergen2"] = table_of(service, "bergen", 2, name="B two")
    time.sleep(0.01)
    made["fives3"] = table_of(service, "all-fives", 3, name="F three")
    time.sleep(0.01)
    made["live"] = table_of(service, "all-fives", 2, name="F live", bots={"1": "greedy"})
    post_json(f"{service.url}/api/tables/{made['live']}/join", {"seat": 0, "name": "zed"})
    for size in (DESKTOP, PHONE):
        page = new_page(browser, **size)
        page.goto(f"{service.url}/#/")
        rows = page.locator(".table-list .table-row")
        expect(rows).to_have_count(4)

        def ids(rows: Any = rows) -> list[str]:
            return list(rows.evaluate_all("rs => rs.map((r) => r.dataset.table)"))

        page.locator("select[name=filter-preset]").select_option("bergen")
        expect(rows).to_have_count(1)
        assert ids() == [made["bergen2"]]
        page.locator("select[name=filter-preset]").select_option("")
        page.locator("select[name=filter-players]").select_option("3")
        expect(rows).to_have_count(1)
        assert ids() == [made["fives3"]]
        page.locator("select[name=filter-players]").select_option("")
        page.locator("input[name=filter-open]").check()
        expect(rows).to_have_count(3)
        assert made["live"] not in ids()
        # newest first, then most players first
        page.locator("select[name=sort]").select_option("newest")
        assert ids() == [made["fives3"], made["bergen2"], made["fives4"]]
        page.locator("select[name=sort]").select_option("players")
        assert ids() == [made["fives4"], made["fives3"], made["bergen2"]]
        # the filters outlive the list's refresh
        page.wait_for_timeout(4300)
        expect(rows).to_have_count(3)
        assert page.locator("input[name=filter-open]").is_checked()
        if size is PHONE:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 360, width
        shots(page, f"fb-08-lobby-filters-{360 if size is PHONE else 1280}")
