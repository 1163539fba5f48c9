"""Every regular expression in the package runs in time linear in its input, whatever the input.

The patterns are found, not listed, so a new one is checked the day it is written: every compiled pattern
held by a module (directly, or in a tuple, list, dict or dataclass there) is run over generated pathological
texts of 64 KiB: long runs of spaces, newlines, separators, escaped line breaks, and of the pattern's own
literal words with each of those between them. A linear pattern reads 64 KiB in milliseconds; one that
backtracks on it needs minutes, so the bound below is generous and still tells them apart. A source check
keeps patterns where the search finds them: none is compiled or written inline inside a function, except
the few listed with their reason.

This is the one place the suite times anything: the bound on one pattern, in-process, is the property; it counts
the process's CPU time (ITIMER_PROF), so other load on a shared machine does not count against it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import regex

import project_ledger
from project_ledger.memory.capture import MAX_SENTENCE_CHARS

from .pathological import SIZE, pathological_texts

SECONDS = 2.0  # per pattern and text; a linear scan of 64 KiB takes well under 0.05 s here

# Patterns that only ever see a bounded slice of a text are tried at that bound instead: capture's cues read one
# sentence of at most MAX_SENTENCE_CHARS (`capture.classify` skips longer ones).
INPUT_BOUNDS = {"project_ledger.memory.capture._KINDS": MAX_SENTENCE_CHARS, "project_ledger.memory.capture._HEDGES": MAX_SENTENCE_CHARS}
# Functions that may hold a regular expression inline, and why that is safe.
INLINE_ALLOWED = {
    ("text/text_signals.py", "mentions"): "an escaped literal between fixed one-character lookarounds",
    ("memory/capture.py", "_cues"): "called only at import; the patterns it builds are module globals",
}
REGEX_CALLS = {"compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer"}


def _module_names() -> Iterator[str]:
    for info in pkgutil.walk_packages(project_ledger.__path__, "project_ledger."):
        if not info.name.endswith("__main__"):
            yield info.name


def _patterns_in(value: object, depth: int = 0) -> Iterator[re.Pattern[str] | regex.Pattern]:
    if isinstance(value, (re.Pattern, regex.Pattern)):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)
    elif depth < 3 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _patterns_in(getattr(value, field.name), depth + 1)


def _all_patterns() -> dict[str, re.Pattern[str] | regex.Pattern]:
    found: dict[str, re.Pattern[str] | regex.Pattern] = {}
    for name in _module_names():
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            for n, pattern in enumerate(_patterns_in(value)):
                if isinstance(pattern.pattern, str) and pattern not in found.values():
                    found[f"{name}.{attribute}" + (f"[{n}]" if n else "")] = pattern
    return found


PATTERNS = _all_patterns()


class _TooSlow(Exception):
    pass


def _raise(*_: object) -> None:
    raise _TooSlow


def _consume(pattern: re.Pattern[str] | regex.Pattern, text: str) -> None:
    """Every match in turn, as `finditer` tries every start; both engines check for signals while they match."""
    signal.setitimer(signal.ITIMER_PROF, SECONDS)
    try:
        pattern.findall(text)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def test_the_search_finds_the_patterns_that_once_froze_the_server() -> None:
    names = set(PATTERNS)
    assert {"project_ledger.text.redaction._PRIVATE_KEY", "project_ledger.text.injection._ROLE_MARKER"} <= names
    assert len(PATTERNS) > 60


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="SIGPROF is handled on the main thread")
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_no_pattern_backtracks_on_pathological_text(name: str) -> None:
    pattern = PATTERNS[name]
    size = next((bound for prefix, bound in INPUT_BOUNDS.items() if name.startswith(prefix)), SIZE)
    previous = signal.signal(signal.SIGPROF, _raise)
    try:
        for text in pathological_texts(pattern.pattern, size):
            try:
                _consume(pattern, text)
            except _TooSlow:
                pytest.fail(f"{name} took over {SECONDS} s on {len(text)} characters of {text[:40]!r}...")
    finally:
        signal.signal(signal.SIGPROF, previous)


def _inline_regexes(path: Path) -> Iterator[tuple[str, int]]:
    """(function, line) of each regex call inside a function whose pattern is written there, not held by a name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in REGEX_CALLS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"re", "regex", "bounded_scan"}
                and node.args
                and isinstance(node.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Call))
            ):
                yield function.name, node.lineno


def test_no_pattern_is_written_inline_inside_a_function() -> None:
    root = Path(project_ledger.__file__).parent
    inline = {
        (str(path.relative_to(root)), function, line)
        for path in root.rglob("*.py")
        for function, line in _inline_regexes(path)
        if (str(path.relative_to(root)), function) not in INLINE_ALLOWED
    }
    assert not inline, f"move these patterns to module level, where test_no_pattern_backtracks finds them: {sorted(inline)}"
