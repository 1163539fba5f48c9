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


def missing_context_text(path: Path) -> str:
    return (
        f"There is no project context yet: {path} does not exist. Create it (a template is "
        f"`project_context.md.example` in the project-ledger distribution) with short sections: {TEMPLATE_OUTLINE}. "
        "It is read at the start of every session."
    )


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
