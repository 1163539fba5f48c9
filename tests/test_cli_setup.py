"""From a fresh checkout to a connected agent: `init` drafts the project's context and builds the first index;
`config <client>` prints or merges the entry each client needs, and that entry really starts the server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from .conftest import EXECUTABLE, Project, cli, run_cli


def python_project(project: Project) -> None:
    (project.root / ".git").mkdir()
    (project.root / "src" / "billing").mkdir(parents=True)
    (project.root / "src" / "billing" / "invoices.py").write_text(
        'def export_invoices(month: str) -> list[str]:\n    """Write the month\'s invoices as CSV lines."""\n    return []\n'
    )
    (project.root / "web").mkdir()
    (project.root / "web" / "app.ts").write_text("export function render(total: number): string { return `${total}`; }\n")
    (project.root / "tests").mkdir()
    (project.root / "pyproject.toml").write_text('[project]\nname = "billing"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (project.root / "poetry.lock").write_text("")


def test_init_indexes_the_code_and_drafts_project_context_from_what_it_finds(project: Project) -> None:
    python_project(project)
    out = cli(project, "init")
    assert "indexed 2 files" in out and "Next:" in out and "config claude-code --write" in out

    draft = (project.root / "project_context.md").read_text()
    assert "- Languages: python (1 file), typescript (1 file)" in draft
    assert "- Package managers: poetry" in draft
    assert "- Tests: `poetry run pytest`" in draft
    assert "- `src/`: ..." in draft and "- `tests/`: ..." in draft and ".git" not in draft
    assert (project.data_dir / "journal.sqlite3").exists()

    found = cli(project, "symbols", "export_invoices", "--json")
    assert found["symbols"][0]["path"] == "src/billing/invoices.py"
    assert "poetry run pytest" in cli(project, "context"), "the session-start pack carries the draft"


def test_init_never_changes_an_existing_project_context(project: Project) -> None:
    python_project(project)
    written = "# Billing\nInvoices are immutable once sent.\n"
    (project.root / "project_context.md").write_text(written)
    assert "kept the existing" in cli(project, "init", "--no-index")
    assert (project.root / "project_context.md").read_text() == written


def test_init_refuses_the_home_directory_unless_it_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    refused = subprocess.run([EXECUTABLE, "init"], cwd=home, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [f"Error: {home} is the home directory; run this inside a project, or name it with --root"]
    assert not (home / ".ledger").exists() and not (home / "project_context.md").exists()


@pytest.mark.parametrize(
    ("client", "relative_path", "servers_key"),
    [("claude-code", ".mcp.json", "mcpServers"), ("cursor", ".cursor/mcp.json", "mcpServers"), ("vscode", ".vscode/mcp.json", "servers")],
)
def test_config_prints_an_entry_with_absolute_paths(project: Project, client: str, relative_path: str, servers_key: str) -> None:
    completed = run_cli(project, "config", client)
    assert completed.returncode == 0, completed.stderr
    entry = json.loads(completed.stdout)[servers_key]["ledger"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).is_file()
    assert entry["args"][-3:] == ["serve", "--root", str(project.root)]
    assert str(project.root / relative_path) in completed.stderr
    assert not (project.root / relative_path).exists(), "printing writes nothing"


def test_config_write_merges_into_an_existing_file_and_keeps_other_servers(project: Project) -> None:
    path = project.root / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "theme": "dark"}))

    assert "added server 'ledger'" in cli(project, "config", "cursor", "--write")
    written = json.loads(path.read_text())
    assert written["mcpServers"]["github"] == {"command": "gh-mcp"} and written["theme"] == "dark"
    assert written["mcpServers"]["ledger"]["args"][-1] == str(project.root)

    assert "unchanged server 'ledger'" in cli(project, "config", "cursor", "--write")
    assert "added server 'memory'" in cli(project, "config", "cursor", "--write", "--name", "memory")
    assert set(json.loads(path.read_text())["mcpServers"]) == {"github", "ledger", "memory"}


def test_config_write_leaves_a_file_it_cannot_parse_alone(project: Project) -> None:
    path = project.root / ".vscode" / "mcp.json"
    path.parent.mkdir()
    original = '{\n  // my servers\n  "servers": {}\n}\n'
    path.write_text(original)
    refused = run_cli(project, "config", "vscode", "--write")
    assert refused.returncode == 1
    assert "is not plain JSON" in refused.stderr and "add the entry by hand" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, "one line, no traceback"
    assert path.read_text() == original


def test_claude_desktop_config_goes_to_the_users_file(project: Project, tmp_path: Path) -> None:
    project.env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    cli(project, "config", "claude-desktop", "--write")
    written = json.loads((tmp_path / "xdg" / "Claude" / "claude_desktop_config.json").read_text())
    assert written["mcpServers"]["ledger"]["args"][-2:] == ["--root", str(project.root)]


@pytest.mark.anyio
async def test_the_written_entry_starts_a_working_server_from_anywhere(project: Project, tmp_path: Path) -> None:
    """A client starts the entry with its own working directory and a bare PATH: the server still finds the project."""
    cli(project, "config", "claude-code", "--write")
    entry = json.loads((project.root / ".mcp.json").read_text())["mcpServers"]["ledger"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={"PATH": "/nonexistent", "HOME": str(tmp_path)}, cwd=str(elsewhere)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert (init.server_info.name, init.server_info.title) == ("project-ledger", "Project Ledger")
        status = await session.call_tool("status", {})
        assert status.structured_content["root"] == str(project.root)
        assert status.structured_content["root_source"] == "--root"
    assert not (elsewhere / ".ledger").exists()


@pytest.mark.parametrize(
    ("client", "reference"), [("claude-code", "${LEDGER_TOKEN}"), ("cursor", "${env:LEDGER_TOKEN}"), ("vscode", "${env:LEDGER_TOKEN}")]
)
def test_config_url_points_at_a_running_server_with_the_token_by_reference(project: Project, client: str, reference: str) -> None:
    completed = run_cli(project, "config", client, "--url", "http://127.0.0.1:8765/mcp")
    assert completed.returncode == 0, completed.stderr
    (entry,) = next(iter(json.loads(completed.stdout).values())).values()
    assert entry["url"] == "http://127.0.0.1:8765/mcp" and entry["headers"] == {"Authorization": f"Bearer {reference}"}
    assert "command" not in entry and "LEDGER_TOKEN" in completed.stderr
    refused = run_cli(project, "config", "claude-desktop", "--url", "http://127.0.0.1:8765/mcp")
    assert refused.returncode == 1 and "add http://127.0.0.1:8765/mcp as a connector" in refused.stderr
