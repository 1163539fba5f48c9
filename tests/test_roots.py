"""Which project a server started without `--root` serves: the client's workspace (MCP roots), else the
working directory's project, and never the home directory or the filesystem's root.

VS Code, Claude Code and others share their workspace folders as MCP roots;
Claude Desktop starts servers anywhere and shares none, which is why
`config claude-desktop` writes `--root`.
"""

from __future__ import annotations

import os
import subprocess
import threading
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import ListRootsResult, Root

from project_ledger.cli.serve_answers import answer
from project_ledger.config import Settings
from project_ledger.errors import LedgerError
from project_ledger.factory import open_ledger
from project_ledger.local_socket import settings_fingerprint
from project_ledger.mcp.app import create_server
from project_ledger.mcp.handle import LedgerHandle
from project_ledger.memory.service import LedgerService

from .conftest import EXECUTABLE, Ledger, settings_from

pytestmark = pytest.mark.anyio


class Workspace:
    """The roots a client shares; tests change them as a user opening another folder would."""

    def __init__(self, *folders: Path) -> None:
        self.folders = list(folders)

    async def list_roots(self, _: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=folder.as_uri(), name=folder.name) for folder in self.folders])


@asynccontextmanager
async def serve_in(cwd: Path, home: Path, workspace: Workspace | None = None, **env: str) -> AsyncIterator[Ledger]:
    """The server `project-ledger serve` with no --root builds when started in `cwd` with HOME=`home` and `env`,
    built in this process (HOME is set for as long as it serves), as a client that does (or does not) share roots."""
    options: dict[str, Any] = {"list_roots_callback": workspace.list_roots} if workspace else {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        server = create_server(settings_from(env), cwd)
        async with Client(server, mode="legacy", raise_exceptions=True, **options) as client:
            yield Ledger(client.session, client.instructions)


def git_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path


async def tell_roots_changed(ledger: Ledger) -> None:
    with warnings.catch_warnings():  # roots are deprecated from protocol 2026-07-28 on; today's clients still send this
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ledger.session.send_roots_list_changed()


async def test_the_clients_workspace_root_is_the_project_and_changes_with_it(tmp_path: Path) -> None:
    home, first, second = tmp_path / "home", git_project(tmp_path / "first"), git_project(tmp_path / "second")
    home.mkdir()
    workspace = Workspace(first)
    async with serve_in(home, home, workspace) as ledger:
        first_id = await ledger.remember("The billing service retries webhooks five times.", kind="decision")
        status = await ledger.call("status")
        assert (status["root"], status["root_source"]) == (str(first), "client roots")

        workspace.folders = [second]
        await tell_roots_changed(ledger)
        with anyio.fail_after(30):
            while (await ledger.call("status"))["root"] != str(second):
                await anyio.sleep(0.1)
        second_id = await ledger.remember("The search service caches results for ten minutes.", kind="decision")
        assert await ledger.error("recall", ids=[first_id]), "the first project's memory is not in the second"
        assert [m["id"] for m in await ledger.recall("search cache", min_relevance=0)] == [second_id]

    assert (first / ".ledger").is_dir() and (second / ".ledger").is_dir()
    assert not (home / ".ledger").exists()


async def test_a_server_started_in_the_home_directory_without_roots_stores_nothing_and_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    git_project(home)  # a dotfiles repository does not make the home directory a project
    async with serve_in(home, home) as ledger:
        assert "no project root" in ledger.instructions and "--root" in ledger.instructions
        error = await ledger.error("remember", text="Use Postgres 16.")
        assert "is the home directory" in error and "--root" in error
        assert "no project root" in await ledger.error("status")
    assert not (home / ".ledger").exists()


async def test_the_filesystem_root_is_never_a_project(tmp_path: Path) -> None:
    async with serve_in(Path("/"), tmp_path) as ledger:
        assert "is the filesystem's root" in await ledger.error("recall", query="anything")
    assert not Path("/.ledger").exists()


async def test_the_working_directory_project_serves_a_client_without_roots(tmp_path: Path) -> None:
    project = git_project(tmp_path / "app")
    (project / "project_context.md").write_text("# App\nPayments use Stripe; never store card numbers.\n")
    (project / "src").mkdir()
    async with serve_in(project / "src", tmp_path) as ledger:
        assert "never store card numbers" in ledger.instructions
        await ledger.remember("Refunds go through the payments queue.")
        status = await ledger.call("status")
        assert (status["root"], status["root_source"]) == (str(project), "working directory")
    assert (project / ".ledger").is_dir() and not (project / "src" / ".ledger").exists()


async def test_roots_outside_the_local_disk_are_ignored_with_a_reason(tmp_path: Path) -> None:
    project = git_project(tmp_path / "app")
    workspace = Workspace(tmp_path / "app-that-was-deleted")
    async with serve_in(project, tmp_path, workspace) as ledger:
        await ledger.remember("Kept in the working directory's project.")
        status = await ledger.call("status")
        assert status["root"] == str(project)
        assert "no local directory" in status["root_note"]


async def test_a_named_root_that_does_not_exist_is_reported_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "app"
    async with serve_in(tmp_path, tmp_path, LEDGER_ROOT=str(missing)) as ledger:
        assert f"--root {missing} is not an existing directory" in ledger.instructions
        assert "is not an existing directory" in await ledger.error("remember", text="Use Postgres 16.")
    assert not (tmp_path / "typo").exists()

    completed = subprocess.run([EXECUTABLE, "status", "--root", str(missing)], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 2 and "does not exist" in completed.stderr
    assert not (tmp_path / "typo").exists()


def test_a_switch_closes_the_old_projects_ledger_only_once_the_calls_using_it_have_ended(tmp_path: Path) -> None:
    """A call in flight when the client's roots change keeps the ledger it started on (it used to meet a closed
    database: "journal ... could not be read"); calls after the switch get the new project's."""
    first, second = git_project(tmp_path / "first"), git_project(tmp_path / "second")
    handle = LedgerHandle(lambda root: open_ledger(Settings(root=root, watch=False), root), first)
    try:
        with handle.lease() as ledger:
            switching = threading.Thread(target=handle.switch, args=(second,))
            switching.start()
            while handle.root != second:  # the switch has begun: it names the new root, then waits for this lease
                switching.join(0.01)
            assert ledger.status().root == str(first)  # still open
            assert switching.is_alive()
        switching.join()
        with pytest.raises(LedgerError):
            ledger.status()
        assert handle.get().status().root == str(second)
    finally:
        handle.close()


def test_a_recall_the_hook_socket_is_answering_keeps_its_ledger_through_a_switch(tmp_path: Path) -> None:
    """serve's socket answers on a lease (`LedgerHandle.lease`), as the tools do: a switch that begins once the
    request has its ledger waits for the answer instead of closing the journal under it."""
    first, second = git_project(tmp_path / "first"), git_project(tmp_path / "second")
    handle = LedgerHandle(lambda root: open_ledger(Settings(root=root, watch=False), root), first)
    switching = threading.Thread(target=handle.switch, args=(second,))

    @contextmanager
    def served_while_switching() -> Iterator[LedgerService]:
        with handle.lease() as ledger:
            switching.start()
            while handle.root != second:  # the switch has begun and waits for the lease
                switching.join(0.01)
            yield ledger
        switching.join()  # done once the lease is given back: a ledger used after this would be closed

    try:
        handle.start()  # the search index opens in the background; recall waits for it
        ledger = handle.get()
        ledger.remember("Billing retries use exponential backoff capped at 5 minutes.", kind="decision")
        request = {
            "kind": "recall",
            "settings": settings_fingerprint(os.environ),
            "data_dir": str(ledger.paths.data_dir),
            "arguments": {"query": "billing retry backoff", "k": 3},
        }
        answered = answer(request, served_while_switching, settings_fingerprint(os.environ))
        assert "result" in answered, answered  # not {"failed": "... could not be read"}: a closed journal
        assert "Billing retries" in answered["result"]["results"][0]["text"]
        assert not switching.is_alive() and handle.get().status().root == str(second)
    finally:
        handle.close()
