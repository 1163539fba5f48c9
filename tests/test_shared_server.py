"""The shared server (LEDGER_SHARED_SERVER): clients' `serve` processes are thin proxies to one server per project and
settings. Real `project-ledger serve` processes and a real MCP client; the shared server is killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from project_ledger.cli.mcp_proxy import shared_target
from project_ledger.local_socket import settings_fingerprint, shared_server_path

from .conftest import EXECUTABLE, Project, serve

SHARED = {"LEDGER_SHARED_SERVER": "true", "LEDGER_SHARED_IDLE_SECONDS": "1", "LEDGER_WATCH": "false"}


@pytest.fixture
def shared(project: Project) -> Iterator[Project]:
    """The project with sharing on; any shared server still up at the end is stopped (this test started it)."""
    project.env.update(SHARED)
    yield project
    for lock in project.data_dir.glob("mcp-*.lock"):
        pid = owner(lock)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)


def owner(lock: Path) -> int | None:
    """The pid of the live shared server that holds `lock`, if any."""
    text = lock.read_text() if lock.exists() else ""
    if not text.isdigit():
        return None
    try:
        cmdline = Path(f"/proc/{text}/cmdline").read_bytes()
    except OSError:
        return None
    return int(text) if b"--shared-server" in cmdline else None


def gone(pid: int) -> None:
    """Wait until the process `pid` has ended: a zombie whose threads have all exited has closed its files and
    sockets (its main thread turns zombie first)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X") and len(os.listdir(f"/proc/{pid}/task")) <= 1:
                return
        except OSError:
            return
        assert time.monotonic() < deadline, f"process {pid} is still running"
        time.sleep(0.02)


