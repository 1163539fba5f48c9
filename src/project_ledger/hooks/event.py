"""One hook call in the ledger's own words, whatever client made it: each client's adapter (`hooks/clients/`) reads
its input into a `HookEvent`, and the conversation service (`memory/conversation.py`) handles that.

The events are named as Claude Code names them; another client's adapter maps its own onto them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")


class HookInputError(ValueError):
    """The hook's input is not what the client documents."""


@dataclass(frozen=True)
class HookEvent:
    """One hook call: the fields every event has, and the event's own."""

    name: str  # one of EVENTS
    session: str
    cwd: Path  # the folder the project is found from
    transcript: Path | None  # a Claude Code transcript, read from where the last call stopped
    source: str | None = None  # SessionStart: startup, resume, clear or compact
    prompt: str | None = None  # UserPromptSubmit
    agent_transcript: Path | None = None  # SubagentStop, where the client names the subagent's own transcript
    reply: str | None = None  # the agent's message, where the client hands it over instead of a transcript to read
    rolls_gist: bool = False  # the event closes a stretch of the session: its gist is written or rolled forward

    @property
    def reply_transcript(self) -> Path | None:
        """Where the agent's reply is read from: a subagent's own transcript when the client names it, else the
        session's."""
        return self.agent_transcript if self.name == "SubagentStop" and self.agent_transcript else self.transcript
