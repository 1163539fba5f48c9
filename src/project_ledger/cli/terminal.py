"""What the CLI prints: stored text and names with their control characters shown, never sent raw.

A memory, a tag, a file path or a token name can hold any character, and what
is stored stays byte for byte. Printed raw to a terminal, some of them act:
BEL rings, BS and a lone CR overwrite what was shown, ESC starts a sequence that
can recolour, retitle or hide the screen (C1's CSI is the same in one byte), NUL
and DEL vanish, and bidi overrides show a line in another order than its text.
Human output writes each as an escape (`\\x07`, `\\u202e`); a backslash already
in the text stays as it is, so `--json` is the way to tell the two apart. JSON
output is escaped by the serialisers for C0; `json_safe` escapes the rest, which
JSON allows raw. Newline and tab are kept. What a hook prints for its client, and
`serve`'s protocol, are for programs and are left as they are.
"""

from __future__ import annotations

import re
from typing import TextIO

import click

# C0 but tab, newline and CR; DEL; C1; the bidi controls (ALM, LRM, RLM, embeddings, overrides, isolates)
_ACTING = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_SHOWN = re.compile(_ACTING + r"|\r(?!\n)")  # a CR just before LF moves nothing a reader sees
_IN_JSON = re.compile(_ACTING)  # a raw CR in JSON can only be whitespace between tokens


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every character that would act on a terminal written as its escape: `a\\x07b` for a, BEL, b."""
    return _SHOWN.sub(_escape, text)


def json_safe(serialized: str) -> str:
    """Serialised JSON with DEL, C1 and bidi controls (and any raw C0 but whitespace) as `\\u` escapes.

    Such characters can only stand inside a JSON string, where the escape means the same character."""
    return _IN_JSON.sub(lambda match: f"\\u{ord(match[0]):04x}", serialized)


def say(text: str, *, err: bool = False) -> None:
    """Print one piece of human output (stdout, or stderr with `err`), its control characters shown."""
    click.echo(visible(text), err=err)


def say_json(serialized: str) -> None:
    """Print serialised JSON on stdout, with `json_safe`."""
    click.echo(json_safe(serialized))


class JsonSafeWriter:
    """A text stream of JSON (lines) passed through `json_safe` on its way to `out`."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(json_safe(text))
        return len(text)
