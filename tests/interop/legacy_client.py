"""What a client built on the legacy (1.x) Python MCP SDK sees of project-ledger.

Usage (with the legacy venv's interpreter, see tests/setup.sh):

    tests/interop/.venv-mcp1/bin/python tests/interop/legacy_client.py [--protocol-version V] <server command> [args...]

Starts the server over stdio with the 1.x `stdio_client` (from the working directory, with the SDK's default
environment plus the LEDGER_* settings this script was given, as a client's `env` config would add), goes through
an agent's session with the 1.x `ClientSession` and prints one JSON object of what it observed on stdout. It judges
nothing itself: tests/test_interop.py asserts on the report. If a step raises, the report says which step and why,
and the exit code is 1. The server's stderr passes through to this script's.

Without `--protocol-version` the session initializes as the SDK does (offering its own latest revision). With it,
the handshake offers that older revision instead, as a client pinned to an older SDK would: the same
`initialize` request and `notifications/initialized`, sent through the session's public `send_request` and
`send_notification`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any, TypeVar

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
from pydantic import AnyUrl

REMEMBERED = "Legacy interop check: the billing worker retries three times, then parks the job."
QUERY = "billing worker retries"
T = TypeVar("T")


class Session:
    """The steps of the session, each named in the report if it fails."""

    def __init__(self, client: ClientSession, report: dict[str, Any]) -> None:
        self.client = client
        self.report = report
        report["step_ms"] = {}

    async def step(self, name: str, action: Callable[[], Awaitable[T]]) -> T:
        self.report["failed_step"] = name
        started = time.perf_counter()
        try:
            return await action()
        finally:
            self.report["step_ms"][name] = round((time.perf_counter() - started) * 1000)

    async def initialize(self, protocol_version: str | None) -> types.InitializeResult:
        if protocol_version is None:
            return await self.client.initialize()
        request = types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocolVersion=protocol_version,
                capabilities=types.ClientCapabilities(),
                clientInfo=types.Implementation(name="project-ledger-interop-mcp1", version="1.0.0"),
            )
        )
        result = await self.client.send_request(types.ClientRequest(request), types.InitializeResult)
        await self.client.send_notification(types.ClientNotification(types.InitializedNotification()))
        return result

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A call that must succeed: its structured content (None if the server sent none) and its text."""
        result = await self.client.call_tool(tool, arguments)
        if result.isError:
            raise RuntimeError(f"{tool} failed: {text_of(result.content)}")
        return {"structured": result.structuredContent, "text": text_of(result.content)}

    async def attempt(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A call that may fail: how the server answered it (an error result or a JSON-RPC error)."""
        try:
            result = await self.client.call_tool(tool, arguments)
        except McpError as exc:
            return {"answer": "jsonrpc-error", "code": exc.error.code, "message": exc.error.message}
        return {"answer": "result", "is_error": result.isError, "text": text_of(result.content)}


def text_of(content: list[Any]) -> str:
    return "\n".join(part.text for part in content if isinstance(part, types.TextContent))


async def run(command: str, args: list[str], protocol_version: str | None, report: dict[str, Any]) -> None:
    settings = {name: value for name, value in os.environ.items() if name.startswith("LEDGER_")}
    params = StdioServerParameters(command=command, args=args, env=settings)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        session = Session(client, report)
        init = await session.step("initialize", lambda: session.initialize(protocol_version))
        report["negotiated_protocol_version"] = init.protocolVersion
        report["server_info"] = init.serverInfo.model_dump(mode="json", exclude_none=True)
        report["instructions"] = init.instructions

        tools = (await session.step("list_tools", client.list_tools)).tools
        report["tool_names"] = [tool.name for tool in tools]
        report["tools"] = {
            tool.name: {
                "input_schema": tool.inputSchema,
                "has_output_schema": tool.outputSchema is not None,
                "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) if tool.annotations else None,
            }
            for tool in tools
            if tool.name in ("remember", "recall")
        }

        report["remember"] = await session.step("remember", lambda: session.call("remember", text=REMEMBERED, kind="constraint"))
        report["remember"]["sent"] = REMEMBERED
        report["recall"] = await session.step("recall", lambda: session.call("recall", query=QUERY, k=3))

        resource = await session.step("read_resource", lambda: client.read_resource(AnyUrl("ledger://project-context")))
        report["project_context"] = [
            {"uri": str(part.uri), "mimeType": part.mimeType, "text": getattr(part, "text", None)} for part in resource.contents
        ]
        prompt = await session.step("get_prompt", lambda: client.get_prompt("session_start"))
        report["session_start"] = [{"role": m.role, "text": getattr(m.content, "text", None)} for m in prompt.messages]

        report["bad_call"] = await session.step("bad call", lambda: session.attempt("recall", query=QUERY, k="many"))
        report["after_bad_call"] = await session.step("recall after the bad call", lambda: session.call("recall", query=QUERY, k=1))
        del report["failed_step"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol-version", help="offer this revision in the handshake instead of the SDK's latest")
    parser.add_argument("command")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    sdk = {
        "version": version("mcp"),
        "offered_protocol_version": options.protocol_version or types.LATEST_PROTOCOL_VERSION,
        "supported_protocol_versions": list(SUPPORTED_PROTOCOL_VERSIONS),
    }
    report: dict[str, Any] = {"sdk": sdk}
    try:
        anyio.run(run, options.command, options.args, options.protocol_version, report)
        report["ok"] = True
    except Exception as exc:  # an ExceptionGroup from the SDK's task groups included: report it, whatever it is
        report["ok"] = False
        report["error"] = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ExceptionGroup):
            report["error"] += "; " + "; ".join(f"{type(e).__name__}: {e}" for e in exc.exceptions)
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
