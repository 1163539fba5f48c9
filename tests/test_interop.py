"""Interop: `project-ledger serve` as seen by the MCP clients other agents are built on.

The contract tests talk to the server through the Python SDK it is built with (2.x). Agents and IDEs embed
other clients, so these tests drive the server with two of them, each a real SDK in a real process:

- the official TypeScript SDK (`@modelcontextprotocol/sdk` 1.x, pinned in tests/interop/package.json), through
  tests/interop/ts_client.mjs;
- the last 1.x release of the Python SDK (pinned in tests/interop/requirements-mcp1.txt), in a venv of its own,
  through tests/interop/legacy_client.py: once offering the protocol revision it offers itself, and once offering
  each of two older revisions, as clients on older SDKs do.

Each script starts the server over stdio as its SDK would, walks through an agent's session and prints one JSON
report of what it saw; the assertions are here. `bash tests/setup.sh` installs both clients.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from .conftest import EXECUTABLE, Project, record_ids

INTEROP = Path(__file__).with_name("interop")
TS_CLIENT = INTEROP / "ts_client.mjs"
TS_SDK = INTEROP / "node_modules" / "@modelcontextprotocol" / "sdk"
LEGACY_CLIENT = INTEROP / "legacy_client.py"
LEGACY_PYTHON = INTEROP / ".venv-mcp1" / "bin" / "python"
SETUP = "run `bash tests/setup.sh` (it installs the interop clients)"

PROJECT_CONTEXT = """# Project context

## Conventions
- Money is integer cents; never floats.
- Every job is idempotent: workers may run it twice.
"""


def pinned_ts_sdk() -> str:
    """The TypeScript SDK version package.json pins (an exact version, so the lockfile and the install agree)."""
    return json.loads((INTEROP / "package.json").read_text())["dependencies"]["@modelcontextprotocol/sdk"]


def pinned_legacy_sdk() -> str:
    """The `mcp` version requirements-mcp1.txt pins."""
    pins = [line.split("==") for line in (INTEROP / "requirements-mcp1.txt").read_text().splitlines() if line.startswith("mcp==")]
    assert len(pins) == 1, "requirements-mcp1.txt must pin exactly one `mcp==` version"
    return pins[0][1].strip()


def require_ts_client() -> list[str]:
    """`node ts_client.mjs`, once Node and the pinned SDK are installed; a failure that says what to run otherwise."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js (20 or later) is not on PATH; the TypeScript interop client needs it")
    if not TS_SDK.is_dir():
        pytest.fail(f"the TypeScript MCP SDK is not installed ({TS_SDK} is missing): {SETUP}")
    installed = json.loads((TS_SDK / "package.json").read_text())["version"]
    if installed != pinned_ts_sdk():
        pytest.fail(f"tests/interop/node_modules has @modelcontextprotocol/sdk {installed}, package.json pins {pinned_ts_sdk()}: {SETUP}")
    return [node, str(TS_CLIENT)]


def require_legacy_client() -> list[str]:
    """The legacy venv's python running legacy_client.py; a failure that says what to run if the venv is missing."""
    if not LEGACY_PYTHON.is_file():
        pytest.fail(f"the legacy (1.x) Python MCP client is not installed ({LEGACY_PYTHON} is missing): {SETUP}")
    return [str(LEGACY_PYTHON), str(LEGACY_CLIENT)]


def run_client(client: list[str], project: Project) -> dict[str, Any]:
    """Run an interop client against `project-ledger serve --root <project>` and return its report.

    The client starts the server itself, from the project directory, with the environment its SDK passes on (its
    default: HOME, PATH and a few more) plus the project's LEDGER_* settings. A client that fails says at which
    step, with the server's stderr.
    """
    completed = subprocess.run(
        [*client, EXECUTABLE, "serve", "--root", str(project.root)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, **project.env},
        cwd=project.root,
        timeout=300,
    )
    lines = completed.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else {}
    except ValueError:
        report = {}
    step = report.get("failed_step")
    where = f"at step {step!r}: {report.get('error')}" if report else f"without a report (exit code {completed.returncode})"
    assert completed.returncode == 0 and report.get("ok") is True, (
        f"{Path(client[-1]).name} failed {where}\n--- stdout\n{completed.stdout[-4000:]}\n--- stderr (client and server)\n{completed.stderr[-6000:]}"
    )
    return report


