"""Cursor's hooks, written from Cursor's documented payloads (not checked against a running Cursor).

Every hook gets `hook_event_name`, `conversation_id` (the session) and `workspace_roots` (the first is the project)
as JSON on stdin. beforeSubmitPrompt carries `prompt` and answers whether the prompt goes on, `{"continue": true}`:
it cannot add context, so nothing is injected. afterAgentResponse carries the agent's reply as `text`; `stop` ends a
turn of the agent loop and rolls the session's gist forward. The hooks are configured in `.cursor/hooks.json`
(version 1): per event, a list of commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from project_ledger.hooks.clients.base import ClientHooks, entry_runs, handled_event, input_object, required_text
from project_ledger.hooks.event import HookEvent, HookInputError

EVENTS = ("beforeSubmitPrompt", "afterAgentResponse", "stop")
TEXT_FIELDS = {"beforeSubmitPrompt": "prompt", "afterAgentResponse": "text"}


def parse_cursor_event(payload: Any) -> HookEvent:
    payload = input_object(payload)
    name = handled_event(payload, "hook_event_name", EVENTS, "Cursor")
    session, roots = required_text(payload, "conversation_id"), payload.get("workspace_roots")
    if not isinstance(roots, list) or not roots or not isinstance(roots[0], str):
        raise HookInputError("hook input field 'workspace_roots' must list the workspace's folders")
    field_name = TEXT_FIELDS.get(name)
    text = payload.get(field_name) if field_name else None
    if field_name and not isinstance(text, str):
        raise HookInputError(f"hook input field {field_name!r} must be a string")
    if name == "beforeSubmitPrompt":
        return HookEvent(name="UserPromptSubmit", session=session, cwd=Path(roots[0]), transcript=None, prompt=text)
    return HookEvent(name="Stop", session=session, cwd=Path(roots[0]), transcript=None, reply=text, rolls_gist=name == "stop")


class Cursor(ClientHooks):
    name = "cursor"
    events = EVENTS
    injects = False
    help = """Handle one Cursor hook event, its JSON on stdin: beforeSubmitPrompt and afterAgentResponse record the turn,
    stop rolls the session's gist forward. Cursor's prompt hook cannot add context, so nothing is injected.

    \b
    Example (.cursor/hooks.json):
      {"version": 1, "hooks": {"beforeSubmitPrompt": [{"command": "project-ledger hook cursor"}],
       "afterAgentResponse": [{"command": "project-ledger hook cursor"}], "stop": [{"command": "project-ledger hook cursor"}]}}
    """

    def parse(self, payload: Any, here: Path) -> HookEvent:
        return parse_cursor_event(payload)

    def folder(self, payload: Any, here: str) -> str | None:
        roots = payload.get("workspace_roots") if isinstance(payload, dict) else None
        return roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0] else None

    def render(self, event: HookEvent, context: str | None) -> str:
        return json.dumps({"continue": True}) if event.name == "UserPromptSubmit" else ""

    def config_file(self, root: Path, shared: bool = False) -> Path:
        return root / ".cursor" / "hooks.json"

    def new_config(self) -> dict[str, Any]:
        return {"version": 1}

    def config_entries(self, command: str) -> dict[str, list[Any]]:
        return {event: [{"command": command}] for event in EVENTS}

    def is_ours(self, entry: Any) -> bool:
        return entry_runs(entry, self.mark)
