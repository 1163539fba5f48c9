"""What a new user hit in their first hour (issue 19), each through the CLI or a real MCP client."""

from __future__ import annotations

import json
import os
import re
import pty
import select
import sqlite3
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from mcp import Client

from project_ledger.storage.schema import MIGRATIONS

from .conftest import EXECUTABLE, Project, cli, run_cli

if TYPE_CHECKING:
    from project_ledger.memory.service import LedgerService

pytestmark = pytest.mark.anyio


def test_cli_remember_checks_for_near_duplicates(project: Project) -> None:
    first = cli(project, "remember", "Use Console(record=True) to capture the output in tests", "--kind", "decision", "--json")
    assert first["created"] and first["note"] is None
    again = cli(project, "remember", "Use Console(record=True) to capture all the output in tests", "--kind", "decision", "--json")
    assert not again["created"] and again["duplicate_of"] == first["id"]

    plain = run_cli(project, "remember", "Use Console(record=True) to capture all output in tests", "--kind", "decision")
    assert plain.returncode == 0 and plain.stdout.strip() == f"{first['id']} (already stored)"
    assert "already says this" in plain.stderr


def test_cli_forget_checks_the_id_then_shows_what_it_will_erase(project: Project) -> None:
    unknown = run_cli(project, "forget", "m-no-such-id")
    assert unknown.returncode == 1 and "Erase" not in unknown.stderr
    assert "no memory with id 'm-no-such-id'" in unknown.stderr

    turn = cli(project, "remember", "We decided to use Postgres 16 for the billing service.", "--kind", "turn", "--json")
    [captured] = turn["captured"]
    asked = run_cli(project, "forget", turn["id"])  # no terminal to confirm on: the prompt is shown, then nothing happens
    assert asked.returncode == 1 and "Aborted" in asked.stderr
    prompt = asked.stderr
    assert "We decided to use Postgres 16 for the billing service." in prompt
    assert captured["id"] in prompt and "1 memory derived from it" in prompt
    assert prompt.index("Postgres 16") < prompt.index("Erase")
    assert cli(project, "forget", turn["id"], "--yes") == f"forgot {turn['id']}; also erased: {captured['id']}\n"
    again = run_cli(project, "forget", turn["id"])
    assert again.returncode == 0 and again.stdout == f"{turn['id']} was already forgotten\n"


def test_a_closed_pipe_ends_the_cli_quietly(project: Project) -> None:
    """`project-ledger status | head -1`: the reader has gone before the command writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        completed = subprocess.run(
            [EXECUTABLE, "status", "--root", str(project.root)], stdout=write, stderr=subprocess.PIPE, text=True, timeout=300
        )
    finally:
        os.close(write)
    assert completed.stderr == ""
    assert completed.returncode == 141  # 128 + SIGPIPE, as a Unix tool killed by the closed pipe reports it


def test_serve_on_a_terminal_says_what_it_is(project: Project) -> None:
    """Started by hand, `serve` waits for a client's JSON-RPC on stdin; one line on stderr says so."""
    controller, terminal = pty.openpty()
    command = [EXECUTABLE, "serve", "--root", str(project.root)]
    try:
        with subprocess.Popen(command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project.root) as server:
            ready, _, _ = select.select([server.stderr], [], [], 20)
            line = server.stderr.readline().decode() if ready else ""
            server.terminate()
            output, _ = server.communicate(timeout=30)
    finally:
        os.close(controller)
        os.close(terminal)
    assert "MCP server" in line and "project-ledger config" in line
    assert output == b""  # stdout stays the protocol's


def test_the_unedited_template_stays_out_of_the_pack_and_status_and_doctor_say_so(project: Project) -> None:
    (project.root / "app.py").write_text('def main() -> None:\n    """Start the app."""\n')
    cli(project, "init")
    pack = cli(project, "context", "--json")["text"]
    for placeholder in ("One or two sentences", "`...`", "none detected", "Rules a linter does not enforce", "Dated, with the reason"):
        assert placeholder not in pack
    assert "## Conventions" not in pack, "a section holding only a placeholder goes with it"
    assert "Languages: python (1 file)" in pack, "what init detected stays"
    status = cli(project, "status", "--json")
    assert status["project_context_placeholders"] >= 5
    assert "still has" in cli(project, "status") and "placeholders" in cli(project, "status")
    doctor = cli(project, "doctor", "--json")
    [finding] = [f for f in doctor if f["check"] == "context"]
    assert finding["state"] == "warning" and "project_context.md" in finding["detail"]

    (project.root / "project_context.md").write_text("# app\n\n## What this project is\nA tiny CLI that greets people.\n")
    assert cli(project, "status", "--json")["project_context_placeholders"] == 0
    [finding] = [f for f in cli(project, "doctor", "--json") if f["check"] == "context"]
    assert finding["state"] == "ok"
    assert "A tiny CLI that greets people." in cli(project, "context", "--json")["text"]


