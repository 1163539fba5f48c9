"""A full disk, a read-only data directory and a journal locked by another process: each gives a clear error over
MCP and from the CLI, loses nothing acknowledged, and clears up by itself when the condition does.

The disk conditions are real: the data directory is a small tmpfs the test mounts (which needs root, as in CI here)
and fills, or remounts read-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from .conftest import Ledger, Project, cli, connect, record_ids, run_cli, serve

pytestmark = pytest.mark.anyio


@contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (`20m`) mounted at `mountpoint` while the block runs; the test is skipped without root."""
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root with CAP_SYS_ADMIN: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "--lazy", str(mountpoint)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "256m") as mountpoint:
        yield mountpoint


def fill(disk: Path) -> Path:
    """Take every free byte of `disk`."""
    filler = disk / "filler"
    with filler.open("wb") as file:
        try:
            while True:
                file.write(b"\0" * (1 << 20))
                file.flush()
        except OSError:
            pass
    return filler


def leave_free(filler: Path, free: int) -> None:
    """Shorten `filler`, which took every free byte of its disk, so that `free` bytes are free again."""
    os.truncate(filler, max(filler.stat().st_size - free, 0))


def cli_failure(project: Project, *args: str) -> str:
    completed = run_cli(project, *args)
    assert completed.returncode == 1 and "Traceback" not in completed.stderr, completed.stderr
    return completed.stderr


async def all_found(ledger: Ledger, memories: dict[str, str]) -> None:
    for memory_id, text in memories.items():
        assert (await ledger.call("recall", ids=[memory_id]))["results"][0]["text"] == text


async def test_a_full_disk_refuses_writes_clearly_and_recovers_when_space_is_freed(project: Project, small_disk: Path) -> None:
    project.env["LEDGER_DATA_DIR"] = str(small_disk / "ledger")
    async with serve(project) as ledger:
        kept = {await ledger.remember(text): text for text in (f"Before the disk filled: fact {n}." for n in range(5))}
        await ledger.settled()
        filler = fill(small_disk)

        errors = [await ledger.error("remember", text=f"Arrived on a full disk, {n}: {'padding ' * 2000}") for n in range(3)]
        assert all("disk is full" in error and "Nothing acknowledged earlier was lost" in error for error in errors), errors
        assert "disk is full" in cli_failure(project, "remember", "From the CLI on a full disk.")
        await all_found(ledger, kept)

        filler.unlink()
        kept[await ledger.remember("Written once space was freed.")] = "Written once space was freed."
        await ledger.settled()
    async with connect(project) as ledger:
        await all_found(ledger, kept)
        assert (await ledger.recall("written once space was freed"))[0]["text"] == "Written once space was freed."


