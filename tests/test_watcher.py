"""The file watcher under bursts: a branch switch of hundreds of files, and events the kernel drops, through a real
`project-ledger serve`; and the pieces other processes read (`watch_state.py`) and `doctor` words."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from project_ledger.code.indexer import files_under
from project_ledger.code.watch_state import WATCH_STATE_NAME, WatchPublisher, WatchReport, read_watch_state
from project_ledger.maintenance.doctor import catching_up

from .conftest import Ledger, Project, run_cli, serve

MAX_QUEUED_EVENTS = Path("/proc/sys/fs/inotify/max_queued_events")


def write_modules(root: Path, tag: str, count: int) -> None:
    """`count` Python modules in ten packages, each defining `<tag>_function_<n>`."""
    for n in range(count):
        folder = root / "pkg" / f"part{n % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module{n:04d}.py").write_text(f"def {tag}_function_{n}(value: int) -> int:\n    return value + {n}\n")


async def located(ledger: Ledger, name: str) -> bool:
    return (await ledger.call("find_symbol", name=name, limit=1))["matched_by"] == "exact name"


async def until(check: Any, timeout: float = 180) -> Any:
    """Poll an async predicate until it returns something truthy (the watcher works in the background)."""
    with anyio.fail_after(timeout):
        while not (result := await check()):
            await anyio.sleep(0.1)
        return result


async def watching(ledger: Ledger) -> dict[str, Any]:
    """The code status once the start-up scan is over and the watcher runs."""

    async def ready() -> dict[str, Any] | None:
        code = (await ledger.call("status"))["code"]
        return code if code["indexing"] is None and code["last_scan"] is not None and code["watcher"] == "running" else None

    return await until(ready)


@pytest.mark.anyio
@pytest.mark.skipif(not MAX_QUEUED_EVENTS.exists(), reason="needs Linux inotify")
async def test_events_the_kernel_dropped_are_recovered_by_a_rescan_that_status_and_doctor_report(project: Project) -> None:
    """The kernel keeps at most `max_queued_events` unread inotify events per watcher; what comes after is dropped and
    one IN_Q_OVERFLOW event stands for it. In use that happens when a burst outruns a busy server, which no test can
    time; here the server is stopped (SIGSTOP) while the burst is written, so that nothing reads the queue. Writes to a
    text file fill it, then every module is rewritten: those events are surely lost, and only a rescan of the tree can
    find the new names."""
    limit = int(MAX_QUEUED_EVENTS.read_text())
    write_modules(project.root, "first", 60)
    async with serve(project) as ledger:
        await watching(ledger)
        assert await located(ledger, "first_function_59")
        report = read_watch_state(project.data_dir / WATCH_STATE_NAME)  # the process that watches (a shared server's, too)
        assert report is not None and report.pid is not None and report.state == "running"
        os.kill(report.pid, signal.SIGSTOP)
        try:
            for _ in range(limit + 1):  # each write queues IN_MODIFY then IN_CLOSE_WRITE: none merges with the one before
                with (project.root / "notes.txt").open("a") as notes:
                    notes.write(".")
            write_modules(project.root, "second", 60)
        finally:
            os.kill(report.pid, signal.SIGCONT)

        async def recovered() -> dict[str, Any] | None:
            code = (await ledger.call("status"))["code"]
            return code if code["watcher"] == "running" and (code["rescan"] or "").startswith("rescanned") else None

        code = await until(recovered)
        assert code["rescan"].startswith("rescanned the tree after the watcher dropped events (the kernel's inotify queue overflowed")
        assert "60 files re-indexed" in code["rescan"], code["rescan"]
        # watchdog reports the one overflow to each watch (the root's behind its thousands of events): one rescan
        assert "rescans since the watcher started" not in code["rescan"], code["rescan"]
        assert await located(ledger, "second_function_0") and await located(ledger, "second_function_59")
        assert not await located(ledger, "first_function_0")

        done = run_cli(project, "doctor", "--json")
        findings = {finding["check"]: finding for finding in json.loads(done.stdout)}
        assert "rescanned the tree after the watcher dropped events" in findings["watcher"]["detail"], findings["watcher"]
        assert f"pid {report.pid}" in findings["watcher"]["detail"]


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_a_branch_switch_of_hundreds_of_files_is_followed(project: Project) -> None:
    """A checkout rewrites every module at once: whether the watcher follows the burst path by path or a dropped
    event makes it rescan, the new branch's names are found and the old branch's are gone."""
    root = project.root

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "old")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    (root / ".gitignore").write_text(".ledger/\n")
    write_modules(root, "old", 400)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "old")
    git("checkout", "-q", "-b", "new")
    shutil.rmtree(root / "pkg")
    write_modules(root, "new", 400)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "new")
    git("checkout", "-q", "old")
    async with serve(project) as ledger:
        await watching(ledger)
        assert await located(ledger, "old_function_399")
        git("checkout", "-q", "new")

        async def switched() -> bool:
            names = ("new_function_0", "new_function_199", "new_function_399")
            return all([await located(ledger, name) for name in names]) and not await located(ledger, "old_function_399")

        await until(switched)
        code = (await ledger.call("status"))["code"]
        assert code["files"] == 400


def test_a_watcher_s_state_is_read_while_it_holds_the_file_and_not_after(tmp_path: Path) -> None:
    path = tmp_path / WATCH_STATE_NAME
    publisher = WatchPublisher(path)
    publisher.publish("rescanning", 1, "rescanning after the watcher dropped events (test): listing the source files")
    assert read_watch_state(path) == WatchReport(
        os.getpid(), "rescanning", 1, "rescanning after the watcher dropped events (test): listing the source files"
    )
    second = WatchPublisher(path)
    second.publish("running", 0, None)  # the first holds it: the second says nothing
    assert (report := read_watch_state(path)) is not None and report.state == "rescanning"
    publisher.close()
    assert read_watch_state(path) is None  # left behind by a watcher that stopped: it says nothing
    second.publish("running", 0, None)  # ... and the second takes over
    assert read_watch_state(path) == WatchReport(os.getpid(), "running", 0, None)
    second.close()


def test_doctor_says_who_indexes_changed_files() -> None:
    assert catching_up(None) == "no running server watches this tree: the next `serve` indexes them as it starts"
    rescanning = WatchReport(41, "rescanning", 1, "rescanning after the watcher dropped events (x, 10:00:00 UTC): 3 of 9 changed files re-indexed")
    assert catching_up(rescanning) == (
        "the process watching the tree (pid 41) is rescanning after the watcher dropped events (x, 10:00:00 UTC): "
        "3 of 9 changed files re-indexed"
    )
    assert catching_up(WatchReport(41, "running", 0, None)).startswith("the process watching the tree (pid 41) re-indexes changes")


def test_files_under_a_path_are_found_by_bisection() -> None:
    indexed = sorted(["a.py", "a/b.py", "a/c/d.py", "a0.py", "a-b.py", "ab/x.py", "b.py"])
    assert files_under(indexed, "a") == ["a/b.py", "a/c/d.py"]
    assert files_under(indexed, "a.py") == ["a.py"]
    assert files_under(indexed, "a/c") == ["a/c/d.py"]
    assert files_under(indexed, "missing") == []
