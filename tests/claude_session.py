"""Real Claude Code sessions on a throwaway project, against the scripted model (`tests/claude_code/scripted_model.py`).

The CLI is the real one, pinned in `tests/claude_code/package.json` and installed there by `tests/setup.sh`. It
starts the project's `.mcp.json` server with its own MCP client, puts the server's instructions in front of the
model, fires the hooks of `.claude/settings.local.json` with their real payloads and writes its real transcript.
Only the model is scripted, so a test can assert on what the model was handed: every request body is kept.

Each project gets a home of its own: Claude Code keeps its settings, trust decisions and transcripts under HOME.
The project is pre-approved there (its trust dialog accepted, its `ledger` server enabled), which a user does once
by answering Claude Code's questions.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project_ledger.hooks.log import HookRun, parse_run

from .claude_code.scripted_model import ScriptedModel

INSTALL = Path(__file__).with_name("claude_code")
CLAUDE = INSTALL / "node_modules" / ".bin" / "claude"
EXECUTABLE = str(Path(sys.executable).with_name("project-ledger"))
# Every tool of the ledger's server (a server-wide permission rule), and the deferred-tool loader the CLI puts in
# front of them; anything else the script calls must be allowed by the test.
LEDGER_TOOLS = ("ToolSearch", "mcp__ledger")
PASSED = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR")  # from this process's environment to the CLI's


def pinned_version() -> str:
    """The Claude Code version `tests/claude_code/package.json` pins."""
    return json.loads((INSTALL / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]


def missing() -> str | None:
    """Why no session can run here (the CLI is not installed), or None."""
    if not CLAUDE.exists():
        return f"the Claude Code CLI is not installed ({CLAUDE} is missing): run `bash tests/setup.sh`"
    return None


@dataclass
class Run:
    """One `claude -p` run: its JSON result, the requests the model got during it, its transcript and the hooks log
    lines it added."""

    result: dict[str, Any]
    requests: list[dict[str, Any]]  # {"path", "body", "compaction"} per request, in order
    transcript: Path
    hooks: list[HookRun]  # the hook runs the ledger logged during it
    seconds: float
    stderr: str
    results: list[dict[str, Any]]  # one per prompt (`result` is the last)

    @property
    def session(self) -> str:
        return str(self.result["session_id"])

    def conversation(self) -> list[dict[str, Any]]:
        """The bodies of the conversation's requests (those that offered tools)."""
        return [r["body"] for r in self.requests if r["path"].split("?")[0] == "/v1/messages" and r["body"].get("tools")]


