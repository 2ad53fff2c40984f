"""HTTP and websocket hardening against the real service: security headers, Host checks (DNS
rebinding), the JSON content type and origin rule on POSTs, bodies that must never cause a 500,
versions beyond the table's, and the metrics token."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from tests.server.conftest import FAST, running
from tests.support.servers import GameClient, ServiceProcess, close_code, create_table, join

EVIL = "rebind.evil"
# These tests create and join many tables from one address: the per-address quotas are raised.
ROOMY = {**FAST, "CREATE_RATE": "100000", "MAX_WAITING_TABLES": "100000", "JOIN_RATE": "100000"}


@pytest.fixture
async def service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    async with running(ServiceProcess(redis_url, env=ROOMY)) as process:
        yield process


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return str(body["error"]["code"])


def csp_directives(response: httpx.Response) -> dict[str, list[str]]:
    policy = response.headers.get("content-security-policy")
    assert policy, f"no Content-Security-Policy on {response.request.url}"
    directives: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = words[1:]
    return directives


async def table_count(http: httpx.AsyncClient) -> int:
    response = await http.get("/api/tables")
    assert response.status_code == 200
    return len(response.json()["tables"])


# ---- security headers --------------------------------------------------------------------------


async def test_html_js_css_and_json_responses_carry_the_security_headers(
    http: httpx.AsyncClient,
) -> None:
    page = await http.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    script = await http.get("/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    style = await http.get("/style.css")
    missing = await http.get("/no-such-file.js")
    listing = await http.get("/api/tables")
    health = await http.get("/healthz")
    for response in (page, script, style, missing, listing, health):
        where = response.request.url.path
        assert response.headers.get("x-content-type-options") == "nosniff", where
        assert response.headers.get("referrer-policy") == "same-origin", where
    for response in (page, script, style, missing):
        directives = csp_directives(response)
        assert directives["default-src"] == ["'self'"]
        assert directives["frame-ancestors"] == ["'none'"]
        scripts = directives.get("script-src", directives["default-src"])
        assert "'self'" in scripts
        assert not {"'unsafe-inline'", "'unsafe-eval'", "data:", "*"} & set(scripts)
        assert "'unsafe-inline'" not in directives.get("style-src", [])


async def test_the_client_page_has_no_inline_script_or_style(http: httpx.AsyncClient) -> None:
    page = (await http.get("/")).text
    assert "<script" in page
    for tag in page.split("<script")[1:]:
        head = tag.split(">", 1)[0]
        assert "src=" in head, "an inline <script>"
    assert "<style" not in page and "style=" not in page


# ---- Host header (DNS rebinding) ---------------------------------------------------------------


async def test_a_rebinding_host_is_refused_on_every_http_route(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    evil = {"Host": f"{EVIL}:{service.port}", "Origin": f"http://{EVIL}:{service.port}"}
    for method, path in (("GET", "/"), ("GET", "/app.js"), ("GET", "/api/tables"),
                         ("GET", "/healthz"), ("GET", "/metrics")):
        response = await http.request(method, path, headers=evil)
        assert (response.status_code, error_code(response)) == (400, "bad_host"), path
    created = await http.post("/api/tables", json={"players": 2}, headers=evil)
    assert (created.status_code, error_code(created)) == (400, "bad_host")
    assert await table_count(http) == 0
    table = await create_table(http, players=2)
    joined = await http.post(f"/api/tables/{table}/join", json={"seat": 0, "name": "ann"},
                             headers=evil)
    assert (joined.status_code, error_code(joined)) == (400, "bad_host")
    assert not (await http.get(f"/api/tables/{table}")).json()["seats"][0]["taken"]
    # The loopback names of the bound port are accepted.
    for host in (f"127.0.0.1:{service.port}", f"localhost:{service.port}",
                 f"[::1]:{service.port}"):
        response = await http.get("/api/tables", headers={"Host": host})
        assert response.status_code == 200, host


async def test_a_rebinding_host_is_refused_before_the_websocket_is_accepted(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=2)
    with pytest.raises(InvalidStatus) as refused:
        await websockets.connect(
            f"ws://{EVIL}:{service.port}/ws", host="127.0.0.1", port=service.port, proxy=None,
            origin=f"http://{EVIL}:{service.port}",  # type: ignore[arg-type]
        )
    assert refused.value.response.status_code == 400
    assert json.loads(refused.value.response.body)["error"]["code"] == "bad_host"
    # The same socket with the loopback Host is served.
    socket = await websockets.connect(
        f"ws://localhost:{service.port}/ws", host="127.0.0.1", port=service.port, proxy=None,
        origin=f"http://localhost:{service.port}",  # type: ignore[arg-type]
    )
    client = GameClient(socket)
    GameClient.opened.append(client)
    assert (await client.hello(table))["t"] == "welcome"


@pytest.fixture
async def public(redis_url: str) -> AsyncIterator[ServiceProcess]:
    """Bound on every interface, as in the Docker image, with the public name allowed."""
    env = {**ROOMY, "HOST": "0.0.0.0", "ALLOWED_HOSTS": "dominoes.example, .games.example"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


def test_a_host_port_of_digits_int_refuses_is_a_bad_host(service: ServiceProcess) -> None:
    """`str.isdigit` takes "²" (U+00B2) and other digits `int()` refuses: a Host port made of
    them is `400 bad_host` like any malformed Host, not a 500 with a traceback in the log."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost:\xb2\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    assert answer.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request"), answer[:200]
    assert b'"bad_host"' in answer
    assert "Traceback" not in service.log()


