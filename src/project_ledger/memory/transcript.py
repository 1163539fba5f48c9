"""Claude Code's session transcript, read: what was said, as turns, from where the last read stopped.

The transcript is JSON lines: `user` lines (a string, or text, image and `tool_result` blocks), `assistant` lines
(text, `tool_use` and thinking blocks; one line per block, sharing `message.id`), and many other types that are
skipped. Pure functions, but `transcript_session`, which reads a file's first lines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project_ledger.errors import LedgerError
from project_ledger.text.dialogue_act import TOOL_PREFIX, is_plumbing

TOOL_LINE_CHARS = 160  # a tool call is stored as one short line: its name and what it worked on
# The input field that best says what a tool call worked on, in order of preference.
TOOL_TARGETS = ("file_path", "notebook_path", "path", "command", "pattern", "url", "query", "description", "prompt")


@dataclass(frozen=True)
class SpokenTurn:
    role: str  # user or assistant
    text: str
    said_at: str | None
    session: str | None
    subagent: bool = False


@dataclass
class TranscriptChunk:
    """Turns read from a transcript, and the byte offset just past the last complete line they came from."""

    turns: list[SpokenTurn] = field(default_factory=list)
    end: int = 0
    unreadable: int = 0  # complete lines that were not JSON


def tool_line(block: dict[str, Any]) -> str | None:
    """A tool call as one short line: `[tool] Name: what it worked on`; its output is never stored. None for
    plumbing (`dialogue_act.is_plumbing`): loading tools, the agent's scratch list, the ledger's own calls.

    What is left says what happened to the project (a test run, a file read or edited, a search, a subagent's
    task), which a later session may ask about; recall ranks such a line as a log, not an answer."""
    name = str(block.get("name") or "tool")
    if is_plumbing(name):
        return None
    given = block.get("input")
    arguments = given if isinstance(given, dict) else {}
    target = next((arguments[key] for key in TOOL_TARGETS if isinstance(arguments.get(key), str) and arguments[key].strip()), "")
    line = f"{TOOL_PREFIX}{name}: {' '.join(target.split())}" if target else f"{TOOL_PREFIX}{name}"
    return line if len(line) <= TOOL_LINE_CHARS else line[: TOOL_LINE_CHARS - 1] + "…"


def _user_text(entry: dict[str, Any], content: Any) -> str:
    """What the user typed: text, never tool results or images; nothing for the client's own meta messages."""
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isSidechain"):
        return ""  # a subagent's "user" is the main agent's task, already a tool line of the main agent
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    else:
        return ""
    text = "\n".join(p for p in parts if isinstance(p, str)).strip()
    # Slash commands and their local output are the client talking to itself.
    return "" if text.startswith(("<command-", "<local-command-")) else text


def _assistant_parts(content: Any) -> list[str]:
    """Text and one line per tool call; thinking blocks are left out."""
    if isinstance(content, str):
        return [content.strip()] if content.strip() else []
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            parts.append(block["text"].strip())
        elif block.get("type") == "tool_use" and (line := tool_line(block)) is not None:
            parts.append(line)
    return parts


def read_transcript(data: bytes, start: int = 0, roles: Sequence[str] = ("user", "assistant")) -> TranscriptChunk:
    """The turns of `roles` in `data[start:]`, up to its last complete line.

    A last line without its newline is still being written (or was cut off): it is left for the next read, which
    starts at `end`. The content blocks of one assistant message (one line each, sharing `message.id`) make one
    turn. Lines that are not JSON, and line types this does not know, are skipped.
    """
    stop = data.rfind(b"\n", start) + 1
    chunk = TranscriptChunk(end=start if stop == 0 else stop)
    pending: tuple[str | None, SpokenTurn] | None = None  # the assistant message being assembled

    def flush() -> None:
        nonlocal pending
        if pending is not None and pending[1].text:
            chunk.turns.append(pending[1])
        pending = None

    for raw in data[start:chunk.end].splitlines():
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            chunk.unreadable += 1
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        found = entry.get("message")
        message = found if isinstance(found, dict) else {}
        said_at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        session = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None
        if entry["type"] == "user":
            text = _user_text(entry, message.get("content"))
            if text:  # a tool result (no text) does not end the assistant's message: its next block may follow
                flush()
                if "user" in roles:
                    chunk.turns.append(SpokenTurn("user", text, said_at, session))
            continue
        if "assistant" not in roles:
            continue
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        parts = _assistant_parts(message.get("content"))
        if pending is not None and message_id is not None and pending[0] == message_id:
            turn = pending[1]
            pending = (message_id, SpokenTurn("assistant", "\n".join([turn.text, *parts]).strip(), turn.said_at, turn.session, turn.subagent))
            continue
        flush()
        pending = (message_id, SpokenTurn("assistant", "\n".join(parts), said_at, session, bool(entry.get("isSidechain"))))
    flush()
    return chunk


def transcript_session(path: Path) -> str:
    """The session a Claude Code transcript belongs to: the `sessionId` of its first line that has one, else its
    file name without `.jsonl`."""
    try:
        with path.open("rb") as handle:
            for _, raw in zip(range(50), handle, strict=False):
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str) and entry["sessionId"]:
                    return entry["sessionId"]
    except OSError as exc:
        raise LedgerError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    return path.stem
