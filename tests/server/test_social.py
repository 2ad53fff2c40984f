"""Friends, blocks, private messages and invitations (server/social.py, docs/players.md
"Friends, messages and invitations") and the player socket /ws/me (server/inbox.py,
docs/protocol.md §11), on the real service: real PostgreSQL and Redis, and two server
processes where a notice or a presence crosses from one to the other."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import msgpack
import pytest
import redis.asyncio
import websockets

from server.inbox import INBOX_CLIENT_NAME
from tests.server.conftest import FAST, running
from tests.server.test_notices import kill_pubsub
from tests.support.servers import GameClient, ServiceProcess, close_code
from tests.support.web import account, browser, code, eventually

MESSAGE_RATE, INVITE_RATE, FOLLOW_RATE = 10, 10, 12
ENV = {**FAST, "MESSAGE_RATE": str(MESSAGE_RATE), "INVITE_RATE": str(INVITE_RATE),
       "FOLLOW_RATE": str(FOLLOW_RATE)}


@pytest.fixture
async def svc(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env={**ENV, "DATABASE_URL": database_url})) \
            as process:
        yield process


@pytest.fixture
async def pair(redis_url: str, database_url: str
               ) -> AsyncIterator[tuple[ServiceProcess, ServiceProcess]]:
    """Two server processes on one Redis and one PostgreSQL."""
    env = {**ENV, "DATABASE_URL": database_url}
    async with running(ServiceProcess(redis_url, env=env)) as first, \
            running(ServiceProcess(redis_url, env=env)) as second:
        yield first, second


@contextlib.asynccontextmanager
async def logged_in(service: ServiceProcess, name: str) -> AsyncIterator[httpx.AsyncClient]:
    """The same account logged in on ``service`` (another process, another session)."""
    async with browser(service) as web:
        made = await web.post("/api/session", json={"username": name,
                                                    "password": "long enough"})
        assert made.status_code == 200, made.text
        yield web


async def put(web: httpx.AsyncClient, path: str) -> httpx.Response:
    """A change without a body, as a page sends it (JSON content type, its Origin)."""
    return await web.put(path, headers={"Content-Type": "application/json"})


async def delete(web: httpx.AsyncClient, path: str) -> httpx.Response:
    return await web.delete(path, headers={"Content-Type": "application/json"})


async def befriend(a: httpx.AsyncClient, a_name: str, b: httpx.AsyncClient,
                   b_name: str) -> None:
    assert (await put(a, f"/api/me/follows/{b_name}")).status_code == 204
    assert (await put(b, f"/api/me/follows/{a_name}")).status_code == 204


async def follows(web: httpx.AsyncClient) -> dict[str, Any]:
    answer = await web.get("/api/me/follows")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def me_socket(service: ServiceProcess, web: httpx.AsyncClient | None,
                    **headers: str) -> GameClient:
    """A /ws/me socket with ``web``'s session cookie (none: no cookie)."""
    sent = {"Origin": service.url, **headers}
    if web is not None:
        sent["Cookie"] = f"session={web.cookies['session']}"
    return await GameClient.connect(service.ws_url + "/me", additional_headers=sent)


async def hello_me(service: ServiceProcess, web: httpx.AsyncClient) -> tuple[GameClient,
                                                                            dict[str, Any]]:
    sock = await me_socket(service, web)
    first = await sock.recv()
    assert first["t"] == "hello_me", first
    return sock, first


async def nothing_more(sock: GameClient, wait_s: float = 0.5) -> None:
    """No frame arrives within ``wait_s`` (a ping is answered: the socket is alive)."""
    await sock.send({"t": "ping", "n": 7})
    assert await sock.recv(wait_s + 5) == {"t": "pong", "n": 7}
    with pytest.raises(TimeoutError):
        await sock.recv(wait_s)


async def send(web: httpx.AsyncClient, name: str, text: Any) -> httpx.Response:
    return await web.post(f"/api/messages/{name}", json={"text": text})


