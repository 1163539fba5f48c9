"""The local socket's pure parts and its listener, in-process: how a hook finds its ledger and its server, who
listens, and a stale socket file. The whole path, a real `serve` and real hooks, is in test_hook_socket.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from project_ledger.cli.fast_path import data_dir_for, hook_arguments, served_output
from project_ledger.local_socket import SUPPORTED, Listener, ask, settings_fingerprint, socket_path

needs_unix_sockets = pytest.mark.skipif(not SUPPORTED, reason="no Unix sockets on this platform: hooks always work alone")


def test_only_the_hook_command_itself_takes_the_short_way() -> None:
    assert hook_arguments(["claude-code"]) == ("claude-code", None)
    assert hook_arguments(["cursor", "--data-dir", "/d"]) == ("cursor", Path("/d"))
    assert hook_arguments(["claude-code", "--data-dir=/d"]) == ("claude-code", Path("/d"))
    for args in ([], ["--help"], ["claude-code", "--help"], ["codex"], ["claude-code", "--data-dir"], ["claude-code", "x", "y"]):
        assert hook_arguments(args) is None  # the full CLI answers these, with its help and errors


def test_the_settings_fingerprint_covers_what_the_settings_read_and_nothing_else() -> None:
    base = settings_fingerprint({"PATH": "/bin", "HOME": "/h"})
    assert settings_fingerprint({"PATH": "/usr/bin", "TERM": "x"}) == base
    assert settings_fingerprint({"LEDGER_HOOK_INJECT_TOKENS": "0"}) != base
    assert settings_fingerprint({"QDRANT_URL": "http://q:6333"}) != base
    # Names are read case-insensitively, as the settings read them.
    assert settings_fingerprint({"ledger_hook_record": "false"}) == settings_fingerprint({"LEDGER_HOOK_RECORD": "false"})


def test_a_hook_finds_its_data_directory_as_its_settings_would(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    payload = {"cwd": str(project / "src")}
    assert data_dir_for(payload, "claude-code", None, {}) == project / ".ledger"  # the git top-level of the event's folder
    assert data_dir_for({"workspace_roots": [str(project)]}, "cursor", None, {}) == project / ".ledger"
    # Windsurf's input names no folder: the hook's own is the event's.
    assert data_dir_for({"agent_action_name": "pre_user_prompt"}, "windsurf", None, {}, str(project / "src")) == project / ".ledger"
    assert data_dir_for(payload, "claude-code", tmp_path / "d", {"LEDGER_DATA_DIR": "/x"}) == tmp_path / "d"
    assert data_dir_for(payload, "claude-code", None, {"ledger_data_dir": str(tmp_path / "e")}) == tmp_path / "e"
    assert data_dir_for(payload, "claude-code", None, {"LEDGER_ROOT": str(tmp_path)}) == tmp_path / ".ledger"
    plain = tmp_path / "no-project"
    plain.mkdir()
    assert data_dir_for({"cwd": str(plain)}, "claude-code", None, {}) is None  # no project: nothing to ask
    assert data_dir_for(["not", "an", "object"], "claude-code", None, {}) is None


def echo(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("fail"):
        raise RuntimeError("asked to fail")
    return {"got": request}


@needs_unix_sockets
def test_one_listener_per_data_directory_and_a_stale_socket_is_replaced(tmp_path: Path) -> None:
    path = socket_path(tmp_path)
    assert ask(path, {"a": 1}, timeout=5) is None  # no server
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a server that died: its file stays, nobody listens
    assert path.exists() and ask(path, {"a": 1}, timeout=5) is None

    first = Listener(tmp_path, echo)
    assert first.open()
    try:
        assert ask(path, {"a": 1}, timeout=30) == {"got": {"a": 1}}
        answer = ask(path, {"fail": True}, timeout=30)
        assert answer is not None and "asked to fail" in answer["error"]  # and the listener goes on
        second = Listener(tmp_path, echo)
        assert not second.open()  # the first holds the socket
        assert ask(path, {"b": 2}, timeout=30) == {"got": {"b": 2}}
    finally:
        first.close()
    assert not path.exists()
    assert second.open()  # free again
    second.close()


@needs_unix_sockets
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reaching a deep socket through its folder needs /proc")
def test_a_data_directory_too_deep_for_a_socket_address_still_gets_one(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    deep.mkdir(parents=True)
    listener = Listener(deep, echo)
    try:
        assert listener.open()
        assert ask(socket_path(deep), {"c": 3}, timeout=30) == {"got": {"c": 3}}
    finally:
        listener.close()


@needs_unix_sockets
def test_a_relative_data_dir_reaches_the_server_as_the_hook_meant_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    listener = Listener(data_dir, lambda request: {"output": json.dumps(request)})
    assert listener.open()
    try:
        monkeypatch.chdir(tmp_path)
        raw = json.dumps({"hook_event_name": "Stop", "session_id": "s", "cwd": str(tmp_path)}).encode()
        output = served_output(raw, "claude-code", Path("data"), {"LEDGER_HOOK_RECORD": "false"})
    finally:
        listener.close()
    assert output is not None
    request = json.loads(output)
    assert request["data_dir"] == str(data_dir.resolve())  # the hook's folder, not the server's
    assert request["settings"] == settings_fingerprint({"ledger_hook_record": "false"}) and request["input"] == raw.decode()
    assert served_output(b"\xff not utf-8", "claude-code", Path("data"), {}) is None  # left to the full hook
