"""MCP over stdio, where every request gets an answer, even one the SDK cannot read.

The SDK drops a line it cannot parse (not JSON, or JSON its strict parser
refuses, such as a string holding an unpaired UTF-16 surrogate like `"\\ud800"`)
without replying, and the client then waits for an answer that never comes. Here
such a line is answered with a JSON-RPC error: for the request's id when the line
is JSON that names one (Python's own parser reads the surrogate escapes the
strict one refuses), otherwise for id null, as JSON-RPC 2.0 asks of a parse error. Upstream:
https://github.com/modelcontextprotocol/python-sdk/issues/2751 (its fixes, pull requests 2755 and 2766, were closed).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping

import anyio
from anyio.abc import ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from pydantic import ValidationError

from project_ledger.mcp import sdk

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_HEAD_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _refusal(exc: Exception) -> JSONRPCError:
    """The error to send back for a line that could not be read as a message."""
    error: Mapping[str, object] = exc.errors()[0] if isinstance(exc, ValidationError) and exc.errors() else {}
    raw = error.get("input")
    raw = raw if isinstance(raw, str) else ""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        request_id = parsed.get("id")
    else:  # unparseable here too (say, nested too deeply): take an id from the head of the line, if one is there
        found = _HEAD_ID.search(raw[:200])
        request_id = json.loads(found.group(1)) if found else None
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        request_id = None
    reason = str(error.get("msg") or exc)
    if "\\ud" in raw.lower() and parsed is not None:
        code, message = INVALID_REQUEST, "the request holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff); send valid Unicode"
    elif parsed is None and "recursion" not in reason:
        code, message = PARSE_ERROR, f"parse error: the line is not JSON ({reason})"
    else:
        code, message = INVALID_REQUEST, f"not a valid JSON-RPC message: {reason}"
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


async def screen(
    incoming: anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
    forward: ObjectSendStream[SessionMessage | Exception],
    replies: ObjectSendStream[SessionMessage],
) -> None:
    async with forward:
        async for item in incoming:
            if isinstance(item, Exception):
                try:
                    refusal = _refusal(item)
                except Exception:  # the screen must outlive any line; answer plainly
                    log.exception("could not describe an unreadable message")
                    refusal = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="unreadable message"))
                log.warning("unreadable message answered with error %s: %s", refusal.error.code, refusal.error.message)
                await replies.send(SessionMessage(refusal))
            else:
                await forward.send(item)


async def serve_stdio(app: MCPServer) -> None:
    """`app.run("stdio")`, with unreadable lines answered instead of dropped."""
    async with stdio_server() as (incoming, replies):
        forward, screened = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(screen, incoming, forward, replies)
            await sdk.run(app, screened, replies)
            tasks.cancel_scope.cancel()
