"""Every CLI call and hook is a new process, so what a command imports is paid on each call. The commands that need
no model must not load the MCP SDK, the web stack, the model's runtime, numpy or the progress bars.

Checked on what a real run leaves in `sys.modules`, not on timings (`benchmarks/cli.py` measures those).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Project, cli

# Loads the CLI as the `project-ledger` script does, and reports the top-level packages in memory at exit, whether the
# interpreter is torn down or not (a hook ends with os._exit: `cli/main.exit_now`).
RUNNER = """
import atexit, json, os, sys
def report():
    open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
atexit.register(report)
end = os._exit
def reported_end(status):
    report()
    end(status)
os._exit = reported_end
from project_ledger.cli.main import main
main()
"""
# What `serve` (cli/commands.py) does before it can answer `initialize`: its imports, then `create_server`, which opens
# the journal and builds the instructions (the session-start pack). Reports the top-level packages in memory then.
SERVER_START = """
import json, os, sys
from pathlib import Path
from project_ledger.cli.commands import serve
from project_ledger.cli.serve_answers import answering_hooks
from project_ledger.config import Settings
from project_ledger.mcp.app import create_server
create_server(Settings(root=Path(sys.argv[1])), Path.cwd(), alongside=answering_hooks)
open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""
# Not tiktoken: a session-start pack rebuilt after a change counts its tokens.
SERVER = {"mcp", "starlette", "uvicorn", "jinja2", "anyio", "httpx"}
MODEL = {"fastembed", "onnxruntime", "onnx", "tokenizers", "huggingface_hub", "numpy"}
HEAVY = SERVER | MODEL | {"qdrant_client", "rich", "watchdog"}


def loaded_by(project: Project, tmp_path: Path, *args: str, stdin: str = "", script: str = RUNNER) -> set[str]:
    """The modules `script` (by default the CLI with `args`) had loaded when it finished."""
    out = tmp_path / "modules.json"
    completed = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **project.env, "MODULES_OUT": str(out)},
        cwd=project.root,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return set(json.loads(out.read_text()))


@pytest.fixture
def stored(project: Project) -> str:
    """A project with a source file, its code index and one memory that has a vector and changed since (so that the
    next command to catch its index up reads a stored vector); the memory's id."""
    (project.root / "billing.py").write_text('def export_invoices():\n    """Send the month\'s invoices."""\n')
    memory = cli(project, "remember", "Invoices are exported on the first of the month", "--json")
    cli(project, "recall", "when are invoices exported", "--json")  # loads the model, which embeds the memory
    cli(project, "pin", memory["id"])
    cli(project, "index")
    return memory["id"]


def test_commands_without_a_model_load_none_of_the_heavy_packages(project: Project, stored: str, tmp_path: Path) -> None:
    root = ["--root", str(project.root)]
    code_only = {"pathspec"}  # the source tree's ignore rules: only a command that walks the tree needs them
    commands = [
        (["remember", "Exports retry three times", *root], HEAVY | code_only),
        (["status", "--json", *root], HEAVY | code_only),
        (["history", stored, *root], HEAVY | code_only),
        (["unpin", stored, *root], HEAVY | code_only),
        (["symbols", "export_invoices", *root], HEAVY),
        (["index", *root], HEAVY),  # nothing changed; stderr is not a terminal, so no progress bars either
    ]
    for command, unwanted in commands:
        loaded = loaded_by(project, tmp_path, *command)
        assert "project_ledger" in loaded and "click" in loaded  # the run did load the CLI
        assert not loaded & unwanted, f"{command[0]} loaded {sorted(loaded & unwanted)}"


def test_a_hook_loads_none_of_the_heavy_packages(project: Project, stored: str, tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("")
    event = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project.root)}
    for payload in (
        {**event, "hook_event_name": "SessionStart", "source": "startup"},
        {**event, "hook_event_name": "UserPromptSubmit", "prompt": "when are invoices exported?"},
        {**event, "hook_event_name": "Stop", "stop_hook_active": False},
    ):
        loaded = loaded_by(project, tmp_path, "hook", "claude-code", stdin=json.dumps(payload))
        assert "project_ledger" in loaded
        # No server runs: the hook works alone, and without the CLI (`cli/hook_run.py`): click is for the commands.
        assert not loaded & (HEAVY | {"click"}), f"{payload['hook_event_name']} loaded {sorted(loaded & (HEAVY | {'click'}))}"


def test_help_lists_the_commands_kept_in_other_modules(tmp_path: Path, project: Project) -> None:
    loaded = loaded_by(project, tmp_path, "--help")
    assert not loaded & HEAVY
    listed = subprocess.run([sys.executable, "-m", "project_ledger", "--help"], capture_output=True, text=True, check=True).stdout
    for name in ("init", "config", "history", "pin", "unpin", "forget", "migrate", "inspect", "tokens", "audit", "hook"):
        assert f"  {name} " in listed


def test_a_stdio_server_loads_neither_the_model_nor_the_tokenizer_before_it_can_answer_initialize(
    project: Project, tmp_path: Path
) -> None:
    """The background start-up loads those once the client says it is initialized. Before that, on a new project (no
    pack cached) and on one with pins and a context file, only the journal is opened: the instructions fit the cap by
    their byte length, so the encoding is not needed to count their tokens."""
    def loaded() -> set[str]:
        return loaded_by(project, tmp_path, str(project.root), script=SERVER_START)

    unwanted = MODEL | {"qdrant_client", "tiktoken", "tree_sitter", "watchdog", "pathspec"}
    first = loaded()
    assert {"project_ledger", "mcp"} <= first and not first & unwanted, sorted(first & unwanted)
    (project.root / "project_context.md").write_text("# Project context\n\n- Money is integer cents.\n")
    cli(project, "remember", "Exports retry three times", "--pin")
    again = loaded()
    assert not again & unwanted, sorted(again & unwanted)
