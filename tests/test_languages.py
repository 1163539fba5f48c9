"""Which language a file name maps to (`code/languages.language_for`): its suffix, read as `PurePath.suffix` reads it."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from project_ledger.code.languages import language_for


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("main.py", "python"),
        ("pkg/sub/Module.PY", "python"),
        ("a.b/c.rs", "rust"),
        ("lib/x.c++", "cpp"),
        ("app.min.js", "javascript"),
        ("weird..ts", "typescript"),
        (".py", None),  # a dot file has no suffix
        ("name.", None),
        ("a.py/README", None),  # a suffix of a directory is not the file's
        ("Makefile", None),
        ("notes.txt", None),
    ],
)
def test_language_follows_the_file_names_suffix(path: str, language: str | None) -> None:
    for spelling in (path, PurePosixPath(path)):
        spec = language_for(spelling)
        assert (spec.name if spec else None) == language