def test_status_names_the_command_that_embeds_symbols_and_speaks_for_its_own_process(project: Project) -> None:
    (project.root / "app.py").write_text('def main() -> None:\n    """Start the app."""\n\n\ndef stop() -> None:\n    pass\n')
    cli(project, "index")
    status = cli(project, "status")
    assert "2 symbols without vectors" in status and "project-ledger index --embed" in status
    assert "not loaded by this command" in status, "a CLI process has its own model; a server's state is its own"
    [code] = [f for f in cli(project, "doctor", "--json") if f["check"] == "code index"]
    assert code["state"] == "warning" and "2 symbols have no vector" in code["detail"]

    cli(project, "index", "--embed")
    status = cli(project, "status")
    assert "without vectors" not in status and "run `project-ledger index" not in status
    [code] = [f for f in cli(project, "doctor", "--json") if f["check"] == "code index"]
    assert code["state"] == "ok"


def test_a_server_s_watcher_reads_starting_not_off_while_it_starts(project: Project) -> None:
    from .conftest import open_project_ledger

    (project.root / "app.py").write_text("def main() -> None:\n    pass\n")
    ledger = open_project_ledger(project.settings(watch=True))
    try:
        code = ledger.require_code()
        assert code.status().watcher == "off", "a process that never starts one (the CLI) has none"
        code.expect_start()  # a server, waiting for its client's hello before it starts
        assert code.status().watcher == "starting"
        code.start()
        assert code.status().watcher in ("starting", "running")
    finally:
        ledger.close()


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("recall", {"query": "x", "k": 100000}, ["k=100000 is out of range", "1 to 100", "(LEDGER_MAX_K)"]),
        ("recall", {"query": "x", "k": 0}, ["k=0 is out of range", "1 to 100", "(LEDGER_MAX_K)"]),
        ("recall", {"query": "x", "k": "eight"}, ["k='eight' is not a whole number"]),
        ("remember", {"text": "x", "kind": "opinion"}, ["kind='opinion' is not one of note, decision"]),
        ("context", {"token_budget": 10}, ["token_budget=10 is out of range: give 100 to 25000 (LEDGER_MAX_RESULT_TOKENS)"]),
        ("remember", {}, ["text is missing: What to keep, verbatim"]),
        ("remember", {"text": "x", "tags": "db"}, ["tags='db' is not a list"]),
    ],
    ids=["k-high", "k-zero", "k-word", "kind", "budget", "missing", "tags"],
)
async def test_schema_errors_over_mcp_say_what_to_do(client: Client, tool: str, arguments: dict, expected: list[str]) -> None:
    result = await client.session.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text
    assert all(fragment in text for fragment in expected), text
    assert "validation error" not in text and "pydantic" not in text and "http" not in text
    assert "\n" not in text, "one line"


async def test_schema_bounds_are_the_configured_limits(tmp_path: Path) -> None:
    from .conftest import in_memory_client, open_project_ledger

    project = Project(tmp_path, env={"LEDGER_MAX_K": "12", "LEDGER_MAX_RESULT_TOKENS": "3000"})
    settings = project.settings(watch=False)
    async with in_memory_client(settings, open_project_ledger(settings)) as client:
        tools = {tool.name: tool.input_schema["properties"] for tool in (await client.list_tools()).tools}
        maximum = lambda prop: next(o["maximum"] for o in [prop, *prop.get("anyOf", [])] if "maximum" in o)  # noqa: E731
        assert maximum(tools["recall"]["k"]) == 12
        assert maximum(tools["recall"]["token_budget"]) == maximum(tools["context"]["token_budget"]) == 3000
        assert maximum(tools["repo_map"]["token_budget"]) == 3000
        refused = await client.session.call_tool("repo_map", {"token_budget": 3001})
        assert refused.is_error and "3000 (LEDGER_MAX_RESULT_TOKENS)" in refused.content[0].text


