"""The MCP surface (`mcp/app.py`) through an in-memory client: what the tools tell clients about themselves, how a
result and an error reach the model, and what a server on the service reads and writes.

These use the fixture chain `settings` -> `ledger` -> `client`: a throwaway project, the service on it with the
test process's shared model, and `mcp.Client` on `create_server(settings, ledger=ledger)`.
"""

from __future__ import annotations

import pytest
from mcp import Client

from project_ledger.config import Settings
from project_ledger.memory.service import LedgerService

from .conftest import Project, connect

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = {"remember", "recall", "context", "history", "pin", "unpin", "forget", "summarize_session", "status"}
CODE_TOOLS = {"find_symbol", "search_code", "find_references", "repo_map"}


async def test_the_server_names_itself_and_starts_sessions_with_the_project_context(client: Client, settings: Settings) -> None:
    assert client.server_info is not None
    assert (client.server_info.name, client.server_info.title) == ("project-ledger", "Project Ledger")
    assert client.instructions is not None and "project_context.md.example" in client.instructions
    prompt = await client.get_prompt("session_start")
    assert prompt.messages[0].content.text == client.instructions
    assert settings.root is not None
    assert str(settings.root / "project_context.md") in client.instructions


async def test_each_tool_tells_clients_whether_it_reads_writes_or_erases(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == MEMORY_TOOLS | CODE_TOOLS
    read_only = {name for name, tool in tools.items() if tool.annotations and tool.annotations.read_only_hint}
    assert read_only == {"recall", "context", "history", "status"} | CODE_TOOLS
    assert tools["forget"].annotations.destructive_hint is True
    assert tools["remember"].annotations.destructive_hint is False
    assert tools["pin"].annotations.idempotent_hint is True and tools["unpin"].annotations.idempotent_hint is True
    assert all(tool.output_schema for tool in tools.values()), "every tool returns structured content"


async def test_the_code_tools_are_not_offered_when_the_code_index_is_off(project: Project) -> None:
    project.env["LEDGER_CODE_INDEX"] = "false"
    async with connect(project) as ledger:
        assert {tool.name for tool in (await ledger.session.list_tools()).tools} == MEMORY_TOOLS


async def test_a_result_is_structured_for_the_client_and_summed_up_in_text_for_the_model(client: Client) -> None:
    result = await client.call_tool("remember", {"text": "Deploys go out on Tuesdays.", "kind": "decision"})
    assert not result.is_error and result.structured_content is not None
    memory_id = result.structured_content["id"]
    assert result.content[0].text.startswith(f"remembered as {memory_id}")  # then notes, if any: "; near-duplicate check ..."
    pinned = await client.call_tool("pin", {"id": memory_id})
    assert pinned.structured_content == {"id": memory_id, "ok": True} and pinned.content[0].text == f"pinned {memory_id}"


async def test_a_mistake_the_model_can_fix_is_a_tool_error_it_reads(client: Client) -> None:
    unknown = await client.call_tool("pin", {"id": "m-nope"})
    assert unknown.is_error and "no memory with id 'm-nope'" in unknown.content[0].text
    assert unknown.structured_content is None
    invalid = await client.call_tool("recall", {"query": "anything", "k": 0})
    assert invalid.is_error and "k=0 is out of range: give 1 to 100 (LEDGER_MAX_K)" in invalid.content[0].text


async def test_what_the_client_writes_is_what_the_service_holds(client: Client, ledger: LedgerService) -> None:
    for text in ("Invoices are exported nightly.", "Refunds go to the original card."):
        assert not (await client.call_tool("remember", {"text": text, "kind": "decision", "pinned": True})).is_error
    status = ledger.status()
    assert status.counts == {"decision": 2} and status.pinned == 2
    pinned = await client.read_resource("ledger://pinned")
    assert (
        "Invoices are exported nightly." in pinned.contents[0].text
        and "Refunds go to the original card." in pinned.contents[0].text
    )
