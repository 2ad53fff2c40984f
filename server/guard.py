"""Checks every HTTP request and websocket handshake passes before any route sees it, and the
security headers of every HTTP response.

Owns: the `Host` check (ALLOWED_HOSTS, against DNS rebinding), the `Origin` rule (shared with
the websocket endpoint: same scheme and host, or one of ALLOWED_ORIGINS), and the headers
(Content-Security-Policy, X-Content-Type-Options, Referrer-Policy, X-Frame-Options).
Must not import the engine.

- A request whose `Host` is not allowed is answered HTTP 400 `bad_host` (JSON), a websocket
  handshake too (refused before it is accepted, through the ASGI denial-response extension;
  a server without that extension closes the handshake, which clients see as HTTP 403).
- A POST (any method but GET, HEAD, OPTIONS) whose `Origin` is not allowed is answered HTTP 403
  `bad_origin`. Requests without `Origin` (non-browser clients) pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.lobby import refusal_response
from server.rejected import Rejected
from server.text import digits

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)


def split_host(value: str) -> tuple[str, int | None] | None:
    """A `Host` value (or an ALLOWED_HOSTS entry) as (lower-case name, port or None); None when
    it is not a host name, an IPv4 address or a bracketed IPv6 address with an optional port."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or not name:
            return None
    else:
        name, _, rest = value.partition(":")
        rest = ":" + rest if _ else ""
        if not name or any(c in name for c in "/\\@?#[] "):
            return None
    if rest and (not rest.startswith(":") or not digits(rest[1:]) or len(rest) > 6):
        return None
    port = int(rest[1:]) if rest else None
    if port is not None and not 0 < port < 65536:
        return None
    name = name.rstrip(".")
    return (name, port) if name else None


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allowed host: `name` (a leading dot: that domain and every subdomain), and `port`
    (None: any port)."""

    name: str
    port: int | None

    def matches(self, name: str, port: int | None) -> bool:
        if self.port is not None and port != self.port:
            return False
        if self.name.startswith("."):
            return name == self.name[1:] or name.endswith(self.name)
        return name == self.name


def host_rules(entries: Iterable[str], bind_host: str, port: int) -> tuple[HostRule, ...] | None:
    """The rules for ALLOWED_HOSTS `entries` (None: `*`, any host). No entries: the bound host
    with its port. Loopback names (localhost, 127.0.0.1, [::1]) with any port are always allowed:
    a page can only send them when the browser was pointed at this machine."""
    rules = [HostRule(name, None) for name in sorted(LOOPBACK_NAMES)]
    entries = [e.strip() for e in entries if e.strip()]
    if "*" in entries:
        return None
    if not entries:
        bound = split_host(f"[{bind_host}]" if ":" in bind_host else bind_host)
        if bound is not None:
            rules.append(HostRule(bound[0], port))
    for entry in entries:
        parsed = split_host(entry)
        if parsed is None:
            raise ValueError(f"ALLOWED_HOSTS: {entry!r} is not a host name, host:port or .domain")
        rules.append(HostRule(*parsed))
    return tuple(rules)


def host_allowed(host: str | None, rules: tuple[HostRule, ...] | None) -> bool:
    if rules is None:
        return True
    parsed = split_host(host or "")
    return parsed is not None and any(rule.matches(*parsed) for rule in rules)


def origin_allowed(
    origin: str | None, host: str | None, allowed: tuple[str, ...], scheme: str = "http"
) -> bool:
    """May a browser page from `origin` use this server? Yes without an `Origin` (not a
    browser); with ALLOWED_ORIGINS, only those (`*`: any); else the origin must have the
    request's scheme (http for ws, https for wss) and its `Host`."""
    if not origin:
        return True
    wanted = origin.strip().rstrip("/").lower()
    if "*" in allowed or wanted in (o.rstrip("/").lower() for o in allowed):
        return True
    if allowed:
        return False
    parts = urlsplit(wanted)
    request_scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme).lower()
    return (bool(host) and parts.scheme == request_scheme
            and parts.netloc == (host or "").strip().lower())


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class Guard:
    """ASGI middleware: the Host and Origin checks, and the security headers."""

    def __init__(self, app: ASGIApp, *, hosts: tuple[HostRule, ...] | None,
                 origins: tuple[str, ...]) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not host_allowed(_header(scope, b"host"), self.hosts):
            await self._refuse(scope, receive, send, refusal_response(Rejected(
                "bad_host", "this server does not answer to that host", status=400)))
            return
        if kind == "websocket":
            await self.app(scope, receive, send)  # its origin is checked by the endpoint (1008)
            return
        if scope["method"] not in SAFE_METHODS and not origin_allowed(
            _header(scope, b"origin"), _header(scope, b"host"), self.origins,
            str(scope.get("scheme", "http")),
        ):
            await self._refuse(scope, receive, send, refusal_response(Rejected(
                "bad_origin", "requests from that origin are refused", status=403)))
            return
        await self.app(scope, receive, self._with_headers(send))

    def _with_headers(self, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {key.lower() for key, _ in message.get("headers", ())}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        return sending

    async def _refuse(self, scope: Scope, receive: Receive, send: Send,
                      response: JSONResponse) -> None:
        if scope["type"] == "http":
            await response(scope, receive, self._with_headers(send))
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await response(scope, receive, send)
        else:
            await send({"type": "websocket.close", "code": 1008})