def recalled(result: dict[str, Any]) -> dict[str, str]:
    """Id -> text of the memories a recall found, from its structured content."""
    return {hit["id"]: hit["text"] for hit in result["structured"]["results"]}


def test_the_typescript_sdk_client_sees_tools_resources_and_the_prompt(project: Project) -> None:
    (project.root / "project_context.md").write_text(PROJECT_CONTEXT)
    report = run_client(require_ts_client(), project)

    # The handshake: the server answers with the revision the client offered, and says who it is.
    assert report["negotiated_protocol_version"] == report["sdk"]["offered_protocol_version"]
    assert report["server_info"]["name"] == "project-ledger"
    assert report["server_info"]["version"] == version("project-ledger")
    assert {"tools", "resources", "prompts"} <= report["server_capabilities"].keys()
    assert "Money is integer cents" in report["instructions"]

    # Tool schemas as the SDK parsed them (snake_case argument names, as the server declares them).
    memory_tools = {"remember", "recall", "context", "history", "pin", "unpin", "forget", "summarize_session", "status"}
    assert memory_tools <= set(report["tool_names"])
    tools = report["tools"]
    remember, recall, forget = tools["remember"], tools["recall"], tools["forget"]
    assert remember["input_schema"]["type"] == "object"
    assert remember["input_schema"]["required"] == ["text"]
    assert remember["input_schema"]["properties"]["text"]["type"] == "string"
    assert "required" not in recall["input_schema"] or recall["input_schema"]["required"] == []
    assert {"query", "k", "token_budget", "include_superseded"} <= recall["input_schema"]["properties"].keys()
    k = recall["input_schema"]["properties"]["k"]
    assert (k["type"], k["minimum"], k["maximum"], k["default"]) == ("integer", 1, 100, 8)
    assert forget["input_schema"]["required"] == ["id"]
    # Every tool declares the shape of its structuredContent, and the SDK compiled each outputSchema (with Ajv) when
    # it listed the tools: a schema it could not compile would have failed the listTools step.
    assert all(tool["has_output_schema"] for tool in tools.values())

    # Behaviour hints for the client's approval prompts, in the protocol's camelCase.
    assert recall["annotations"] == {"readOnlyHint": True}
    assert tools["context"]["annotations"] == {"readOnlyHint": True}
    assert tools["status"]["annotations"] == {"readOnlyHint": True}
    assert remember["annotations"] == {"destructiveHint": False}
    assert forget["annotations"] == {"destructiveHint": True, "idempotentHint": True}
    assert remember["title"] == "Remember" and forget["title"] == "Forget a memory"

    # remember -> recall -> context. The SDK checked each structuredContent against the tool's outputSchema.
    remembered = report["remember"]
    memory = remembered["structured"]["id"]
    assert remembered["structured"]["created"] is True
    assert memory in remembered["text"]
    assert recalled(report["recall"]) == {memory: remembered["sent"]}
    assert remembered["sent"] in report["recall"]["text"]  # what a model reads, too
    context = report["context"]["structured"]
    assert memory in record_ids(context["text"]) and set(context) <= {"text", "tokens", "mode"}  # lean: the text says the rest
    assert remembered["sent"] in context["text"] and "Money is integer cents" in context["text"]
    assert report["context"]["text"] == context["text"]

    # The project_context.md resource, verbatim, and the session_start prompt.
    assert {"uri": "ledger://project-context", "name": "project-context", "mimeType": "text/markdown"} in report["resources"]
    assert "ledger://pinned" in {resource["uri"] for resource in report["resources"]}
    assert report["project_context"] == [{"uri": "ledger://project-context", "mimeType": "text/markdown", "text": PROJECT_CONTEXT}]
    assert report["prompts"] == [{"name": "session_start", "title": "Session start", "arguments": []}]
    [message] = report["session_start"]
    assert message["role"] == "user" and message["type"] == "text"
    assert "Money is integer cents" in message["text"]

    # Bad arguments and unknown ids come back as error results the model can read and correct; the server keeps serving.
    bad = report["bad_calls"]
    for name in ("recall_k_not_a_number", "forget_unknown_id", "remember_without_text"):
        assert bad[name]["answer"] == "result" and bad[name]["is_error"] is True, (name, bad[name])
    assert "is not a whole number" in bad["recall_k_not_a_number"]["text"]
    assert "no memory with id 'no-such-memory'" in bad["forget_unknown_id"]["text"]
    assert "text is missing" in bad["remember_without_text"]["text"]
    # A tool that does not exist may be either kind of error (this server sends an error result); either names it.
    unknown = bad["unknown_tool"]
    assert unknown.get("is_error") is True or unknown["answer"] == "jsonrpc-error", unknown
    assert "no_such_tool" in (unknown.get("text") or unknown.get("message"))
    assert recalled(report["after_bad_calls"]) == {memory: remembered["sent"]}


