"""The real Claude Code CLI on a project set up with `config claude-code --write` and `--hooks --write`, against the
scripted model: what the model is handed (`tests/claude_session.py`). Skipped, with what to run, where the CLI is
not installed; `bash tests/setup.sh` installs the pinned version."""

from __future__ import annotations

import json
from typing import Any

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
    events = [hook.event for hook in run.hooks]
    assert events[:2] == ["SessionStart", "UserPromptSubmit"] and "Stop" in events and events[-1] == "SessionEnd", run.hooks
    assert all(hook.session == run.session and hook.state == "ok" for hook in run.hooks), run.hooks
    assert run.transcript.is_file() and decision in run.transcript.read_text()
    # The user's prompt reached the model once.
    assert copies(conversation[0], "Remember our retry decision") == 1


def test_several_prompts_in_one_session_keep_one_server(claude_code: ClaudeProject) -> None:
    claude_code.configure(mcp=True, hooks=True)
    run = claude_code.converse(["first prompt", "second prompt", "third prompt"])
    assert [r["session_id"] for r in run.results] == [run.session] * 3
    prompts = [hook for hook in run.hooks if hook.event == "UserPromptSubmit"]
    assert len(prompts) == 3
    # One server for the session: every prompt after the first is answered by it over its socket.
    assert all(hook.served for hook in prompts[1:]), prompts
    assert [copies(body, "third prompt") for body in run.conversation()] == [0, 0, 1]


CONTEXT = "# Billing\n\n## Conventions\n- Money is integer cents; never floats.\n"
RULE = "Money is integer cents"  # a line of project_context.md: it reaches the model only in a start pack
PIN = "Invoices are immutable once sent; a correction is a credit note"
BRIEF = "reach you once per session, from the ledger's SessionStart hook"


def start_pack_copies(body: dict[str, Any]) -> tuple[int, int]:
    """How many times the project context and the pin reach the model in one request."""
    return copies(body, RULE), copies(body, PIN)


def injection(body: dict[str, Any]) -> str:
    """The newest prompt injection in a request (Claude Code puts it in one block with other hook context)."""
    head, foot = "Memories from the project ledger that may bear on this prompt", "Full text: the ledger's `recall` tool"
    found = [text[text.rindex(head) :] for text in texts(body) if head in text]
    assert found, "no prompt injection reached the model"
    return found[-1].split(foot, 1)[0]


def pinned_project(claude_code: ClaudeProject) -> str:
    """project_context.md, a pin, and a decision that is not pinned (so only an injection can bring it); its id."""
    (claude_code.root / "project_context.md").write_text(CONTEXT)
    claude_code.ledger("pin", claude_code.ledger("remember", PIN, "--kind", "decision").strip())
    return claude_code.ledger("remember", "Invoice PDFs are rendered by the worker queue, never inline", "--kind", "decision").strip()


def test_with_the_server_and_the_hooks_the_start_pack_reaches_the_model_once_per_session(claude_code: ClaudeProject) -> None:
    decision = pinned_project(claude_code)
    claude_code.configure(mcp=True, hooks=True)

    first = claude_code.run("Where are invoice PDFs rendered?")
    assert [start_pack_copies(body) for body in first.conversation()] == [(1, 1)]
    assert copies(first.conversation()[0], BRIEF) == 1  # the server's instructions point at the hook instead

    # Continued twice: the history holds the pack; SessionStart hands nothing, the prompt hook injects none of it.
    for _ in range(2):
        again = claude_code.run("Are invoice PDFs ever edited once an invoice is sent?", continuing=True)
        assert again.session == first.session
        assert [start_pack_copies(body) for body in again.conversation()] == [(1, 1)]
        assert any(hook.event == "SessionStart" and hook.kept for hook in again.hooks), again.hooks
    injected = injection(again.conversation()[0])
    assert decision in injected and PIN not in injected  # the injection still brings the rest
    resumed = claude_code.run("Who renders credit notes?", resume=first.session)
    assert resumed.session == first.session and [start_pack_copies(body) for body in resumed.conversation()] == [(1, 1)]

    # A compaction replaces the history with a summary: the pack comes once more, leading with the session's gist.
    compacted = claude_code.run("/compact", continuing=True)
    assert any(r["compaction"] for r in compacted.requests)
    assert all(hook.state == "ok" for hook in compacted.hooks), compacted.hooks  # its summarizer leaves no transcript
    after = claude_code.run("What is the money rule?", continuing=True)
    body = after.conversation()[0]
    assert start_pack_copies(body) == (1, 1) and copies(body, BRIEF) == 1
    assert copies(body, "This session so far (its gist in the project ledger") == 1
    gist = next(line for line in texts(body) if "This session so far" in line).split("ledger, ", 1)[1].split(")", 1)[0]
    assert copies(body, f"id={gist} ") == 0  # the gist it leads with is not in the pack's gists again


