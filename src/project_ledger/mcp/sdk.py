"""The one module that reaches into the MCP SDK's private parts (mcp 2.3).

`MCPServer` keeps its low-level `Server` to itself (`_lowlevel_server`; its own `run()` goes through that attribute
too), and offers no public way to do three things the server needs:
- observe a client's notification (`notifications/initialized`, `notifications/roots/list_changed`);
- run a session over streams of our own: stdio screened so that a line the SDK cannot parse is answered, not dropped
  (https://github.com/modelcontextprotocol/python-sdk/issues/2751; `mcp/stdio.py`), and the shared server's socket
  (`mcp/shared.py`);
- enter the lifespan once for many sessions (the shared server).

When the SDK offers public ways, only this module changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.message import SessionMessage
from pydantic import BaseModel

P = TypeVar("P", bound=BaseModel)


def _server(app: MCPServer) -> Server[Any]:
    return app._lowlevel_server


def on_notification(
    app: MCPServer, method: str, params: type[P], handler: Callable[[ServerRequestContext, P], Awaitable[None]]
) -> None:
    """Call `handler` for each notification `method` a client sends."""
    _server(app).add_notification_handler(method, params, handler)


def initialization_options(app: MCPServer) -> InitializationOptions:
    return _server(app).create_initialization_options()


async def run(
    app: MCPServer, incoming: ObjectReceiveStream[SessionMessage | Exception], outgoing: ObjectSendStream[SessionMessage]
) -> None:
    """One session over the streams, inside the app's lifespan: what `app.run("stdio")` does over its own."""
    server = _server(app)
    await server.run(incoming, outgoing, server.create_initialization_options())


@asynccontextmanager
async def lifespan(app: MCPServer) -> AsyncIterator[Any]:
    """The app's lifespan, entered once; its state is what `serve_session` hands each session."""
    server = _server(app)
    async with server.lifespan(server) as state:
        yield state


async def serve_session(
    app: MCPServer,
    incoming: ObjectReceiveStream[SessionMessage | Exception],
    outgoing: ObjectSendStream[SessionMessage],
    state: Any,
    options: InitializationOptions,
) -> None:
    """One session over the streams, inside a lifespan entered already (`lifespan`), with these options."""
    await serve_dual_era_loop(_server(app), incoming, outgoing, lifespan_state=state, init_options=options)