async def sit(web: httpx.AsyncClient, **body: Any) -> tuple[str, str | None]:
    """Create a table and take seat 0 of it: (its id, its invite code or None)."""
    made = await web.post("/api/tables", json={"players": 2, "name": "Friday fives", **body})
    assert made.status_code == 201, made.text
    table, invite = made.json()["id"], made.json()["invite"]
    joined = await web.post(f"/api/tables/{table}/join",
                            json={"seat": 0, "name": "me", "invite": invite})
    assert joined.status_code == 200, joined.text
    return str(table), invite


async def invite(web: httpx.AsyncClient, table: str, name: str,
                 code_: str | None = None) -> httpx.Response:
    return await web.post(f"/api/tables/{table}/invite", json={"name": name, "invite": code_})


# ---- follows and friends ---------------------------------------------------------------------

async def test_follows_make_friends_and_unfollowing_ends_it(svc: ServiceProcess,
                                                           db: asyncpg.Connection) -> None:
    async with account(svc, "ann") as ann, account(svc, "Bob") as bob, \
            account(svc, "cat") as cat:
        assert (await put(ann, "/api/me/follows/BOB")).status_code == 204  # any case
        assert (await put(ann, "/api/me/follows/bob")).status_code == 204  # once is once
        assert await db.fetchval("SELECT count(*) FROM follows") == 1
        assert await follows(ann) == {"following": ["Bob"], "followers": [], "friends": []}
        assert await follows(bob) == {"following": [], "followers": ["ann"], "friends": []}
        assert (await put(bob, "/api/me/follows/ann")).status_code == 204
        assert (await put(cat, "/api/me/follows/ann")).status_code == 204
        assert await follows(ann) == {
            "following": ["Bob"], "followers": ["Bob", "cat"],
            "friends": [{"name": "Bob", "online": False, "table": None}]}
        assert (await follows(bob))["friends"] == [{"name": "ann", "online": False,
                                                    "table": None}]
        assert (await delete(bob, "/api/me/follows/ann")).status_code == 204
        assert (await delete(bob, "/api/me/follows/ann")).status_code == 204  # idempotent
        assert (await follows(ann))["friends"] == []
        assert (await follows(bob))["following"] == []


async def test_refused_follows_change_nothing(svc: ServiceProcess, db: asyncpg.Connection) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob"):
        for name in ("nobody", "x", "has space", "a" * 30):
            answer = await put(ann, f"/api/me/follows/{name}")
            assert answer.status_code == 404 and code(answer) == "unknown_player", name
        answer = await put(ann, "/api/me/follows/ann")
        assert answer.status_code == 400 and code(answer) == "bad_request"
        plain = await ann.put("/api/me/follows/bob")  # no JSON content type: a form could
        assert plain.status_code == 415 and code(plain) == "unsupported_media_type"
        async with httpx.AsyncClient(base_url=svc.url, cookies=ann.cookies) as no_origin:
            answer = await put(no_origin, "/api/me/follows/bob")
            assert answer.status_code == 403 and code(answer) == "bad_origin"
        async with browser(svc) as guest:
            for method, path in (("GET", "/api/me/follows"), ("GET", "/api/me/blocks"),
                                 ("GET", "/api/messages"), ("GET", "/api/messages/bob"),
                                 ("PUT", "/api/me/follows/bob"), ("PUT", "/api/me/blocks/bob"),
                                 ("POST", "/api/messages/bob/read")):
                answer = await guest.request(method, path,
                                             headers={"Content-Type": "application/json"})
                assert answer.status_code == 401 and code(answer) == "not_logged_in", path
            guest.cookies.set("session", "not-a-session")
            answer = await guest.get("/api/me/follows")
            assert answer.status_code == 401 and code(answer) == "session_expired"
        assert await db.fetchval("SELECT count(*) FROM follows") == 0


async def test_follows_are_rate_limited(svc: ServiceProcess, db: asyncpg.Connection) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob"):
        for i in range(FOLLOW_RATE):
            path = "/api/me/follows/bob"
            answer = await (put(ann, path) if i % 2 == 0 else delete(ann, path))
            assert answer.status_code == 204, (i, answer.text)
        assert await db.fetchval("SELECT count(*) FROM follows") == 0
        limited = await put(ann, "/api/me/follows/bob")
        assert limited.status_code == 429 and code(limited) == "rate_limited"
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert await db.fetchval("SELECT count(*) FROM follows") == 0  # nothing changed