@dataclass
class ClaudeProject:
    """A project folder that Claude Code runs in, with its own HOME and the scripted model."""

    root: Path
    home: Path
    model: ScriptedModel
    url: str
    env: dict[str, str] = field(default_factory=dict)  # LEDGER_* settings, seen by the server and the hooks alike
    # In -p mode Claude Code 2.1.332 connects MCP servers in the background: a first request that goes out before the
    # server answers lacks its instructions and tools, which on a loaded machine is a race. Tests make it wait.
    wait_for_servers: bool = True

    @property
    def data_dir(self) -> Path:
        return self.root / ".ledger"

    @property
    def hooks_log(self) -> Path:
        return self.data_dir / "logs" / "hooks.log"

    def configure(self, *, mcp: bool = True, hooks: bool = True) -> None:
        """Write the project's Claude Code configuration as a user would: `config claude-code [--hooks] --write`."""
        for wanted, extra in ((mcp, []), (hooks, ["--hooks"])):
            if wanted:
                self.ledger("config", "claude-code", *extra, "--write")

    def ledger(self, command: str, *args: str) -> str:
        """`project-ledger COMMAND --root <root> ARGS`, which must succeed; its output."""
        done = subprocess.run(
            [EXECUTABLE, command, "--root", str(self.root), *args],
            capture_output=True, text=True, env=self.environment(), cwd=self.root, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    def environment(self) -> dict[str, str]:
        passed = {name: os.environ[name] for name in PASSED if name in os.environ}
        return {
            **passed,
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no update checks or telemetry: offline anyway
            **({"MCP_CONNECTION_NONBLOCKING": "false"} if self.wait_for_servers else {}),
            **self.env,
        }

    def run(
        self,
        prompt: str,
        turns: list[dict[str, Any]] | None = None,
        *,
        resume: str | None = None,
        continuing: bool = False,
        allowed: tuple[str, ...] = LEDGER_TOOLS,
        timeout: float = 240,
    ) -> Run:
        """`claude -p PROMPT` with the model answering `turns` (then "Done."); `continuing` adds `--continue` (the
        newest session in this folder), `resume` `--resume <session id>`. Fails with the CLI's output unless it
        finished its turn."""
        return self._claude([prompt], turns, resume=resume, continuing=continuing, allowed=allowed, timeout=timeout)

    def converse(
        self,
        prompts: list[str],
        turns: list[dict[str, Any]] | None = None,
        *,
        resume: str | None = None,
        continuing: bool = False,
        allowed: tuple[str, ...] = LEDGER_TOOLS,
        timeout: float = 240,
        pause: float = 0.0,
    ) -> Run:
        """Several prompts in one `claude -p` process (`--input-format stream-json`), each sent `pause` seconds after
        the answer to the one before is complete, as a user types them in an interactive session: the session's MCP
        server stays up between them. The model answers `turns` across all of them (then "Done.")."""
        return self._claude(
            prompts, turns, resume=resume, continuing=continuing, allowed=allowed, timeout=timeout, stream=True, pause=pause
        )

    def _claude(
        self,
        prompts: list[str],
        turns: list[dict[str, Any]] | None,
        *,
        resume: str | None,
        continuing: bool,
        allowed: tuple[str, ...],
        timeout: float,
        stream: bool = False,
        pause: float = 0.0,
    ) -> Run:
        self.model.script(turns or [])
        before = len(self.model.requests)
        logged = len(self.hooks_log.read_text().splitlines()) if self.hooks_log.exists() else 0
        argv = [str(CLAUDE), "-p", "--allowedTools", ",".join(allowed)]
        argv += (
            ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
            if stream
            else ["--output-format", "json"]
        )
        argv += ["--continue"] if continuing else []
        argv += ["--resume", resume] if resume is not None else []
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as stderr:
            process = subprocess.Popen(
                argv if stream else [*argv, prompts[0]], stdin=subprocess.PIPE if stream else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=stderr, text=True, env=self.environment(), cwd=self.root,
            )  # fmt: skip
            results = _answers(process, prompts if stream else [], time.monotonic() + timeout, pause)
            stderr.seek(0)
            errors = stderr.read()
        seconds = time.perf_counter() - started
        result = results[-1] if results else {}
        assert (
            process.returncode == 0
            and len(results) == len(prompts)
            and all(r.get("session_id") and not r.get("is_error") for r in results)
        ), f"claude -p failed (exit {process.returncode})\n--- results\n{results}\n--- stderr\n{errors[-3000:]}"
        lines = self.hooks_log.read_text().splitlines()[logged:] if self.hooks_log.exists() else []
        hooks = [run for run in map(parse_run, lines) if run is not None]
        return Run(
            result, self.model.requests[before:], self.transcript(str(result["session_id"])), hooks, seconds, errors, results
        )

    def transcript(self, session: str) -> Path:
        """Where Claude Code writes the session's transcript (under this project's HOME)."""
        found = sorted((self.home / ".claude" / "projects").glob(f"*/{session}.jsonl"))
        return found[0] if found else self.home / ".claude" / "projects" / "-" / f"{session}.jsonl"


def _answers(process: subprocess.Popen[str], prompts: list[str], deadline: float, pause: float = 0.0) -> list[dict[str, Any]]:
    """The CLI's result lines: for `claude -p PROMPT` the one it prints; in stream-json mode one per prompt, each
    prompt written `pause` seconds after the answer to the one before is in. The process is killed at `deadline`."""
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def result() -> dict[str, Any] | None:
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                process.kill()
                return None
            if line is None:
                return None
            try:
                found = json.loads(line)
            except ValueError:
                continue
            if isinstance(found, dict) and found.get("type") == "result":
                return found

    results: list[dict[str, Any]] = []
    if not prompts:  # `claude -p PROMPT`: one result, then it exits
        found = result()
        results += [found] if found is not None else []
    assert process.stdin is not None or not prompts
    for n, prompt in enumerate(prompts):
        assert process.stdin is not None
        if n:
            time.sleep(pause)
        process.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")
        process.stdin.flush()
        found = result()
        if found is None:
            break
        results.append(found)
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    reader.join(timeout=10)
    process.stdout.close()
    return results


def claude_project(root: Path, home: Path, model: ScriptedModel, url: str, env: dict[str, str] | None = None) -> ClaudeProject:
    """A git repository at `root` (how the ledger and Claude Code find the project) trusted in `home`'s
    `.claude.json`, with its `ledger` server enabled."""
    root.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    root = root.resolve()
    state = home / ".claude.json"
    document = json.loads(state.read_text()) if state.exists() else {}
    projects = document.setdefault("projects", {})
    projects[str(root)] = {**projects.get(str(root), {}), "hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["ledger"]}
    state.write_text(json.dumps(document))
    return ClaudeProject(root, home, model, url, dict(env or {}))


def claude_version() -> str:
    """What the installed CLI says its version is (`claude --version`: `2.1.332 (Claude Code)`)."""
    done = subprocess.run(
        [str(CLAUDE), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"PATH": os.environ.get("PATH", "")},
    )
    return done.stdout.split()[0]


def texts(body: dict[str, Any]) -> list[str]:
    """Every piece of text a request hands the model: the system prompt's blocks, then each message's text blocks
    and tool results (as the JSON or text they carry), in order."""
    found: list[str] = []
    system = body.get("system")
    found += [system] if isinstance(system, str) else [b.get("text", "") for b in system or [] if isinstance(b, dict)]
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                found.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                found.append(inner if isinstance(inner, str) else json.dumps(inner))
    return found


def copies(body: dict[str, Any], needle: str) -> int:
    """How many times `needle` reaches the model in one request."""
    return sum(text.count(needle) for text in texts(body))
