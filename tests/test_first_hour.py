"""What a new user hit in their first hour (issue 19), each through the CLI or a real MCP client."""

from __future__ import annotations

import os
import pty
import select
import subprocess

import pytest

from .conftest import EXECUTABLE, Project, cli, run_cli

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
        code.start()
        assert code.status().watcher in ("starting", "running")
    finally:
        ledger.close()
