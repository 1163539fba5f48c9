"""The words a symbol's names and path spell, which open the text code search embeds (`code/symbol_text.py`)."""

from __future__ import annotations

from project_ledger.code.languages import BY_NAME, Grammar
from project_ledger.code.rows import FileRecord, ParsedFile, embed_hash
from project_ledger.code.symbol_text import heading, module_words, name_words, without_signature
from project_ledger.code.symbols import extract


def test_a_name_splits_at_separators_case_changes_and_digits() -> None:
    assert name_words("ColorTriplet.normalized") == "color triplet normalized"
    assert name_words("__rich_console__") == "rich console"
    assert name_words("HTTPServer.get_HTTP2Body") == "http server get http 2 body"
    assert name_words("$ZodType") == "zod type"
    assert name_words("Cache::insert") == "cache insert"
    assert name_words("Größe.maß") == "größe maß"  # letters of any script stay in their word
    assert name_words("x") == "x" and name_words("") == ""


def test_a_path_gives_the_words_of_its_file_and_folder_without_plain_parts() -> None:
    assert module_words("src/rich/color_triplet.py") == "rich color triplet"
    assert module_words("click/__init__.py") == "click"
    assert module_words("packages/zod/src/v4/core/schemas.ts") == "core schemas"
    assert module_words("lib.d/Makefile") == "lib d makefile"
    assert module_words("index.ts") == ""


def test_the_heading_keeps_the_exact_name_before_its_words() -> None:
    assert heading("method", "ColorTriplet.normalized", "rich/color_triplet.py") == (
        "method ColorTriplet.normalized: color triplet normalized in rich color triplet"
    )
    assert heading("function", "main", "index.ts") == "function main: main"


def test_a_rows_embed_hash_is_that_of_the_text_with_its_heading() -> None:
    source = b"def area(w, h):\n    return w * h\n"
    symbols = extract(Grammar(BY_NAME["python"]), source)
    record = FileRecord("geo/shapes.py", "python", len(source), 0, "h", 2)
    (row,) = ParsedFile.build(record, symbols.definitions, [], False).symbols
    text = "function area: area in geo shapes\ndef area(w, h)\nreturn w * h"
    assert row[-1] == embed_hash(text)


def test_a_body_head_loses_what_it_repeats_of_a_signature_over_several_lines_and_nothing_else() -> None:
    signature = 'def render( self, text: str = "", *, legacy_windows: bool = False, ) -> str'
    assert without_signature(signature, 'self, text: str = "", *, legacy_windows: bool = False, ) -> str: pass return x') == (
        "pass return x"
    )
    assert without_signature(signature, 'self, text: str = "", *,') == ""  # the head ends inside the signature
    assert without_signature("def area(w, h)", "w = abs(w) return w * h") == "w = abs(w) return w * h"
    assert without_signature("def scale(self, factor)", "factor = 2") == "factor = 2"  # too short to be a repeat
    assert without_signature("function f( a: number, b: string ): void", "a: number, b: string ): void { return a") == "return a"
