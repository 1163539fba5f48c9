"""`project_context.md`: the project's static context, read at the start of every session.

The file is re-read when it changes and split into blocks (paragraphs, list
items) under their headings: the context pack cuts it between blocks, and a
new memory is compared against them to tell whether it only restates one.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

TEMPLATE_OUTLINE = (
    "What this project is; Architecture; Commands (install, run, test, lint); Conventions; "
    "Decisions that hold; Constraints; Glossary; Where to look first"
)


# What the draft written by `project-ledger init` asks its reader to write, by section; a block still saying this was
# never edited. The example file's first prompt is here too, for a copy of it.
DRAFT_PROMPTS = {
    "What this project is": "One or two sentences: what it does, for whom, and what matters most.",
    "Conventions": "- Rules a linter does not enforce: naming, error handling, what tests must cover.",
    "Decisions that hold": "- Dated, with the reason. Record new ones with the `remember` tool (kind `decision`); move lasting ones here.",
    "Constraints": "- Supported versions, budgets, and what must not change without asking.",
}
_EXAMPLE_PROMPT = (
    'One or two sentences: what it does, who uses it, what matters most (e.g. "latency of the public API", '
    '"never lose an uploaded file").'
)
_PROMPTS = frozenset(" ".join(text.split()) for text in (*DRAFT_PROMPTS.values(), _EXAMPLE_PROMPT))
# A value still to be filled in: `- Run locally: \`...\``, `- \`src/\`: ...`, `- Tests: \`...\` (none detected)`, `- Languages: none detected`.
_EMPTY_VALUE = re.compile(r"^(?:[-*+]\s++)?(?:[^:]*+:\s*+)?(?:`\.\.\.`|\.\.\.|none detected)(?:\s*+\(none detected\))?$")


def missing_context_text(path: Path) -> str:
    return (
        f"There is no project context yet: {path} does not exist. Create it (a template is "
        f"`project_context.md.example` in the project-ledger distribution) with short sections: {TEMPLATE_OUTLINE}. "
        "It is read at the start of every session."
    )


def unedited_context_text(path: Path) -> str:
    return f"{path} holds only the template's prompts so far: nothing in it is filled in yet. Its sections: {TEMPLATE_OUTLINE}."


def placeholder_count(text: str | None) -> int:
    """How many blocks of the file are still the template's placeholders (0 for a missing file)."""
    return 0 if text is None else filled_blocks(text)[1]


class ProjectContextFile:
    """`project_context.md`, re-read whenever its size or modification time changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._text: str | None = None

    def read(self) -> str | None:
        """The file's text, or None when it does not exist."""
        try:
            stat = self.path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            with self._lock:
                if stamp != self._stamp:
                    self._text = self.path.read_text(encoding="utf-8", errors="replace")
                    self._stamp = stamp
                return self._text
        except FileNotFoundError:
            return None
        except OSError as exc:  # unreadable counts as missing; the server must still start
            log.warning("cannot read %s: %s", self.path, exc)
            return None


@dataclass(frozen=True)
class Block:
    """A paragraph or list item of the file, with the heading it sits under."""

    section: str
    text: str


_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+")


def blocks(text: str) -> list[Block]:
    """Paragraphs and top-level list items, each under its nearest heading (headings are blocks too).

    HTML comments are left out: they are notes to whoever edits the file (the template's guidance, say), and
    would cost tokens in every session."""
    text = _COMMENT.sub("", text)
    found: list[Block] = []
    section = ""
    current: list[str] = []

    def close() -> None:
        if current:
            found.append(Block(section, "\n".join(current)))
            current.clear()

    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            close()
            section = heading.group(1)
            found.append(Block(section, line))
        elif not line.strip():
            close()
        else:
            if _ITEM.match(line):
                close()
            current.append(line)
    close()
    return found


def is_placeholder(block: Block) -> bool:
    """Whether a block is still the drafted template's prompt or an unfilled value."""
    text = " ".join(block.text.split())
    return text in _PROMPTS or _EMPTY_VALUE.match(text) is not None


def filled_blocks(text: str) -> tuple[list[Block], int]:
    """The blocks worth sending, and how many placeholders were left out.

    Placeholders cost tokens in every session and tell an agent nothing. A heading whose section is left
    empty goes with them (a section ends at the next heading of its level or above)."""
    found = blocks(text)
    kept = [block for block in found if _HEADING.match(block.text) or not is_placeholder(block)]
    placeholders = len(found) - len(kept)
    result: list[Block] = []
    for position, block in enumerate(kept):
        heading = _HEADING.match(block.text)
        if heading is None:
            result.append(block)
            continue
        level = _level(block.text)
        for later in kept[position + 1 :]:
            if not _HEADING.match(later.text):
                result.append(block)
                break
            if _level(later.text) <= level:
                break
    return result, placeholders


def _level(heading: str) -> int:
    return len(heading) - len(heading.lstrip("#"))
