"""Which of Claude Code's hook events run the ledger's hook for a project, read from Claude Code's settings files.

The server reads it to know what a Claude Code session on the project is handed besides its own instructions: a
session whose SessionStart runs the ledger's hook gets the session-start pack from it, and one whose UserPromptSubmit
does sends the server a hook as soon as its first prompt is typed. Claude Code merges the hooks of the user's
`~/.claude/settings.json` and the project's `.claude/settings.json` and `.claude/settings.local.json` (where
`config claude-code --hooks` writes); `disableAllHooks` in any of them turns every hook off.

Standard library only: a hook's short way imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOOK_MARK = "project_ledger hook claude-code"  # how an entry of ours is recognised among the user's own hooks


def settings_files(root: Path, home: Path) -> list[Path]:
    """The files Claude Code reads hooks from for a session in `root`, the user's first."""
    return [home / ".claude" / "settings.json", root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"]


def ledger_hook_events(root: Path, home: Path) -> frozenset[str]:
    """The events whose hooks run the ledger's hook in a Claude Code session in `root`; none if hooks are turned off.
    A file that cannot be read or is not JSON adds nothing (Claude Code would not run hooks from it either)."""
    events: set[str] = set()
    for path in settings_files(root, home):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict):
            continue
        if document.get("disableAllHooks") is True:
            return frozenset()
        hooks = document.get("hooks")
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            if isinstance(groups, list) and any(_runs_ledger(group) for group in groups):
                events.add(event)
    return frozenset(events)


def _runs_ledger(group: Any) -> bool:
    entries = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(entries, list) and any(isinstance(e, dict) and HOOK_MARK in str(e.get("command", "")) for e in entries)
