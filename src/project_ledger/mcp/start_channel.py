"""Which channel hands a Claude Code session the session-start pack when both the MCP server and the hooks are on.

The pack (guide, project_context.md, pins, newest gists) can reach a Claude Code session two ways: as this server's
instructions (Claude Code 2.1.332 puts them in a `# MCP Server Instructions` block of the first request) and as the
SessionStart hook's context. With both configured the model got it twice, and a third time on each `--continue`.
The hook carries it, and the instructions shrink to a line, because:

- it is made when the session starts, and again when a compaction drops it, leading with this session's gist; the
  instructions Claude Code puts back after a compaction are the ones this process made when it started;
- the hook records what each session was handed (`session_packs.py`), which the prompt hook reads to inject none of
  it again; the server is not told the session's id (on `--continue` its environment names another);
- the hook knows when a session is continued or resumed and hands nothing then (Claude Code does not repeat the
  instructions either, but with the pack made anew by a hook, both would come back).

A client with only the MCP server (any other client, or Claude Code without the ledger's SessionStart hook in its
settings) gets the pack in the instructions as before; a Claude Code session with only the hooks gets it from
SessionStart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types import CLIENT_INFO_META_KEY

from project_ledger.hooks.clients.claude_code import ledger_hook_events
from project_ledger.mcp.handle import LedgerHandle

CLAUDE_CODE = "claude-code"  # the `clientInfo.name` Claude Code sends
HANDSHAKES = ("initialize", "server/discover")  # the answers that carry the instructions, legacy and 2026-07-28
BRIEF = (
    "project-ledger keeps this project's memory across sessions: `recall` before re-deciding or re-investigating "
    "something, `remember` decisions, definitions, constraints and todos. The project's context, pinned memories and "
    "newest session gists reach you once per session, from the ledger's SessionStart hook."
)


class StartPackChannel:
    """Middleware: the handshake's instructions are `BRIEF` for a Claude Code client whose project's settings run the
    ledger's SessionStart hook (and whose hook makes a pack: `start_tokens` above 0), the pack otherwise."""

    def __init__(self, handle: LedgerHandle, start_tokens: int, home: Callable[[], Path] = Path.home) -> None:
        self.handle = handle
        self.start_tokens = start_tokens
        self.home = home

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in HANDSHAKES or not isinstance(result, dict) or not result.get("instructions"):
            return result
        root = self.handle.root
        if client_name(ctx) != CLAUDE_CODE or root is None or self.handle.error is not None or self.start_tokens <= 0:
            return result
        if "SessionStart" not in await anyio.to_thread.run_sync(ledger_hook_events, root, self.home()):
            return result
        return {**result, "instructions": BRIEF}


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The client's name: in `initialize`'s `clientInfo`, or (2026-07-28) in every request's `_meta`."""
    params = ctx.params or {}
    meta = params.get("_meta")
    info = params.get("clientInfo") if ctx.method == "initialize" else meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None
