"""MCP over streamable HTTP, for a ledger shared by a team: bearer tokens, Host/Origin checks, a rate limit.

One server serves one project (its own journal and index), so a token is
scoped to that project: a client holding it can only reach what that server
holds, and every path argument is confined to that project's root. Teams run
one server per project, on its own port or behind a reverse proxy path.

Every request needs a token, on loopback too: other accounts on the machine can
reach 127.0.0.1. The server's own token (LEDGER_AUTH_TOKEN, or a random one
kept in the data directory) may do anything; tokens made with `project-ledger
tokens create` carry a scope (`mcp/scopes.py`). Only `--no-auth`, refused off
loopback, drops the check. A request without a known token gets 401 with an
empty body: it learns nothing, not even whether the endpoint exists. Each
caller gets a budget of requests per window; past it, 429 with Retry-After.
DNS-rebinding protection is the SDK's: requests whose Host or Origin header is
not one of this server's addresses (plus any configured) are refused before
they reach a tool.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from project_ledger.errors import InvalidArgument, LedgerError
from project_ledger.maintenance.access_service import ANONYMOUS, AccessService, Caller
from project_ledger.mcp.scopes import CALLER_KEY

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
MIN_TOKEN_CHARS = 16
MCP_PATH = "/mcp"
NO_AUTH_CALLER = Caller(ANONYMOUS, "admin")  # every caller of a server started with --no-auth


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(host: str, token: str | None, no_auth: bool = False) -> None:
    """Refuse a configuration that would expose the ledger: no token off loopback, or a guessable one."""
    if no_auth and not is_loopback(host):
        raise InvalidArgument(
            f"refusing --no-auth on {host}: anyone who can reach it could read and erase this project's memories. "
            "--no-auth is only for 127.0.0.1 or ::1; leave it out to require a token"
        )
    if token is None and not no_auth and not is_loopback(host):
        raise InvalidArgument(
            f"refusing to serve on {host} without a token: anyone who can reach it could read and erase this project's "
            "memories. Set LEDGER_AUTH_TOKEN (or LEDGER_AUTH_TOKEN_FILE), e.g. to the output of `openssl rand -hex 32`"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidArgument(f"the auth token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} random ones")


class RateLimit:
    """A fixed window per caller: `requests` per `window` seconds; past it, the seconds until the window ends.

    The defaults (LEDGER_HTTP_RATE_LIMIT, 3000 a minute) are far above what a person or an agent sends, and stop
    a client caught in a loop.
    """

    def __init__(self, requests: int, window: float) -> None:
        self.requests = requests
        self.window = window
        self._windows: dict[str, tuple[float, int]] = {}

    def retry_after(self, caller: str, now: float | None = None) -> int | None:
        """Count one request by `caller`: None if it may go ahead, else whole seconds to wait (at least 1)."""
        now = time.monotonic() if now is None else now
        started, used = self._windows.get(caller, (now, 0))
        if now - started >= self.window:
            started, used = now, 0
        if used >= self.requests:
            return max(1, math.ceil(started + self.window - now))
        self._windows[caller] = (started, used + 1)
        return None


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>` of a known caller, within
    that caller's rate limit. The caller goes into the ASGI scope, where the tool guard finds it."""

    def __init__(self, app: ASGIApp, access: AccessService, limit: RateLimit, *, required: bool = True) -> None:
        self.app = app
        self.access = access
        self.limit = limit
        self.required = required

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            try:  # a scoped token is looked up in the journal: off the event loop, which serves every other client
                caller = await anyio.to_thread.run_sync(self._caller, scope)
            except LedgerError as exc:  # the journal is locked or unreadable: say so, not a traceback and a 500
                log.warning("token check failed: %s", exc)
                await _empty(send, 503, [(b"retry-after", b"5")])
                return
            if caller is None:
                await _empty(send, 401, [(b"www-authenticate", b'Bearer realm="project-ledger"')])
                return
            wait = self.limit.retry_after(caller.actor)
            if wait is not None:
                await _empty(send, 429, [(b"retry-after", str(wait).encode())])
                return
            scope[CALLER_KEY] = caller
        await self.app(scope, receive, send)

    def _caller(self, scope: Scope) -> Caller | None:
        if not self.required:
            return NO_AUTH_CALLER
        given = next((value for name, value in scope["headers"] if name == b"authorization"), b"").decode("latin-1")
        scheme, _, secret = given.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        return self.access.identify(secret.strip())


async def _empty(send: Callable[[Any], Awaitable[None]], status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [*headers, (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def http_app(
    app: MCPServer, host: str, port: int, access: AccessService, extra_hosts: list[str], extra_origins: list[str],
    *, limit: RateLimit, no_auth: bool = False,
) -> ASGIApp:
    """The ASGI app to run: the SDK's streamable-HTTP app at /mcp, behind the token check (none with `no_auth`) and
    the rate limit. The caller it identifies is what the server's ScopeGuard checks each call against."""
    names = {host, "localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {host}
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({f"{name}:{port}" for name in names} | set(extra_hosts)),
        allowed_origins=sorted({f"http://{name}:{port}" for name in names} | set(extra_origins)),
    )
    asgi: ASGIApp = app.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security, host=host)
    return BearerAuth(asgi, access, limit, required=not no_auth)


async def serve_http(
    app: MCPServer, host: str, port: int, access: AccessService, extra_hosts: list[str], extra_origins: list[str],
    *, limit: RateLimit, listener: socket.socket, no_auth: bool = False,
) -> None:
    """Run until interrupted on `listener`, which the caller bound to `host`:`port` before printing anything. The
    caller has checked the token (`check_token`) before opening the ledger."""
    import uvicorn

    asgi = http_app(app, host, port, access, extra_hosts, extra_origins, no_auth=no_auth, limit=limit)
    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])
