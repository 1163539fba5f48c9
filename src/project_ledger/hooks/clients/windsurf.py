"""Windsurf's Cascade hooks, written from Windsurf's documented payloads (not checked against a running Windsurf).

Every hook gets `agent_action_name` (the event), `trajectory_id` (the conversation, our session), `execution_id`,
`timestamp` and the event's own `tool_info` as JSON on stdin. pre_user_prompt carries `tool_info.user_prompt` and can
only let the prompt through or block it (exit code 2): nothing is injected. post_cascade_response carries the reply
as `tool_info.response`; Windsurf documents no end of a conversation, so each reply also rolls the gist forward, as
Cursor's `stop` does. The input names no folder: the project is found from the folder the hook runs in, the
workspace's. The hooks are configured in `.windsurf/hooks.json`: per event, a list of commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from project_ledger.hooks.clients.base import ClientHooks, entry_runs, handled_event, input_object, required_text
from project_ledger.hooks.event import HookEvent, HookInputError

EVENTS = ("pre_user_prompt", "post_cascade_response")
TEXT_FIELDS = {"pre_user_prompt": "user_prompt", "post_cascade_response": "response"}


def parse_windsurf_event(payload: Any, folder: Path) -> HookEvent:
    """The hook input as documented, for the project found from `folder`; anything else is `HookInputError`."""
    payload = input_object(payload)
    name = handled_event(payload, "agent_action_name", EVENTS, "Windsurf")
    session, info = required_text(payload, "trajectory_id"), payload.get("tool_info")
    field_name = TEXT_FIELDS[name]
    text = info.get(field_name) if isinstance(info, dict) else None
    if not isinstance(text, str):
        raise HookInputError(f"hook input field 'tool_info.{field_name}' must be a string")
    if name == "pre_user_prompt":
        return HookEvent(name="UserPromptSubmit", session=session, cwd=folder, transcript=None, prompt=text)
    return HookEvent(name="Stop", session=session, cwd=folder, transcript=None, reply=text, rolls_gist=True)


class Windsurf(ClientHooks):
    name = "windsurf"
    events = EVENTS
    injects = False
    help = """Handle one Windsurf (Cascade) hook event, its JSON on stdin: pre_user_prompt records the prompt,
    post_cascade_response the reply, and rolls the conversation's gist forward. Windsurf's prompt hook cannot add
    context, so nothing is injected; the project is the folder the hook runs in.

    \b
    Example (.windsurf/hooks.json):
      {"hooks": {"pre_user_prompt": [{"command": "project-ledger hook windsurf"}],
       "post_cascade_response": [{"command": "project-ledger hook windsurf"}]}}
    """

    def parse(self, payload: Any, here: Path) -> HookEvent:
        return parse_windsurf_event(payload, here)

    def folder(self, payload: Any, here: str) -> str | None:
        return here

    def render(self, event: HookEvent, context: str | None) -> str:
        return ""  # exit code 0 lets the prompt through; the hook prints nothing

    def log_name(self, payload: dict[str, Any]) -> str:
        return f"{self.name}/{payload['agent_action_name']}"

    def config_file(self, root: Path, shared: bool = False) -> Path:
        return root / ".windsurf" / "hooks.json"

    def config_entries(self, command: str) -> dict[str, list[Any]]:
        return {event: [{"command": command}] for event in EVENTS}

    def is_ours(self, entry: Any) -> bool:
        return entry_runs(entry, self.mark)
