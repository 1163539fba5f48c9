"""The streamable-HTTP transport for a shared ledger: the token, Host and Origin checks, one project per token,
and 10 concurrent clients whose every write is found afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .conftest import EXECUTABLE, Project, run_cli

pytestmark = pytest.mark.anyio

TOKEN = "tok-" + "a1b2c3d4" * 4
CLIENTS = 10
CALLS = 12  # per client, remember and recall alternating


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def http_server(project: Project, token: str | None) -> Iterator[str]:
    """`project-ledger serve --transport http` on a free loopback port; yields the endpoint URL once it accepts."""
    port = free_port()
    env = {**os.environ, **project.env, **({"LEDGER_AUTH_TOKEN": token} if token else {})}
    process = subprocess.Popen(
        [EXECUTABLE, "serve", "--root", str(project.root), "--transport", "http", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else "server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()


@asynccontextmanager
async def client(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: object) -> dict:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    return result.structured_content


def post(url: str, **headers: str) -> httpx2.Response:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip
    return httpx2.post(
        url, json=hello, headers={"Accept": "application/json, text/event-stream", **headers}, timeout=30
    )


async def test_off_loopback_the_server_will_not_start_without_a_token(project: Project) -> None:
    refused = run_cli(project, "serve", "--transport", "http", "--host", "0.0.0.0")
    assert refused.returncode == 1 and "refusing to serve on 0.0.0.0 without a token" in refused.stderr
    project.env["LEDGER_AUTH_TOKEN"] = "hunter2"
    weak = run_cli(project, "serve", "--transport", "http", "--host", "0.0.0.0")
    assert weak.returncode == 1 and "use at least 16 random" in weak.stderr and "Traceback" not in weak.stderr


async def test_ten_concurrent_clients_with_the_token_and_nobody_without_it(project: Project) -> None:
    other = Project(project.root.parent / "other-project")
    other.root.mkdir()
    with http_server(project, TOKEN) as url, http_server(other, TOKEN[::-1]) as other_url:
        assert [post(url).status_code, post(url, Authorization="Bearer wrong-token-wrong-token").status_code] == [401, 401]
        assert post(url).content == b""  # nothing about the server leaks to a caller without the token
        assert post(other_url, Authorization=f"Bearer {TOKEN}").status_code == 401  # a token opens its own project only
        bearer = f"Bearer {TOKEN}"
        assert post(url, Authorization=bearer, Host="evil.example:80").status_code == 421  # DNS rebinding
        assert post(url, Authorization=bearer, Origin="http://evil.example").status_code == 403
        assert post(url, Authorization=bearer).status_code == 200

        written: dict[str, str] = {}

        async def work(n: int) -> None:
            async with client(url, TOKEN) as session:
                for i in range(CALLS):
                    if i % 2 == 0:
                        text = f"Client {n} decided fact {i}: service {n}-{i} listens on port {9000 + n * 100 + i}."
                        written[(await call(session, "remember", text=text, tags=[f"client-{n}"]))["id"]] = text
                    else:
                        await call(session, "recall", query=f"which port does service {n}-{i - 1} listen on?", k=3)

        with anyio.fail_after(300):
            async with anyio.create_task_group() as tasks:
                for n in range(CLIENTS):
                    tasks.start_soon(work, n)
        assert len(written) == CLIENTS * CALLS // 2

        async with client(url, TOKEN) as session:
            fetched = await call(session, "recall", ids=list(written))
            assert {hit["id"]: hit["text"] for hit in fetched["results"]} == written
        async with client(other_url, TOKEN[::-1]) as session:
            assert (await call(session, "status"))["counts"] == {}
            refused = await session.call_tool("recall", {"ids": list(written)[:3]})
            assert refused.is_error and "no live memory has these ids" in refused.content[0].text