@pytest.mark.parametrize("mcp", [True, False], ids=["server-only", "hooks-only"])
def test_with_one_channel_the_start_pack_reaches_the_model_once_through_it(claude_code: ClaudeProject, mcp: bool) -> None:
    pinned_project(claude_code)
    claude_code.configure(mcp=mcp, hooks=not mcp)
    first = claude_code.run("Where are invoice PDFs rendered?")
    assert [start_pack_copies(body) for body in first.conversation()] == [(1, 1)]
    assert copies(first.conversation()[0], "MCP Server Instructions") == int(mcp)
    again = claude_code.run("And credit notes?", continuing=True)
    assert [start_pack_copies(body) for body in again.conversation()] == [(1, 1)]


def test_a_decision_asked_back_comes_first_without_echoes_and_within_the_budget_as_the_model_is_handed_it(
    claude_code: ClaudeProject,
) -> None:
    """Issue 30 through the real CLI: a session stores a decision, a later one asks for it back and recalls it."""
    claude_code.configure(mcp=True, hooks=True)
    decision = "Payment gateway client retries back off 0.5 s doubling, at most 4 tries, only on 5xx"
    claude_code.run(
        "We decided the retry policy for the payment gateway client. Remember it.",
        [
            {"tool": "ToolSearch", "input": {"query": "select:mcp__ledger__remember,mcp__ledger__recall"}},
            {"tool": "mcp__ledger__remember", "input": {"text": decision, "kind": "decision"}},
            {"text": "Stored."},
        ],
    )
    question = "Remind me, what is our retry policy for the payment gateway client?"
    query = {"query": "payment gateway client retry policy", "k": 3, "token_budget": 200}
    later = claude_code.run(
        question,
        [
            {"tool": "ToolSearch", "input": {"query": "select:mcp__ledger__recall"}},
            {"tool": "mcp__ledger__recall", "input": query},
            {"text": "At most 4 tries."},
        ],
    )
    handed = [text for text in texts(later.conversation()[-1]) if text.startswith('{"about"')]
    assert len(handed) == 1, texts(later.conversation()[-1])
    result = json.loads(handed[0])
    # The decision first; none of the ledger's own calls was recorded as a turn, so none comes back.
    assert result["results"][0]["text"] == decision
    assert not any(hit["text"].startswith("[tool]") for hit in result["results"])
    # What the model was handed is what `tokens` counts, within the budget.
    from project_ledger.text.tokens import TokenCounter

    assert result["tokens"] == TokenCounter().count(handed[0]) <= query["token_budget"]
    assert "not instructions" in result["about"] and "null" not in handed[0]
    exported = [json.loads(line) for line in claude_code.ledger("export").splitlines()[1:]]
    assert not [m["text"] for m in exported if m.get("kind") == "turn" and "mcp__ledger__" in m.get("text", "")]
    assert not [m["text"] for m in exported if m.get("kind") == "turn" and "ToolSearch" in m.get("text", "")]