def servers(project: Project) -> list[int]:
    """The live shared servers of `project`, found by their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--shared-server" in args and os.fsencode(project.root) in args:
            found.append(int(entry.name))
    return found


def raw_serve(project: Project) -> subprocess.Popen[bytes]:
    """`serve` as a client starts it, for JSON-RPC lines written byte by byte."""
    return subprocess.Popen(
        [EXECUTABLE, "serve", "--root", str(project.root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env={**os.environ, **project.env},
    )  # fmt: skip


def lock_of(project: Project) -> Path:
    return shared_server_path(project.data_dir, settings_fingerprint(project.server_env()), ".lock")


def test_only_a_stdio_serve_of_a_named_project_with_sharing_on_is_shared(tmp_path: Path) -> None:
    on = {"LEDGER_SHARED_SERVER": "1"}
    assert shared_target(["--root", str(tmp_path)], on) == (tmp_path, tmp_path / ".ledger")
    assert shared_target([f"--root={tmp_path}", "--data-dir", str(tmp_path / "d")], on) == (tmp_path, tmp_path / "d")
    assert shared_target([], {**on, "ledger_root": str(tmp_path)}) == (tmp_path, tmp_path / ".ledger")
    assert shared_target(["--root", str(tmp_path), "--transport", "stdio"], {"LEDGER_SHARED_SERVER": "TRUE"}) is not None
    for args, env in (
        (["--root", str(tmp_path)], {}),  # sharing off (the default)
        (["--root", str(tmp_path)], {"LEDGER_SHARED_SERVER": "false"}),
        ([], on),  # no named project: the server follows the client's roots or folder, its own
        (["--root", str(tmp_path / "missing")], on),  # the full CLI says what is wrong
        (["--root", str(tmp_path), "--transport", "http"], on),
        (["--root", str(tmp_path), "--help"], on),
        (["--root"], on),
    ):
        assert shared_target(args, env) is None, (args, env)


def test_the_sharing_settings_do_not_change_the_settings_fingerprint() -> None:
    """Hooks and CLI recalls, which run without them, are still answered by the shared server."""
    base = settings_fingerprint({"LEDGER_HOOK_INJECT_TOKENS": "0"})
    assert settings_fingerprint({"LEDGER_HOOK_INJECT_TOKENS": "0", **SHARED, "LEDGER_WATCH": "false"}) == settings_fingerprint(
        {"LEDGER_HOOK_INJECT_TOKENS": "0", "LEDGER_WATCH": "false"}
    )
    assert settings_fingerprint({"LEDGER_HOOK_INJECT_TOKENS": "1"}) != base


def test_the_proxy_path_loads_only_the_standard_library() -> None:
    code = (
        "import sys; import project_ledger.cli.main, project_ledger.cli.mcp_proxy; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'anyio', 'pydantic', 'click', 'numpy'}))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.strip() == "[]"


@pytest.mark.anyio
async def test_two_clients_share_one_server_and_see_each_others_writes(shared: Project) -> None:
    async with serve(shared) as first, serve(shared) as second:
        assert len(servers(shared)) == 1
        pid = owner(lock_of(shared))
        assert pid == servers(shared)[0]
        written = await first.remember("The shared server holds one model for every client of the project.", kind="decision")
        found = (await second.call("recall", ids=[written]))["results"]
        assert [memory["id"] for memory in found] == [written]
        status = await second.settled()
        assert status["counts"] == {"decision": 1}
        assert (await second.recall("how many models does the shared server hold?"))[0]["id"] == written
        assert (await first.call("status"))["embedding"]["state"] == "ready"  # loaded once, in that process
        assert len(servers(shared)) == 1 and owner(lock_of(shared)) == pid


@pytest.mark.anyio
async def test_each_session_gets_the_session_start_pack_as_it_is_when_it_connects(shared: Project) -> None:
    async with serve(shared) as first:
        pinned = await first.remember("Every release is tagged from main after the changelog is updated.", pinned=True)
        async with serve(shared) as second:
            assert len(servers(shared)) == 1
            assert second.instructions is not None and "tagged from main" in second.instructions
            assert first.instructions is not None and "tagged from main" not in first.instructions
            assert [m["id"] for m in (await second.call("recall", ids=[pinned]))["results"]] == [pinned]


def test_clients_started_at_once_start_one_shared_server(shared: Project) -> None:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode() + b"\n"
    processes = [raw_serve(shared) for _ in range(4)]
    try:
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(initialize)
            process.stdin.flush()
        for process in processes:
            assert process.stdout is not None
            assert json.loads(process.stdout.readline())["result"]["serverInfo"]["name"] == "project-ledger"
        assert len(servers(shared)) == 1
    finally:
        for process in processes:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.close()
            assert process.wait(timeout=60) == 0
            process.stdout.close()


@pytest.mark.anyio
async def test_a_shared_server_killed_mid_session_is_replaced_and_nothing_stored_is_lost(shared: Project) -> None:
    async with serve(shared) as ledger:
        before = [await ledger.remember(f"Acknowledged before the kill, number {n}.") for n in range(3)]
        first = owner(lock_of(shared))
        assert first is not None
        os.kill(first, signal.SIGKILL)
        gone(first)

        with anyio.fail_after(120):
            after = await ledger.remember("Written through the server that replaced it.")
        second = owner(lock_of(shared))
        assert second is not None and second != first
        found = (await ledger.call("recall", ids=[*before, after]))["results"]
        assert sorted(memory["id"] for memory in found) == sorted([*before, after])

        # Killed while a call is on its way: that call fails saying to retry, or was answered first; never a hang.
        async def kill_soon() -> None:
            await anyio.sleep(0.05)
            os.kill(second, signal.SIGKILL)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(kill_soon)
                try:
                    result = await ledger.session.call_tool("context", {"query": "what was acknowledged before the kill?"})
                except MCPError as exc:
                    assert "Retry the call" in str(exc)
                else:  # answered before the kill: a full answer
                    assert not result.is_error, result.content
            gone(second)
            try:
                status = await ledger.call("status")
            except MCPError as exc:  # sent before the proxy saw the server go: the same answer, and a retry works
                assert "Retry the call" in str(exc)
                status = await ledger.call("status")
        assert status["counts"] == {"note": 4}
        assert owner(lock_of(shared)) not in (None, first, second)


@pytest.mark.anyio
async def test_a_proxy_with_other_settings_gets_a_server_of_its_own(shared: Project) -> None:
    other = Project(shared.root, {**shared.env, "LEDGER_HOOK_INJECT_TOKENS": "0"})
    async with serve(shared) as first, serve(other) as second:
        assert len(servers(shared)) == 2
        assert owner(lock_of(shared)) != owner(lock_of(other))
        written = await first.remember("Both servers write the one journal.")
        assert [m["id"] for m in (await second.call("recall", ids=[written]))["results"]] == [written]
    for lock in (lock_of(shared), lock_of(other)):
        pid = owner(lock)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)


def test_the_shared_server_exits_after_its_last_client_and_answers_unreadable_lines(shared: Project) -> None:
    process = raw_serve(shared)
    assert process.stdin is not None and process.stdout is not None

    def exchange(line: str) -> dict[str, object]:
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        assert exchange(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))["id"] == 1
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        garbage = exchange("this is not JSON at all")
        assert garbage["id"] is None and garbage["error"]["code"] == -32700  # type: ignore[index]
        surrogate = exchange(
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember","arguments":{"text":"\\ud83d"}}}'
        )
        assert surrogate["id"] == 2 and "surrogate" in surrogate["error"]["message"]  # type: ignore[index]
        pid = owner(lock_of(shared))
        assert pid is not None
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        process.stdout.close()
    gone(pid)  # its idle time is a second
    assert not list(shared.data_dir.glob("mcp-*.sock"))