# ---- presence over two processes -------------------------------------------------------------

async def test_a_friends_presence_and_public_table_cross_processes(
    pair: tuple[ServiceProcess, ServiceProcess]
) -> None:
    a, b = pair
    async with account(a, "ann") as ann, account(a, "bob") as bob_a, \
            account(a, "cat") as cat, logged_in(b, "bob") as bob_b:
        await befriend(ann, "ann", bob_a, "bob")
        await befriend(ann, "ann", cat, "cat")
        friends = {f["name"]: f for f in (await follows(ann))["friends"]}
        assert friends["bob"] == {"name": "bob", "online": False, "table": None}
        sock, hello = await hello_me(b, bob_b)  # bob's page is open on the other process
        assert hello == {"t": "hello_me", "name": "bob", "unread": 0}
        friends = {f["name"]: f for f in (await follows(ann))["friends"]}
        assert friends["bob"]["online"] is True and friends["cat"]["online"] is False
        # bob sits at a table he leaves, then at another; cat only at a private one
        left = (await bob_b.post("/api/tables", json={"players": 2})).json()["id"]
        joined = await bob_b.post(f"/api/tables/{left}/join", json={"seat": 0})
        assert (await bob_b.post(f"/api/tables/{left}/leave",
                                 json={"token": joined.json()["token"]})).status_code == 200
        assert {f["name"]: f for f in (await follows(ann))["friends"]}["bob"]["table"] is None
        public, _ = await sit(bob_b)
        await sit(cat, private=True)
        friends = {f["name"]: f for f in (await follows(ann))["friends"]}
        assert friends["bob"]["table"] == public
        assert friends["cat"] == {"name": "cat", "online": False, "table": None}
        # a second page of bob's, then both closed: offline at once
        other, _ = await hello_me(a, bob_a)
        await sock.close()

        async def still_online() -> bool:
            return bool({f["name"]: f for f in (await follows(ann))["friends"]}["bob"]["online"])

        await asyncio.sleep(0.3)
        assert await still_online()  # the page on process a is still open
        await other.close()

        async def offline() -> bool:
            return not await still_online()

        await eventually(offline, 5.0, "bob offline")


# ---- messages --------------------------------------------------------------------------------

async def test_a_message_sent_through_one_process_reaches_the_page_on_the_other(
    pair: tuple[ServiceProcess, ServiceProcess], db: asyncpg.Connection
) -> None:
    a, b = pair
    async with account(a, "ann") as ann, account(a, "bob") as bob_a, \
            logged_in(b, "bob") as bob_b:
        on_b, _ = await hello_me(b, bob_b)
        on_a, _ = await hello_me(a, bob_a)
        ann_page, _ = await hello_me(b, ann)
        sent = await send(ann, "bob", "  hello there 👋 ")
        assert sent.status_code == 201, sent.text
        body = sent.json()
        assert set(body) == {"id", "sent"}
        expected = {"t": "message", "id": body["id"], "from": "ann", "text": "  hello there 👋 ",
                    "sent": body["sent"], "unread": 1}
        assert await on_b.recv() == expected
        assert await on_a.recv() == expected  # every open page of bob's
        await nothing_more(ann_page)  # not the sender's
        assert (await send(ann, "BOB", "again")).status_code == 201
        assert (await on_b.recv())["unread"] == 2
        assert (await on_a.recv())["text"] == "again"
        assert await db.fetchval("SELECT count(*) FROM messages") == 2
        # a page opened now says how many are unread
        _, hello = await hello_me(a, bob_a)
        assert hello["unread"] == 2
        # reading them tells bob's pages the new count
        read = await bob_b.post("/api/messages/ann/read",
                                headers={"Content-Type": "application/json"})
        assert read.status_code == 204
        assert await on_a.recv() == {"t": "read", "name": "ann", "unread": 0}


