"""Fixtures: a throwaway project, and the ledger's MCP server on it, in memory or as `project-ledger serve`.

Two ways to talk to a server, with the same `Ledger` helper:

- `connect(project)`: the server built by `create_server` in this process, over the MCP SDK's in-memory
  transport (the same initialize handshake and JSON-RPC messages as stdio), on a ledger that shares this test
  process's one loaded embedding model. Most tests use it.
- `serve(project)`: `project-ledger serve` in a subprocess over stdio, for tests where the process is the
  point: stdio framing, kill -9, the file watcher, two processes on one project, a server process recovering
  from a read-only or full disk.

Both use the real offline model, a real Qdrant Edge shard (or qdrant-client local mode) and a real SQLite
journal. Nothing is mocked. For finer-grained tests there is the fixture chain `settings` -> `ledger` ->
`client` (an `mcp.Client` on `create_server(settings, ledger=ledger)`).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from project_ledger.config import Settings
from project_ledger.models import (
    Ack,
    ContextResult,
    FindSymbolResult,
    ForgetResult,
    GistResult,
    HistoryResult,
    RecallResult,
    Record,
    ReferencesResult,
    RememberResult,
    RepoMapResult,
    SearchCodeResult,
    Status,
)
from project_ledger.search.embedding import DEFAULT_MODEL, Embedder, create_embedder
from project_ledger.text.tokens import TokenCounter

if TYPE_CHECKING:
    from project_ledger.memory.service import LedgerService

    from .claude_session import ClaudeProject

EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
# The result model of each memory tool (see `mcp/app.py`), whose defaults fill in what a lean result leaves out.
RESULT_MODELS: dict[str, type[Record]] = {
    "remember": RememberResult, "recall": RecallResult, "context": ContextResult, "history": HistoryResult, "pin": Ack,
    "unpin": Ack, "forget": ForgetResult, "summarize_session": GistResult, "status": Status, "find_symbol": FindSymbolResult,
    "search_code": SearchCodeResult, "find_references": ReferencesResult, "repo_map": RepoMapResult,
}  # fmt: skip
# Read by `Settings` from the environment besides the LEDGER_* variables (see config.py).
UNPREFIXED = ("QDRANT_URL", "QDRANT_API_KEY")


def pytest_configure(config: pytest.Config) -> None:
    """The server ignores the SDK's deprecation of sampling and roots (mcp/app.py, mcp/roots.py: today's clients
    negotiate protocols before it). Those filters are set once, at import, which is all a server process needs; in
    this process pytest puts `filterwarnings = error` back in front of them for every test, so they are repeated
    here, after it."""
    for feature in ("sampling", "roots"):
        config.addinivalue_line(
            "filterwarnings", f"ignore:.*{feature} capability is deprecated:mcp.shared.exceptions.MCPDeprecationWarning"
        )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Project:
    """A project folder plus the environment a client would start the server with."""

    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / ".ledger"

    def server_env(self) -> dict[str, str]:
        """HOME, and PYTHONPATH when set (so that a checkout's code is what a server process runs), plus `env`.
        LEDGER_SHARED_SERVER and LEDGER_SHARED_IDLE_SECONDS pass too: with them set, every `serve` of a test module
        goes through the shared server (`cli/mcp_proxy.py`)."""
        passed = ("PYTHONPATH", "LEDGER_SHARED_SERVER", "LEDGER_SHARED_IDLE_SECONDS")
        inherited = {name: os.environ[name] for name in passed if name in os.environ}
        return {"HOME": os.environ.get("HOME", str(self.root)), **inherited, **self.env}

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=EXECUTABLE, args=["serve", "--root", str(self.root)], env=self.server_env(), cwd=str(self.root)
        )

    def settings(self, **overrides: Any) -> Settings:
        """The `Settings` that `serve --root <root>` builds from this project's `env`, plus `overrides`."""
        return settings_from(self.env, root=self.root, **overrides)


def settings_from(env: dict[str, str], **overrides: Any) -> Settings:
    """The `Settings` a server process started with the environment `env` builds, plus `overrides`.

    Such a process sees only `env` (and the SDK's allow-listed variables), so any LEDGER_* variable of this test
    process is hidden while they are read; os.environ is as it was afterwards.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("LEDGER_") or name in UNPREFIXED:
                patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        return Settings(**overrides)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "repo"
    root.mkdir()
    return Project(root)


@functools.cache
def shared_embedder() -> Embedder:
    """The bundled offline model, loaded at most once per test process and shared by every in-memory ledger."""
    cache = Path(tempfile.mkdtemp(prefix="ledger-test-model-"))
    atexit.register(shutil.rmtree, cache, True)
    return create_embedder(None, None, cache, None)


def embedder_for(settings: Settings) -> Embedder | None:
    """The shared model when `settings` ask for the default one; otherwise None, so the ledger makes its own."""
    default = settings.embed_model in (None, DEFAULT_MODEL) and not (settings.embed_model_path or settings.embed_threads)
    return shared_embedder() if default else None


def open_project_ledger(settings: Settings) -> LedgerService:
    from project_ledger.factory import open_ledger  # imported on use: the unit tests need none of the service

    assert settings.root is not None
    return open_ledger(settings, settings.root, embedder=embedder_for(settings))


def in_memory_client(settings: Settings, ledger: LedgerService, **client_options: Any) -> Client:
    """An MCP client for a server on `ledger`, through the SDK's in-memory transport with the initialize handshake
    a stdio client makes (`mode="legacy"`). The server starts the ledger, and closes it when the client does."""
    from project_ledger.mcp.app import create_server

    assert settings.root is not None
    return Client(create_server(settings, settings.root, ledger=ledger), mode="legacy", raise_exceptions=True, **client_options)


@pytest.fixture
def settings(project: Project) -> Settings:
    """A throwaway project's settings: data under tmp_path, the file watcher off."""
    return project.settings(watch=False)


@pytest.fixture
def ledger(settings: Settings) -> Iterator[LedgerService]:
    """The service on `settings`, opened (not started) with the shared model. Closed at the end; closing
    again after a server has closed it is harmless."""
    service = open_project_ledger(settings)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
async def client(settings: Settings, ledger: LedgerService) -> AsyncIterator[Client]:
    """An MCP client connected in memory to a server on `ledger` (which the server starts, and closes at its end)."""
    async with in_memory_client(settings, ledger) as connected:
        yield connected


class Ledger:
    """A connected MCP client with helpers that read like the calls an agent makes."""

    def __init__(self, session: ClientSession, instructions: str | None) -> None:
        self.session = session
        self.instructions = instructions

    async def call(self, tool: str, **arguments: Any) -> Any:
        """Call a tool that must succeed; returns its structured content with the defaults the tool's result model
        fills in, as a typed client reads it (a result comes lean: fields left at their default are not sent)."""
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text if result.content else result
        model = RESULT_MODELS.get(tool)
        return model.model_validate(result.structured_content).model_dump(mode="json") if model else result.structured_content

    async def handed(self, tool: str, **arguments: Any) -> tuple[dict[str, Any], int]:
        """Call a tool that must succeed; returns its structured content as sent, and the cl100k tokens of that JSON
        as Claude Code 2.1.332 hands it to the model (compact, characters as they are)."""
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text if result.content else result
        raw = result.structured_content
        return raw, TokenCounter().count(json.dumps(raw, separators=(",", ":"), ensure_ascii=False))

    async def error(self, tool: str, **arguments: Any) -> str:
        """Call a tool that must fail; returns the error text the model would read."""
        result = await self.session.call_tool(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) unexpectedly succeeded: {result.structured_content}"
        return result.content[0].text

    async def remember(self, text: str, **arguments: Any) -> str:
        return (await self.call("remember", text=text, **arguments))["id"]

    async def recall(self, query: str, **arguments: Any) -> list[dict[str, Any]]:
        return (await self.call("recall", query=query, **arguments))["results"]

    async def resource(self, uri: str) -> str:
        result = await self.session.read_resource(uri)
        return result.contents[0].text

    async def settled(self, timeout: float = 120) -> dict[str, Any]:
        """Wait until the model is loaded, every memory has its vector and the index has caught up."""
        with anyio.fail_after(timeout):
            while True:
                status = await self.call("status")
                index, model = status["index"], status["embedding"]
                if model["state"] == "failed":
                    raise AssertionError(f"embedding model failed: {model['detail']}")
                if index["state"] == "ready" and model["state"] == "ready" and index["lag"] == 0 and index["missing_embeddings"] == 0:
                    return status
                await anyio.sleep(0.2)


@asynccontextmanager
async def serve(project: Project, **client_options: Any) -> AsyncIterator[Ledger]:
    """Start `project-ledger serve` for `project` and hand back an initialized client (`client_options`, such as a
    `sampling_callback`, go to the SDK's ClientSession)."""
    async with stdio_client(project.params()) as (read, write), ClientSession(read, write, **client_options) as session:
        init = await session.initialize()
        yield Ledger(session, init.instructions)


@asynccontextmanager
async def connect(project: Project, *, watch: bool = False, **client_options: Any) -> AsyncIterator[Ledger]:
    """`serve(project)` without the process: the same server, built in this process from the settings `project.env`
    gives, over the in-memory transport with the same initialize handshake. The file watcher is off unless `watch`
    (or LEDGER_WATCH in `project.env`) turns it on. `client_options`, such as a `sampling_callback`, go to the
    SDK's `Client`. The ledger closes when the server does, as a process's would at exit."""
    settings = project.settings() if "LEDGER_WATCH" in project.env else project.settings(watch=watch)
    service = open_project_ledger(settings)
    try:
        client = in_memory_client(settings, service, **client_options)
    except BaseException:
        service.close()
        raise
    async with client:
        yield Ledger(client.session, client.instructions)


def record_ids(text: str) -> list[str]:
    """The ids of the records (`<memory id=...>`, `<turn ...>`, `<gist ...>`) in a rendered pack, in order."""
    return re.findall(r"<(?:memory|turn|gist) id=(\w+)", text)


def journal_bytes(project: Project) -> bytes:
    """Every byte the journal keeps on disk (database plus WAL), for checking what was erased."""
    return b"".join(path.read_bytes() for path in project.data_dir.glob("journal.sqlite3*") if path.is_file())


def run_cli(project: Project, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a CLI command as a user would, whatever its exit code."""
    return subprocess.run(
        [EXECUTABLE, command, "--root", str(project.root), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, **project.env},
        cwd=project.root,
        timeout=300,
    )


def cli(project: Project, command: str, *args: str) -> Any:
    """Run a CLI command that must succeed; returns parsed JSON when `--json` is among the args."""
    completed = run_cli(project, command, *args)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout) if "--json" in args else completed.stdout


@pytest.fixture
def claude_code(tmp_path: Path) -> Iterator[ClaudeProject]:
    """A project for real Claude Code sessions (`tests/claude_session.py`), not configured yet; skipped, with what to
    run, where the CLI is not installed."""
    from .claude_code.scripted_model import ScriptedModel
    from .claude_session import claude_project, missing

    if (why := missing()) is not None:
        pytest.skip(why)
    model = ScriptedModel()
    url = model.start()
    try:
        yield claude_project(tmp_path / "work", tmp_path / "home", model, url)
    finally:
        model.stop()
