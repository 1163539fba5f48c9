"""The pure parts of turning a parsed file into rows: reference grouping, body heads, the secret pre-check,
the worker start method, and the index list the store drops and rebuilds around a cold index."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from project_ledger.code.languages import BY_NAME, Grammar
from project_ledger.code.parsing import pool_context
from project_ledger.code.rows import FileRecord, ParsedFile
from project_ledger.code.store import INDEXES
from project_ledger.code.symbols import extract, plans
from project_ledger.storage.journal import Journal
from project_ledger.text.redaction import may_hold_secret, redact

SOURCE = b"""
def area(w, h):
    return w * h


def report(shapes):
    total = area(1, 2)
    total += area(3, 4)
    print(total)
    for shape in shapes:
        print(area(shape.w, shape.h))
    return total
"""


def test_references_are_one_row_per_name_and_kind_with_their_lines_ascending() -> None:
    symbols = extract(Grammar(BY_NAME["python"]), SOURCE)
    rows = {(row.name, row.kind): (row.lines, row.uses) for row in symbols.references}
    assert rows[("area", "call")] == ("7,8,11", 3)
    assert rows[("print", "call")] == ("9,11", 2)
    assert ("report", "call") not in rows  # a definition's own name is not a use of it


def test_a_query_plan_reads_each_pattern_by_its_role_and_trims_what_no_role_reads() -> None:
    import tree_sitter

    grammar = Grammar(BY_NAME["python"])
    grammar.query = tree_sitter.Query(
        grammar.language,
        """
        (call function: (identifier) @name) @reference.call
        (class_definition name: (identifier) @name body: (block (pass_statement)? @reference.empty))
        (module (expression_statement (string) @name))
        (function_definition name: (identifier) @name) @definition.function
        """,
    )
    source = b'"""module doc"""\ndef a():\n    return b()\n\n\nclass D:\n    pass\n\n\nclass E:\n    x = 1\n'
    planned = plans(grammar)
    assert planned[0] == (("reference.call", 0, "call", False),)  # always there: no lookup, and not in the matches
    assert planned[1] == (("reference.empty", 0, "empty", True),)  # optional: looked up, so kept in the matches
    assert planned[2] == ()  # no role: the pattern is disabled
    assert plans(grammar) is planned
    symbols = extract(grammar, source)
    assert [(d.name, d.kind, d.line) for d in symbols.definitions] == [("a", "function", 2)]
    # E matches the class pattern too, but without the optional capture, so it is no reference.
    assert sorted((r.name, r.kind, r.lines) for r in symbols.references) == [("D", "empty", "6"), ("b", "call", "3")]


def test_a_body_head_keeps_the_first_four_non_empty_lines_after_the_declaration() -> None:
    report = next(d for d in extract(Grammar(BY_NAME["python"]), SOURCE).definitions if d.name == "report")
    assert report.body_head == "total = area(1, 2) total += area(3, 4) print(total) for shape in shapes:"


def test_the_secret_pre_check_of_joined_texts_holds_whenever_one_text_would() -> None:
    texts = ["def connect(url)", 'api_password = "Xk9#mQ2$vL7pR4tZ"', "token = load()", "plain words"]
    assert redact(texts[1]).text != texts[1]
    for text in texts:
        if redact(text).text != text:
            assert may_hold_secret(text)
    assert not may_hold_secret("def area(w, h)\nThe area of a rectangle.\nreturn w * h")
    for text in texts:  # a text that holds a secret still flags the field it is joined into, among clean ones
        if may_hold_secret(text):
            assert may_hold_secret("\n".join(["def area(w, h)", text, "plain words"]))


def test_rows_of_a_symbol_with_a_secret_are_redacted_and_the_others_kept_as_they_are() -> None:
    source = b'def login():\n    """Log in."""\n    api_password = "Xk9#mQ2$vL7pR4tZ"\n    return api_password\n\n\ndef add(a, b):\n    return a + b\n'
    symbols = extract(Grammar(BY_NAME["python"]), source)
    rows = ParsedFile.build(
        FileRecord("a.py", "python", len(source), 0, "h", 8), symbols.definitions, symbols.references, True
    ).symbols
    login, add = rows
    assert "Xk9#mQ2$vL7pR4tZ" not in login[9] and "[REDACTED:" in login[9]
    assert add[9] == "return a + b"


def test_workers_are_forked_only_from_a_single_threaded_process() -> None:
    # A fresh interpreter: this test process may hold other tests' threads (an embedder's idle timer, say).
    fresh = "from project_ledger.code.parsing import pool_context; print(pool_context().get_start_method())"
    assert subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True, check=True).stdout.strip() == "fork"
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert pool_context().get_start_method() == "forkserver"
    finally:
        stop.set()
        thread.join()


def test_the_indexes_a_cold_index_rebuilds_are_those_the_schema_creates(tmp_path: Path) -> None:
    Journal(tmp_path / "journal.sqlite3").close()
    db = sqlite3.connect(tmp_path / "journal.sqlite3")
    created = {
        name: sql
        for name, sql in db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('code_symbols', 'code_refs')"
        )
        if sql is not None
    }
    assert created == {name: f"CREATE INDEX {name} ON {spec}" for name, spec in INDEXES.items()}
