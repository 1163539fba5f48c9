"""The real Claude Code CLI on a project set up with `config claude-code --write` and `--hooks --write`, against the
scripted model: what the model is handed (`tests/claude_session.py`). Skipped, with what to run, where the CLI is
not installed; `bash tests/setup.sh` installs the pinned version."""

from __future__ import annotations

import json

import pytest

from .claude_session import ClaudeProject, claude_version, copies, missing, pinned_version, texts


def test_the_installed_claude_code_is_the_pinned_version() -> None:
    if (why := missing()) is not None:
        pytest.skip(why)
    assert pinned_version() == "2.1.332"
    assert claude_version() == pinned_version()


def test_a_scripted_session_stores_through_the_server_and_records_through_the_hooks(claude_code: ClaudeProject) -> None:
    claude_code.configure(mcp=True, hooks=True)
    decision = "Retries back off 0.5 s doubling, at most 4 tries"
    run = claude_code.run(
        "Remember our retry decision",
        [
            {"tool": "ToolSearch", "input": {"query": "select:mcp__ledger__remember"}},
            {"tool": "mcp__ledger__remember", "input": {"text": decision, "kind": "decision"}},
            {"text": "Stored."},
        ],
    )
    conversation = run.conversation()
    assert len(conversation) == 3, [r["path"] for r in run.requests]
    # The remember's result reached the model in the request after its call.
    results = [json.loads(text) for text in texts(conversation[2]) if text.startswith('{"id"')]
    assert [r["created"] for r in results] == [True]
    # The hooks ran in the session, with its id, and the transcript is where Claude Code keeps it.
    events = [line.split()[2] for line in run.hooks]
    assert events[:2] == ["SessionStart", "UserPromptSubmit"] and "Stop" in events and events[-1] == "SessionEnd", run.hooks
    assert all(f"session={run.session}" in line and " ok " in line for line in run.hooks), run.hooks
    assert run.transcript.is_file() and decision in run.transcript.read_text()
    # The user's prompt reached the model once.
    assert copies(conversation[0], "Remember our retry decision") == 1


def test_several_prompts_in_one_session_keep_one_server(claude_code: ClaudeProject) -> None:
    claude_code.configure(mcp=True, hooks=True)
    run = claude_code.converse(["first prompt", "second prompt", "third prompt"])
    assert [r["session_id"] for r in run.results] == [run.session] * 3
    prompts = [line for line in run.hooks if " UserPromptSubmit " in line]
    assert len(prompts) == 3
    # One server for the session: every prompt after the first is answered by it over its socket.
    assert all(" served " in line for line in prompts[1:]), prompts
    assert [copies(body, "third prompt") for body in run.conversation()] == [0, 0, 1]
