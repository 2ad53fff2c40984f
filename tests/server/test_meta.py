"""`GET /api/meta` on the real service: the presets, the create options with their bounds and the
bot levels -- and each of them is what a create request actually accepts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import engine
from engine.bots import BOT_LEVELS
from tests.server.conftest import running
from tests.support.servers import ServiceProcess

UNLIMITED = {"CREATE_RATE": "100000", "MAX_WAITING_TABLES": "100000"}


@pytest.fixture
async def http(redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The service, with no create quota: these tests create a table per option they check."""
    async with running(ServiceProcess(redis_url, env=UNLIMITED)) as process, \
            httpx.AsyncClient(base_url=process.url, timeout=10) as client:
        yield client


async def meta(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.get("/api/meta")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


async def created(http: httpx.AsyncClient, request: dict[str, Any]) -> int:
    return (await http.post("/api/tables", json=request)).status_code


async def test_meta_lists_every_preset_and_every_bot_level(http: httpx.AsyncClient) -> None:
    body = await meta(http)
    assert body["proto"] == 1
    assert [p["name"] for p in body["presets"]] == list(engine.PRESETS)
    assert body["bot_levels"] == list(BOT_LEVELS) and "strong-fast" in body["bot_levels"]
    assert [p["name"] for p in body["presets"] if p["default"]] == [engine.DEFAULT_PRESET]
    for preset in body["presets"]:
        options = engine.PRESETS[preset["name"]]
        assert preset["label"] and preset["family"]
        assert set(preset["targets"]) == {"2", "3", "4"}
        for count, target in preset["targets"].items():
            assert target == engine.rules_from_spec(preset["name"], int(count)).target
        assert preset["rules"]["scoring"] == options["scoring"]
    families = {p["name"]: p["family"] for p in body["presets"]}
    assert families["all-fives"] == families["muggins"] == "fives"
    assert families["block"] == families["draw"] == "block"
    assert families["bergen"] == "bergen"


async def test_every_preset_and_bot_level_it_lists_can_be_created(
    http: httpx.AsyncClient,
) -> None:
    body = await meta(http)
    for preset in body["presets"]:
        assert await created(http, {"rules": preset["name"], "players": 2}) == 201
    for level in body["create"]["bots"]["levels"]:
        assert await created(http, {"players": 2, "bots": {"1": level}}) == 201


async def test_the_bounds_it_gives_are_the_bounds_a_create_request_has(
    http: httpx.AsyncClient,
) -> None:
    create = (await meta(http))["create"]
    assert set(create["fields"]) == {"rules", "players", "bots", "clock", "on_timeout", "private",
                                     "name", "spectator_chat", "rated", "hints"}
    players = create["players"]
    assert (players["min"], players["max"], players["default"]) == (2, 4, 2)
    for n in (players["min"], players["max"]):
        assert await created(http, {"players": n}) == 201
    for n in (players["min"] - 1, players["max"] + 1):
        assert await created(http, {"players": n}) == 400

    target = create["rules"]["target"]
    assert create["rules"]["default"] == engine.DEFAULT_PRESET
    for value, status in ((target["min"], 201), (target["max"], 201), (target["min"] - 1, 400),
                          (target["max"] + 1, 400)):
        request = {"rules": {"preset": "all-fives", "target": value}}
        assert await created(http, request) == status, value

    clock = create["clock"]
    assert clock["kinds"] == [None, "realtime", "turn"] and clock["default"] is None
    for kind in ("realtime", "turn"):
        fields = clock[kind]
        defaults = {name: bound["default"] for name, bound in fields.items()}
        assert await created(http, {"clock": {"kind": kind, **defaults}}) == 201
        for name, bound in fields.items():
            for value, status in ((bound["min"], 201), (bound["max"], 201),
                                  (bound["min"] - 1, 400), (bound["max"] + 1, 400)):
                others = {n: (value if n == name else d) for n, d in defaults.items()}
                if kind == "turn" and name == "move_h":  # max_h must be at least move_h
                    others["max_h"] = clock["turn"]["max_h"]["max"]
                if kind == "turn" and name == "max_h":
                    others["move_h"] = clock["turn"]["move_h"]["min"]
                got = await created(http, {"clock": {"kind": kind, **others}})
                assert got == status, (kind, name, value)

    assert create["on_timeout"] == {"choices": ["bot", "forfeit"], "default": "bot"}
    for choice in create["on_timeout"]["choices"]:
        assert await created(http, {"on_timeout": choice}) == 201
    assert create["private"] == {"default": False}
    assert create["spectator_chat"] == {"choices": [True, False, None], "default": None}
    for choice in create["spectator_chat"]["choices"]:
        assert await created(http, {"spectator_chat": choice}) == 201
    longest = create["name"]["max_length"]
    assert await created(http, {"name": "n" * longest}) == 201
    assert await created(http, {"name": "n" * (longest + 1)}) == 400
    assert create["player_name"]["max_length"] == 32
