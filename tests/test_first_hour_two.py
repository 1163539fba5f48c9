"""What a new user hit in their first hour, round two (issue 32), each through the CLI or a real MCP client."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from project_ledger.cli.manifests import read_manifests

from .conftest import EXECUTABLE, Project, cli, connect, run_cli, serve

pytestmark = pytest.mark.anyio


def run_in(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it in `cwd`: no --root, no LEDGER_ROOT or LEDGER_DATA_DIR, HOME=`home`."""
    hidden = ("LEDGER_ROOT", "LEDGER_DATA_DIR", "XDG_CONFIG_HOME")
    env = {name: value for name, value in os.environ.items() if name not in hidden}
    return subprocess.run(
        [EXECUTABLE, *args], cwd=cwd, env={**env, "HOME": str(home)}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


# -- 3: unknown tool arguments ------------------------------------------------------------


async def test_an_unknown_argument_is_refused_with_the_accepted_ones_and_the_nearest(client: Client) -> None:
    refused = await client.session.call_tool("remember", {"text": "Tabs are banned in this repo.", "kind": "decision", "tag": "style"})
    assert refused.is_error
    message = refused.content[0].text
    assert "unknown argument 'tag': remember takes text, kind, tags, " in message and message.endswith("did you mean tags?")
    assert "\n" not in message
    colour = await client.session.call_tool("remember", {"text": "Tabs are banned in this repo.", "colour": "red"})
    assert colour.is_error and "unknown argument 'colour': remember takes text, " in colour.content[0].text
    assert colour.content[0].text.endswith("; leave it out")
    several = await client.session.call_tool("recall", {"query": "tabs", "Limit": 3, "token-budget": 500})
    assert several.is_error and "unknown arguments 'Limit', 'token-budget'" in several.content[0].text
    assert "did you mean token_budget for 'token-budget'?" in several.content[0].text
    status = await client.session.call_tool("status", {"verbose": True})
    assert status.is_error and "status takes no arguments; leave it out" in status.content[0].text

    assert (await client.call_tool("status", {})).structured_content["counts"] == {}, "nothing was stored"
    stored = await client.session.call_tool("remember", {"text": "Tabs are banned in this repo.", "kind": "decision", "tags": ["style"]})
    fetched = await client.call_tool("recall", {"ids": [stored.structured_content["id"]]})
    assert fetched.structured_content["results"][0]["tags"] == ["style"]


# -- 4: the CLI finds the project from a subfolder --------------------------------------------------


def test_the_cli_in_a_subfolder_uses_the_project_s_ledger_and_says_when_it_starts_one(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "home" / "userproj"  # a project without git, under the home directory
    (root / "src" / "pkg").mkdir(parents=True)
    assert run_in(root, home, "init", "--no-index").returncode == 0
    inside = root / "src" / "pkg"
    stored = run_in(inside, home, "remember", "Indent with four spaces, never tabs.", "--kind", "decision")
    assert stored.returncode == 0 and "no ledger yet" not in stored.stderr, stored.stderr
    found = run_in(inside, home, "recall", "tabs")
    assert "Indent with four spaces" in found.stdout
    status = run_in(inside, home, "status")
    assert f"root:      {root}" in status.stdout
    assert [path for path in root.rglob(".ledger")] == [root / ".ledger"], "no ledger in the subfolder"

    fresh = tmp_path / "elsewhere"
    fresh.mkdir()
    started = run_in(fresh, home, "status")
    assert started.returncode == 0
    assert f"no ledger yet here: starting a new one in {fresh / '.ledger'}" in started.stderr and "--root" in started.stderr

    refused = run_in(home, home, "recall", "tabs")
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"Error: {home} is the home directory; run this inside a project, or name it with --root"
    assert not (home / ".ledger").exists()


# -- 5: status settles on a project with no code ------------------------------------------------------


async def test_a_client_waiting_for_status_to_settle_proceeds_on_a_project_with_no_code(project: Project) -> None:
    """`code.search_lag` stayed at 1 for ever: a scan that found no code took a revision no symbol carried."""
    async with serve(project) as ledger:
        for n in range(3):
            await ledger.remember(f"Note {n}: the billing export runs nightly at {n + 1} am.")
        with anyio.fail_after(120):  # the model loads and the first scan runs in the background
            while True:
                status = await ledger.call("status")
                index, code = status["index"], status["code"]
                if (index["lag"], index["missing_embeddings"], status["embedding"]["state"], code["last_scan"] is not None) == (0, 0, "ready", True):
                    if (code["search_lag"], code["pending_vectors"]) == (0, 0):
                        break
                await anyio.sleep(0.2)
        assert code["files"] == 0 and code["symbols"] == 0


# -- 6: init reads the manifests ---------------------------------------------------------------------


def test_init_drafts_the_project_context_from_the_manifest(project: Project) -> None:
    (project.root / ".git").mkdir()
    (project.root / "pyproject.toml").write_text(
        '[project]\nname = "httpx"\ndescription = "The next generation HTTP client."\nrequires-python = ">=3.9"\n'
        '[project.scripts]\nhttpx = "httpx:main"\n\n[tool.ruff]\nline-length = 120\n\n[tool.mypy]\nstrict = true\n'
    )
    (project.root / "uv.lock").write_text("")
    (project.root / "tests").mkdir()
    cli(project, "init", "--no-index")
    draft = (project.root / "project_context.md").read_text()
    assert draft.startswith("# httpx\n")
    assert "## What this project is\nThe next generation HTTP client.\n" in draft
    assert "- Python >=3.9" in draft
    assert "- Tests: `uv run pytest`" in draft and "- Run locally: `uv run httpx`" in draft
    assert "- Lint, format and type-check: `uv run ruff check .`, `uv run ruff format --check .`, `uv run mypy .`" in draft
    assert "- Line length 120 (ruff)\n- Type-checked with mypy --strict\n" in draft
    assert "The next generation HTTP client." in cli(project, "context"), "the manifest's description reaches the pack"


def test_package_json_cargo_and_go_mod_name_the_project_and_its_checks(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir()
    (node / "package.json").write_text(json.dumps({
        "name": "@acme/web", "description": "Acme's storefront.", "engines": {"node": ">=20"},
        "scripts": {"dev": "vite", "lint": "eslint .", "typecheck": "tsc --noEmit", "test": "vitest"},
    }))  # fmt: skip
    (node / "pnpm-lock.yaml").write_text("")
    web = read_manifests(node)
    assert (web.name, web.description, web.versions, web.run) == ("@acme/web", "Acme's storefront.", ["Node >=20"], "pnpm run dev")
    assert web.checks == ["pnpm run lint", "pnpm run typecheck"]

    rust = tmp_path / "rust"
    (rust / "src").mkdir(parents=True)
    (rust / "src" / "main.rs").write_text("fn main() {}\n")
    (rust / "Cargo.toml").write_text('[package]\nname = "ledgerd"\ndescription = "A daemon."\nedition = "2021"\nrust-version = "1.74"\n')
    daemon = read_manifests(rust)
    assert (daemon.name, daemon.description, daemon.versions, daemon.run) == ("ledgerd", "A daemon.", ["Rust (edition 2021, rust-version 1.74)"], "cargo run")
    assert daemon.checks == ["cargo clippy", "cargo fmt --check"]

    go = tmp_path / "go"
    go.mkdir()
    (go / "go.mod").write_text("module github.com/acme/queue // the job queue\n\ngo 1.22\n\nrequire example.com/x v1.0.0\n")
    (go / ".golangci.yml").write_text("")
    queue = read_manifests(go)
    assert (queue.name, queue.versions) == ("queue", ["Go module github.com/acme/queue", "Go 1.22"])
    assert queue.checks == ["go vet ./...", "gofmt -l .", "golangci-lint run"]

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text("[project\nname = ")
    (broken / "package.json").write_text("[1, 2")
    assert read_manifests(broken) == read_manifests(tmp_path / "missing"), "an unreadable manifest says nothing"


# -- 7: HTTP serve on a busy port, and on port 0 ------------------------------------------------------


def test_http_serve_on_a_busy_port_says_so_in_one_line_before_any_token(project: Project) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = run_cli(project, "serve", "--transport", "http", "--port", str(port))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"Error: cannot listen on 127.0.0.1 port {port}: another program is using it; choose another with --port N, "
        "or --port 0 for any free one"
    ]
    assert not (project.data_dir / "http_token").exists(), "no token was made, let alone printed"


def test_http_serve_on_port_0_prints_the_port_it_chose_and_serves_there(project: Project) -> None:
    process = subprocess.Popen(
        [EXECUTABLE, "serve", "--root", str(project.root), "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **project.env},
    )  # fmt: skip
    try:
        assert process.stderr is not None
        lines = [process.stderr.readline() for _ in range(3)]
        address = next(match for line in lines if (match := re.search(r"at http://127\.0\.0\.1:(\d+)/mcp", line)))
        token = next(line.split("Bearer ")[1].strip() for line in lines if "Bearer " in line)
        port = int(address.group(1))
        assert port != 0
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip
        answered = httpx.post(
            f"http://127.0.0.1:{port}/mcp", json=hello, timeout=60,
            headers={"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"},
        )  # fmt: skip
        assert answered.status_code == 200 and "project-ledger" in answered.text
    finally:
        process.terminate()
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()


# -- 8: config claude-desktop ---------------------------------------------------------------------------


def test_config_claude_desktop_serves_the_working_directory_s_project_and_keeps_each_project_apart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    billing, search = home / "src" / "billing", home / "src" / "search"
    for root in (billing, search):
        (root / ".git").mkdir(parents=True)
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"  # where Linux builds read it, XDG_CONFIG_HOME unset
    (billing / "src").mkdir()

    added = run_in(billing / "src", home, "config", "claude-desktop", "--write")
    assert added.returncode == 0, added.stderr
    assert f"added server 'ledger' in {desktop}, serving {billing}" in added.stdout
    assert json.loads(desktop.read_text())["mcpServers"]["ledger"]["args"][-2:] == ["--root", str(billing)]

    clash = run_in(search, home, "config", "claude-desktop", "--write")
    assert clash.returncode == 1
    assert f"already has a server 'ledger', for {billing}" in clash.stderr and "--name ledger-search" in clash.stderr
    assert run_in(search, home, "config", "claude-desktop", "--write", "--name", "ledger-search").returncode == 0
    servers = json.loads(desktop.read_text())["mcpServers"]
    assert {name: entry["args"][-1] for name, entry in servers.items()} == {"ledger": str(billing), "ledger-search": str(search)}


# -- 9: small things a model trips on -----------------------------------------------------------------


async def test_recall_that_fits_nothing_in_its_budget_says_so_once(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.settled()
        memory = await ledger.remember(
            "Tabs are banned in this repository.", kind="decision", tags=[f"style-rule-number-{n}-for-the-formatter" for n in range(20)]
        )
        await ledger.settled()
        result = await ledger.session.call_tool("recall", {"query": "tabs banned", "token_budget": 150})
        assert not result.is_error
        assert result.structured_content["results"] == []
        assert f"1 left out to fit token_budget=150; for them whole: recall(ids=[{memory}])" in result.structured_content["note"]
        assert "No relevant memory" not in result.content[0].text and "no relevant memory" not in result.content[0].text


async def test_context_heads_its_memories_with_the_order_they_are_in(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.settled()
        await ledger.remember("Invoices are exported nightly as CSV.", kind="decision")
        await ledger.settled()
        pack = (await ledger.call("context", query="how are invoices exported?"))["text"]
        assert "# Memories relevant to the question, ranked by match, recency and kind" in pack
        assert "best first" not in pack


async def test_find_symbol_with_no_match_points_to_search_code(project: Project) -> None:
    (project.root / "billing.py").write_text("def export_invoices() -> None:\n    pass\n")
    async with connect(project) as ledger:
        with anyio.fail_after(120):
            while not (await ledger.call("find_symbol", name="export_invoices"))["symbols"]:
                await anyio.sleep(0.1)
        result = await ledger.session.call_tool("find_symbol", {"name": "NoSuchThing"})
        note = result.structured_content["note"]
        assert note.startswith("no definition is named 'NoSuchThing'; search_code finds symbols by what they do")
        assert result.content[0].text.startswith("0 definitions (none); no definition is named")


async def test_repo_map_of_a_real_package_leads_with_its_classes_and_shows_its_clients(project: Project) -> None:
    """httpx, as installed beside the MCP SDK: the map names `Client` and `AsyncClient` and opens with a class, not
    with a method under its class's name (`Headers.multi_items` led before)."""
    shutil.copytree(Path(httpx.__file__).parent, project.root / "httpx", ignore=shutil.ignore_patterns("__pycache__"))
    async with connect(project) as ledger:
        with anyio.fail_after(240):
            while (await ledger.call("status"))["code"]["last_scan"] is None:
                await anyio.sleep(0.2)
        outline = (await ledger.call("repo_map", token_budget=1024))["text"]
    assert "class Client(" in outline and "class AsyncClient(" in outline
    first = outline.splitlines()[1]
    assert re.match(r"  \d+: class \w+", first), first
    assert all(len(line) <= 120 for line in outline.splitlines()), "long signatures are cut in an outline"


# -- undoing it all ---------------------------------------------------------------------------------------


def test_uninstall_takes_out_exactly_what_init_and_config_added(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / "src" / "billing"
    (root / ".git").mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "theme": "dark"}))
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Bash(pytest)"]}}))
    assert run_in(root, home, "init", "--no-index").returncode == 0
    for args in (["claude-code"], ["cursor"], ["vscode"], ["claude-desktop"], ["claude-code", "--hooks"], ["cursor", "--hooks"], ["windsurf", "--hooks"]):
        assert run_in(root, home, "config", *args, "--write").returncode == 0
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    other = json.loads(desktop.read_text())
    other["mcpServers"]["ledger-search"] = {"command": "/usr/bin/python3", "args": ["-m", "project_ledger", "serve", "--root", "/srv/search"]}
    desktop.write_text(json.dumps(other))

    assert run_in(root, home, "config", "claude-code", "--remove").returncode == 0
    assert json.loads((root / ".mcp.json").read_text()) == {"mcpServers": {"github": {"command": "gh-mcp"}}, "theme": "dark"}
    again = run_in(root, home, "config", "claude-code", "--remove")
    assert again.returncode == 1 and "no server 'ledger' of the ledger to remove" in again.stderr

    done = run_in(root, home, "uninstall")
    assert done.returncode == 0, done.stderr
    assert "--data deletes them" in done.stderr
    assert not any((root / folder).exists() for folder in (".cursor", ".vscode", ".windsurf")), "files and folders config made are gone"
    assert json.loads((root / ".claude" / "settings.local.json").read_text()) == {"permissions": {"allow": ["Bash(pytest)"]}}
    assert json.loads(desktop.read_text())["mcpServers"] == {"ledger-search": other["mcpServers"]["ledger-search"]}
    assert (root / ".ledger").is_dir() and (root / "project_context.md").is_file()

    unasked = run_in(root, home, "uninstall", "--data")  # no terminal to confirm on: nothing is deleted
    assert unasked.returncode == 1 and (root / ".ledger").is_dir()
    assert run_in(root, home, "uninstall", "--data", "--yes").returncode == 0
    assert sorted(path.name for path in root.iterdir()) == [".claude", ".git", ".mcp.json"]
