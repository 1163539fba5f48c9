"""Which token scope each tool needs, and the MCP middleware that enforces it and audits destructive calls.

A tool missing from `TOOL_SCOPES` needs `admin`: a tool added later is closed
until someone decides who may call it. A caller's tool list leaves out what its
scope cannot call, and a call to such a tool is a tool error that says which
scope it needs. Calls that change or erase what others rely on are recorded in
the audit trail with the caller's name and the ids, never any text.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp_types import CallToolResult, ListToolsResult, TextContent

from project_ledger.errors import LedgerError
from project_ledger.maintenance.access_service import LOCAL, AccessService, Caller, covers
from project_ledger.mcp.handle import LedgerHandle

log = logging.getLogger(__name__)

CALLER_KEY = "project_ledger.caller"  # where the HTTP auth middleware leaves the caller in the ASGI scope
TOOL_SCOPES: dict[str, str] = {
    "recall": "read",
    "context": "read",
    "history": "read",
    "status": "read",
    "find_symbol": "read",
    "search_code": "read",
    "find_references": "read",
    "repo_map": "read",
    "remember": "write",
    "pin": "write",
    "unpin": "write",
    "summarize_session": "write",
    "forget": "admin",
}
AUDITED = frozenset({"forget", "pin", "unpin"})


def needed_scope(tool: str) -> str:
    return TOOL_SCOPES.get(tool, "admin")


def may_call(caller: Caller, tool: str) -> bool:
    return covers(caller.scope, needed_scope(tool))


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller the HTTP layer identified; a request without one (stdio, in memory) is this machine's user."""
    request = ctx.request
    scope = getattr(request, "scope", None)
    caller = scope.get(CALLER_KEY) if isinstance(scope, dict) else None
    return caller if isinstance(caller, Caller) else Caller(LOCAL, "admin")


def field(result: HandlerResult, name: str, wire_name: str) -> Any:
    """A result's field, from the model or from its wire form (inner middleware may have serialised it)."""
    return result.get(wire_name) if isinstance(result, dict) else getattr(result, name, None)


def audited_ids(arguments: dict[str, Any], result: HandlerResult) -> list[str]:
    """The ids a call named and, for forget, those it erased with them."""
    ids = [arguments["id"]] if isinstance(arguments.get("id"), str) else []
    structured = field(result, "structured_content", "structuredContent") or {}
    also = structured.get("also_forgotten") if isinstance(structured, dict) else None
    return ids + [i for i in also if isinstance(i, str)] if isinstance(also, list) else ids


class ScopeGuard(ServerMiddleware[Any]):
    """Filters tools/list to the caller's scope, refuses tools/call beyond it, and audits destructive calls in the
    journal of the project being served (which, over stdio, can change with the client's roots)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._access: dict[Path, AccessService] = {}

    def close(self) -> None:
        with self._lock:
            for access in self._access.values():
                access.close()
            self._access.clear()

    def _record(self, handle: object, actor: str, tool: str, ids: list[str]) -> None:
        """Runs in a worker thread: a write may wait for another process's write lock."""
        if not isinstance(handle, LedgerHandle):
            return
        paths = handle.get().paths
        with self._lock:
            access = self._access.get(paths.data_dir)
            if access is None:
                access = self._access[paths.data_dir] = AccessService.of_project(paths)
        access.record(actor, tool, ids)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            caller = caller_of(ctx)
            result = await call_next(ctx)
            if isinstance(result, ListToolsResult):
                return result.model_copy(update={"tools": [t for t in result.tools if may_call(caller, t.name)]})
            if isinstance(result, dict) and isinstance(result.get("tools"), list):  # the wire form, by the inner layers
                return {**result, "tools": [t for t in result["tools"] if may_call(caller, str(t.get("name")))]}
            return result
        if ctx.method != "tools/call" or not isinstance(ctx.params, dict):
            return await call_next(ctx)
        caller = caller_of(ctx)
        name = ctx.params.get("name")
        tool = name if isinstance(name, str) else ""
        if not may_call(caller, tool):
            text = (
                f"the token {caller.name!r} has scope {caller.scope!r}, and {tool!r} needs {needed_scope(tool)!r}; "
                "this call was not made. Ask the ledger's owner for a token with that scope."
            )
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        result = await call_next(ctx)
        if tool in AUDITED and not field(result, "is_error", "isError"):
            arguments = ctx.params.get("arguments")
            ids = audited_ids(arguments if isinstance(arguments, dict) else {}, result)
            try:
                await anyio.to_thread.run_sync(self._record, ctx.lifespan_context, caller.actor, tool, ids)
            except LedgerError as exc:  # the call is done: a failed audit write is logged, not turned into a failed call
                log.error("could not record %s by %s in the audit trail: %s", tool, caller.actor, exc)
        return result