async def test_conversations_pages_and_unread_counts(svc: ServiceProcess) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob, \
            account(svc, "cat") as cat:
        ids = []
        for i in range(5):
            answer = await send(ann, "bob", f"ann {i}")
            assert answer.status_code == 201
            ids.append(answer.json()["id"])
        for i in range(2):
            ids.append((await send(bob, "ann", f"bob {i}")).json()["id"])
        assert ids == sorted(ids)
        assert (await send(cat, "bob", "cat 0")).status_code == 201
        listed = (await bob.get("/api/messages")).json()["conversations"]
        assert [c["name"] for c in listed] == ["cat", "ann"]  # newest first
        assert listed[0]["unread"] == 1 and listed[1]["unread"] == 5
        assert listed[1]["last"]["from"] == "bob" and listed[1]["last"]["text"] == "bob 1"
        assert set(listed[1]["last"]) == {"id", "from", "text", "sent"}
        ann_list = (await ann.get("/api/messages")).json()["conversations"]
        assert [(c["name"], c["unread"]) for c in ann_list] == [("bob", 2)]
        # pages, newest first
        first = (await bob.get("/api/messages/ann", params={"limit": 3})).json()
        assert [m["text"] for m in first["messages"]] == ["bob 1", "bob 0", "ann 4"]
        assert first["next"] == first["messages"][-1]["id"]
        rest = (await bob.get("/api/messages/Ann", params={"before": first["next"]})).json()
        assert [m["text"] for m in rest["messages"]] == ["ann 3", "ann 2", "ann 1", "ann 0"]
        assert rest["next"] is None
        assert {m["from"] for m in rest["messages"]} == {"ann"}
        whole = (await ann.get("/api/messages/bob")).json()
        assert [m["id"] for m in whole["messages"]] == ids[::-1] and whole["next"] is None
        for params in ({"limit": "0"}, {"limit": "51"}, {"limit": "x"}, {"before": "-1"},
                       {"before": "abc"}, {"before": "9" * 30}):
            answer = await bob.get("/api/messages/ann", params=params)
            assert answer.status_code == 400 and code(answer) == "bad_request", params
        assert code(await bob.get("/api/messages/nobody")) == "unknown_player"
        # reading marks theirs only
        read = await bob.post("/api/messages/ann/read",
                              headers={"Content-Type": "application/json"})
        assert read.status_code == 204
        listed = (await bob.get("/api/messages")).json()["conversations"]
        assert [(c["name"], c["unread"]) for c in listed] == [("cat", 1), ("ann", 0)]
        ann_list = (await ann.get("/api/messages")).json()["conversations"]
        assert [(c["name"], c["unread"]) for c in ann_list] == [("bob", 2)]


BAD_TEXTS = ["", "   ", "\x00bad", "tab\there", "line\nbreak", "\u202eevil", "x" * 201,
             "\u0301starts with a mark", "\u200b\u200b"]


async def test_bad_or_malformed_messages_are_refused_and_nothing_is_sent(
    svc: ServiceProcess, db: asyncpg.Connection
) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        sock, _ = await hello_me(svc, bob)
        for text in BAD_TEXTS:  # the chat rules (docs/protocol.md "Text rules")
            answer = await send(ann, "bob", text)
            assert answer.status_code == 400 and code(answer) == "bad_text", (text, answer.text)
        for body in ({"text": 5}, {"text": None}, {}, {"text": ["hi"]}):
            answer = await ann.post("/api/messages/bob", json=body)
            assert answer.status_code == 400 and code(answer) == "bad_request", body
        answer = await ann.post("/api/messages/bob", content=b"{not json",
                                headers={"Content-Type": "application/json"})
        assert answer.status_code == 400 and code(answer) == "bad_request"
        answer = await ann.post("/api/messages/bob", json={"text": "x" * 5000})
        assert answer.status_code == 413 and code(answer) == "too_large"
        answer = await ann.post("/api/messages/bob", content=b'{"text": "hi"}',
                                headers={"Content-Type": "text/plain"})
        assert answer.status_code == 415
        assert code(await send(ann, "nobody", "hi")) == "unknown_player"
        assert code(await send(ann, "ann", "hi")) == "bad_request"  # not to yourself
        assert await db.fetchval("SELECT count(*) FROM messages") == 0
        await nothing_more(sock)
        assert (await send(ann, "bob", "x" * 200)).status_code == 201  # the longest line
        assert await db.fetchval("SELECT count(*) FROM messages") == 1