async def test_find_symbol_says_when_it_cut_the_list(project: Project) -> None:
    from .conftest import connect

    (project.root / "handlers.py").write_text("".join(f"def handle_{n}() -> None:\n    pass\n\n\n" for n in range(25)))
    async with connect(project) as ledger:
        with anyio.fail_after(120):  # the first scan runs in the background
            while not (found := (result := await ledger.session.call_tool("find_symbol", {"name": "handle_"})).structured_content)["symbols"]:
                await anyio.sleep(0.1)
        assert len(found["symbols"]) == 20 and found["truncated"] and found["total"] == 25
        assert result.content[0].text.startswith("20 of 25 definitions (prefix)")
        everything = await ledger.call("find_symbol", name="handle_", limit=30)
        assert len(everything["symbols"]) == 25 and not everything["truncated"] and everything["total"] == 25
    shell = run_cli(project, "symbols", "handle_")
    assert "(20 of 25 by prefix; --limit shows more)" in shell.stderr


async def test_replies_say_each_thing_once_in_plain_words(client: Client) -> None:
    with anyio.fail_after(120):  # the near-duplicate check needs the search index, which opens in the background
        while (await client.call_tool("status", {})).structured_content["index"]["state"] != "ready":
            await anyio.sleep(0.1)
    first = await client.session.call_tool("remember", {"text": "Use Console(record=True) to capture the output in tests", "kind": "decision"})
    memory_id = first.structured_content["id"]
    again = await client.session.call_tool("remember", {"text": "Use Console(record=True) to capture all the output in tests", "kind": "decision"})
    assert again.content[0].text.count("already says this") == 1, again.content[0].text

    fetched = await client.session.call_tool("recall", {"ids": [memory_id]})
    assert fetched.content[0].text.startswith("1 memory (by id)")
    assert fetched.structured_content["mode"] == "by-id"
    history = await client.session.call_tool("history", {"id": memory_id})
    assert history.content[0].text.startswith("1 version; current:")


def test_summarize_of_an_unknown_session_speaks_shell_on_the_cli(project: Project) -> None:
    completed = run_cli(project, "summarize", "no-such-session")
    assert completed.returncode == 1
    assert "session='no-such-session'" not in completed.stderr
    assert "--session no-such-session" in completed.stderr


async def test_serve_with_a_missing_root_starts_and_says_why(project: Project) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    missing = project.root / "no-such-dir"
    params = StdioServerParameters(command=EXECUTABLE, args=["serve", "--root", str(missing)], env=project.server_env(), cwd=str(project.root))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert f"--root {missing} is not an existing directory" in (init.instructions or "")
        result = await session.call_tool("recall", {"query": "anything"})
        assert result.is_error and "is not an existing directory" in result.content[0].text


@pytest.mark.parametrize(
    ("path", "source", "original", "alias"),
    [
        ("a.py", "from .markup import render as render_markup\n", "render", "render_markup"),
        ("b.py", "import numpy as np\n", None, "np"),
        ("a.js", "import { render as renderMarkup } from './markup';\n", "render", "renderMarkup"),
        ("b.js", "import * as md from './md';\n", None, "md"),
        ("a.ts", "import { render as renderMarkup } from './markup';\n", "render", "renderMarkup"),
        ("a.tsx", "import { render as renderMarkup } from './markup';\n", "render", "renderMarkup"),
        ("a.rs", "use crate::markup::render as render_markup;\n", "render", "render_markup"),
        ("a.go", 'package main\n\nimport md "example.com/markup"\n', None, "md"),
        ("a.php", "<?php\nuse App\\Markup\\Render as RenderMarkup;\n", "Render", "RenderMarkup"),
        ("a.cs", "using RenderMarkup = App.Markup.Render;\n", None, "RenderMarkup"),
        ("a.kt", "import app.markup.render as renderMarkup\n", "render", "renderMarkup"),
        ("a.scala", "import app.markup.{render => renderMarkup}\n", None, "renderMarkup"),
    ],
)
def test_an_aliased_import_is_a_use_of_the_alias_and_of_the_name(path: str, source: str, original: str | None, alias: str) -> None:
    from project_ledger.code.languages import Grammar, language_for
    from project_ledger.code.symbols import extract

    spec = language_for(path)
    assert spec is not None
    names = {reference.name for reference in extract(Grammar(spec), source.encode()).references}
    assert alias in names
    if original is not None:
        assert original in names


async def test_find_references_finds_an_aliased_import(project: Project) -> None:
    from .conftest import connect

    (project.root / "markup.py").write_text("def render(text: str) -> str:\n    return text\n")
    (project.root / "console.py").write_text("from .markup import render as render_markup\n\n\ndef show() -> str:\n    return render_markup('x')\n")
    async with connect(project) as ledger:
        with anyio.fail_after(120):  # the first scan runs in the background
            while len((found := await ledger.call("find_references", name="render_markup"))["references"]) < 2:
                await anyio.sleep(0.1)
        assert {(r["path"], r["line"]) for r in found["references"]} == {("console.py", 1), ("console.py", 5)}


