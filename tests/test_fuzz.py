"""Hostile input: every tool called with generated arguments of every wrong shape, and lines that are not even
valid JSON-RPC. Each call gets an error or a valid result, the server keeps serving, and afterwards the index
still matches the journal."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import EXECUTABLE, Ledger, Project, connect

pytestmark = pytest.mark.anyio

KNOWN_IDS: list[str] = []  # filled in by the test with ids that exist, so calls also reach the code past validation


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.text(alphabet=st.characters(max_codepoint=0x1F), min_size=1, max_size=40),  # control characters only
    st.sampled_from(["", "   ", "\x00", "../../etc/passwd", "/etc/passwd", "m0000000000", "ledger://nope", "%s%n{0}"]),
    st.integers(min_value=60_000, max_value=300_000).map(lambda n: "ü" * n),  # past the text limit, in bytes
    st.integers(min_value=20, max_value=120).map(nested),
    st.recursive(
        st.none() | st.integers() | st.text(max_size=8),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
        max_leaves=40,
    ),
)


def plausible(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value of the declared type, not necessarily a sensible one."""
    options = schema.get("anyOf", [schema])
    enums = [value for option in options for value in option.get("enum", [])]
    if enums:
        return st.sampled_from(enums)
    types = {option.get("type") for option in options}
    choices: list[st.SearchStrategy[Any]] = []
    if "string" in types:
        choices += [st.text(min_size=1, max_size=60), st.sampled_from(KNOWN_IDS or ["m0000000000"])]
    if "integer" in types:
        choices += [st.integers(min_value=1, max_value=200), st.integers(min_value=-5, max_value=250_000)]
    if "number" in types:
        choices.append(st.floats(min_value=-1, max_value=2))
    if "boolean" in types:
        choices.append(st.booleans())
    if "array" in types:
        choices.append(st.lists(st.text(min_size=1, max_size=30), max_size=5))
    return st.one_of(choices) if choices else HOSTILE


