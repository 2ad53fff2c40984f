"""Accounts and sessions (server/accounts.py, docs/players.md) on the real service and a real
PostgreSQL database of their own."""

from __future__ import annotations

import hashlib
import secrets
import string
import time
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import asyncpg
import httpx
import pytest

from tests.server.conftest import FAST, running
from tests.server.test_social import ENDED_WITHIN_S, hello_me
from tests.support.servers import ServiceProcess, close_code
from tests.support.web import code

LIMITS = {"LOGIN_FAILURES_PER_ACCOUNT": "3", "LOGIN_FAILURES_PER_ADDRESS": "6",
          "REGISTRATIONS_PER_ADDRESS": "4"}
# Every password check counted, and the sessions an account keeps (the tests of these limits).
STRICT = {"LOGINS_PER_ACCOUNT": "4", "LOGINS_PER_ADDRESS": "7", "MAX_SESSIONS_PER_ACCOUNT": "3"}


@pytest.fixture
async def accounts_service(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, **LIMITS, "DATABASE_URL": database_url}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


def client(service: ServiceProcess, origin: str | None = None) -> httpx.AsyncClient:
    """A browser-like client: its page's Origin on every request, cookies kept."""
    return httpx.AsyncClient(base_url=service.url, timeout=20,
                             headers={"Origin": origin or service.url})


@pytest.fixture
async def strict_service(redis_url: str, database_url: str) -> AsyncIterator[ServiceProcess]:
    env = {**FAST, **LIMITS, **STRICT, "DATABASE_URL": database_url}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