def test_inspector_pages_link_citations_and_symbols_and_list_each_related_memory_once(ledger: LedgerService) -> None:
    from starlette.testclient import TestClient

    from project_ledger.inspector.app import inspector_app

    turns = [
        ledger.remember("We decided to use Postgres 16 for the billing service.", kind="turn", session="s1", role="user"),
        ledger.remember("The invoice export must finish before 6am.", kind="turn", session="s1", role="assistant"),
    ]
    gist = ledger.summarize_session("s1", 600, why_not="a test has no client model")
    with TestClient(inspector_app(ledger, {"testserver"}, set(), None)) as http:
        turn_page = http.get(f"/memories/{turns[0].id}").text
        related = turn_page.split("Related memories", 1)[1]
        assert related.count(f'href="/memories/{gist.id}"') == 1, "one line per related memory, its relations joined"

        gist_text = http.get(f"/memories/{gist.id}").text.split("memory-text", 1)[1].split("</pre>", 1)[0]
        cited = re.findall(r"\[(m[0-9a-z]{10})\]", gist.text)
        assert cited and all(f'[<a class="id" href="/memories/{id}">{id}</a>]' in gist_text for id in cited)

        forget_page = http.get(f"/memories/{turns[0].id}/forget").text
        assert " There is no undo" in forget_page and ".There is no undo" not in forget_page
        assert forget_page.count(f'href="/memories/{gist.id}"') == 1

        (ledger.paths.root / "app.py").write_text("def greet(name: str) -> str:\n    return name\n")
        ledger.require_code().indexer.scan()
        anchored = ledger.remember("`greet` in app.py must stay a pure function.", kind="constraint")
        code_links = http.get(f"/memories/{anchored.id}").text.split("Links to code", 1)[1]
        assert '<a href="/code?symbol=greet"><code>symbol greet in app.py</code></a>' in code_links, "a symbol link opens its definition"

        recall_page = http.get("/recall").text
        assert "Session filter" in recall_page and "only memories filed under this session" in recall_page
        assert "ranks that session's memories a little higher" in recall_page


async def test_the_tool_list_a_model_reads_fits_in_2000_tokens(client: Client) -> None:
    """Name, description and input schema of every tool, as JSON, counted with cl100k (`benchmarks/tool_surface.py`)."""
    from project_ledger.text.tokens import TokenCounter

    tools = (await client.list_tools()).tools
    counted = {
        tool.name: TokenCounter().count(json.dumps({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}))
        for tool in tools
    }
    assert len(counted) == 13 and sum(counted.values()) <= 2000, counted
    recall = next(tool for tool in tools if tool.name == "recall")
    assert "\n" not in (recall.description or "") and "title" not in recall.input_schema
    assert recall.input_schema["properties"]["query"] == {"type": "string", "description": "Question or keywords; exact identifiers work too."}
    outputs = {tool.name: TokenCounter().count(json.dumps(tool.output_schema)) for tool in tools}
    assert sum(outputs.values()) <= 2700 and outputs["status"] <= 320, outputs
    status = await client.call_tool("status", {})  # the client checks the result against the (shallower) schema
    assert not status.is_error and status.structured_content["index"]["state"] in ("opening", "ready")


@pytest.mark.parametrize("root_from", ["--root", "working directory"])
async def test_a_client_on_the_2026_07_28_revision_gets_the_pack_and_every_tool(project: Project, root_from: str) -> None:
    """Stateless 2026-07-28: instructions come from server/discover, the client offers neither roots nor sampling."""
    from mcp import StdioServerParameters

    (project.root / "app.py").write_text('def greet(name: str) -> str:\n    """Say hello."""\n    return name\n')
    (project.root / "project_context.md").write_text("# app\n\nA tiny app that greets people.\n")
    params = project.params()
    if root_from == "working directory":
        params = StdioServerParameters(command=EXECUTABLE, args=["serve"], env=project.server_env(), cwd=str(project.root))
    async with Client(params, mode="auto", raise_exceptions=True) as client:
        assert client.protocol_version == "2026-07-28"
        assert "A tiny app that greets people." in (client.instructions or "")

        async def call(tool: str, **arguments: object) -> dict:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content[0].text)
            return result.structured_content

        turn = await call("remember", text="We decided to greet people by first name.", kind="turn", session="s1", role="user")
        assert (await call("status"))["root"] == str(project.root)
        assert (await call("recall", query="how do we greet people?"))["results"]
        assert "tiny app" in (await call("context", query="greeting"))["text"]
        assert (await call("history", id=turn["id"]))["current"] == turn["id"]
        await call("pin", id=turn["id"])
        await call("unpin", id=turn["id"])
        gist = await call("summarize_session", session="s1")
        assert gist["method"] == "extractive" and "sampling" in (gist["note"] or "")
        with anyio.fail_after(120):  # the first code scan runs in the background
            while not (await call("find_symbol", name="greet"))["symbols"]:
                await anyio.sleep(0.1)
        assert (await call("find_symbol", name="greet"))["symbols"][0]["path"] == "app.py"
        await call("search_code", query="say hello")
        await call("find_references", name="greet")
        assert "app.py" in (await call("repo_map"))["text"]
        assert turn["id"] in (await call("forget", id=turn["id"]))["id"]


