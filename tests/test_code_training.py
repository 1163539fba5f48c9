"""The code model's training set (`training/build_dataset.py`): what a package's documented functions give, which
files are read, the deduplication, and the check that nothing of the measured trees leaks into training."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def build() -> ModuleType:
    sys.path.insert(0, str(ROOT / "training"))
    try:
        import build_dataset
    finally:
        sys.path.remove(str(ROOT / "training"))
    return build_dataset


def pair(q: str, code: str, package: str = "pkg", path: str = "pkg/mod.py", line: int = 1) -> dict:
    return {"q": q, "d": f"function f: {code}", "code": code, "package": package, "path": path, "line": line, "language": "python"}


MEASURED_CODE = (
    "def normalize_color(self, triplet, palette):\n    red, green, blue = triplet\n    best = palette.match(red, green, blue)\n"
    "    return best.index if best is not None else self.default"
)


def test_a_documented_function_gives_its_summary_as_the_question_and_its_code_without_the_docstring(
    build: ModuleType, tmp_path: Path
) -> None:
    source = tmp_path / "src"
    (source / "shapes").mkdir(parents=True)
    (source / "shapes" / "geometry.py").write_text(
        'def distance_between(a, b):\n    """Return the straight-line distance between two points.\n\n    More detail here.\n    """\n'
        "    return ((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2) ** 0.5\n\n\n"
        'def short(x):\n    """Too short."""\n    return x\n'
    )
    questions = build.held_out_python(source, tmp_path / "stripped")
    pairs, symbols_read = build.pairs_of_tree(tmp_path / "stripped", questions, "shapes==1.0")
    assert [p["q"] for p in pairs] == ["Return the straight-line distance between two points."]
    assert "distance_between" in pairs[0]["d"] and "straight-line" not in pairs[0]["d"]
    assert pairs[0]["line"] == 1 and pairs[0]["package"] == "shapes==1.0"
    # Every symbol of the file is read, the one too short to ask about too: the wrong answers beside the right one.
    assert [(s["line"], s["d"] == pairs[0]["d"]) for s in symbols_read] == [(1, True), (9, False)]
    assert "short" in symbols_read[1]["d"] and "Too short" not in symbols_read[1]["d"]


def test_neighbours_are_the_nearest_symbols_of_a_pairs_file_that_no_pair_answers_each_once(
    build: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = [pair("Parse a header.", "parse", line=10), pair("Format a header.", "format", line=40)]
    read = [
        {"d": pairs[0]["d"], "package": "pkg", "path": "pkg/mod.py", "line": 10},  # a pair's own document
        *({"d": f"function helper_{n}", "package": "pkg", "path": "pkg/mod.py", "line": n} for n in (1, 12, 30, 38, 90)),
        {"d": "function elsewhere", "package": "pkg", "path": "pkg/other.py", "line": 11},  # another file
        {"d": "function other_package", "package": "lib", "path": "pkg/mod.py", "line": 11},  # another package
    ]
    monkeypatch.setattr(build, "NEIGHBOURS", 2)
    chosen = build.neighbours(pairs, read)
    # line 10's nearest are 12 and 1 (30 is farther); line 40's are 38 and 30; 30 is kept once, in reading order.
    assert [s["line"] for s in chosen] == [1, 12, 30, 38]


def test_tests_vendored_copies_measured_trees_and_type_declarations_are_not_read(build: ModuleType) -> None:
    assert build.keep_file("pkg/core.py", "python")
    assert not build.keep_file("pkg/tests/test_core.py", "python")
    assert not build.keep_file("pkg/_vendor/six.py", "python")
    assert not build.keep_file("pip/_vendor/rich/console.py", "python")
    assert not build.keep_file("pkg/compat/click/core.py", "python")  # a copy of a measured tree inside a package
    assert build.keep_file("lib/index.mjs", "ecma")
    assert not build.keep_file("lib/index.d.ts", "ecma")
    assert not build.keep_file("dist/bundle.min.js", "ecma")


@pytest.mark.parametrize("line", ["pypi rich==14.0.0", "npm zod@4.1.0", "pypi Django==5.2", "npm @types/express@5.0.0"])
def test_a_measured_tree_in_the_package_list_is_refused(build: ModuleType, tmp_path: Path, line: str) -> None:
    listed = tmp_path / "packages.txt"
    listed.write_text(f"# comment\npypi attrs==26.1.0\n{line}\n")
    if line.startswith("npm @types"):
        assert [p.name for p in build.read_packages(listed)] == ["attrs", "@types/express"]  # a scope, not the tree
        return
    with pytest.raises(SystemExit, match="is a measured tree"):
        build.read_packages(listed)


def test_near_duplicates_of_measured_symbols_are_found_and_distinct_code_is_not(build: ModuleType) -> None:
    renamed = MEASURED_CODE.replace("normalize_color", "normalise_colour")
    unrelated = "def parse_header(line):\n    name, _, value = line.partition(':')\n    return name.strip().lower(), value.strip()"
    measured = [pair("Match a colour to a palette.", MEASURED_CODE, "rich")]
    assert build.near_duplicates([pair("a", renamed), pair("b", unrelated), pair("c", MEASURED_CODE)], measured) == {0, 2}


def test_deduplication_drops_repeats_common_questions_measured_questions_and_near_duplicates(build: ModuleType) -> None:
    kept_pair = pair("Parse one header line into its name and value.", "def parse_header(line):\n    return line.split(':')")
    pairs = [
        kept_pair,
        dict(kept_pair, package="pkg-esm", path="esm/mod.py"),  # the same question and code: an ESM and a CommonJS build
        *(pair("Return the value.", f"def get_{i}(self):\n    return self.v{i}", line=10 + i) for i in range(4)),
        pair("Match a colour to a palette.", "def other():\n    return 1", line=30),  # a measured tree's question
        pair("Pick the nearest palette entry.", MEASURED_CODE, line=40),  # a measured tree's code
    ]
    measured = [pair("Match a colour to a palette.", MEASURED_CODE, "rich")]
    kept, dropped = build.deduplicated(pairs, measured)
    assert kept == [kept_pair]
    assert dropped == {
        "exact duplicate": 1,
        "question asked of more than 3 symbols": 4,
        "over the per-package cap": 0,
        "question of a measured tree": 1,
        "near duplicate of a measured symbol": 1,
    }


def test_the_per_package_cap_keeps_the_same_pairs_whatever_their_order(build: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "PER_PACKAGE", 3)
    pairs = [pair(f"Question number {i} about the code.", f"def f{i}():\n    return {i}", line=i) for i in range(8)]
    first, dropped = build.deduplicated(pairs, [])
    second, _ = build.deduplicated(list(reversed(pairs)), [])
    assert len(first) == 3 and first == second and dropped["over the per-package cap"] == 5
