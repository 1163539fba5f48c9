"""Claude Code's hooks, checked against Claude Code 2.1.332 (its hooks reference and a real run, see the README).

Every hook gets `session_id`, `transcript_path`, `cwd` and `hook_event_name` as JSON on stdin; SessionStart adds
`source` (startup, resume, clear, compact), UserPromptSubmit `prompt`, SubagentStop `agent_transcript_path`,
SessionEnd `reason`, PreCompact `trigger`. Context goes back as
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}` on stdout. What was said is read from the
session's transcript (`memory/transcript.py`). The hooks are configured in `.claude/settings.local.json` (or, shared
with the team, `.claude/settings.json`): per event, groups of commands. Claude Code merges those with the user's
`~/.claude/settings.json`, and `disableAllHooks` in any of them turns every hook off (`ledger_hook_events`, which the
server reads to know what a session is handed besides its own instructions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from project_ledger.hooks.clients.base import (
    ClientHooks,
    command_groups,
    group_runs,
    handled_event,
    input_object,
    optional_text,
    required_text,
)
from project_ledger.hooks.event import EVENTS, HookEvent

TIMEOUT_SECONDS = 10


def parse_event(payload: Any) -> HookEvent:
    """The hook input as documented; anything else is `HookInputError`, naming what is wrong."""
    payload = input_object(payload)
    name = handled_event(payload, "hook_event_name", EVENTS, "Claude Code")
    session, cwd = required_text(payload, "session_id"), required_text(payload, "cwd")
    transcript, agent = optional_text(payload, "transcript_path"), optional_text(payload, "agent_transcript_path")
    return HookEvent(
        name=name,
        session=session,
        cwd=Path(cwd),
        transcript=Path(transcript) if transcript else None,
        source=optional_text(payload, "source"),
        prompt=required_text(payload, "prompt") if name == "UserPromptSubmit" else optional_text(payload, "prompt"),
        agent_transcript=Path(agent) if agent else None,
        rolls_gist=name in ("PreCompact", "SessionEnd"),
    )


def hook_output(event: str, context: str | None) -> str:
    """What the hook prints: the context to add for the event, or nothing at all."""
    if not context:
        return ""
    # ASCII escapes: valid JSON whatever encoding the client gave this process's stdout.
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def transcripts_folder(root: Path) -> Path:
    """Where Claude Code keeps a project's session transcripts: its path with every other character made `-`."""
    folder = "".join(c if (c.isascii() and c.isalnum()) or c == "-" else "-" for c in str(root))
    return Path.home() / ".claude" / "projects" / folder


class ClaudeCode(ClientHooks):
    name = "claude-code"
    events = EVENTS
    injects = True
    keeps_start_pack = True
    shared_file = True
    help = """Handle one Claude Code hook event, its JSON on stdin: SessionStart, UserPromptSubmit, Stop, SubagentStop,
    PreCompact or SessionEnd.

    \b
    Example (what Claude Code runs):
      echo '{"hook_event_name":"UserPromptSubmit","session_id":"s1","cwd":"'$PWD'","prompt":"why retries?"}' \\
        | project-ledger hook claude-code
    """

    def parse(self, payload: Any, here: Path) -> HookEvent:
        return parse_event(payload)

    def folder(self, payload: Any, here: str) -> str | None:
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        return cwd if isinstance(cwd, str) and cwd else None

    def render(self, event: HookEvent, context: str | None) -> str:
        return hook_output(event.name, context)

    def log_name(self, payload: dict[str, Any]) -> str:
        return str(payload["hook_event_name"])

    def start_of(self, payload: Any) -> tuple[str, str | None] | None:
        if not isinstance(payload, dict) or payload.get("hook_event_name") != "SessionStart" or payload.get("source") == "compact":
            return None
        session, source = payload.get("session_id"), payload.get("source")
        if not isinstance(session, str) or not session.strip() or not isinstance(source, str | None):
            return None
        return session, source

    def config_file(self, root: Path, shared: bool = False) -> Path:
        return root / ".claude" / ("settings.json" if shared else "settings.local.json")

    def config_files(self, root: Path) -> tuple[Path, ...]:
        return (self.config_file(root), self.config_file(root, shared=True))

    def config_entries(self, command: str) -> dict[str, list[Any]]:
        return command_groups(EVENTS, command, TIMEOUT_SECONDS)

    def is_ours(self, entry: Any) -> bool:
        return group_runs(entry, self.mark)


def settings_files(root: Path, home: Path) -> list[Path]:
    """The files Claude Code reads hooks from for a session in `root`, the user's first."""
    return [home / ".claude" / "settings.json", *reversed(ClaudeCode().config_files(root))]


def ledger_hook_events(root: Path, home: Path) -> frozenset[str]:
    """The events whose hooks run the ledger's hook in a Claude Code session in `root`; none if hooks are turned off.
    A file that cannot be read or is not JSON adds nothing (Claude Code would not run hooks from it either)."""
    client, events = ClaudeCode(), set[str]()
    for path in settings_files(root, home):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and document.get("disableAllHooks") is True:
            return frozenset()
        events |= client.hooked_events(document)
    return frozenset(events)