async def test_paths_with_spaces_non_ascii_and_length_work_end_to_end(tmp_path: Path) -> None:
    """init, index, symbols, config and serve (started from the config entry) with its watcher, on such a root."""
    from mcp import StdioServerParameters

    root = tmp_path / "my projects" / ("Ünïcødé prøject " + "long " * 40).strip() / "app — v2"
    (root / "src").mkdir(parents=True)
    project = Project(root)
    (root / "src" / "dätä fïle.py").write_text('def lade_daten() -> None:\n    """Lädt die Daten."""\n')
    assert len(str(root)) > 240
    cli(project, "init")
    assert cli(project, "symbols", "lade_daten", "--json")["symbols"][0]["path"] == "src/dätä fïle.py"

    entry = json.loads(cli(project, "config", "claude-code"))["mcpServers"]["ledger"]
    assert entry["args"][-2:] == ["--root", str(root)]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=project.server_env(), cwd=str(tmp_path))
    async with Client(params, mode="legacy", raise_exceptions=True) as client:
        status = (await client.call_tool("status", {})).structured_content
        assert status["root"] == str(root) and status["code"]["watcher"] in ("starting", "running")
        (root / "src" / "nëu ë.py").write_text("def neue_funktion() -> None:\n    pass\n")
        with anyio.fail_after(120):  # the watcher re-indexes after a quiet moment (slower on a loaded machine)
            while not (found := (await client.call_tool("find_symbol", {"name": "neue_funktion"})).structured_content)["symbols"]:
                await anyio.sleep(0.2)
        assert found["symbols"][0]["path"] == "src/nëu ë.py"


def test_index_events_carry_the_time_they_happened(ledger: LedgerService) -> None:
    ledger.sync.open_now()
    ledger.journal.request_reindex()
    ledger.sync.catch_up()
    [event] = [e for e in ledger.status().index.events if "rebuilt on request" in e]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ index rebuilt on request \(project-ledger reindex\)", event), event


def test_inspector_code_page_runs_one_tool_per_form(ledger: LedgerService) -> None:
    from starlette.testclient import TestClient

    from project_ledger.inspector.app import inspector_app

    (ledger.paths.root / "app.py").write_text("def greet(name: str) -> str:\n    return name\n")
    ledger.require_code().indexer.scan()
    with TestClient(inspector_app(ledger, {"testserver"}, set(), None)) as http:
        page = http.get("/code").text
        assert page.count("<form") == 3 and 'class="repo-map"' in page
        found = http.get("/code", params={"symbol": "greet"}).text
        assert "Definitions of" in found and 'class="repo-map"' not in found, "a symbol search does not redraw the map"
        searched = http.get("/code", params={"q": "greet"}).text
        assert "Search:" in searched and 'class="repo-map"' not in searched


def test_an_index_built_before_the_alias_queries_is_parsed_again_once(project: Project) -> None:
    """The tags queries changed (aliases are uses now): a code index from before is re-parsed at its next scan."""
    (project.root / "console.py").write_text("from .markup import render as render_markup\n")
    cli(project, "index")
    with sqlite3.connect(project.data_dir / "journal.sqlite3") as db:  # as the previous queries left it
        db.execute("DELETE FROM code_refs WHERE name = 'render_markup'")
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")  # the reparse is the latest migration
    assert cli(project, "index", "--json")["parsed"] == 1
    assert cli(project, "index", "--json")["parsed"] == 0, "once"
    with sqlite3.connect(project.data_dir / "journal.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM code_refs WHERE name = 'render_markup'").fetchone()[0] == 1
