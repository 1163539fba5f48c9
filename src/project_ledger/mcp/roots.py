"""Following the client's workspace (MCP roots) when the server was started without `--root`.

After the handshake the server asks the client for its roots, and asks again
whenever the client says they changed; the first local directory among them
becomes the project. Tool calls that arrive before that first answer wait for it
(a few seconds at most), so nothing is stored in a project the client is not in.
A client on the stateless revision (2026-07-28) makes no handshake and has no
roots to give (the revision deprecates them): its calls go ahead at once, on the
working directory's project.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ClientCapabilities, NotificationParams, RootsCapability
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from project_ledger.mcp.handle import LedgerHandle
from project_ledger.project_root import from_client_roots

log = logging.getLogger(__name__)
# Roots are deprecated from protocol 2026-07-28 on; the clients that offer them today negotiate an earlier one.
warnings.filterwarnings("ignore", message=".*roots capability is deprecated.*", category=MCPDeprecationWarning)

WAIT_SECONDS = 10.0


class ClientRoots:
    """Where the project root came from, and the work of following the client's roots."""

    def __init__(self, handle: LedgerHandle, source: str, follow: bool) -> None:
        self.handle = handle
        self.source = source
        self.follow = follow
        self.note: str | None = None
        self._answered = anyio.Event()
        self._tasks: anyio.abc.TaskGroup | None = None
        if not follow:
            self._answered.set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The task group that asks for roots; a notification handler must not wait on the client itself."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()

    async def settled(self) -> None:
        """Wait until the client's first roots answer is in (or it is clear none is coming)."""
        with anyio.move_on_after(WAIT_SECONDS):
            await self._answered.wait()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: a request on the stateless revision means no `notifications/initialized` will ever start the
        roots question, so no call waits for its answer (each used to wait `WAIT_SECONDS`)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._answered.set()
        return await call_next(ctx)

    async def on_initialized(self, ctx: ServerRequestContext, _: NotificationParams) -> None:
        if not self.follow:
            return
        if not ctx.session.check_client_capability(ClientCapabilities(roots=RootsCapability())):
            self._answered.set()
            return
        self._ask(ctx.session)

    async def on_roots_changed(self, ctx: ServerRequestContext, _: NotificationParams) -> None:
        if self.follow:
            self._ask(ctx.session)

    def _ask(self, session: ServerSession) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(self._refresh, session)

    async def _refresh(self, session: ServerSession) -> None:
        try:
            result = await session.list_roots()
        except Exception as exc:  # noqa: BLE001 - a client that advertised roots but cannot list them: keep what we have
            self.note = f"the client did not list its roots ({type(exc).__name__}: {exc})"
            log.warning("%s", self.note)
            self._answered.set()
            return
        choice = from_client_roots([str(root.uri) for root in result.roots])
        if choice.root is None:
            self.note = choice.reason
            log.warning("%s; keeping %s", choice.reason, self.handle.root or "no project root")
        else:
            await self._switch(choice.root)
        self._answered.set()

    async def _switch(self, root: Path) -> None:
        try:
            switched = await anyio.to_thread.run_sync(self.handle.switch, root)
        except Exception as exc:  # this runs in the server's task group: a failure here must not end the session
            self.note = f"could not switch to the client's workspace root {root} ({type(exc).__name__}: {exc})"
            log.exception("%s", self.note)
            return
        if switched:
            log.info("serving %s, the client's workspace root", root)
        self.source, self.note = "client roots", None