async def test_messages_are_rate_limited_per_sender(svc: ServiceProcess,
                                                    db: asyncpg.Connection) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob, \
            account(svc, "cat") as cat:
        for i in range(MESSAGE_RATE):
            assert (await send(ann, "bob" if i % 2 else "cat", f"m{i}")).status_code == 201
        limited = await send(ann, "bob", "one too many")
        assert limited.status_code == 429 and code(limited) == "rate_limited"
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert await db.fetchval("SELECT count(*) FROM messages") == MESSAGE_RATE
        assert (await send(bob, "ann", "others still may")).status_code == 201
        assert (await send(cat, "ann", "others still may")).status_code == 201


# ---- blocks ----------------------------------------------------------------------------------

async def test_a_block_hides_presence_and_refuses_everything_without_a_leak(
    pair: tuple[ServiceProcess, ServiceProcess], db: asyncpg.Connection
) -> None:
    a, b = pair
    async with account(a, "ann") as ann, account(b, "bob") as bob:
        await befriend(ann, "ann", bob, "bob")
        ann_page, _ = await hello_me(b, ann)
        assert (await follows(bob))["friends"] == [{"name": "ann", "online": True,
                                                    "table": None}]
        table, _ = await sit(bob)
        blocked = await put(ann, "/api/me/blocks/Bob")
        assert blocked.status_code == 204
        assert (await put(ann, "/api/me/blocks/bob")).status_code == 204  # once is once
        assert (await ann.get("/api/me/blocks")).json() == {"blocked": ["bob"]}
        # the follows are gone both ways: no friends, no presence, no table
        assert await follows(ann) == {"following": [], "followers": [], "friends": []}
        assert await follows(bob) == {"following": [], "followers": [], "friends": []}
        # to bob, ann is a name that does not exist: the same answer, word for word
        for attempt in (lambda who: put(bob, f"/api/me/follows/{who}"),
                        lambda who: send(bob, who, "hi")):
            refused, unknown = await attempt("ann"), await attempt("nobody")
            assert refused.status_code == unknown.status_code == 404
            assert refused.json() == {"error": {
                "code": "unknown_player",
                "message": unknown.json()["error"]["message"].replace("nobody", "ann")}}
        await only_the_block_is_stored(db)
        # ann knows she blocked bob
        mine = await send(ann, "bob", "hi")
        assert mine.status_code == 403 and code(mine) == "not_allowed"
        assert code(await put(ann, "/api/me/follows/bob")) == "not_allowed"
        assert await db.fetchval("SELECT count(*) FROM messages") == 0
        await nothing_more(ann_page)
        # bob's invitation is refused like one to an unknown player
        refused, unknown = await invite(bob, table, "ann"), await invite(bob, table, "nobody")
        assert refused.status_code == unknown.status_code == 404
        assert code(refused) == code(unknown) == "unknown_player"
        await nothing_more(ann_page)
        # unblocking lets messages through again; the follows stay ended
        assert (await delete(ann, "/api/me/blocks/bob")).status_code == 204
        assert (await ann.get("/api/me/blocks")).json() == {"blocked": []}
        assert (await send(bob, "ann", "sorry")).status_code == 201
        assert (await ann_page.recv())["text"] == "sorry"
        assert (await follows(ann))["friends"] == []


async def only_the_block_is_stored(db: asyncpg.Connection) -> None:
    assert await db.fetchval("SELECT count(*) FROM follows") == 0
    assert await db.fetchval("SELECT count(*) FROM blocks") == 1


async def test_the_blocker_does_not_see_their_conversation_or_count_its_unread(
    svc: ServiceProcess
) -> None:
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        assert (await send(bob, "ann", "before the block")).status_code == 201
        assert (await put(ann, "/api/me/blocks/bob")).status_code == 204
        assert (await ann.get("/api/messages")).json() == {"conversations": []}
        _, hello = await hello_me(svc, ann)
        assert hello["unread"] == 0
        # bob still reads what he sent: nothing tells him of the block
        history = (await bob.get("/api/messages/ann")).json()["messages"]
        assert [m["text"] for m in history] == ["before the block"]
        assert code(await put(ann, "/api/me/blocks/ann")) == "bad_request"
        assert code(await put(ann, "/api/me/blocks/nobody")) == "unknown_player"


