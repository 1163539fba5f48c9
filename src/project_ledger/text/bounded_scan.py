"""Regular expressions over stored text, run against a time budget that no pattern can outlast.

Every pattern in this package is written to run in time linear in its input, and
`tests/test_regex_bounds.py` feeds each one generated pathological text. But a
pattern is only as safe as its author's reading of it: one overlap between two
quantifiers let 123 bytes of blank lines after a key header hold the server at
100% CPU for minutes. The scans that see every stored text (secret redaction,
the check for text that reads like instructions) therefore run on the `regex`
engine, whose matcher stops at a deadline and releases the GIL while it works,
so the server keeps answering other requests meanwhile. A scan that reaches the
deadline raises `ScanTimedOut`, and its caller falls back to an answer that
needs no regular expression and errs on the safe side.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import regex

Pattern = regex.Pattern
Match = regex.Match

# A linear scan of the largest text allowed (64 KiB by default) takes a few milliseconds; the engine overshoots
# a deadline by up to about 2.5x, so a text never costs more than about a second and a half of CPU.
SCAN_SECONDS = 0.5


class ScanTimedOut(Exception):
    """A scan ran past its budget; the text it was reading is not known to be clean."""


class Budget:
    """The time left for the scans of one text, shared by all the patterns run over it."""

    def __init__(self, seconds: float = SCAN_SECONDS) -> None:
        self._deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise ScanTimedOut
        return left


def compile(pattern: str, flags: int = 0) -> Pattern:  # read as `bounded_scan.compile`
    """The pattern for the `regex` engine, with the standard library's semantics (the engine's VERSION0)."""
    return regex.compile(pattern, flags | regex.VERSION0)


def search(pattern: Pattern, text: str, budget: Budget, pos: int = 0) -> Match | None:
    try:
        return pattern.search(text, pos, timeout=budget.remaining(), concurrent=True)
    except TimeoutError:
        raise ScanTimedOut from None


def match(pattern: Pattern, text: str, budget: Budget, pos: int = 0) -> Match | None:
    try:
        return pattern.match(text, pos, timeout=budget.remaining(), concurrent=True)
    except TimeoutError:
        raise ScanTimedOut from None


def finditer(pattern: Pattern, text: str, budget: Budget) -> Iterator[Match]:
    """Each match in turn, as `Pattern.finditer` gives them, the whole iteration within `budget`."""
    pos = 0
    while pos <= len(text) and (found := search(pattern, text, budget, pos)) is not None:
        yield found
        pos = found.end() if found.end() > found.start() else found.end() + 1
