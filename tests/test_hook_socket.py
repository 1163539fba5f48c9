"""Hooks answered by the project's running `serve` over its local socket, and the hook's own work whenever no server
answers for it: a real `serve` process over stdio, the real hook command, a real data directory."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from project_ledger.local_socket import ask, settings_fingerprint, socket_path

from .conftest import EXECUTABLE, Project, cli, journal_bytes, run_cli
from .test_hooks import FIXTURE, GITHUB_TOKEN, context_of, event, hook, memories, runs, turns, windsurf_hook
from .test_start_imports import loaded_by

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hook-socket-test", "version": "1"}},
}  # fmt: skip


def wait_for(condition: Any, what: str, seconds: float = 120) -> None:
    """Wait until `condition()` holds (a server process starting on a loaded machine); not a timing check."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


@contextmanager
def running_serve(project: Project, tmp_path: Path, cwd: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """`project-ledger serve` as a client starts it (in the project's folder unless `cwd` is given), initialized
    over stdio, in the environment the hooks get; it exits when its stdin closes."""
    log = (tmp_path / "serve.log").open("ab")
    process = subprocess.Popen(
        [EXECUTABLE, "serve", "--root", str(project.root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        env={**os.environ, **project.env}, cwd=cwd or project.root,
    )  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "serve did not answer initialize"
        assert json.loads(process.stdout.readline())["result"]["serverInfo"]["name"] == "project-ledger"
        wait_for(lambda: socket_path(project.data_dir).exists(), "the server's socket")
        yield process
    finally:
        if process.poll() is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        log.close()


@pytest.mark.parametrize("with_server", [False, True], ids=["alone", "served"])
def test_a_session_gets_the_same_from_a_running_server_as_from_the_hook_alone(project: Project, tmp_path: Path, with_server: bool) -> None:
    pinned = cli(project, "remember", "Invoice exports retry with exponential backoff: 250ms doubling to 8s", "--kind", "decision").strip()
    cli(project, "pin", pinned)
    logged = cli(project, "remember", "Invoice export retries back off quietly: each attempt is logged, never alerted", "--kind", "decision").strip()
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURE, transcript)

    with running_serve(project, tmp_path) if with_server else nullcontext():
        assert "250ms doubling to 8s" in context_of(hook(project, event(project, "SessionStart", source="startup")), "SessionStart")
        prompt = event(project, "UserPromptSubmit", prompt="How do invoice export retries back off?")
        injected = context_of(hook(project, prompt), "UserPromptSubmit")
        assert logged in injected and pinned not in injected and "ids=" in injected  # the pin came with the start pack
        hook(project, event(project, "UserPromptSubmit", prompt=f"Use my token {GITHUB_TOKEN} for the release"))
        unrelated = hook(project, event(project, "UserPromptSubmit", prompt="Rename the sidebar button's CSS class to nav-toggle"))
        assert unrelated.stdout == ""
        assert hook(project, event(project, "Stop", transcript, stop_hook_active=False)).stdout == ""
        hook(project, event(project, "SubagentStop", transcript))  # the same transcript again: nothing stored twice

    assert GITHUB_TOKEN.encode() not in journal_bytes(project)
    said = turns(project)
    assert [role for role, _ in said].count("user") == 3 and len(said) == 3 + 6
    logged = runs(project)
    assert [run.state for run in logged] == ["ok"] * 6
    assert all(run.served == with_server for run in logged)  # answered by the server whenever one was up


def test_a_served_hook_whose_input_names_no_folder_is_handled_for_the_hooks_own(project: Project, tmp_path: Path) -> None:
    """Windsurf's input names no folder: the server, started elsewhere, finds the project from the hook's."""
    (project.root / ".git").mkdir()
    (project.root / "api").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    asked = {"agent_action_name": "pre_user_prompt", "trajectory_id": "cascade-9", "tool_info": {"user_prompt": "Where do refunds go?"}}
    with running_serve(project, tmp_path, cwd=elsewhere):
        assert windsurf_hook(project, asked, project.root / "api").stdout == ""
    assert [(m["role"], m["text"]) for m in memories(project) if m["session"] == "cascade-9"] == [("user", "Where do refunds go?")]
    assert runs(project)[-1].served and runs(project)[-1].state == "ok"


def test_a_hook_works_alone_when_the_server_died_declines_or_cannot_read_it(project: Project, tmp_path: Path) -> None:
    prompt = event(project, "UserPromptSubmit", prompt="How do invoice export retries back off?")
    cli(project, "remember", "Invoice exports retry with exponential backoff: 250ms doubling to 8s", "--kind", "decision")
    with running_serve(project, tmp_path) as process:
        path = socket_path(project.data_dir)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # its owner's processes only

        # Other LEDGER_* settings than the server's: it declines, and the hook honours its own (nothing injected).
        project.env["LEDGER_HOOK_INJECT_TOKENS"] = "0"
        assert hook(project, prompt).stdout == ""
        del project.env["LEDGER_HOOK_INJECT_TOKENS"]
        # Input the hook cannot read is not sent at all; input the server reads as a bad event is logged as one.
        assert hook(project, b"{not json").stdout == ""
        assert hook(project, {"hook_event_name": "UserPromptSubmit", "cwd": str(project.root)}).stdout == ""
        assert hook(project, prompt).stdout != ""

        process.send_signal(signal.SIGKILL)  # dies without removing its socket file
        process.wait()
    assert socket_path(project.data_dir).exists()
    assert hook(project, prompt).stdout != ""  # the stale socket: the hook does the work itself

    with running_serve(project, tmp_path):  # a new server replaces the stale socket
        assert hook(project, prompt).stdout != ""
    assert not socket_path(project.data_dir).exists()  # removed when the server exits

    logged = runs(project)
    assert [run.served for run in logged] == [False, False, True, True, False, True]
    assert [run.state for run in logged[:3]] == ["ok", "error", "error"]
    assert "not JSON" in logged[1].detail and "session_id" in logged[2].detail  # a bad event: logged, nothing printed
    assert [(role, text) for role, text in turns(project)] == [("user", "How do invoice export retries back off?")]


def test_a_server_without_an_open_index_leaves_a_remember_to_the_command(project: Project, tmp_path: Path) -> None:
    # Nothing listens there: the server's index cannot open, so it would skip the near-duplicate check; it declines,
    # and the command works alone (and says itself that it could not check).
    project.env["QDRANT_URL"] = "http://127.0.0.1:9"
    with running_serve(project, tmp_path):
        root = str(project.root)
        loaded = loaded_by(project, tmp_path, "remember", "Export retries give up after five attempts", "--root", root)
        assert "qdrant_client" in loaded  # the command tried an index of its own
        result = cli(project, "remember", "Invoice PDFs are rendered by WeasyPrint", "--kind", "decision", "--json")
        assert result["created"] and "near-duplicate check skipped" in result["note"]


def test_a_served_hook_or_recall_loads_little_and_bad_requests_get_clear_errors(project: Project, tmp_path: Path) -> None:
    decision = cli(project, "remember", "Invoice exports retry with exponential backoff: 250ms doubling to 8s", "--kind", "decision").strip()
    with running_serve(project, tmp_path):
        # A hook the server answers loads neither the CLI's framework nor the settings' (nor anything heavier).
        prompt = json.dumps(event(project, "UserPromptSubmit", prompt="How do invoice export retries back off?"))
        loaded = loaded_by(project, tmp_path, "hook", "claude-code", stdin=prompt)
        assert "project_ledger" in loaded and not loaded & {"click", "pydantic", "pydantic_settings", "sqlite3"}
        assert runs(project)[-1].served
        # A recall the server answers uses its model: this process loads none.
        loaded = loaded_by(project, tmp_path, "recall", "how do export retries back off", "--json", "--root", str(project.root))
        assert not loaded & {"fastembed", "onnxruntime", "numpy"}
        result = cli(project, "recall", "how do export retries back off", "--json")
        assert result["mode"] == "hybrid" and result["results"][0]["id"] == decision
        refused = run_cli(project, "recall", "anything", "-k", "0")
        assert refused.returncode == 1 and "k" in refused.stderr and "Traceback" not in refused.stderr

        # A remember the server answers opens no index slot here; it is committed, checked against the server's
        # index for near-duplicates, and refused with the ledger's own one-line error.
        root = str(project.root)
        loaded = loaded_by(project, tmp_path, "remember", "Export retries give up after five attempts", "--root", root)
        assert "qdrant_edge" not in loaded
        stored = cli(project, "remember", "Invoice PDFs are rendered by WeasyPrint", "--kind", "decision", "--json")
        assert stored["created"]
        found = cli(project, "recall", "which library renders invoice PDFs", "--json")["results"]
        assert stored["id"] in [hit["id"] for hit in found]
        same = "Invoice exports retry with exponential backoff: 250ms doubling to 8s"
        again = cli(project, "remember", same, "--kind", "decision", "--json")
        assert not again["created"] and again["duplicate_of"] == decision
        bad_kind = run_cli(project, "remember", "anything", "--kind", "mood")
        assert bad_kind.returncode == 1 and "mood" in bad_kind.stderr and "Traceback" not in bad_kind.stderr

        path = socket_path(project.data_dir)
        answer = ask(path, {"kind": "forget"}, timeout=60)
        assert answer is not None and "'kind' must be one of 'hook', 'recall', 'remember'" in answer["error"]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(60)
            conn.connect(str(path))
            conn.sendall(b"not json")
            conn.shutdown(socket.SHUT_WR)
            reply = json.loads(conn.recv(65536))
        assert "one JSON object" in reply["error"]
        assert ask(path, {"kind": "hook", "client": "claude-code", "input": "{}", "settings": "another"}, timeout=60) == {
            "declined": "the hook runs with other LEDGER_* settings than this server"
        }
        ours = settings_fingerprint({**os.environ, **project.env})
        bad = ask(path, {"kind": "recall", "settings": ours, "data_dir": str(project.data_dir), "arguments": {"q": "x"}}, timeout=60)
        assert bad is not None and "'arguments' (some of k, kinds" in bad["error"]
        bad = ask(path, {"kind": "hook", "settings": ours, "client": "windsurf", "input": "{}", "cwd": 7}, timeout=60)
        assert bad is not None and "'cwd' must be the hook's folder or null" in bad["error"]