# ---- invitations -----------------------------------------------------------------------------

async def test_invitations_reach_friends_with_the_code_only_when_right(
    pair: tuple[ServiceProcess, ServiceProcess]
) -> None:
    a, b = pair
    async with account(a, "ann") as ann, account(b, "bob") as bob, account(a, "cat") as cat:
        await befriend(ann, "ann", bob, "bob")
        assert (await put(cat, "/api/me/follows/ann")).status_code == 204  # one way only
        bob_page, _ = await hello_me(b, bob)
        public, _ = await sit(ann)
        # not seated there, or no such table
        answer = await invite(cat, public, "ann")
        assert answer.status_code == 403 and code(answer) == "not_allowed"
        answer = await invite(ann, "zzzz9999", "bob")
        assert answer.status_code == 404 and code(answer) == "unknown_table"
        # a public table: no code, whatever was sent
        assert (await invite(ann, public, "bob", "made-up")).status_code == 204
        assert await bob_page.recv() == {"t": "invite", "from": "ann", "table": public,
                                         "name": "Friday fives", "invite": None}
        # a private table: only with its code
        private, secret = await sit(ann, private=True)
        assert secret
        for wrong in (None, "wrong", secret + "x"):
            answer = await invite(ann, private, "bob", wrong)
            assert answer.status_code == 404 and code(answer) == "unknown_table", wrong
        await nothing_more(bob_page)
        assert (await invite(ann, private, "bob", secret)).status_code == 204
        assert await bob_page.recv() == {"t": "invite", "from": "ann", "table": private,
                                         "name": "Friday fives", "invite": secret}
        # a private table's outsider cannot tell it exists
        answer = await invite(cat, private, "ann", secret)
        assert answer.status_code == 404 and code(answer) == "unknown_table"
        # friends only
        answer = await invite(ann, public, "cat")
        assert answer.status_code == 403 and code(answer) == "not_allowed"
        answer = await invite(ann, public, "nobody")
        assert answer.status_code == 404 and code(answer) == "unknown_player"
        for body in ({"name": 3}, {"invite": "x"}, {"name": "bob", "invite": 5}):
            answer = await ann.post(f"/api/tables/{public}/invite", json=body)
            assert answer.status_code == 400 and code(answer) == "bad_request", body
        # rate limited: the invitations counted so far, then the rest up to the limit
        counted = 1 + 2 + 3 + 2  # no such table, the two sent, three wrong codes, cat, nobody
        for _ in range(INVITE_RATE - counted):
            assert (await invite(ann, public, "bob")).status_code == 204
            assert (await bob_page.recv())["t"] == "invite"
        limited = await invite(ann, public, "bob")
        assert limited.status_code == 429 and code(limited) == "rate_limited"
        assert "Retry-After" in limited.headers
        await nothing_more(bob_page)


# ---- the socket ------------------------------------------------------------------------------

async def test_the_player_socket_refuses_visitors_and_bad_frames(svc: ServiceProcess) -> None:
    nobody = await me_socket(svc, None)
    assert (await nobody.recv())["code"] == "not_logged_in"
    assert await close_code(nobody) == 4008
    async with account(svc, "ann") as ann:
        stale = await me_socket(svc, None, Cookie="session=made-up")
        assert (await stale.recv())["code"] == "session_expired"
        assert await close_code(stale) == 4008
        elsewhere = await me_socket(svc, ann, Origin="https://evil.example")
        assert await close_code(elsewhere) == 1008
        sock, hello = await hello_me(svc, ann)
        assert hello == {"t": "hello_me", "name": "ann", "unread": 0}
        await sock.send({"t": "ping"})
        assert await sock.recv() == {"t": "pong", "n": None}
        await sock.send_raw("text")
        assert (await sock.recv())["code"] == "bad_message"
        await sock.send_raw(b"\xc1garbage")
        assert (await sock.recv())["code"] == "bad_message"
        await sock.send({"t": "message", "to": "bob", "text": "sneaky"})
        assert (await sock.recv())["code"] == "bad_message"
        await sock.send({"t": "ping", "n": 3})
        assert await sock.recv() == {"t": "pong", "n": 3}
        await sock.send_raw(msgpack.packb({"t": "ping", "pad": "x" * 5000}))
        assert await close_code(sock) == 1009


