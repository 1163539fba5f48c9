"""The part of a text that bears on a question, when the whole text does not fit where it is going.

A memory handed over shortened (a recall under a tight budget, an injection into a prompt) should show what
matched, not its first 280 characters: a session gist opens with a header ("Gist of session ... [ids] are
sources"), a long turn with its preamble. So the text is cut into lines (a long line into sentences), the lines
holding the most of the question's words are kept, in their own order, and what was skipped is marked `…`.
Pure and linear in the text's length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

ELLIPSIS = "…"
LONG_LINE = 240  # characters; a longer line is cut into sentences
_SENTENCE = re.compile(r"[^.!?]+[.!?]*\s*")
_WORD = re.compile(r"[^\W_]+")


def _segments(text: str) -> list[str]:
    found: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        found += [s.strip() for s in _SENTENCE.findall(line) if s.strip()] if len(line) > LONG_LINE else [line.strip()]
    return found


def excerpt(text: str, terms: Collection[str], count: Callable[[str], int], budget: int) -> str:
    """The segments of `text` holding any of `terms` (lowercased words), most first, shown in their order and
    joined by `…` where something was skipped, as many as fit in `budget` tokens (`count`); the first segments
    when none holds a term; when not even the best one fits, its first words. The whole text when it fits as it
    is; "" when nothing does.

    Each segment is counted once and the sum is checked once at the end: linear in the text's length."""
    if count(text) <= budget:
        return text
    segments = _segments(text)
    if not segments:
        return ""
    wanted = {term.lower() for term in terms}
    hits = [len(wanted.intersection(_WORD.findall(segment.lower()))) for segment in segments]
    matched = sorted((n for n in range(len(segments)) if hits[n]), key=lambda n: (-hits[n], n))
    order = matched or list(range(len(segments)))  # no line matches: the text's opening lines, in a row
    gap = count(f" {ELLIPSIS} ")  # what a skip costs, at most, between or after the kept segments
    chosen: list[int] = []
    used = gap
    for n in order:
        cost = count(segments[n]) + gap
        if used + cost <= budget:
            chosen.append(n)
            used += cost
        elif not matched:
            break
    while chosen and count(joined := _join(segments, sorted(chosen))) > budget:  # the sum was an estimate
        chosen.pop()
    if chosen:
        return joined
    return _first_words(segments[order[0]], lambda candidate: count(candidate) <= budget)


def _join(segments: list[str], chosen: list[int]) -> str:
    parts: list[str] = []
    for position, n in enumerate(chosen):
        if n > (chosen[position - 1] + 1 if position else 0):
            parts.append(ELLIPSIS)
        parts.append(segments[n])
    if chosen and chosen[-1] < len(segments) - 1:
        parts.append(ELLIPSIS)
    return " ".join(parts)


def _first_words(segment: str, fits: Callable[[str], bool]) -> str:
    """The longest run of `segment`'s first words that fits with a closing `…` (binary search: linear overall)."""
    words = segment.split()
    low, high = 0, len(words)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(" ".join(words[:middle]) + " " + ELLIPSIS):
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]) + " " + ELLIPSIS if low else ""
