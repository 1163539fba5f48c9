"""The short way of a hook (and of `recall`): the project's running `serve` answers it over its local socket.

A hook is a new process on every prompt. Loading its settings and the services, then opening the journal and an
index slot, is most of its time; a server already has all of them open. So before any of that is loaded,
the hook finds the project's data directory (as `serve` finds the project), and, if a server listens there, sends
it the event and prints its answer. The server handles it exactly as the hook would (`cli/serve_answers.py`), but
only when it runs with the same `LEDGER_*` settings and serves the data directory the hook would have used;
otherwise it declines. No server, a stale socket, a decline, a timeout or any failure on the way: the hook does
the work itself (`cli/hook_run.py`), with its input as it was read; click and the CLI's commands are loaded in
neither case.

`recall` takes the same way from inside its command, once its settings are read: the server's model is loaded
already, which is most of a CLI recall's time. So does `remember`: the server's index is open and caught up for the
near-duplicate check, where the command alone would open, catch up and flush an index slot of its own.

A session start is answered before that, when the pack the last one printed is still what it would print
(`start_pack.py`), or when the session was handed its pack before (`session_packs.py`): SessionStart fires before
the agent's server is up.

Standard library only (and the project finder and the clients' hook adapters, which are too): importing anything more
here would cost every hook.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from project_ledger.cli.early_options import named_data_dir, options
from project_ledger.hooks.clients import HOOK_CLIENTS
from project_ledger.hooks.log import HookRun, log_hook
from project_ledger.local_socket import ask, settings_fingerprint, socket_path
from project_ledger.project_root import DATA_DIR_NAME, from_working_directory
from project_ledger.session_packs import AGAIN, hand, handed
from project_ledger.start_pack import kept

# A server that has not answered by then is taken for stuck: the hook does its own work (the journal keeps a turn
# that both store once). Above the 2 s a hook waits for the journal's write lock (LEDGER_HOOK_WAIT_SECONDS).
ANSWER_SECONDS = 3.0


def hook_arguments(args: list[str]) -> tuple[str, Path | None] | None:
    """The client and `--data-dir` of `hook <client> [--data-dir DIR]`; None for anything else (help, a typo),
    which the full CLI answers."""
    given = options(args[1:], ("--data-dir",)) if args and args[0] in HOOK_CLIENTS else None
    if given is None:
        return None
    data_dir = given.get("--data-dir")
    return args[0], Path(data_dir) if data_dir else None


def data_dir_for(payload: Any, client: str, option: Path | None, environ: Mapping[str, str], here: str | None = None) -> Path | None:
    """Where the hook's ledger is, worked out as the hook's settings would: `--data-dir`, LEDGER_DATA_DIR, else
    `.ledger` in LEDGER_ROOT or in the project of the event's folder (`here`, the hook's own, where the client's
    input names none; default this process's). None when there is no project. The server
    checks it against its own reading, so a guess here can only cost the short way, never answer for another
    ledger."""
    named = named_data_dir(environ, str(option) if option is not None else None)
    if named is not None:
        return named
    folder = HOOK_CLIENTS[client].folder(payload, here if here is not None else os.getcwd())
    if folder is None:
        return None
    root = from_working_directory(Path(folder)).root
    return root / DATA_DIR_NAME if root is not None else None


def served_output(raw: bytes, client: str, option: Path | None, environ: Mapping[str, str]) -> str | None:
    """What the hook prints, from the session-start pack kept for it (`start_pack`) or from the project's running
    server; None when neither answers for this hook input."""
    started = time.perf_counter()
    try:
        text = raw.decode("utf-8")
        payload = json.loads(text)
        here = os.getcwd()
        data_dir = data_dir_for(payload, client, option, environ, here)
    except (ValueError, OSError):  # not JSON, not UTF-8, an unreadable folder: the full hook says what is wrong
        return None
    if data_dir is None:
        return None
    fingerprint = settings_fingerprint(environ)
    adapter = HOOK_CLIENTS[client]
    start = adapter.start_of(payload)  # None for a client that keeps no pack
    if start is not None and (output := session_start(*start, data_dir, fingerprint)) is not None:
        elapsed = round((time.perf_counter() - started) * 1000)
        how = "kept" if output else "kept handed-before"
        log_hook(data_dir, HookRun("ok", adapter.log_name(payload), start[0], elapsed, False, f"{how} stored=0 injected=0"))
        return output
    # A relative --data-dir means this process's folder, not the server's.
    absolute = str(option.expanduser().resolve()) if option is not None else None
    request = {"kind": "hook", "client": client, "input": text, "data_dir": absolute, "cwd": here, "settings": fingerprint}
    answer = ask(socket_path(data_dir), request, ANSWER_SECONDS)
    output = answer.get("output") if answer is not None else None
    return output if isinstance(output, str) else None


def session_start(session: str, source: str | None, data_dir: Path, fingerprint: str) -> str | None:
    """A session start (`ClientHooks.start_of`) answered without the ledger: nothing for a session that was handed
    its pack before (it was continued or resumed), the pack the last start or SessionEnd made while nothing it is made
    of changed; None when the hook has to make it (a change, or no pack kept)."""
    if source not in AGAIN and handed(data_dir, session) is not None:
        return ""
    found = kept(data_dir, fingerprint)
    if found is None:
        return None
    output, ids = found
    return output if hand(data_dir, session, source, ids) else ""


RECALL_SECONDS = 10.0  # a recall may wait for the server's index to open or its model to finish loading
# Past the journal's write-lock wait (LEDGER_JOURNAL_WAIT_SECONDS, 15 s by default), so that a server that took the
# request answers it, stored or refused, before the command gives up and stores it itself. Even then it is stored
# once: the journal finds the same text of the same kind and session already there.
REMEMBER_SECONDS = 30.0


def recall_from_server(data_dir: Path, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The running server's recall for `arguments` on the ledger in `data_dir`: `{"result": ...}` (the recall
    result as JSON) or `{"failed": why}` (the ledger refused the arguments); None when no server answers for it."""
    return _ledger_call("recall", data_dir, arguments, RECALL_SECONDS)


def remember_from_server(data_dir: Path, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """As `recall_from_server`, for a remember; a result comes back once the memory is committed to the journal."""
    return _ledger_call("remember", data_dir, arguments, REMEMBER_SECONDS)


def _ledger_call(kind: str, data_dir: Path, arguments: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    request = {"kind": kind, "data_dir": str(data_dir), "arguments": arguments, "settings": settings_fingerprint(os.environ)}
    answer = ask(socket_path(data_dir), request, timeout)
    if answer is None or not ("result" in answer or isinstance(answer.get("failed"), str)):
        return None
    return answer


def hook_command(args: list[str]) -> bool:
    """Run `hook <args>`: through the project's server, else alone (`cli/hook_run.py`), without the CLI in either case;
    True once its answer is printed. False (help, a typo: anything but `hook CLIENT [--data-dir DIR]`) leaves it to the
    full CLI."""
    parsed = hook_arguments(args)
    if parsed is None:
        return False
    try:
        raw = sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        raw = b""  # the hook logs that its input was not JSON
    output = served_output(raw, *parsed, os.environ)
    if output is None:
        from project_ledger.cli.hook_run import run_alone

        output = run_alone(raw, *parsed)
    emit(output)
    return True


def emit(output: str) -> None:
    """Print the hook's answer; a client that stopped reading does not make the hook fail."""
    if not output:
        return
    try:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
