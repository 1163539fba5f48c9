"""Texts that make a backtracking regular expression slow, for `test_regex_bounds.py` and `benchmarks/pathological.py`.

Each is one unit repeated to `size` characters (64 KiB: the default limit on a memory's text), then a character no
pattern expects, so that a pattern that can match in many ways has to try them all before it fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

SIZE = 64 * 1024
WHITESPACE = [" ", "\t", "\n", "\r\n", "  \n", " \n ", "\\n", "  \\n", "\n\n"]
SEPARATORS = list("-_.:=/#\"'`<>[](){},;|@&*+!?$%\\") + ["-----", "://", "=>", ":=", "```", "<!--", "##"]
WORDS = ["a", "A", "0", "aA0", "a1_", "ab cd", "Ab1-", "é", "中"]
# What opens a construct some pattern looks for, to be followed by a run that never closes it.
OPENERS = [
    "-----BEGIN RSA PRIVATE KEY-----\n", "password = ", "api_key: str", "Authorization: Bearer ", "postgres://u:",
    "https://hooks.slack.com/services/T", "eyJ", "# ", "- ", "System: ", "<memory ", "<", "ignore ",
]
OPENER_RUNS = [" ", "\n", "  \n", "\\n", "a", "="]
LITERAL_JOINS = [" ", "\n", "  \n", "=", ":", "-", "_", "."]


def pathological_texts(pattern: str, size: int = SIZE) -> Iterator[str]:
    """Runs of whitespace, separators and words; openers of what the patterns look for, followed by a run that
    never closes them (a key header, then blank lines); and the pattern's own longest literal words, repeated
    with each of a few separators (`key=key=...`). Each ends in a character no pattern expects."""
    units = [*WHITESPACE, *SEPARATORS, *WORDS, *(w + s for w in WORDS[:5] for s in (" ", "-", "_", ".", "\n"))]
    literals = sorted({w.lower() for w in re.findall(r"[A-Za-z]{3,}", pattern)}, key=lambda w: (-len(w), w))[:6]
    units += [literal + join for literal in literals for join in LITERAL_JOINS]

    def run(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    for unit in dict.fromkeys(units):
        yield run(unit) + "\x00"
    for opener in OPENERS:
        for unit in OPENER_RUNS:
            yield opener + run(unit) + "\x00"
