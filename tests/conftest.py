"""Fixtures: a throwaway project, and `project-ledger serve` on it over stdio through the official MCP client.

Every contract test talks to a real server process: the real offline model, a
real Qdrant Edge shard (or qdrant-client local mode) and a real SQLite journal.
Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))


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
        return {"HOME": os.environ.get("HOME", str(self.root)), **self.env}

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=EXECUTABLE, args=["serve", "--root", str(self.root)], env=self.server_env(), cwd=str(self.root)
        )


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "repo"
    root.mkdir()
    return Project(root)


class Ledger:
    """A connected MCP client with helpers that read like the calls an agent makes."""

    def __init__(self, session: ClientSession, instructions: str | None) -> None:
        self.session = session
        self.instructions = instructions

    async def call(self, tool: str, **arguments: Any) -> Any:
        """Call a tool that must succeed; returns its structured content."""
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text if result.content else result
        return result.structured_content

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
