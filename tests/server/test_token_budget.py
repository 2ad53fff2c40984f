"""A bad token from someone else never locks you out.

The bad-token budget of a client address counts failures only, and only after the token was
checked: a valid token is always accepted, however many bad ones came from the same address,
at once or not. The budget covers every token check (hello, leave, reads), and behind a proxy it
sees the forwarded address of each client (FORWARDED_ALLOW_IPS)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from server.limits import AddressBudget
from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, close_code, create_table, join


async def bad_hello(ws_url: str, table: str, headers: dict[str, str] | None = None) -> str:
    client = await GameClient.connect(ws_url, additional_headers=headers or {})
    await client.send({"t": "hello", "proto": 1, "table": table, "token": "x" * 43,
                       "since": None})
    answer = await client.recv()
    await client.close()
    return str(answer.get("code"))


async def test_concurrent_bad_tokens_never_refuse_a_valid_one(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http)
    token = await join(http, table, 0, "victim")
    codes = await asyncio.gather(*(bad_hello(service.ws_url, table) for _ in range(60)))
    assert set(codes) <= {"bad_token", "rate_limited"} and "rate_limited" in codes
    # Every bad token was checked and charged; at most the budget's worth said bad_token.
    assert codes.count("bad_token") == 10
    victim = await GameClient.connect(service.ws_url)
    assert (await victim.hello(table, token))["t"] == "welcome"


async def test_leave_with_bad_tokens_is_budgeted_and_a_valid_leave_still_works(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=3)
    token = await join(http, table, 0, "ann")
    answers = [await http.post(f"/api/tables/{table}/leave", json={"token": f"guess{i}"})
               for i in range(12)]
    assert [a.status_code for a in answers[:10]] == [403] * 10
    assert {a.json()["error"]["code"] for a in answers[:10]} == {"bad_token"}
    limited = answers[10]
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    ok = await http.post(f"/api/tables/{table}/leave", json={"token": token})
    assert ok.status_code == 200, ok.text


def test_a_burst_of_failures_cannot_overfill_the_budget() -> None:
    now = [0.0]
    budget = AddressBudget(10, clock=lambda: now[0])
    answers = [budget.charge("1.2.3.4") for _ in range(60)]
    assert answers == [True] * 10 + [False] * 50
    assert budget.charge("5.6.7.8")  # another address has its own budget
    now[0] += 6.0  # one failure's worth drains every 6 s
    assert budget.charge("1.2.3.4") and not budget.charge("1.2.3.4")
    now[0] += 60.0
    assert [budget.charge("1.2.3.4") for _ in range(11)] == [True] * 10 + [False]


@pytest.fixture
async def behind_proxy(redis_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, "FORWARDED_ALLOW_IPS": "127.0.0.2"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


async def test_the_budget_sees_the_forwarded_address_of_a_trusted_proxy(
    behind_proxy: ServiceProcess,
) -> None:
    async with httpx.AsyncClient(base_url=behind_proxy.url, timeout=10) as http:
        table = await create_table(http)

    async def from_proxy(client_address: str) -> str:
        client = await GameClient.connect(
            behind_proxy.ws_url, additional_headers={"X-Forwarded-For": client_address},
            local_addr=("127.0.0.2", 0))
        await client.send({"t": "hello", "proto": 1, "table": table, "token": "y" * 43,
                           "since": None})
        code = str((await client.recv()).get("code"))
        await close_code(client)
        return code

    codes = [await from_proxy("198.51.100.7") for _ in range(11)]
    assert codes == ["bad_token"] * 10 + ["rate_limited"]
    # Another client behind the same proxy has a budget of its own.
    assert await from_proxy("198.51.100.8") == "bad_token"
    # A connection straight from an untrusted address cannot choose its address.
    spoofed = [await bad_hello(behind_proxy.ws_url, table, {"X-Forwarded-For": f"203.0.113.{i}"})
               for i in range(11)]
    assert spoofed == ["bad_token"] * 10 + ["rate_limited"]
