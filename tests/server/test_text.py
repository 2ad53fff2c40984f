"""Text shown to other people (player names, table names, chat) against the real service:
no control characters, no bidi overrides, nothing invisible-only, no human called "Bot"."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, create_table, join

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
INVISIBLE = ["\u200b", "\u200b\u200c\u200d", "\ufeff", "\u2060", "\u00ad", "\u3164",
             "\u115f\u1160", "\u2800", "\u180e", "\u034f", " \u200b "]
MARKS = ["\u0301", "\u0301\u0302\u0303", "\u20dd", "\u0e31", " \u0301 ", "\u0301ann",
         "a" + "\u0301" * 9]
CONTROLS = ["ann\x00", "ann\x07", "a\nb", "a\rb", "a\tb", "\x1b[31mred", "ann\x7f", "a\x85b",
            "a\u2028b", "a\u2029b"]
BOT_NAMES = ["Bot", "bot", "BOT", " Bot ", "B O T", "b.o.t", "b-o-t", "B\u200bot", "Bot 2",
             "Bot2", "bot_3", "Bot (greedy)", "Bot (strong-fast)", "bot(random)", "(bot)",
             "ann (bot)", "Bot Ann", "\uff22\uff4f\uff54",  # fullwidth
             "\u0412\u043e\u0442",  # Cyrillic Ve, o, te
             "b\u043et", "B0T", "b\u03bf\u03c4", "Bo\u0301t", "\U0001d41b\U0001d428\U0001d42d",
             "B.O.T. fan"]
# Names that would read as staff, as the service itself, as another guest's quick-play label or
# as the archive's placeholder for a deleted account.
STAFF_NAMES = ["admin", "Moderator", "M0DERAT0R", "the system", "Guest 0042", "guest",
               "deleted player", "Deleted Player", "spectator", "root"]
GOOD_NAMES = ["ann", "Botond", "Abbot", "Robot Rob", "Bottle", "José", "محمد", "Zoë",
              "Guesthouse", "Deleted scenes", "Administrative",
              "\U0001f468\u200d\U0001f469\u200d\U0001f467", "ग्रेस", "ñ", "李雷", "o'Brien"]



@pytest.fixture
async def service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    """The service with the per-address quotas raised: these tests create and join many."""
    env = {**FAST, "CREATE_RATE": "100000", "MAX_WAITING_TABLES": "100000", "JOIN_RATE": "100000"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


def error_code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


async def join_as(http: httpx.AsyncClient, table: str, name: str) -> httpx.Response:
    return await http.post(f"/api/tables/{table}/join", json={"seat": 0, "name": name})


async def test_bad_player_names_are_refused_and_the_seat_stays_free(
    http: httpx.AsyncClient,
) -> None:
    table = await create_table(http, players=2)
    accepted = []
    for name in [b + "ann" for b in BIDI] + INVISIBLE + MARKS + CONTROLS + BOT_NAMES \
            + STAFF_NAMES:
        response = await join_as(http, table, name)
        if (response.status_code, error_code(response) if response.status_code >= 400
                else None) != (400, "bad_request"):
            accepted.append(name)
    assert accepted == []
    summary = (await http.get(f"/api/tables/{table}")).json()
    assert not summary["seats"][0]["taken"]


async def test_good_player_names_are_taken_as_written(http: httpx.AsyncClient) -> None:
    for name in GOOD_NAMES:
        table = await create_table(http, players=2)
        response = await join_as(http, table, name)
        assert response.status_code == 200, (name, response.text)
        summary = (await http.get(f"/api/tables/{table}")).json()
        assert summary["seats"][0]["name"] == name


async def test_bad_table_names_are_refused_and_bot_is_a_fine_table_name(
    http: httpx.AsyncClient,
) -> None:
    for name in [b + "table" for b in BIDI] + INVISIBLE + MARKS + CONTROLS:
        response = await http.post("/api/tables", json={"players": 2, "name": name})
        assert (response.status_code, error_code(response)) == (400, "bad_request"), repr(name)
    assert (await http.get("/api/tables")).json()["tables"] == []
    for name in ("Bot arena", "Zoë's table", "\U0001f3b2 fives"):
        response = await http.post("/api/tables", json={"players": 2, "name": name})
        assert response.status_code == 201, name


async def test_bad_chat_is_refused_and_good_chat_is_relayed(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=2)
    token = await join(http, table, 0, "ann")
    player = await GameClient.connect(service.ws_url)
    await player.hello(table, token)
    for text in [b + "gg" for b in BIDI] + INVISIBLE + MARKS + CONTROLS:
        await player.send({"t": "chat", "text": text})
        answer = await player.recv_until("error")
        assert answer["code"] == "bad_message", repr(text)
    for text in ("gg \U0001f44d", "Bot played well", "ग्रेस", "\u0645\u0631\u062d\u0628\u0627"):
        await player.send({"t": "chat", "text": text})
        line = await player.recv_until("chat")
        assert (line["text"], line["name"], line["seat"]) == (text, "ann", 0)
    assert not [m for m in player.messages if m["t"] == "chat" and m["text"] not in (
        "gg \U0001f44d", "Bot played well", "ग्रेस", "\u0645\u0631\u062d\u0628\u0627")]


# ---- the rules themselves (server/text.py) -----------------------------------------------------


def test_the_rules_name_each_problem() -> None:
    from server import text

    assert text.problem("ann") is None
    assert "control" in (text.problem("a\x00") or "")
    assert "bidi" in (text.problem("\u202eann") or "")
    assert "visible" in (text.problem("\u200b\u200d") or "")
    assert "start" in (text.problem("\u0301a") or "")
    assert "stack" in (text.problem("a" + "\u0301" * (text.MAX_MARKS + 1)) or "")
    assert text.problem("a" + "\u0301" * text.MAX_MARKS) is None


def test_bot_lookalikes_are_read_as_bot_and_real_names_are_not() -> None:
    from server import text

    assert text.skeleton_words("B.O.T. fan") == ["bot", "fan"]
    assert text.skeleton_words("\u0412\u043e\u0442 (greedy)") == ["bot", "greedy"]
    assert all(text.bot_like(name) for name in BOT_NAMES)
    assert not any(text.bot_like(name) for name in GOOD_NAMES)
    assert not text.bot_like("Bottom 2") and text.bot_like("bot 22")


def test_names_drawn_alike_read_alike_beside_account_names() -> None:
    from server import text

    # in any case, in other scripts, fullwidth, mathematical letters, accented, with invisible
    # characters: all read as the account "Ian_Moore" does
    alike = ["Ian_Moore", "ian_moore", "IAN_MOORE", "lan_Moore", "1an_M00re", "Ian_rnoore",
             "\u0406an_Moore", "\u0456an_\u041c\u043e\u043ere", "\uff29an_Moore",
             "\U0001d408an_Moore", "\u00cc\u00e1n_Mo\u0308ore", "Ian\u200b_Moore"]
    assert {text.account_reading(name) for name in alike} == {"lan_rnoore"}
    different = ["Ian_Moore2", "Jan_Moore", "Ian Moore", "Ian_Noore", "Iain_Moore"]
    assert "lan_rnoore" not in {text.account_reading(name) for name in different}
    assert text.account_reading("\u65e5\u672c") is None  # no ASCII reading: no username


def test_a_chat_line_is_relayed_as_sent_or_refused_with_the_callers_error() -> None:
    from server import text

    assert text.chat_text("  gg  ", 200) == "  gg  "
    for bad in ("", "   ", "x" * 201, " " * 199 + "gg", 5, None, "\u202egg"):
        with pytest.raises(KeyError):
            text.chat_text(bad, 200, KeyError)
