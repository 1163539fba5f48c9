"""What keeps the inspector's page from being driven by anyone but the person who started it.

The page can pin and forget memories, so it gets the same protection as the
HTTP transport, adapted to a browser:

- Host allowlist: a request whose Host header is not one of the addresses it
  was started on is refused, so a malicious web page cannot reach it through
  DNS rebinding (its own name resolved to 127.0.0.1).
- Origin check: a request whose Origin is another site is refused, so another
  page cannot post a form to it (CSRF), and cannot read its answers.
- A per-process form token in every POST form, for browsers that omit Origin.
- A token, on loopback too (other accounts reach 127.0.0.1): the address the
  CLI prints carries it once (`?token=`); the guard trades it for an HttpOnly,
  SameSite=Strict cookie and redirects to the same page without it. The cookie
  holds a random value of this process, not the token: the browser's cookie
  store never keeps the long-lived secret, and a restart signs every browser out. HTTP Basic
  authentication (any user name, the token as password) works as well, for
  scripts. Only `--no-auth`, refused off loopback, serves without one.
- Headers forbid framing (clickjacking) and any script or style not served here.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from project_ledger.mcp.http import is_loopback

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "ledger_session"
HEADERS = [
    (b"content-security-policy", b"default-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # not no-referrer: with it, browsers send `Origin: null` on form posts
    (b"cache-control", b"no-store"),  # pages show memory text: keep it out of the browser's disk cache
]


def url_host(host: str) -> str:
    """The host as written in a URL or Host header: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(host: str, port: int, extra: list[str]) -> set[str]:
    """Host header values to accept: the address served on (and, on loopback, every loopback name), plus `extra`."""
    names = {url_host(host), "localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {url_host(host)}
    return {f"{name}:{port}" for name in names} | set(extra)


def allowed_origins(host: str, port: int, extra: list[str]) -> set[str]:
    """Origin header values to accept: this server's own pages, plus `extra` (e.g. behind an HTTPS proxy)."""
    return {f"http://{name}" for name in allowed_hosts(host, port, [])} | set(extra)


def same_site_path(path: str) -> str:
    """The decoded request path as a Location that stays on this site: every character but letters, digits, `/` and
    `-._~` percent-encoded, and one leading slash; the home page for a target not of that form (`http://host/`).

    Browsers read `/\\evil.example`, `//evil.example` and `/<TAB>/evil.example` (they drop tabs and newlines) as
    another host; once encoded, a backslash or a tab is only part of a path here."""
    return "/" + quote(path, safe="/").lstrip("/") if path.startswith("/") else "/"


class FormToken:
    """One random token per process, put in every form that changes something and checked on submission."""

    def __init__(self) -> None:
        self.value = secrets.token_urlsafe(32)

    def valid(self, given: object) -> bool:
        return isinstance(given, str) and hmac.compare_digest(given.encode(), self.value.encode())


class Guard:
    """ASGI middleware: Host and Origin allowlists, the token when there is one, and protective headers."""

    def __init__(self, app: ASGIApp, hosts: set[str], origins: set[str], token: str | None) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        self.token = token
        self._session = secrets.token_urlsafe(32)  # what the cookie carries in place of the token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name: value.decode("latin-1") for name, value in scope["headers"]}
        refusal = self._refusal(headers)
        if refusal is not None and refusal[0] == 401 and (target := self._trade_query_token(scope)) is not None:
            cookie = f"{COOKIE}={self._session}; HttpOnly; SameSite=Strict; Path=/".encode()
            await _plain(send, 303, "Signed in; continue at " + target, [(b"location", target.encode()), (b"set-cookie", cookie)])
            return
        if refusal is not None:
            status, text, extra = refusal
            await _plain(send, status, text, extra)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)

    def _refusal(self, headers: dict[bytes, str]) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        host = headers.get(b"host", "")
        if host not in self.hosts:
            return 421, f"This inspector does not answer for host {host!r}. Open it at one of: {', '.join(sorted(self.hosts))}", []
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            return 403, f"Requests from {origin} are refused: only the inspector's own pages may use it.", []
        if self.token is not None and not (self._authorized(headers.get(b"authorization", "")) or self._cookie(headers)):
            return 401, (
                "The inspector needs its token: open the address `project-ledger inspect` printed (it ends in ?token=...), "
                "or give the token (LEDGER_AUTH_TOKEN, or the data directory's http_token) as the password."
            ), [
                (b"www-authenticate", b'Basic realm="project-ledger inspector", charset="UTF-8"')
            ]
        return None

    def _cookie(self, headers: dict[bytes, str]) -> bool:
        try:
            jar = SimpleCookie(headers.get(b"cookie", ""))
        except CookieError:
            return False
        given = jar[COOKIE].value if COOKIE in jar else ""
        return hmac.compare_digest(given.encode(), self._session.encode())

    def _trade_query_token(self, scope: Scope) -> str | None:
        """For a GET whose query carries the right `token`: the same path and query without it; else None."""
        if scope.get("method") != "GET":
            return None
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = next((value for name, value in pairs if name == "token"), "")
        assert self.token is not None
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        rest = urlencode([(name, value) for name, value in pairs if name != "token"])
        path = same_site_path(scope.get("path", "/"))
        return f"{path}?{rest}" if rest else path

    def _authorized(self, header: str) -> bool:
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            _, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        assert self.token is not None
        return hmac.compare_digest(password.encode(), self.token.encode())  # constant time: not guessable byte by byte


async def _plain(send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]]) -> None:
    body = text.encode()
    start_headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()), *extra, *HEADERS]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})