@st.composite
def calls(draw: st.DrawFn, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A tool (or one that does not exist) and arguments: all of the declared types half the time, otherwise
    with one field or every field drawn from anything at all, sometimes with a key the tool does not have."""
    name = draw(st.sampled_from([*tools, "no_such_tool"]))
    schema = tools.get(name, {})
    properties, required = schema.get("properties", {}), set(schema.get("required", []))
    hostile = draw(st.sampled_from(["none", "none", "one", "all"]))
    victim = draw(st.sampled_from(sorted(properties))) if properties and hostile == "one" else None
    arguments: dict[str, Any] = {}
    for field, field_schema in properties.items():
        if hostile == "all" or field == victim:
            if draw(st.integers(0, 4)):  # and sometimes missing altogether
                arguments[field] = draw(HOSTILE)
        elif field in required or draw(st.booleans()):
            arguments[field] = draw(plausible(field_schema))
    if draw(st.integers(0, 5)) == 0:
        arguments[draw(st.text(min_size=1, max_size=10))] = draw(HOSTILE)
    return name, arguments


async def check_invariant(ledger: Ledger) -> None:
    """Every memory the journal holds (superseded ones included) is in the index, and nothing else."""
    status = await ledger.settled()
    assert status["index"]["lag"] == 0
    assert status["index"]["points"] == sum(status["counts"].values()) + status["superseded"], status


async def test_generated_calls_to_every_tool_get_an_answer_and_leave_the_ledger_consistent(project: Project) -> None:
    async with connect(project) as ledger:
        tools = {tool.name: tool.input_schema for tool in (await ledger.session.list_tools()).tools}
        KNOWN_IDS[:] = [await ledger.remember(f"Seed memory {n}: the cache TTL is {n * 10} seconds.", session="s1") for n in range(5)]
        outcomes = {"error": 0, "result": 0}

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
        @given(call=calls(tools))
        def survives(call: tuple[str, dict[str, Any]]) -> None:
            name, arguments = call
            result = anyio.from_thread.run(ledger.session.call_tool, name, arguments)
            outcomes["error" if result.is_error else "result"] += 1
            if result.is_error:
                assert result.content and result.content[0].text.strip() and "Traceback" not in result.content[0].text
            else:
                assert result.structured_content is not None or result.content

        await anyio.to_thread.run_sync(survives)
        assert outcomes["error"] and outcomes["result"], outcomes
        await check_invariant(ledger)
        stored = await ledger.remember("Written after the fuzzing: the server still stores and finds.")
        assert (await ledger.recall("written after the fuzzing"))[0]["id"] == stored


class RawClient:
    """`serve` over stdio, driven line by line."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin, self._stdout = process.stdin, process.stdout

    def send(self, line: str) -> None:
        self._stdin.write(line.encode() + b"\n")
        self._stdin.flush()

    def exchange(self, line: str) -> dict[str, Any]:
        """Send a line and parse the server's next one."""
        self.send(line)
        return json.loads(self._stdout.readline())


@contextmanager
def raw_server(project: Project) -> Iterator[RawClient]:
    """A client that writes JSON-RPC bytes itself. The server must exit cleanly once its stdin closes."""
    process = subprocess.Popen(
        [EXECUTABLE, "serve", "--root", str(project.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **project.env},
    )
    try:
        yield RawClient(process)
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        process.stdout.close()


def initialize(request_id: int) -> str:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": hello})


def tool_call(request_id: int, tool: str, arguments: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}'


async def test_lines_the_sdk_cannot_parse_get_a_json_rpc_error_and_the_server_carries_on(project: Project) -> None:
    """Raw JSON-RPC on the server's stdin: the official client cannot send these (it refuses to encode a lone
    surrogate), which is exactly why a hostile or broken client must be simulated byte by byte."""

    def call(request_id: int, arguments: str) -> str:
        return tool_call(request_id, "remember", arguments)

    with raw_server(project) as client:
        exchange = client.exchange
        assert exchange(initialize(1))["id"] == 1
        client.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

        surrogate = exchange(call(2, '{"text":"half an emoji: \\ud83d, alone"}'))
        assert surrogate["id"] == 2 and "unpaired UTF-16 surrogate" in surrogate["error"]["message"]
        in_a_tag = exchange(call(3, '{"text":"fine","tags":["\\udfff"]}'))
        assert in_a_tag["id"] == 3 and "surrogate" in in_a_tag["error"]["message"]
        deep = exchange(call(4, '{"text":' + "[" * 5000 + "]" * 5000 + "}"))
        assert deep["id"] == 4 and "recursion limit" in deep["error"]["message"]
        garbage = exchange("this is not JSON at all")
        assert garbage["id"] is None and garbage["error"]["code"] == -32700
        truncated = exchange(call(5, '{"text":"cut off mid'))
        assert truncated["id"] == 5 and truncated["error"]["code"] == -32700

        stored = exchange(call(6, '{"text":"Still serving after all that."}'))
        assert stored["id"] == 6 and stored["result"]["isError"] is False


async def test_a_client_that_never_says_it_is_initialized_is_still_served_in_full(project: Project) -> None:
    """The index, model and code scan start once the client sends `notifications/initialized` (so they do not slow
    the handshake), or a moment later from a client that never sends it: its calls must not wait for ever."""
    text = "The billing service retries a failed charge three times, then parks it for a human."
    with raw_server(project) as client:
        exchange = client.exchange
        assert exchange(initialize(1))["result"]["serverInfo"]["name"] == "project-ledger"
        assert exchange(tool_call(2, "remember", json.dumps({"text": text})))["result"]["isError"] is False
        found = exchange(tool_call(3, "recall", json.dumps({"query": "how often is a failed charge retried"})))
        assert found["result"]["structuredContent"]["results"][0]["text"] == text
