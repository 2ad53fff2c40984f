"""Private means private everywhere: without the invite a private table answers exactly like a
table that does not exist -- its summary, join, websocket hello (and so its chat), transcript and
replay. The players of the table need no invite: their seat token is enough."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.servers import GameClient, ServiceProcess, close_code, join, play_to_end

SECRET = "our meeting code is 4711"


async def private_table(http: httpx.AsyncClient, **body: Any) -> tuple[str, str]:
    body.setdefault("players", 2)
    response = await http.post("/api/tables", json={"private": True, **body})
    assert response.status_code == 201, response.text
    created = response.json()
    return str(created["id"]), str(created["invite"])


async def join_private(http: httpx.AsyncClient, table: str, seat: int, invite: str) -> str:
    response = await http.post(f"/api/tables/{table}/join",
                               json={"seat": seat, "name": f"p{seat}", "invite": invite})
    assert response.status_code == 200, response.text
    return str(response.json()["token"])


def as_unknown(response: httpx.Response, table: str, unknown: httpx.Response) -> None:
    """`response` is word for word what an id that never existed got (but for the id)."""
    assert response.status_code == 404
    assert response.json() == {
        "error": {**unknown.json()["error"],
                  "message": unknown.json()["error"]["message"].replace("nosuchtable", table)}}


async def test_a_private_table_answers_like_an_unknown_one_without_its_invite(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table, invite = await private_table(http)
    unknown = await http.get("/api/tables/nosuchtable")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_table"
    for params in ({}, {"invite": "wrong"}):
        as_unknown(await http.get(f"/api/tables/{table}", params=params), table, unknown)
        as_unknown(await http.get(f"/api/tables/{table}/transcript", params=params), table,
                   await http.get("/api/tables/nosuchtable/transcript"))
        as_unknown(await http.get(f"/api/tables/{table}/replay", params=params), table,
                   await http.get("/api/tables/nosuchtable/replay"))
        response = await http.post(f"/api/tables/{table}/join",
                                   json={"seat": 0, "name": "eve", **params})
        as_unknown(response, table, await http.post("/api/tables/nosuchtable/join",
                                                    json={"seat": 0, "name": "eve"}))
    assert (await http.get(f"/api/tables/{table}", params={"invite": invite})).status_code == 200


async def test_spectating_a_private_table_needs_the_invite_and_its_chat_stays_inside(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table, invite = await private_table(http)
    token = await join_private(http, table, 0, invite)
    player = await GameClient.connect(service.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"  # no invite needed
    await player.send({"t": "chat", "text": SECRET})
    await player.recv_until("chat", text=SECRET)

    for wrong in (None, "wrong"):
        snoop = await GameClient.connect(service.ws_url)
        await snoop.send({"t": "hello", "proto": 1, "table": table, "token": None,
                          "since": None, "invite": wrong})
        answer = await snoop.recv()
        assert answer == {"t": "error", "code": "unknown_table",
                          "message": f"no table {table!r}"}
        assert await close_code(snoop) == 4001
        assert not any(SECRET.encode() in raw for raw in snoop.raw)

    # Word for word what an unknown id gets.
    probe = await GameClient.connect(service.ws_url)
    await probe.send({"t": "hello", "proto": 1, "table": "nosuchtable", "token": None,
                      "since": None})
    unknown = await probe.recv()
    assert unknown["code"] == "unknown_table"
    assert unknown["message"].replace("nosuchtable", table) == answer["message"]

    guest = await GameClient.connect(service.ws_url)
    await guest.send({"t": "hello", "proto": 1, "table": table, "token": None, "since": None,
                      "invite": invite})
    assert (await guest.recv())["t"] == "welcome"
    await guest.recv_until("chat", text=SECRET)


async def test_a_finished_private_game_is_readable_only_with_the_invite_or_a_seat_token(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table, invite = await private_table(
        http, bots={"1": "greedy"}, rules={"preset": "all-fives", "target": 5})
    token = await join_private(http, table, 0, invite)
    player = await GameClient.connect(service.ws_url)
    assert (await player.hello(table, token))["t"] == "welcome"
    await play_to_end({0: player}, [])
    for path in ("transcript", "replay"):
        bare = await http.get(f"/api/tables/{table}/{path}")
        assert (bare.status_code, bare.json()["error"]["code"]) == (404, "unknown_table")
        invited = await http.get(f"/api/tables/{table}/{path}", params={"invite": invite})
        assert invited.status_code == 200, invited.text
        seated = await http.get(f"/api/tables/{table}/{path}",
                                headers={"Authorization": f"Bearer {token}"})
        assert seated.status_code == 200, seated.text
        assert seated.json() == invited.json()
        wrong = await http.get(f"/api/tables/{table}/{path}",
                               headers={"Authorization": "Bearer not-a-token"})
        assert wrong.status_code == 404


async def test_the_lobby_never_lists_a_private_table(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table, _ = await private_table(http)
    listed = (await http.get("/api/tables")).json()["tables"]
    assert table not in [t["id"] for t in listed]


async def test_a_public_table_needs_no_invite(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    response = await http.post("/api/tables", json={"players": 2})
    table = response.json()["id"]
    assert response.json()["invite"] is None
    await join(http, table, 0, "ann")
    watcher = await GameClient.connect(service.ws_url)
    assert (await watcher.hello(table))["t"] == "welcome"
    assert (await http.get(f"/api/tables/{table}")).status_code == 200
