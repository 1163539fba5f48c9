"""The names a code-search query spells out (`code/naming.py`) and the SQL condition each spelling becomes
(`code/store.named`), run against a real SQLite table."""

from __future__ import annotations

import sqlite3

import pytest

from project_ledger.code.naming import MAX_NAMES, Spelling, asks_about_tests, names_asked, names_in, spellings
from project_ledger.code.store import named


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Console.print", ["Console.print"]),
        ("change how Console.print handles non-terminal output", ["Console.print"]),
        ("Type::method", ["Type::method"]),
        ("pkg.module.func", ["pkg.module.func"]),
        ("why does `render` wrap lines?", ["render"]),
        ("call parse_args() then load_config", ["parse_args", "load_config"]),
        ("Element#click", ["Element#click"]),
        ("print", ["print"]),  # the whole query is one word: it names a symbol
        ("  get_console()  ", ["get_console"]),
        ("how far apart are two points", []),  # ordinary words name nothing
        ("print the report", []),
        ("", []),
    ],
)
def test_names_in_finds_what_looks_like_code(query: str, names: list[str]) -> None:
    assert names_in(query) == names


def test_names_in_keeps_a_few_names_in_order_without_repeats() -> None:
    query = " ".join(f"name_{i} name_{i}" for i in range(MAX_NAMES + 5))
    assert names_in(query) == [f"name_{i}" for i in range(MAX_NAMES)]


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("print", [("print", False)]),  # the whole query
        ("`Console`", [("Console", False)]),
        ("change how Console.print handles non-terminal output", [("Console.print", False)]),
        ("where does `Cache.insert` evict?", [("Cache.insert", False)]),
        ("Alternative to `httpx.request()` that streams", [("httpx.request", False)]),
        ("count them the way module_func does", [("module_func", True)]),
        # a short query looks a name up
        ("where is `Console` defined?", [("Console", True)]),
        ("find QueryParams", [("QueryParams", True)]),
        # dotted words that are not symbols, and a receiver that names no class
        ("see e.g. the README.md and foo.py", []),
        ("close it like self.close does when the stream ends", []),
        ("call self.close_all before exit", [("close_all", True)]),
        # mentions a description makes in passing: a parameter, a method in call form, a type
        ("Default `when` for size-based checks: run only on values with a `size`.", []),
        ("Appends a pipe's own checks, mirroring how `.check()` clones.", []),
        ("Return a new QueryParams instance, removing the value of a key.", []),
        ("Get fileno() from a file", []),
        ("Filter segments by ``is_control`` attribute, see :meth:`Segment.split`", [("is_control", True), ("Segment.split", False)]),
    ],
)
def test_names_asked_are_whole_or_qualified_names_and_snake_case_ones_in_passing(query: str, asked: list[tuple[str, bool]]) -> None:
    assert names_asked(query) == asked


@pytest.mark.parametrize(
    ("query", "about_tests"),
    [
        ("tests of the retry policy", True),
        ("why does test_parse fail", True),
        ("TestClient setup", True),
        ("the spec fixtures for dates", True),
        ("retry with backoff", False),
        ("the latest value, a special case", False),  # `test` and `spec` inside other words
    ],
)
def test_a_query_asks_about_tests_when_a_word_or_a_names_part_says_so(query: str, about_tests: bool) -> None:
    assert asks_about_tests(query) is about_tests


def test_spellings_go_from_the_whole_qualified_name_to_a_module_path_to_a_suffix() -> None:
    assert spellings("print") == [Spelling(qualnames=("print",), bare="print")]
    assert spellings("pkg.module.func") == [
        Spelling(qualnames=("pkg.module.func", "pkg::module::func")),
        Spelling(qualnames=("module.func", "module::func"), module="pkg"),
        Spelling(qualnames=("func",), module="pkg/module"),
        Spelling(qualnames=("pkg.module.func", "pkg::module::func"), suffix=True),
    ]
    assert spellings("Type::method")[0] == spellings("Type#method")[0] == Spelling(qualnames=("Type.method", "Type::method"))
    assert spellings("::") == []


ROWS = [
    ("rich/console.py", "print", "Console.print"),
    ("rich/__init__.py", "print", "print"),
    ("src/pkg/module.py", "func", "func"),
    ("other/module.py", "func", "func"),
    ("pkgx/module.py", "func", "func"),
    ("pkg/module/__init__.py", "helper", "helper"),
    ("src/cache.rs", "insert", "Cache::insert"),
    ("outer.py", "method", "Outer.Inner.method"),
    ("lib/a_b.py", "Print", "Print"),
]


def matching(name: str) -> list[list[tuple[str, str]]]:
    """For each spelling of `name`, the (path, qualname) rows its condition selects."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE code_symbols (path TEXT, name TEXT, qualname TEXT)")
    db.executemany("INSERT INTO code_symbols VALUES (?, ?, ?)", ROWS)
    found = []
    for spelling in spellings(name):
        condition, params = named(spelling)
        found.append(db.execute(f"SELECT path, qualname FROM code_symbols WHERE {condition} ORDER BY path", params).fetchall())
    return found


def test_each_spelling_selects_exactly_its_symbols() -> None:
    assert matching("print") == [[("rich/__init__.py", "print"), ("rich/console.py", "Console.print")]]  # not `Print`
    assert matching("Console.print")[0] == [("rich/console.py", "Console.print")]
    assert matching("Cache.insert")[0] == [("src/cache.rs", "Cache::insert")]
    exact, in_pkg, in_pkg_module, suffix = matching("pkg.module.func")
    assert exact == in_pkg == suffix == []
    assert in_pkg_module == [("src/pkg/module.py", "func")]  # not other/module.py, nor pkgx/module.py
    assert matching("pkg.module.helper")[2] == [("pkg/module/__init__.py", "helper")]
    assert matching("Inner.method")[-1] == [("outer.py", "Outer.Inner.method")]
    assert matching("a_b.Print")[1] == [("lib/a_b.py", "Print")]  # `_` is literal, not a LIKE wildcard
