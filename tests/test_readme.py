"""The README and the pages in docs/: short enough to read, links that lead somewhere, benchmark sections that the
benchmarks can still find, and a first block that installs into an environment of its own (`.ci/run` runs it)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]+)\)")
_SECTION_NAME = re.compile(r"""(?:publish|replace_section)\(\s*"([\w-]+)\"""")


def readme_table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / "benchmarks" / "readme_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, fence = set(), False
    for line in page.read_text().splitlines():
        fence = fence != line.startswith("```")
        if not fence and (heading := re.match(r"#{1,6} (.*)", line)):
            found.add(slug(heading.group(1)))
    return found


def test_the_readme_is_short_and_opens_with_an_install_that_needs_no_system_pip() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]
    assert commands[0].startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . "), commands[0]
    assert commands[1] == "bash tests/setup.sh && ruff check src && mypy && pytest"
    assert "README.md" in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the README's first block"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text()):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, broken


def test_each_benchmark_section_has_one_pair_of_markers_in_the_readme_or_docs() -> None:
    names = {name for script in (ROOT / "benchmarks").glob("*.py") for name in _SECTION_NAME.findall(script.read_text())}
    text = "\n".join(page.read_text() for page in PAGES)
    assert len(names) >= 25
    for name in sorted(names):
        assert text.count(f"<!-- bench:{name} -->") == 1 and text.count(f"<!-- /bench:{name} -->") == 1, name


def test_a_section_in_docs_is_written_there_with_its_links_seen_from_that_page(tmp_path: Path) -> None:
    module = readme_table()
    module.ROOT = tmp_path
    (tmp_path / "docs").mkdir()
    readme, page = tmp_path / "README.md", tmp_path / "docs" / "benchmarks.md"
    readme.write_text("# x\n")
    page.write_text("# Benchmarks\n<!-- bench:demo -->\nold\n<!-- /bench:demo -->\n")
    module.PAGES = (readme, page)
    body = "| a |\n\n![figure](docs/bench/demo.png) from [the script](benchmarks/demo.py), [up](#benchmarks)"
    assert module.replace_section("demo", body) == page
    assert page.read_text() == (
        "# Benchmarks\n<!-- bench:demo -->\n| a |\n\n![figure](bench/demo.png) from [the script](../benchmarks/demo.py), "
        "[up](#benchmarks)\n<!-- /bench:demo -->\n"
    )
    assert readme.read_text() == "# x\n"
    with pytest.raises(SystemExit, match="has a <!-- bench:missing --> section"):
        module.replace_section("missing", body)


def test_the_settings_tables_are_made_from_the_settings_descriptions_and_list_every_setting() -> None:
    """`python docs/settings_table.py --write` after a change to a setting; the `all` table holds every one."""
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "docs" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.stale() == []
    assert "all" in module.sections()
    from project_ledger.config import Settings

    listed = (ROOT / "docs" / "reference.md").read_text()
    assert all(f"`LEDGER_{name.upper()}`" in listed for name in Settings.model_fields)


def test_a_published_table_says_at_which_commit_and_load_it_was_measured_and_keeps_its_figures_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import common
    import readme_table

    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "benchmarks.md"
    page.write_text("<!-- bench:demo -->\nold\n<!-- /bench:demo -->\n")
    monkeypatch.setattr(readme_table, "PAGES", (page,))
    monkeypatch.setattr(readme_table, "ROOT", tmp_path)
    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    common.publish("demo", "| a |\n|---|\n| 1 |", False, command="python benchmarks/demo.py", loads=[1.25, 2.0])
    printed = capsys.readouterr().out
    assert "load average 1.2 before, 2.0 after" in printed and common.commit() in printed and "`python benchmarks/demo.py`" in printed
    assert "old" in page.read_text() and not (tmp_path / "results").exists()  # nothing written without --write
    common.publish("demo", "| a |\n|---|\n| 1 |", True, command="python benchmarks/demo.py", loads=[1.25, 1.5, 2.0], figures={"a": [1]})
    assert "| 1 |" in page.read_text() and "load average 1.2-2.0 over 3 readings" in page.read_text()
    saved = json.loads((tmp_path / "results" / "demo.json").read_text())
    assert saved["a"] == [1] and saved["commit"] == common.commit() and saved["load_average"] == [1.25, 1.5, 2.0]
    assert saved["table"].startswith("| a |")