async def test_a_flood_on_the_player_socket_is_cut_off(redis_url: str,
                                                       database_url: str) -> None:
    env = {"RATE": "5/5", "DATABASE_URL": database_url}
    async with running(ServiceProcess(redis_url, env=env)) as strict, \
            account(strict, "ann") as ann:
        sock, _ = await hello_me(strict, ann)
        for _ in range(30):
            with contextlib.suppress(websockets.ConnectionClosed):
                await sock.send({"t": "ping"})
        assert await close_code(sock) == 4004
        assert any(m.get("code") == "rate_limited" for m in sock.messages)


async def test_shutdown_closes_the_player_sockets_and_presence_goes(
    pair: tuple[ServiceProcess, ServiceProcess]
) -> None:
    a, b = pair
    async with account(a, "ann") as ann, account(a, "bob") as bob, \
            logged_in(b, "bob") as bob_b:
        await befriend(ann, "ann", bob, "bob")
        sock, _ = await hello_me(b, bob_b)
        assert (await follows(ann))["friends"][0]["online"] is True
        await asyncio.to_thread(b.stop)
        assert await close_code(sock) in (1001, 1012)  # going away / service restart
        assert (await follows(ann))["friends"][0]["online"] is False


ENDED_WITHIN_S = 3.0  # an ended session's sockets close at once (the sweep runs every 20 s)


async def test_a_player_socket_closes_as_soon_as_its_session_ends_on_any_process(
        pair: tuple[ServiceProcess, ServiceProcess]) -> None:
    one, two = pair
    async with account(one, "ann") as a, logged_in(two, "ann") as b, \
            logged_in(one, "ann") as c, account(two, "bob") as bob:
        a_one, _ = await hello_me(one, a)
        a_two, _ = await hello_me(two, a)
        b_two, _ = await hello_me(two, b)
        c_one, _ = await hello_me(one, c)
        bob_one, _ = await hello_me(one, bob)
        # A log out ends that session only, wherever its sockets are.
        assert (await b.request("DELETE", "/api/session", json={})).status_code == 204
        assert await close_code(b_two, wait_s=ENDED_WITHIN_S) == 4008
        # A new password ends every other session, not the one that set it.
        changed = await a.post("/api/me/password", json={"password": "long enough",
                                                         "new_password": "longer still"})
        assert changed.status_code == 204, changed.text
        assert await close_code(c_one, wait_s=ENDED_WITHIN_S) == 4008
        for sock in (a_one, a_two):
            await nothing_more(sock)
        # Logging out everywhere ends the rest.
        assert (await a.request("DELETE", "/api/sessions", json={})).status_code == 204
        for sock in (a_one, a_two):
            assert await close_code(sock, wait_s=ENDED_WITHIN_S) == 4008
        # So does deleting the account; another player's socket stays open throughout.
        bob_two, _ = await hello_me(two, bob)
        await nothing_more(bob_one)
        gone = await bob.request("DELETE", "/api/me", json={"password": "long enough"})
        assert gone.status_code == 204, gone.text
        for sock in (bob_one, bob_two):
            assert await close_code(sock, wait_s=ENDED_WITHIN_S) == 4008


async def test_the_player_socket_hears_messages_again_once_its_pub_sub_is_renewed(
        svc: ServiceProcess, redis_client: redis.asyncio.Redis) -> None:
    """The process's inbox pub/sub connection (named for its process) is killed in Redis: its
    reader renews it and subscribes the player's channel again, so later messages arrive."""
    async with account(svc, "ann") as ann, account(svc, "bob") as bob:
        page, _ = await hello_me(svc, bob)
        assert await kill_pubsub(redis_client, svc.pid, INBOX_CLIENT_NAME) == 1

        async def heard() -> bool:
            assert (await send(ann, "bob", "are you there")).status_code == 201
            try:
                return (await page.recv(1.0)).get("text") == "are you there"
            except TimeoutError:
                return False

        await eventually(heard, 10)