async def test_allowed_hosts_admits_the_public_names_and_loopback_only(
    public: ServiceProcess,
) -> None:
    port = public.port
    async with httpx.AsyncClient(base_url=public.url, timeout=10) as http:
        # The health check of the image (127.0.0.1) still works.
        assert (await http.get("/healthz")).status_code == 200
        for host in ("dominoes.example", f"dominoes.example:{port}", "games.example",
                     "eu.games.example", "DOMINOES.EXAMPLE"):
            response = await http.get("/api/tables", headers={"Host": host})
            assert response.status_code == 200, host
        for host in (EVIL, f"{EVIL}:{port}", "dominoes.example.evil", "xgames.example",
                     f"0.0.0.0:{port}", "", "dominoes.example:notaport"):
            response = await http.get("/api/tables", headers={"Host": host})
            assert (response.status_code, error_code(response)) == (400, "bad_host"), host
        table = await create_table(http, players=2)
    socket = await websockets.connect(
        f"ws://dominoes.example:{port}/ws", host="127.0.0.1", port=port, proxy=None,
        origin=f"http://dominoes.example:{port}",  # type: ignore[arg-type]
    )
    client = GameClient(socket)
    GameClient.opened.append(client)
    assert (await client.hello(table))["t"] == "welcome"


# ---- content type and origin of POSTs ----------------------------------------------------------