@pytest.fixture
async def web(accounts_service: ServiceProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with client(accounts_service) as http:
        yield http


async def register(http: httpx.AsyncClient, username: str = "ada",
                   password: str = "correct horse") -> httpx.Response:
    return await http.post("/api/accounts", json={"username": username, "password": password})


async def login(http: httpx.AsyncClient, username: str = "ada",
                password: str = "correct horse", address: str | None = None) -> httpx.Response:
    """A login; with ``address``, from that client address (through the trusted proxy's
    X-Forwarded-For: 127.0.0.1 is trusted by default)."""
    headers = {"X-Forwarded-For": address} if address else None
    return await http.post("/api/session", json={"username": username, "password": password},
                           headers=headers)


async def change(http: httpx.AsyncClient, method: str, path: str,
                 body: dict[str, Any] | None = None) -> httpx.Response:
    """A cookie-authenticated change, sent as a page of the service sends it."""
    return await http.request(method, path, json=body if body is not None else {})


async def test_register_logs_in_with_a_safe_cookie(
    web: httpx.AsyncClient, db: asyncpg.Connection
) -> None:
    created = await register(web, "Ada_Lovelace")
    assert created.status_code == 201, created.text
    assert created.json()["username"] == "Ada_Lovelace"
    cookie = created.headers["set-cookie"]
    assert cookie.startswith("session=") and "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # plain http
    me = await web.get("/api/me")
    assert me.status_code == 200 and me.json()["username"] == "Ada_Lovelace"
    stored = await db.fetchval("SELECT password_hash FROM players")
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    session_id = web.cookies["session"]
    hashes = [r["id_hash"] for r in await db.fetch("SELECT id_hash FROM sessions")]
    assert hashes == [hashlib.sha256(session_id.encode()).digest()]  # only its hash is kept


async def test_names_are_unique_without_regard_to_case(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    async with client(accounts_service) as web:
        assert (await register(web, "Ada")).status_code == 201
    async with client(accounts_service) as other:
        taken = await register(other, "aDA", "another password")
        assert taken.status_code == 409 and code(taken) == "username_taken"
        assert "session" not in other.cookies
    assert await db.fetchval("SELECT count(*) FROM players") == 1
    assert await db.fetchval("SELECT count(*) FROM sessions") == 1


async def test_a_name_that_looks_like_an_accounts_is_taken(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    """Usernames drawn alike in some case (Unicode's confusables: "I" and "l", "1" and "l",
    "0" and "O", "rn" and "m") would let one account pass for another: the second is taken.
    (Two of each: REGISTRATIONS_PER_ADDRESS is 4.)"""
    async with client(accounts_service) as web:
        assert (await register(web, "Ian_Moore")).status_code == 201
    for lookalike in ("lan_M00re", "1an_rnoore"):
        async with client(accounts_service) as other:
            taken = await register(other, lookalike, "another password")
            assert (taken.status_code, code(taken)) == (409, "username_taken"), lookalike
    async with client(accounts_service) as other:  # not drawn alike: fine
        assert (await register(other, "ian_Moore2", "another password")).status_code == 201
    assert await db.fetchval("SELECT count(*) FROM players") == 2


async def test_the_databases_reading_of_usernames_is_the_servers(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    """The index that finds lookalikes (migration 0010) reads a username as
    server.text.account_reading does, for every character a username may hold."""
    from server.text import USERNAME_READING_SQL, account_reading

    alphabet = string.ascii_letters + string.digits + "_-"
    names = [ch * 3 for ch in alphabet] + ["Ian_Moore", "M0rning-1", "iIlL10OomM"]
    rows = await db.fetch(f"SELECT username, {USERNAME_READING_SQL} AS reading "
                          "FROM unnest($1::text[]) AS username", names)
    assert {row["username"]: row["reading"] for row in rows} == {
        name: account_reading(name) for name in names}
    await db.execute("SET enable_seqscan = off")  # the lookup is the index's expression
    plan = await db.fetch(f"EXPLAIN SELECT true FROM players WHERE {USERNAME_READING_SQL} = $1",
                          "lan_rnoore")
    assert "players_username_reading" in " ".join(row[0] for row in plan)


@pytest.mark.parametrize(("username", "password", "expected"), [
    ("ab", "long enough", "invalid_username"),
    ("a" * 21, "long enough", "invalid_username"),
    ("has space", "long enough", "invalid_username"),
    ("émile", "long enough", "invalid_username"),
    ("bot", "long enough", "reserved_username"),
    ("Bot_2", "long enough", "reserved_username"),
    ("admin", "long enough", "reserved_username"),
    ("Spectator", "long enough", "reserved_username"),
    ("grace", "short", "weak_password"),
    ("grace", "GRACE", "weak_password"),
    ("gracehopper", "GraceHopper", "weak_password"),
    ("grace", 12345678, "bad_request"),
])
async def test_refused_registrations_change_nothing(
    web: httpx.AsyncClient, db: asyncpg.Connection, username: str, password: Any,
    expected: str,
) -> None:
    refused = await register(web, username, password)
    assert refused.status_code == 400 and code(refused) == expected, refused.text
    assert await db.fetchval("SELECT count(*) FROM players") == 0


async def test_wrong_password_and_unknown_name_get_the_same_answer(
    accounts_service: ServiceProcess,
) -> None:
    async with client(accounts_service) as web:
        await register(web, "grace", "hopper-1906")
    async with client(accounts_service) as web:
        timings: dict[str, list[float]] = {"wrong": [], "unknown": []}
        answers = {}
        for _ in range(2):  # under LOGIN_FAILURES_PER_ACCOUNT
            for label, name in (("wrong", "grace"), ("unknown", "nobody_here")):
                start = time.perf_counter()
                answer = await login(web, name, "not-the-password")
                timings[label].append(time.perf_counter() - start)
                answers[label] = (answer.status_code, answer.json())
        assert answers["wrong"] == answers["unknown"]
        assert answers["wrong"][0] == 401
        assert answers["wrong"][1]["error"]["code"] == "wrong_credentials"
        # both verify an argon2id hash: neither is answered much faster
        fastest = {label: min(values) for label, values in timings.items()}
        assert min(fastest.values()) > 0.3 * max(fastest.values()), timings
        ok = await login(web, "GRACE", "hopper-1906")  # names match without regard to case
        assert ok.status_code == 200 and ok.json()["username"] == "grace"
        assert (await web.get("/api/me")).status_code == 200


async def test_logout_ends_the_session(web: httpx.AsyncClient) -> None:
    await register(web)
    session_id = web.cookies["session"]
    out = await change(web, "DELETE", "/api/session")
    assert out.status_code == 204
    assert 'session=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    web.cookies.clear()
    assert code(await web.get("/api/me")) == "not_logged_in"
    web.cookies.set("session", session_id)  # the old cookie, replayed
    replayed = await web.get("/api/me")
    assert replayed.status_code == 401 and code(replayed) == "session_expired"


async def test_logout_everywhere(accounts_service: ServiceProcess) -> None:
    async with client(accounts_service) as phone, client(accounts_service) as laptop:
        await register(phone)
        assert (await login(laptop)).status_code == 200
        assert (await change(laptop, "DELETE", "/api/sessions")).status_code == 204
        assert code(await phone.get("/api/me")) == "session_expired"
        assert (await login(phone)).status_code == 200  # logging in again works


async def test_an_expired_session_is_refused(
    web: httpx.AsyncClient, db: asyncpg.Connection
) -> None:
    await register(web)
    player = await db.fetchval("SELECT id FROM players")
    old = secrets.token_urlsafe(32)
    await db.execute(
        "INSERT INTO sessions (id_hash, player_id, expires_at) "
        "VALUES ($1, $2, now() - interval '1 second')",
        hashlib.sha256(old.encode()).digest(), player)
    web.cookies.clear()
    web.cookies.set("session", old)
    expired = await web.get("/api/me")
    assert expired.status_code == 401 and code(expired) == "session_expired"


async def test_change_password(accounts_service: ServiceProcess) -> None:
    async with client(accounts_service) as web, client(accounts_service) as other:
        await register(web)
        await login(other)
        wrong = await change(web, "POST", "/api/me/password",
                             {"password": "not it at all", "new_password": "battery staple"})
        assert wrong.status_code == 401 and code(wrong) == "wrong_credentials"
        weak = await change(web, "POST", "/api/me/password",
                            {"password": "correct horse", "new_password": "short"})
        assert weak.status_code == 400 and code(weak) == "weak_password"
        done = await change(web, "POST", "/api/me/password",
                            {"password": "correct horse", "new_password": "battery staple"})
        assert done.status_code == 204, done.text
        assert (await web.get("/api/me")).status_code == 200  # this session stays
        assert code(await other.get("/api/me")) == "session_expired"  # the others end
        async with client(accounts_service) as fresh:
            assert code(await login(fresh)) == "wrong_credentials"
            assert (await login(fresh, password="battery staple")).status_code == 200


async def test_delete_account(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    async with client(accounts_service) as web:
        await register(web)
        wrong = await change(web, "DELETE", "/api/me", {"password": "not it at all"})
        assert wrong.status_code == 401 and code(wrong) == "wrong_credentials"
        assert await db.fetchval("SELECT count(*) FROM players") == 1
        gone = await change(web, "DELETE", "/api/me", {"password": "correct horse"})
        assert gone.status_code == 204
        assert await db.fetchval("SELECT count(*) FROM players") == 0
        assert await db.fetchval("SELECT count(*) FROM sessions") == 0
        assert code(await web.get("/api/me")) in ("not_logged_in", "session_expired")
    async with client(accounts_service) as web:
        assert code(await login(web)) == "wrong_credentials"
        assert (await register(web)).status_code == 201  # the name is free again


async def test_cookie_changes_need_json_and_the_page_origin(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    async with client(accounts_service) as web:
        await register(web)
        cookies = web.cookies
        form = await web.delete("/api/session")  # no Content-Type: what a form or img could do
        assert form.status_code == 415 and code(form) == "unsupported_media_type"
        no_origin = await web.request("DELETE", "/api/session", json={},
                                      headers={"Origin": ""})
        assert no_origin.status_code == 403 and code(no_origin) == "bad_origin"
    async with client(accounts_service, origin="http://evil.example") as evil:
        evil.cookies = cookies
        forged = await change(evil, "DELETE", "/api/me", {"password": "correct horse"})
        assert forged.status_code == 403 and code(forged) == "bad_origin"
    assert await db.fetchval("SELECT count(*) FROM sessions") == 1
    assert await db.fetchval("SELECT count(*) FROM players") == 1


async def test_secure_cookie_behind_an_https_proxy(accounts_service: ServiceProcess) -> None:
    host = accounts_service.url.removeprefix("http://")
    async with client(accounts_service, origin=f"https://{host}") as web:
        created = await web.post("/api/accounts", json={"username": "ada",
                                                         "password": "correct horse"},
                                 headers={"X-Forwarded-Proto": "https"})
        assert created.status_code == 201, created.text
        assert "Secure" in created.headers["set-cookie"]


async def test_too_many_failed_logins(
    accounts_service: ServiceProcess,
) -> None:
    async with client(accounts_service) as web:
        await register(web, "grace", "hopper-1906")
    async with client(accounts_service) as web:
        for _ in range(3):  # LOGIN_FAILURES_PER_ACCOUNT
            assert code(await login(web, "grace", "guess-guess")) == "wrong_credentials"
        limited = await login(web, "grace", "hopper-1906")  # even the right password now
        assert limited.status_code == 429 and code(limited) == "too_many_attempts"
        assert int(limited.headers["Retry-After"]) > 0
        assert code(await login(web, "Grace", "guess-guess")) == "too_many_attempts"
        # the address: 6 failures over any names, then every login from it waits
        for name in ("alan", "edsger", "barbara"):
            assert code(await login(web, name, "guess-guess")) == "wrong_credentials"
        assert code(await login(web, "donald", "guess-guess")) == "too_many_attempts"
        refused = await web.post("/api/accounts", json={"username": "x", "password": "y"})
        assert code(refused) == "invalid_username"  # registration is not a login


async def test_registrations_per_address(
    accounts_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    async with client(accounts_service) as web:
        for n in range(4):  # REGISTRATIONS_PER_ADDRESS
            assert (await register(web, f"player{n}")).status_code == 201
        over = await register(web, "player4")
        assert over.status_code == 429 and code(over) == "rate_limited"
        assert int(over.headers["Retry-After"]) > 0
    assert await db.fetchval("SELECT count(*) FROM players") == 4


async def test_oversize_body(web: httpx.AsyncClient, db: asyncpg.Connection) -> None:
    big = await register(web, "ada", "p" * 5000)
    assert big.status_code == 413 and code(big) == "too_large"
    assert await db.fetchval("SELECT count(*) FROM players") == 0


async def test_without_postgres_accounts_are_unavailable_and_tables_work(
    redis_url: str, pg_server: Any,
) -> None:
    dead = pg_server.database_url("no_such_database")
    async with running(ServiceProcess(redis_url, env={**FAST, "DATABASE_URL": dead})) as svc, \
            client(svc) as web:
        refused = await register(web)
        assert refused.status_code == 503 and code(refused) == "unavailable"
        assert code(await web.get("/api/me")) == "not_logged_in"  # no cookie: no look-up
        web.cookies.set("session", "some-session")
        assert code(await web.get("/api/me")) == "unavailable"
        assert (await web.post("/api/tables", json={"players": 2})).status_code == 201


async def test_every_login_counts_against_its_account(strict_service: ServiceProcess) -> None:
    """LOGINS_PER_ACCOUNT (4): each login costs an argon2id verification, so every one counts
    for its name, right password or wrong, from any address; past it the name waits."""
    async with client(strict_service) as web:
        for name in ("ada", "bob"):  # a registration is not a login
            assert (await register(web, name)).status_code == 201
    async with client(strict_service) as web:
        for _ in range(2):
            assert (await login(web)).status_code == 200
        assert code(await login(web, password="not the password")) == "wrong_credentials"
        assert (await login(web, "ADA", address="203.0.113.9")).status_code == 200
        limited = await login(web)  # the fifth, with the right password
        assert limited.status_code == 429 and code(limited) == "too_many_attempts"
        assert int(limited.headers["Retry-After"]) > 0
        assert code(await login(web, address="198.51.100.4")) == "too_many_attempts"
        assert (await login(web, "bob")).status_code == 200  # another account logs in


async def test_every_login_counts_against_its_address(strict_service: ServiceProcess) -> None:
    """LOGINS_PER_ADDRESS (7): logins from one address over any names, right passwords too; an
    IPv6 client by its /64, whichever of its addresses it uses."""
    names = ("ann", "bea", "cid", "dot")
    async with client(strict_service) as web:
        for name in names:
            assert (await register(web, name)).status_code == 201
    async with client(strict_service) as web:
        for n in range(7):
            got = await login(web, names[n % 4], address=f"2001:db8:0:7::{n + 1:x}")
            assert got.status_code == 200, got.text
        for name in ("dot", "nobody_here"):
            over = await login(web, name, address="2001:db8:0:7:ffff::1")
            assert over.status_code == 429 and code(over) == "too_many_attempts"
            assert int(over.headers["Retry-After"]) > 0
        assert (await login(web, "dot", address="2001:db8:0:8::1")).status_code == 200


async def test_password_changes_and_deletions_count_as_logins(
    strict_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    """A password change (two argon2id operations) and an account deletion check the password:
    each counts against LOGINS_PER_ACCOUNT (4) like a login, whatever its outcome."""
    async with client(strict_service) as web:
        await register(web)
        wrong = await change(web, "POST", "/api/me/password",
                             {"password": "not it at all", "new_password": "battery staple"})
        assert code(wrong) == "wrong_credentials"
        chain = ("correct horse", "battery staple", "correct horse", "battery staple")
        for old, new in pairwise(chain):
            done = await change(web, "POST", "/api/me/password",
                                {"password": old, "new_password": new})
            assert done.status_code == 204, done.text
        stored = await db.fetchval("SELECT password_hash FROM players")
        over = await change(web, "POST", "/api/me/password",
                            {"password": "battery staple", "new_password": "fresh password"})
        assert over.status_code == 429 and code(over) == "too_many_attempts"
        assert int(over.headers["Retry-After"]) > 0
        gone = await change(web, "DELETE", "/api/me", {"password": "battery staple"})
        assert gone.status_code == 429 and code(gone) == "too_many_attempts"
        assert code(await login(web, password="battery staple")) == "too_many_attempts"
        assert await db.fetchval("SELECT password_hash FROM players") == stored
        assert (await web.get("/api/me")).status_code == 200  # still logged in


async def test_a_login_beyond_the_session_cap_ends_the_oldest(
    strict_service: ServiceProcess, db: asyncpg.Connection
) -> None:
    """MAX_SESSIONS_PER_ACCOUNT (3): a login beyond it ends the account's oldest live session
    as a log out would (its /ws/me socket closes 4008); expired ones are deleted and never
    count; the newer sessions and other accounts' stay."""
    async with client(strict_service) as bob, client(strict_service) as first, \
            client(strict_service) as second, client(strict_service) as third, \
            client(strict_service) as fourth:
        assert (await register(bob, "bob")).status_code == 201
        assert (await register(first)).status_code == 201
        page, _ = await hello_me(strict_service, first)
        for web in (second, third):
            assert (await login(web)).status_code == 200
        player = await db.fetchval("SELECT id FROM players WHERE username = 'ada'")
        await db.execute(  # the newest row of all, but expired
            "INSERT INTO sessions (id_hash, player_id, expires_at) "
            "VALUES ($1, $2, now() - interval '1 second')",
            hashlib.sha256(secrets.token_urlsafe(32).encode()).digest(), player)
        assert (await login(fourth)).status_code == 200
        ended = await first.get("/api/me")
        assert ended.status_code == 401 and code(ended) == "session_expired"
        assert await close_code(page, wait_s=ENDED_WITHIN_S) == 4008
        for web in (second, third, fourth, bob):
            assert (await web.get("/api/me")).status_code == 200
        assert await db.fetchval("SELECT count(*) FROM sessions WHERE player_id = $1",
                                 player) == 3
