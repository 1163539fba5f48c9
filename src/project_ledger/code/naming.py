"""The symbol names a code-search query spells out, and the ways a stored symbol can match one. Pure.

A query such as `Console.print` or "change how Console.print handles
non-terminal output" names a symbol; ranked retrieval alone put it fourth,
behind `print`, `_console` and `Console.capture`, which share its words. The
names a query asks for (`names_asked`) are looked up exactly and put first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from project_ledger.code.symbol_text import name_words
from project_ledger.text.text_signals import identifier_candidates

MAX_NAMES = 8
_SEPARATORS = re.compile(r"::|\.|#")
_BARE = re.compile(r"[A-Za-z_$][\w$]*")
LOOKUP_WORDS = 4  # a query this short looks a name up ("where is `Console` defined?"); a longer one describes
_RECEIVER = re.compile(r"^(?:self|this|cls)(?:\.|::)")  # `self.close` names `close`, not every `*.close`
# Dotted words that are not symbols: abbreviations and file names ("e.g.", "README.md", "foo.py").
_NOT_A_NAME = re.compile(
    r"^(?:e\.g|i\.e|etc|vs)$|\.(?:py|pyi|md|rst|txt|json|toml|ya?ml|cfg|ini|lock|js|mjs|cjs|jsx|ts|tsx|rs|go|java|rb|html|css)$",
    re.IGNORECASE,
)
# Words that make a query about tests, in prose or in a name (`test_parse`, `TestClient`, `conftest`).
TEST_WORDS = frozenset({"test", "tests", "testing", "tested", "spec", "specs", "fixture", "fixtures", "conftest", "mock", "mocks"})


def names_in(query: str) -> list[str]:
    """The names a query spells out, in order of appearance.

    Words that look like code (`snake_case`, `camelCase`, `Type.method`, `Type::fn`, `call()`, anything in
    backticks), or the whole query when it is one identifier: `print` alone names `print`, but in a sentence
    it is an ordinary word.
    """
    found = identifier_candidates(query)
    if not found and _BARE.fullmatch(word := as_one_name(query)):
        found = [word]
    return found[:MAX_NAMES]


def names_asked(query: str) -> list[tuple[str, bool]]:
    """The names of `names_in` that `query` asks for, each with whether it is only mentioned in passing.

    The whole query read as one name, and a qualified name anywhere (`Console.print`, `Type::method`,
    `pkg.module.func`) are asked for, and so is any name in a query of at most LOOKUP_WORDS words ("find
    QueryParams"). A plain name inside a longer query is in passing, and kept only when written snake_case
    (`count them the way module_func does`): a description mentions a parameter, a type or a helper in
    backticks, call form or CamelCase ("the `size` to check, like `.check()`", "a new QueryParams instance"), and
    putting those first cost docstring-to-symbol MRR@10 0.005 on rich, 0.012 on httpx and 0.053 on zod, and gained
    click 0.007, whose class docstrings name their class (`benchmarks/code_search.py`); without the snake_case ones
    too, rich gained 0.001 more.
    """
    whole = as_one_name(query)
    lookup = len(query.split()) <= LOOKUP_WORDS
    asked = []
    for found in names_in(query):
        if _NOT_A_NAME.search(found):
            continue
        name = _RECEIVER.sub("", found)
        qualified = len([part for part in _SEPARATORS.split(name) if part]) > 1  # not `.check`
        in_passing = found != whole and not qualified
        if not in_passing or lookup or "_" in name.strip("_"):
            asked.append((name, in_passing))
    return asked


def asks_about_tests(query: str) -> bool:
    """Whether `query` mentions tests (`TEST_WORDS`), so test files should rank as any other."""
    return not TEST_WORDS.isdisjoint(name_words(query).split())


def as_one_name(query: str) -> str:
    """The query read as a single name: without surrounding space, backticks or a call's `()`."""
    return query.strip().strip("`").removesuffix("()")


@dataclass(frozen=True)
class Spelling:
    """One way a stored symbol can carry a name: its qualified name is one of `qualnames` (or ends with one,
    after a separator, with `suffix`; or its plain name is `bare`), in a file under a `module` directory or
    file (`pkg/module`: `pkg/module.py`, `src/pkg/module/__init__.py`) when set."""

    qualnames: tuple[str, ...]
    bare: str | None = None
    module: str | None = None
    suffix: bool = False


def spellings(name: str) -> list[Spelling]:
    """How `name` can match, most specific first.

    `Console.print` is a qualified name (with `.`, `::` or `#` between parts, whichever the language uses); then,
    for `pkg.module.func`, a shorter qualified name in a file under `pkg/module`; last, the end of a longer
    qualified name (`Inner.method` for `Outer.Inner.method`). A one-part name is a plain name.
    """
    parts = [part for part in _SEPARATORS.split(name) if part]
    if not parts:
        return []
    if len(parts) == 1:
        return [Spelling(qualnames=(parts[0],), bare=parts[0])]
    found = [Spelling(qualnames=_joined(parts))]
    for cut in range(1, len(parts)):
        head, tail = parts[:cut], parts[cut:]
        found.append(Spelling(qualnames=_joined(tail), module="/".join(head)))
    found.append(Spelling(qualnames=found[0].qualnames, suffix=True))
    return found


def _joined(parts: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(separator.join(parts) for separator in (".", "::")))