async def test_a_body_that_is_not_declared_json_is_refused_with_415(
    http: httpx.AsyncClient,
) -> None:
    body = json.dumps({"players": 2}).encode()
    for content_type in ("text/plain", "text/plain; charset=utf-8",
                         "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                         "application/jsonx", None):
        headers = {"Content-Type": content_type} if content_type else {}
        response = await http.post("/api/tables", content=body, headers=headers)
        assert (response.status_code, error_code(response)) == (415, "unsupported_media_type"), (
            content_type)
    assert await table_count(http) == 0
    table = await create_table(http, players=2)
    joined = await http.post(
        f"/api/tables/{table}/join", content=json.dumps({"seat": 0, "name": "ann"}),
        headers={"Content-Type": "text/plain"},
    )
    assert (joined.status_code, error_code(joined)) == (415, "unsupported_media_type")
    assert not (await http.get(f"/api/tables/{table}")).json()["seats"][0]["taken"]
    for content_type in ("application/json", "application/json; charset=utf-8",
                         "Application/JSON"):
        response = await http.post("/api/tables", content=body,
                                   headers={"Content-Type": content_type})
        assert response.status_code == 201, content_type


async def test_a_post_from_another_scheme_or_site_is_refused(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    port = service.port
    for origin in (f"https://127.0.0.1:{port}", f"http://{EVIL}:{port}", "null",
                   f"http://127.0.0.1:{port + 1}"):
        response = await http.post("/api/tables", json={"players": 2},
                                   headers={"Origin": origin})
        assert (response.status_code, error_code(response)) == (403, "bad_origin"), origin
    assert await table_count(http) == 0
    same = await http.post("/api/tables", json={"players": 2},
                           headers={"Origin": f"http://127.0.0.1:{port}"})
    assert same.status_code == 201


async def test_a_websocket_from_an_https_origin_to_an_http_host_is_closed(
    service: ServiceProcess,
) -> None:
    refused = await GameClient.connect(
        service.ws_url, additional_headers={"Origin": f"https://127.0.0.1:{service.port}"}
    )
    assert await close_code(refused) == 1008


# ---- bodies that must never cause a 500 --------------------------------------------------------


async def test_deep_nesting_and_huge_numbers_are_bad_requests(http: httpx.AsyncClient) -> None:
    def post(body: str | bytes) -> Any:
        return http.post("/api/tables", content=body,
                         headers={"Content-Type": "application/json"})

    cases: list[str] = [
        "[" * 2040,
        '{"rules": ' + "[" * 2000 + "]" * 2000 + "}",
        '{"players": 2, "name": "a", "rules": ' + '{"preset": ' * 300 + "1" + "}" * 300 + "}",
        json.dumps({"rules": {"preset": "all-fives", "target": 2**64}}),
        json.dumps({"rules": {"preset": "all-fives", "target": {"2": 100, "3": 2**64}}}),
        json.dumps({"rules": {"preset": "all-fives", "bonus_points": 2**64}}),
        json.dumps({"rules": {"preset": "all-fives", "boneyard_reserve": 2**64}}),
        json.dumps({"rules": {"preset": "all-fives", "scale": 2**64}}),
        json.dumps({"rules": {"preset": "all-fives", "hand_size": {"2": 7, "4": 2**64}}}),
        json.dumps({"rules": {"preset": "all-fives", "target": 1001}}),
        json.dumps({"players": 2**64}),
        json.dumps({"players": 2, "bots": {str(2**64): "greedy"}}),
        json.dumps({"players": 2, "bots": {"\u00b2": "greedy"}}),  # a digit int() refuses
        json.dumps({"clock": {"kind": "realtime", "move_s": 2**64, "reserve_s": 0}}),
        '{"clock": {"kind": "realtime", "move_s": 1e999, "reserve_s": 0}}',
        '{"clock": {"kind": "turn", "move_h": NaN, "max_h": 1}}',
        '{"name": "\\ud800"}',
        '{"name": "ok", "rules": {"preset": "\\udfff"}}',
    ]
    for body in cases:
        response = await post(body)
        assert response.status_code == 400, (body[:80], response.status_code, response.text)
        assert error_code(response) in ("bad_request", "invalid_option", "unknown_preset")
    assert await table_count(http) == 0
    private = await http.post("/api/tables", json={"players": 2, "private": True})
    table, invite = private.json()["id"], private.json()["invite"]
    for body in (json.dumps({"seat": 2**64, "name": "ann", "invite": invite}),
                 json.dumps({"seat": -(2**64), "name": "ann", "invite": invite}),
                 json.dumps({"seat": 0, "invite": invite})[:-1] + ', "name": "\\ud800"}',
                 '{"seat": 0, "name": "ann", "invite": "\\ud800"}'):
        response = await http.post(f"/api/tables/{table}/join", content=body,
                                   headers={"Content-Type": "application/json"})
        assert response.status_code == 400, (body, response.text)
    leave = await http.post(f"/api/tables/{table}/leave", content='{"token": "\\ud800"}',
                            headers={"Content-Type": "application/json"})
    assert leave.status_code == 400, leave.text
    summary = await http.get(f"/api/tables/{table}", params={"invite": private.json()["invite"]})
    assert not any(seat["taken"] for seat in summary.json()["seats"])


async def test_every_numeric_option_at_its_bound_is_accepted(http: httpx.AsyncClient) -> None:
    for rules in ({"preset": "all-fives", "target": 1000},
                  {"preset": "fives-and-threes", "bonus_points": 1000},
                  {"preset": "all-fives", "boneyard_reserve": {"2": 14, "3": 13, "4": 8}},
                  {"preset": "all-fives", "hand_size": {"2": 14, "3": 9, "4": 7}}):
        response = await http.post("/api/tables", json={"players": 2, "rules": rules})
        assert response.status_code == 201, (rules, response.text)
    for clock in ({"kind": "realtime", "move_s": 3600, "reserve_s": 86400},
                  {"kind": "turn", "move_h": 168, "max_h": 720}):
        response = await http.post("/api/tables", json={"players": 2, "clock": clock})
        assert response.status_code == 201, (clock, response.text)


# ---- versions beyond the table's ---------------------------------------------------------------


def warnings_in(service: ServiceProcess) -> list[str]:
    lines = service.log_path.read_text(errors="replace").splitlines()
    return [line for line in lines if '"level":"warning"' in line or '"level":"error"' in line
            or "Traceback" in line]


async def test_a_since_beyond_the_version_is_answered_with_a_snapshot(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, players=2)
    token = await join(http, table, 0, "ann")
    version = (await http.get(f"/api/tables/{table}")).json()["v"]
    for since in (2**64 - 1, 2**64 - 2, 2**63, 2**63 - 1, version + 1, version + 1000):
        for who in (None, token):
            client = await GameClient.connect(service.ws_url)
            await client.send({"t": "hello", "proto": 1, "table": table, "token": who,
                               "since": since})
            welcome = await client.recv()
            assert welcome["t"] == "welcome", (since, welcome)
            snapshot = await client.recv()
            assert (snapshot["t"], snapshot["v"]) == ("snapshot", version), since
            await client.send({"t": "sync", "since": since})
            again = await client.recv_until("snapshot")
            assert again["v"] == version
            await client.send({"t": "ping", "n": 2**64 - 1})
            assert (await client.recv_until("pong"))["n"] == 2**64 - 1
            await client.close()
    other = await join(http, table, 1, "bob")
    version += 1
    player = await GameClient.connect(service.ws_url)
    await player.hello(table, other)
    for v in (2**64 - 1, 2**63, version + 1):
        answer = await player.move({"pass": True}, v=v)
        assert (answer["t"], answer["code"]) == ("rejected", "stale_version"), v
    assert warnings_in(service) == []


# ---- metrics token -----------------------------------------------------------------------------


async def test_metrics_need_the_bearer_token_when_one_is_set(redis_url: str) -> None:
    env = {"METRICS_TOKEN": "s3cret-metrics-token"}
    async with (
        running(ServiceProcess(redis_url, env=env)) as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        for headers in ({}, {"Authorization": "Bearer wrong"},
                        {"Authorization": "Basic czNjcmV0LW1ldHJpY3MtdG9rZW4="},
                        {"Authorization": "Bearer s3cret-metrics-token-and-more"},
                        {"Authorization": "s3cret-metrics-token"}):
            response = await http.get("/metrics", headers=headers)
            assert (response.status_code, error_code(response)) == (401, "unauthorized"), headers
            assert "dominoes_" not in response.text
            assert response.headers.get("www-authenticate", "").startswith("Bearer")
        allowed = await http.get(
            "/metrics", headers={"Authorization": "Bearer s3cret-metrics-token"})
        assert allowed.status_code == 200 and "dominoes_connections" in allowed.text
        assert (await http.get("/healthz")).status_code == 200


# ---- the rules themselves (server/guard.py) ----------------------------------------------------


def test_host_rules_parse_entries_and_match_hosts() -> None:
    from server.guard import host_allowed, host_rules, split_host

    assert split_host("Example.COM.:8080") == ("example.com", 8080)
    assert split_host("[::1]:8000") == ("::1", 8000)
    for bad in ("", ":80", "a:b", "[::1", "a b", "x:99999", "a@b", "::1"):
        assert split_host(bad) is None, bad
    default = host_rules((), "10.0.0.5", 8000)
    assert host_allowed("10.0.0.5:8000", default) and not host_allowed("10.0.0.5:8001", default)
    assert host_allowed("localhost:1234", default) and host_allowed("[::1]", default)
    assert not host_allowed(f"{EVIL}:8000", default) and not host_allowed(None, default)
    assert host_rules(("*",), "0.0.0.0", 8000) is None
    assert host_allowed(EVIL, None)
    with pytest.raises(ValueError, match="ALLOWED_HOSTS"):
        host_rules(("http://x.example",), "0.0.0.0", 8000)


def test_the_origin_rule_compares_scheme_and_host() -> None:
    from server.guard import origin_allowed

    assert origin_allowed(None, "a.example", ())
    assert origin_allowed("http://a.example", "a.example", ())
    assert origin_allowed("http://a.example", "a.example", (), "ws")
    assert origin_allowed("https://a.example", "a.example", (), "wss")
    assert not origin_allowed("https://a.example", "a.example", (), "http")
    assert not origin_allowed("https://a.example", "a.example", (), "ws")
    assert not origin_allowed("http://a.example", "a.example", (), "wss")
    assert not origin_allowed("null", "a.example", ())
    assert not origin_allowed("http://b.example", "a.example", ())
    assert origin_allowed("https://a.example/", "x", ("https://a.example",))
    assert not origin_allowed("http://a.example", "a.example", ("https://a.example",))
    assert origin_allowed("http://b.example", "a.example", ("*",))


def test_settings_read_allowed_hosts_and_keep_the_metrics_token_out_of_repr() -> None:
    from server.settings import Settings

    settings = Settings.from_env({"ALLOWED_HOSTS": " a.example, .b.example:443 ,",
                                  "METRICS_TOKEN": "t0ken"})
    assert settings.allowed_hosts == ("a.example", ".b.example:443")
    assert settings.metrics_token == "t0ken" and "t0ken" not in repr(settings)
    assert Settings.from_env({}).allowed_hosts == () and Settings.from_env({}).metrics_token is None
