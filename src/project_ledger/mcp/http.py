"""MCP over streamable HTTP, for a ledger shared by a team: a bearer token, and Host/Origin checks.

One server serves one project (its own journal and index), so a token is
scoped to that project: a client holding it can only reach what that server
holds, and every path argument is confined to that project's root. Teams run
one server per project, on its own port or behind a reverse proxy path.

On a loopback address the token is optional (set one anyway if other users
share the machine); on any other address the server refuses to start without
one. A request without the right token gets 401 with an empty body: it learns
nothing, not even whether the endpoint exists. DNS-rebinding protection is the
SDK's: requests whose Host or Origin header is not one of this server's
addresses (plus any configured) are refused before they reach a tool.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from project_ledger.errors import InvalidArgument

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
MIN_TOKEN_CHARS = 16
MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_token(host: str, token: str | None) -> None:
    """Refuse a configuration that would expose the ledger: no token off loopback, or a guessable one."""
    if token is None and not is_loopback(host):
        raise InvalidArgument(
            f"refusing to serve on {host} without a token: anyone who can reach it could read and erase this project's "
            "memories. Set LEDGER_AUTH_TOKEN (or LEDGER_AUTH_TOKEN_FILE), e.g. to the output of `openssl rand -hex 32`"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidArgument(f"the auth token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} random ones")


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] == "http":
            given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):  # constant time: the token cannot be guessed byte by byte
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"www-authenticate", b'Bearer realm="project-ledger"'), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def http_app(app: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str], extra_origins: list[str]) -> ASGIApp:
    """The ASGI app to run: the SDK's streamable-HTTP app at /mcp, behind the token check when there is a token."""
    names = {host, "localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {host}
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({f"{name}:{port}" for name in names} | set(extra_hosts)),
        allowed_origins=sorted({f"http://{name}:{port}" for name in names} | set(extra_origins)),
    )
    asgi: ASGIApp = app.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security, host=host)
    return BearerAuth(asgi, token) if token is not None else asgi


async def serve_http(app: MCPServer, host: str, port: int, token: str | None, extra_hosts: list[str], extra_origins: list[str]) -> None:
    """Run until interrupted. The caller has checked the token (`check_token`) before opening the ledger."""
    import uvicorn

    config = uvicorn.Config(
        http_app(app, host, port, token, extra_hosts, extra_origins), host=host, port=port, log_level="warning", lifespan="on"
    )
    await uvicorn.Server(config).serve()