def leave_wal_files_behind(journal: Path) -> None:
    """A writer killed mid-session leaves the journal's -wal and -shm files; with them, SQLite can open the journal
    even on a read-only disk, which once made the failure show up later, in the index, instead of at the start."""
    script = (
        "import os, signal, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE'); db.execute('COMMIT')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(journal)], check=False)
    assert journal.with_name(journal.name + "-shm").exists() and journal.with_name(journal.name + "-wal").exists()


async def test_a_read_only_data_directory_is_named_as_the_cause_and_the_server_recovers_when_it_clears(
    project: Project, small_disk: Path
) -> None:
    """A filesystem with a file open for writing cannot be remounted read-only, so the disk turns read-only
    between runs; the server then starts on it, says why nothing works, and picks up once it is writable."""
    project.env["LEDGER_DATA_DIR"] = str(small_disk / "ledger")
    async with serve(project) as ledger:
        kept = {await ledger.remember("Release branches are cut on Thursdays."): "Release branches are cut on Thursdays."}
    leave_wal_files_behind(small_disk / "ledger" / "journal.sqlite3")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        assert "the data directory is read-only" in cli_failure(project, "remember", "From the CLI, read-only.")
        async with serve(project) as ledger:
            assert ledger.instructions and "the data directory is read-only" in ledger.instructions
            for tool, arguments in (("remember", {"text": "Arrived while read-only."}), ("recall", {"query": "release"}), ("status", {})):
                assert "the data directory is read-only" in await ledger.error(tool, **arguments)
            subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
            await anyio.sleep(3.1)  # the opening is retried at most every 3 s
            await all_found(ledger, kept)
            kept[await ledger.remember("Written after the remount.")] = "Written after the remount."
            await ledger.settled()
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    async with connect(project) as ledger:
        await all_found(ledger, kept)
        assert (await ledger.recall("written after the remount"))[0]["text"] == "Written after the remount."


async def test_a_journal_locked_by_another_process_gives_a_clear_error_and_writes_resume(project: Project) -> None:
    project.env["LEDGER_JOURNAL_WAIT_SECONDS"] = "1.5"
    async with connect(project) as ledger:
        kept = {await ledger.remember("Feature flags live in LaunchDarkly."): "Feature flags live in LaunchDarkly."}
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys, time\n"
                "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                "db.execute('BEGIN IMMEDIATE')\n"
                "print('locked', flush=True)\n"
                "time.sleep(600)\n",
                str(project.data_dir / "journal.sqlite3"),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            error = await ledger.error("remember", text="Arrived while another process held the lock.")
            assert "write lock for over 1.5s" in error and "retry" in error, error
            assert "write lock" in cli_failure(project, "remember", "From the CLI while locked.")
            await all_found(ledger, kept)  # reading is not blocked by a writer
            assert (await ledger.call("status"))["counts"] == {"note": 1}
        finally:
            holder.kill()
            holder.wait()
            holder.stdout.close()
        kept[await ledger.remember("Written once the lock was released.")] = "Written once the lock was released."
        await all_found(ledger, kept)


FACTS = {
    "staging": "The staging database runs on pg-stage-7 behind PgBouncer.",
    "deploys": "Deploys to production happen on Tuesdays after the 10:00 stand-up.",
    "queue": "Invoice exports go through the billing-export queue, retried three times.",
}


async def answers_from_memory(ledger: Ledger, kept: dict[str, str]) -> None:
    """Each fact is the first `recall` result for its own words, and the `context` pack for them holds it."""
    for memory_id, text in kept.items():
        assert (await ledger.recall(text, k=3))[0]["id"] == memory_id
        assert memory_id in record_ids((await ledger.call("context", query=text, token_budget=2000))["text"])


async def test_on_a_20_mb_volume_recall_and_context_work_from_the_first_call_and_after_a_restart(project: Project, tmp_path: Path) -> None:
    """The index's shard takes most of 20 MB; loading it again needs more than is left, so the second server holds
    the index in memory, caught up from the journal, and answers the same."""
    with tmpfs(tmp_path / "disk", "20m") as disk:
        project.env["LEDGER_DATA_DIR"] = str(disk / "ledger")
        async with serve(project) as ledger:
            kept = {await ledger.remember(text): text for text in FACTS.values()}
            await ledger.settled()
            await answers_from_memory(ledger, kept)
        async with serve(project) as ledger:
            await answers_from_memory(ledger, kept)
            status = await ledger.settled()
            assert status["index"]["points"] == len(kept)
            assert any("index held in memory" in event and "to load the index" in event for event in status["index"]["events"])
            kept[await ledger.remember("Written on the small volume: the cache TTL is 90 seconds.")] = (
                "Written on the small volume: the cache TTL is 90 seconds."
            )
            await answers_from_memory(ledger, kept)
        assert cli(project, "recall", FACTS["queue"], "-k", "1", "--json")["results"][0]["text"] == FACTS["queue"]
        findings = {finding["check"]: finding for finding in cli_findings(project)}
        assert findings["disk"]["state"] == "warning" and "held in memory" in findings["disk"]["detail"], findings["disk"]


def cli_findings(project: Project) -> list[dict[str, object]]:
    """`doctor --json`, which exits 1 when it finds a problem; on a small disk it finds warnings only."""
    completed = run_cli(project, "doctor", "--json")
    assert completed.returncode == 0 and "Traceback" not in completed.stderr, completed.stderr
    return json.loads(completed.stdout)


async def test_a_disk_filling_during_a_session_leaves_recall_and_context_answering(project: Project, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "64m") as disk:
        project.env["LEDGER_DATA_DIR"] = str(disk / "ledger")
        async with serve(project) as ledger:
            kept = {await ledger.remember(text): text for text in FACTS.values()}
            await ledger.settled()
            filler = fill(disk)

            await answers_from_memory(ledger, kept)
            assert "disk is full" in await ledger.error("remember", text="Arrived on a full disk.")
            assert cli(project, "recall", FACTS["deploys"], "-k", "1", "--json")["results"][0]["text"] == FACTS["deploys"]
            assert FACTS["staging"] in cli(project, "context", FACTS["staging"])

            # Room for the journal, not for the index: the index is held in memory, and finds what is written now.
            leave_free(filler, 2**20)
            late = "Written with one megabyte free: the search cluster is es-prod-3."
            kept[await ledger.remember(late)] = late
            await answers_from_memory(ledger, kept)
            events = (await ledger.call("status"))["index"]["events"]
            assert any("index held in memory" in event for event in events), events

            filler.unlink()
            with anyio.fail_after(30):  # the worker's next round finds the room and writes the index to disk
                while not any("index written to disk again" in event for event in (await ledger.call("status"))["index"]["events"]):
                    await anyio.sleep(0.2)
            await answers_from_memory(ledger, kept)
        async with serve(project) as ledger:
            status = await ledger.settled()
            assert status["index"]["points"] == len(kept) and not any("held in memory" in event for event in status["index"]["events"])
            await answers_from_memory(ledger, kept)
