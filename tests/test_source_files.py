"""Ignore rules as git reads them (`code/source_files.IgnoreRules`): each directory's ignore files judge the paths
below it, deeper files override shallower ones, `.git/info/exclude` comes first and `.ledgerignore` last; and which
files hold tests (`is_test_file`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from project_ledger.code.source_files import IgnoreRules, Skipped, is_test_file, walk


def _tree(root: Path) -> None:
    for path, text in {
        ".gitignore": "*.gen.py\nbuild_out/\n",
        ".ledgerignore": "private/\n",
        ".git/info/exclude": "tmp_*\n",
        "pkg/.gitignore": "!keep.gen.py\n",
        "pkg/deep/.gitignore": "*.py\n!main.py\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path in (
        "a.py", "x.gen.py", "tmp_scratch.py", "private/p.py", "build_out/b.py", "pkg/keep.gen.py", "pkg/other.gen.py",
        "pkg/deep/main.py", "pkg/deep/helper.py", "pkg/deep/inner/z.py", "plain/n.py",
    ):  # fmt: skip
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n")


def test_each_directorys_rules_judge_the_paths_below_it_and_deeper_rules_win(tmp_path: Path) -> None:
    _tree(tmp_path)
    rules = IgnoreRules(tmp_path)
    found = sorted(source.path for source in walk(tmp_path, rules, Skipped(), 1_000_000))
    assert found == ["a.py", "pkg/deep/main.py", "pkg/keep.gen.py", "plain/n.py"]
    assert rules.excluded("pkg/deep/inner/z.py") == "ignored"  # `*.py` of pkg/deep reaches its subdirectories
    assert rules.excluded("pkg/deep/main.py") is None
    assert rules.excluded("private/p.py") == "ignored"
    assert rules.excluded("tmp_scratch.py") == "ignored"
    assert rules.excluded("node_modules/m.py") == "vendored or generated directory"


def test_a_tree_without_ignore_files_ignores_nothing(tmp_path: Path) -> None:
    (tmp_path / "src" / "deep").mkdir(parents=True)
    (tmp_path / "src" / "deep" / "m.py").write_text("x = 1\n")
    rules = IgnoreRules(tmp_path)
    assert not rules.ignored("src/deep/m.py", is_dir=False)
    assert not rules.ignored("src/deep", is_dir=True)
    assert [source.path for source in walk(tmp_path, rules, Skipped(), 1_000_000)] == ["src/deep/m.py"]


@pytest.mark.parametrize(
    ("path", "holds_tests"),
    [
        ("tests/test_parser.py", True),
        ("pkg/tests/helpers.py", True),
        ("src/__tests__/schema.ts", True),
        ("src/v4/schema.test.ts", True),
        ("src/schema.spec.ts", True),
        ("cmd/retry_test.go", True),
        ("src/main/java/FooTest.java", True),
        ("conftest.py", True),
        ("Tests/ParserTests/LexerTests.swift", True),  # folders in any case
        ("src/Billing.Tests/Invoices.cs", True),  # .NET test projects
        ("src/Billing.UnitTests/Helpers/Clock.cs", True),
        ("src/billing.tests/Clock.cs", True),
        ("src/Billing.Testing/Clock.cs", False),
        ("src/Billing.Contests/Entry.cs", False),
        ("src/App.Latest/Entry.cs", False),
        ("src/click/testing.py", False),  # test helpers shipped to users
        ("pkg/latest.py", False),
        ("pkg/contest.py", False),
        ("lib/testutil.py", False),
        ("httpx/_models.py", False),
    ],
)
def test_test_files_are_told_by_their_folder_or_name(path: str, holds_tests: bool) -> None:
    assert is_test_file(path) is holds_tests