async def test_page_numbers_of_digits_int_refuses_are_bad_requests(svc: ServiceProcess) -> None:
    """`str.isdigit` takes "²" (U+00B2) and other digits `int()` refuses: as a page's `limit`
    or `before` they are `400 bad_request` like any malformed number, not a 500."""
    async with account(svc, "ann") as ann, account(svc, "bob"):
        for path, params in (("/api/players/ann/games", {"limit": "\u00b2"}),
                             ("/api/messages/bob", {"limit": "\u00b2"}),
                             ("/api/messages/bob", {"before": "\u00b2"}),
                             ("/api/messages/bob", {"before": "1\u0663"})):  # Arabic-Indic 3
            got = await ann.get(path, params=params)
            assert (got.status_code, code(got)) == (400, "bad_request"), (path, params)
    assert "Traceback" not in svc.log()


@pytest.fixture
async def small_inbox(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**ENV, "DATABASE_URL": database_url, "MESSAGE_RATE": "100", "MAX_UNANSWERED": "3",
           "MESSAGES_KEPT": "5", "MAX_BLOCKS": "2"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


async def test_a_stranger_cannot_pile_up_messages_without_an_answer(
    small_inbox: ServiceProcess,
) -> None:
    """Anyone may write to anyone, so one sender may send one recipient at most MAX_UNANSWERED
    (3 here) messages without an answer; once the recipient writes back, it goes on. Reading
    them changes nothing (the sender would learn from the refusal whether they were read)."""
    async with account(small_inbox, "ann") as ann, account(small_inbox, "spam") as spam:
        sent = [await spam.post("/api/messages/ann", json={"text": f"buy {n}"}) for n in range(4)]
        assert [r.status_code for r in sent] == [201, 201, 201, 429]
        assert code(sent[3]) == "too_many_unanswered"
        assert (await ann.post("/api/messages/spam/read", json={})).status_code == 204
        again = await spam.post("/api/messages/ann", json={"text": "again"})
        assert (again.status_code, code(again)) == (429, "too_many_unanswered")
        assert (await ann.post("/api/messages/spam", json={"text": "stop"})).status_code == 201
        assert (await spam.post("/api/messages/ann", json={"text": "ok"})).status_code == 201


async def test_a_conversation_keeps_its_newest_messages(small_inbox: ServiceProcess) -> None:
    """A conversation keeps its newest MESSAGES_KEPT (5 here) messages, both ways together:
    storage grows with the number of conversations, not with how long one goes on."""
    async with account(small_inbox, "ann") as ann, account(small_inbox, "bob") as bob:
        for n in range(8):
            writer, reader, to, by = (ann, bob, "bob", "ann") if n % 2 else (bob, ann, "ann", "bob")
            made = await writer.post(f"/api/messages/{to}", json={"text": f"line {n}"})
            assert made.status_code == 201, made.text
            assert (await reader.post(f"/api/messages/{by}/read", json={})).status_code == 204
        page = (await ann.get("/api/messages/bob", params={"limit": 50})).json()
        assert [m["text"] for m in page["messages"]] == [f"line {n}" for n in (7, 6, 5, 4, 3)]
        assert page["next"] is None


async def test_an_account_blocks_at_most_max_blocks_players(small_inbox: ServiceProcess) -> None:
    async with account(small_inbox, "ann") as ann:
        for name in ("bob", "cat", "dan"):
            async with account(small_inbox, name):
                pass
        answers = [await put(ann, f"/api/me/blocks/{name}") for name in ("bob", "cat", "dan")]
        assert [r.status_code for r in answers] == [204, 204, 409]
        assert code(answers[2]) == "too_many_blocks"
        assert (await put(ann, "/api/me/blocks/cat")).status_code == 204  # already: the same
        assert (await ann.get("/api/me/blocks")).json() == {"blocked": ["bob", "cat"]}