def test_the_legacy_python_sdk_client_negotiates_and_works(project: Project) -> None:
    (project.root / "project_context.md").write_text(PROJECT_CONTEXT)
    report = run_client(require_legacy_client(), project)
    sdk = report["sdk"]
    assert sdk["version"] == pinned_legacy_sdk(), f"tests/interop/.venv-mcp1 has mcp {sdk['version']}: {SETUP}"

    # The 1.x SDK offers its own latest revision, which the server speaks, so that is the one agreed on.
    assert report["negotiated_protocol_version"] == sdk["offered_protocol_version"]
    assert report["negotiated_protocol_version"] in sdk["supported_protocol_versions"]
    assert report["server_info"]["name"] == "project-ledger"
    assert report["server_info"]["version"] == version("project-ledger")

    assert {"remember", "recall", "context", "forget", "status"} <= set(report["tool_names"])
    remember, recall = report["tools"]["remember"], report["tools"]["recall"]
    assert remember["input_schema"]["required"] == ["text"]
    assert {"query", "k"} <= recall["input_schema"]["properties"].keys()
    assert recall["annotations"] == {"readOnlyHint": True}
    assert remember["has_output_schema"] and recall["has_output_schema"]

    # The 1.x session validated each structuredContent against the outputSchema it listed.
    memory = report["remember"]["structured"]["id"]
    assert report["remember"]["structured"]["created"] is True
    assert recalled(report["recall"]) == {memory: report["remember"]["sent"]}
    assert report["project_context"] == [{"uri": "ledger://project-context", "mimeType": "text/markdown", "text": PROJECT_CONTEXT}]
    assert "Money is integer cents" in report["session_start"][0]["text"]

    assert report["bad_call"]["answer"] == "result" and report["bad_call"]["is_error"] is True
    assert "is not a whole number" in report["bad_call"]["text"]
    assert recalled(report["after_bad_call"]) == {memory: report["remember"]["sent"]}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18"])
def test_a_client_on_an_older_protocol_revision_is_served_in_it(project: Project, revision: str) -> None:
    """Clients pinned to an older SDK still offer older revisions (here the first one, and the one before the
    current, which many clients still speak); the server must agree to each, not fail the handshake or answer
    with a revision the client does not know. Before 2025-06-18 there was no structured content, so the text
    content alone must carry what the model needs."""
    report = run_client([*require_legacy_client(), "--protocol-version", revision], project)

    assert report["negotiated_protocol_version"] == revision
    assert report["server_info"]["name"] == "project-ledger"
    assert {"remember", "recall"} <= set(report["tool_names"])
    found = re.match(r"remembered as (\w+)", report["remember"]["text"])  # a note may follow, e.g. while the index opens
    assert found, report["remember"]["text"]
    memory, sent = found[1], report["remember"]["sent"]
    assert f"<memory id={memory} " in report["recall"]["text"] and sent in report["recall"]["text"]
    assert "does not exist" in report["project_context"][0]["text"]  # no project_context.md here, and the resource says so
    assert report["bad_call"]["is_error"] is True and "is not a whole number" in report["bad_call"]["text"]
    assert sent in report["after_bad_call"]["text"]
