"""The name a line opens with: a chat log's speaker (`[8 May 2023] Caroline: ...`, `Caroline: ...`) or a heading
(`Settings: ...`).

A question that names a person is mostly about what that person said, and one that names a topic about the lines
headed by it; the words alone cannot tell, since the other speaker's lines say the name too ("Thanks, Caroline!").
"""

from __future__ import annotations

import re

# Anchored and bounded, so linear in the head of the line whatever follows: an optional bracketed time (a digit
# within at most 80 characters; a tool's `[tool] Bash:` log line has none), then one to three capitalised words of at
# most 30 characters each, then a colon and a space.
_HEAD = re.compile(r"(?:\[(?=[^\]\n]{0,80}\d)[^\]\n]{1,80}\]\s{0,4})?([A-Z][\w'.-]{0,29})(?: [A-Z][\w'.-]{0,29}){0,2}:\s")


def head_name(text: str) -> str | None:
    """The first word of the name `text` opens with, lower-cased; None when it opens with none."""
    found = _HEAD.match(text)
    return found.group(1).lower() if found else None


def names_head(query_words: frozenset[str], text: str) -> bool:
    """Whether a query of these (lower-cased) words names what `text` opens with."""
    name = head_name(text)
    return name is not None and name in query_words
