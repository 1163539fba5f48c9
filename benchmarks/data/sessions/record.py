"""Record the session corpus that `benchmarks/sessions.py` replays: the sessions of `scenario.py`, played through
the real Claude Code CLI against a scripted model, on a fresh copy of `project/` with the ledger's MCP server
and hooks configured as a user would (`config claude-code --write`, `config claude-code --hooks --write`).

    python benchmarks/data/sessions/record.py
    python benchmarks/data/sessions/record.py --claude PATH --mock PATH --sessions 3 --out /tmp/try

Takes about 10 minutes here. Needs the Claude Code CLI (recorded with 2.1.332: `npm install
@anthropic-ai/claude-code@2.1.332`) and the scripted model `mock_anthropic.py` (default: `../shared/claude-code/`
beside the repository). Nothing goes to the network; each run uses a throwaway HOME. Every hook call goes through `hook_tap.py`, which keeps its input and
the transcript's size at that moment. A session's first step starts it (`claude -p`), the others resume it
(`--resume <id>`: the session id and its transcript file stay the same); `/compact` is a step of its own.

Kept per session, in `<out>/<slug>/`:
- `transcript.jsonl`: the transcript lines a replay reads (`user`, `assistant`, `system`, `summary`; the others
  are the client's bookkeeping: API request copies, attachments, queue operations), without the client's own
  copies of tool results (`toolUseResult`, `mcpMeta`), with the project's folder written `$ROOT` and the home
  folder `$HOME`;
- `events.jsonl`: every hook call in order: which `claude -p` call (`invocation`) it came in, its input, the
  transcript's size then (in bytes of `transcript.jsonl`), the tokens of the context it printed, its time;
- `requests.json`: from the scripted model's request log, per request of the conversation: the copies of
  start-pack material it held, and each ledger tool result as the model got it (tokens, form, budget asked).
`<out>/labels.json` holds the decisions and each prompt's act (from `scenario.py`), `<out>/recording.json` the
versions and what was checked.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from project_ledger.text.tokens import TokenCounter

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(HERE), str(REPO / "benchmarks")]  # a sibling data module, and the replay (which reads transcripts)
import scenario

from sessions import content_blocks, transcript_lines

ALLOWED_TOOLS = "ToolSearch,Bash,Read,Edit,mcp__ledger__remember,mcp__ledger__recall,mcp__ledger__context"
TRANSCRIPT_TYPES = ("user", "assistant", "system", "summary")
COPIES = ("toolUseResult", "mcpMeta")  # the client's own copies of a tool's result, beside the one the model gets
PROJECT_MARK = "Northwind billing: invoices and card charges"  # a sentence of project/project_context.md
TOKENS = TokenCounter()


def default_claude() -> str | None:
    beside = REPO.parent / "tools" / "node_modules" / ".bin" / "claude"
    return str(beside) if beside.exists() else shutil.which("claude")


@contextmanager
def scripted_model(mock: Path, turns: list[dict[str, Any]], log: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """The scripted model for one `claude -p` call, answering `turns` in order; yields its process and port."""
    script = log.with_suffix(".script.json")
    script.write_text(json.dumps(turns, ensure_ascii=False))
    process = subprocess.Popen(
        [sys.executable, str(mock), "--port", "0", "--script", str(script), "--log", str(log)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield process, int(process.stdout.readline())
    finally:
        process.terminate()
        process.wait(timeout=10)


class Recorder:
    def __init__(self, work: Path, claude: str, mock: Path) -> None:
        self.work, self.claude, self.mock = work, claude, mock
        self.root, self.home = work / "billing-service", work / "home"
        self.taps = work / "hooks.jsonl"
        self.requests = work / "requests"
        self.ids: dict[str, str] = {}  # decision label -> the id the ledger gave it
        self.tap_lines = 0

    def set_up(self) -> None:
        if self.work.exists():
            shutil.rmtree(self.work)
        shutil.copytree(HERE / "project", self.root, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        self.home.mkdir()
        self.requests.mkdir()
        self.taps.touch()
        git = ["git", "-c", "user.name=Dana", "-c", "user.email=dana@northwind.example"]
        for command in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "-A"],
            [*git, "commit", "-qm", "Northwind billing 0.3.0"],
        ):
            subprocess.run(command, cwd=self.root, check=True)
        for extra in ([], ["--hooks"]):
            subprocess.run(
                [sys.executable, "-m", "project_ledger", "config", "claude-code", *extra, "--write"],
                cwd=self.root, env=self.env(), check=True, capture_output=True,
            )  # fmt: skip
        settings = self.root / ".claude" / "settings.local.json"
        document = json.loads(settings.read_text())
        tap = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'hook_tap.py'))} {shlex.quote(str(self.taps))} --"
        for groups in document["hooks"].values():
            for group in groups:
                for hook in group["hooks"]:
                    hook["command"] = f"{tap} {hook['command']}"
        settings.write_text(json.dumps(document, indent=2))
        trusted = {"hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["ledger"]}
        (self.home / ".claude.json").write_text(json.dumps({"projects": {str(self.root): trusted}}))

    def env(self, port: int | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "ANTHROPIC_", "CLAUDE"))}
        env.update(HOME=str(self.home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
        if port is not None:
            env.update(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="sk-ant-offline-test")
        return env

    def resolve(self, value: Any) -> Any:
        """`$ROOT` and `@label` in a scripted turn, made real."""
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, str) and value.startswith("@") and value[1:] in scenario.DECISIONS:
            return self.ids[value[1:]]
        return value.replace("$ROOT", str(self.root)) if isinstance(value, str) else value

    def step(self, slug: str, invocation: int, step: scenario.Step, session_id: str | None) -> tuple[dict[str, Any], list[dict]]:
        """One `claude -p` call; returns its JSON result and the hook calls it made."""
        log = self.requests / f"{slug}-{invocation}.jsonl"
        command = [self.claude, "-p", step.prompt, "--output-format", "json", "--allowedTools", ALLOWED_TOOLS]
        if session_id is not None:
            command += ["--resume", session_id]
        with scripted_model(self.mock, self.resolve(step.turns), log) as (model, port):
            done = subprocess.run(
                command, cwd=self.root, env=self.env(port), capture_output=True, text=True, timeout=600, check=False
            )
            if model.poll() is not None:  # Claude Code retries for minutes, then fails the call
                raise SystemExit(f"{slug} step {invocation}: the scripted model exited during the call ({model.returncode})")
        if done.returncode != 0:
            raise SystemExit(f"{slug} step {invocation}: claude exited {done.returncode}: {done.stderr[-2000:]}")
        result = json.loads(done.stdout)
        if result.get("is_error"):
            raise SystemExit(f"{slug} step {invocation}: {result}")
        return result, self.new_taps(ending=True)

    def new_taps(self, ending: bool) -> list[dict[str, Any]]:
        """The hook calls logged since the last look; with `ending`, waits for the call's SessionEnd (Claude Code may
        exit before its last hook is done)."""
        deadline = time.monotonic() + 30
        while True:
            lines = self.taps.read_text(encoding="utf-8").splitlines()[self.tap_lines :]
            found = [json.loads(line) for line in lines]
            if (
                not ending
                or any(tap["payload"]["hook_event_name"] == "SessionEnd" for tap in found)
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.2)
        self.tap_lines += len(lines)
        return sorted(found, key=lambda tap: tap["at"])

    def learn_ids(self, transcript: Path) -> None:
        """The id each stored decision got, from the `remember` results in the transcript."""
        wording = {d.wording: label for label, d in scenario.DECISIONS.items() if d.stored}
        calls: dict[str, str] = {}
        for entry in transcript_lines(transcript.read_bytes()):
            for block in content_blocks(entry):
                if block.get("type") == "tool_use" and block.get("name") == "mcp__ledger__remember":
                    calls[block["id"]] = block["input"].get("text", "")
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                    label = wording.get(calls[block["tool_use_id"]])
                    if label and not block.get("is_error"):
                        self.ids[label] = json.loads(result_text(block))["id"]

    def normalize(self, text: str) -> str:
        return text.replace(str(self.root), "$ROOT").replace(str(self.home), "$HOME")


def result_text(block: dict[str, Any]) -> str:
    """A tool_result's content as the model reads it: the string, or its text blocks joined."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def check_tools(slug: str, invocation: int, data: bytes, start: int) -> None:
    """Every read, edit and ledger call of the step worked (a failing test run is a Bash result like any other)."""
    names: dict[str, str] = {}
    for entry in transcript_lines(data[start:]):
        for block in content_blocks(entry):
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result" and block.get("is_error") and names.get(block.get("tool_use_id")) != "Bash":
                raise SystemExit(
                    f"{slug} step {invocation}: {names.get(block.get('tool_use_id'))} failed: {result_text(block)[:500]}"
                )


def kept_transcript(data: bytes, normalize: Any) -> tuple[bytes, list[tuple[int, int]]]:
    """The lines a replay reads, normalized, and for each original line end the kept bytes up to it."""
    out, ends, position = bytearray(), [], 0
    for line in data.splitlines(keepends=True):
        position += len(line)
        if not line.endswith(b"\n"):
            break  # still being written when the session ended: not a line yet
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if isinstance(entry, dict) and entry.get("type") in TRANSCRIPT_TYPES:
            for copy in COPIES:
                entry.pop(copy, None)
            out += normalize(json.dumps(entry, ensure_ascii=False, separators=(",", ":"))).encode("utf-8") + b"\n"
        ends.append((position, len(out)))
    return bytes(out), ends


def kept_size(ends: list[tuple[int, int]], size: int | None) -> int | None:
    """The size of the kept transcript when the original was `size` bytes long (complete lines only)."""
    if size is None:
        return None
    kept = 0
    for original, now in ends:
        if original > size:
            break
        kept = now
    return kept


def hook_context(output: str) -> str:
    try:
        return json.loads(output)["hookSpecificOutput"]["additionalContext"] if output.strip() else ""
    except (ValueError, KeyError, TypeError):
        return output


def request_texts(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, text) of everything a request hands the model: `system`, a message's role, or `tool` for a result."""
    system = body.get("system")
    for part in system if isinstance(system, list) else [system]:
        text = part.get("text") if isinstance(part, dict) else part
        if isinstance(text, str):
            yield "system", text
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            yield message.get("role", "?"), content
            continue
        for block in content or []:
            if block.get("type") == "text":
                yield message.get("role", "?"), block.get("text", "")
            elif block.get("type") == "tool_result":
                yield "tool", result_text(block)


def result_form(text: str) -> str:
    """How a tool result reached the model: compact JSON (with non-ASCII kept or escaped), other JSON, or text."""
    try:
        value = json.loads(text)
    except ValueError:
        return "text"
    if json.dumps(value, separators=(",", ":"), ensure_ascii=False) == text:
        return "compact JSON" if text.isascii() else "compact JSON, non-ASCII as is"
    if json.dumps(value, separators=(",", ":")) == text:
        return "compact JSON, non-ASCII escaped"
    return "JSON, other spacing"


def request_stats(logs: list[tuple[int, Path]], markers: dict[str, str]) -> list[dict[str, Any]]:
    """Per request of the conversation (one offering tools): the copies of each start-pack marker outside tool
    results, and each ledger tool result the first time the model got it."""
    stats, seen = [], set()
    for invocation, log in logs:
        for number, line in enumerate(log.read_text(encoding="utf-8").splitlines()):
            body = json.loads(line)["body"]
            if not body.get("tools"):
                continue  # titles and quota checks, not the conversation
            texts = list(request_texts(body))
            copies = {name: sum(text.count(mark) for where, text in texts if where != "tool") for name, mark in markers.items()}
            copies = {name: count for name, count in copies.items() if count}
            calls = {}
            for message in body.get("messages") or []:
                for block in message.get("content") if isinstance(message.get("content"), list) else []:
                    if block.get("type") == "tool_use" and block.get("name", "").startswith("mcp__ledger__"):
                        calls[block["id"]] = block
            results = []
            for message in body.get("messages") or []:
                for block in message.get("content") if isinstance(message.get("content"), list) else []:
                    if (
                        block.get("type") != "tool_result"
                        or block.get("tool_use_id") not in calls
                        or block["tool_use_id"] in seen
                    ):
                        continue
                    seen.add(block["tool_use_id"])
                    call, text = calls[block["tool_use_id"]], result_text(block)
                    try:
                        claimed = json.loads(text).get("tokens")
                    except (ValueError, AttributeError):
                        claimed = None
                    results.append({
                        "tool": call["name"].removeprefix("mcp__ledger__"),
                        "input": {k: v for k, v in call["input"].items() if k in ("k", "token_budget", "query", "kind")},
                        "handed_tokens": TOKENS.count(text),
                        "claimed_tokens": claimed if isinstance(claimed, int) else None,
                        "form": result_form(text),
                        "error": bool(block.get("is_error")),
                    })  # fmt: skip
            stats.append({"invocation": invocation, "request": number, "messages": len(body.get("messages") or []),
                          "copies": copies, "results": results})  # fmt: skip
    return stats


def gists_and_pins(journal: Path) -> tuple[list[str], list[str]]:
    """Ids of every gist the recording's ledger wrote, and the texts of its pinned memories."""
    with sqlite3.connect(journal) as db:
        gists = [row[0] for row in db.execute("SELECT id FROM memories WHERE kind = 'summary' AND tags LIKE '%gist%'")]
        pins = [row[0] for row in db.execute("SELECT text FROM memories WHERE pinned = 1 AND deleted_at IS NULL")]
    return gists, pins


def labels() -> dict[str, Any]:
    made: dict[str, str] = {}
    prompts = []
    for session in scenario.SESSIONS:
        for invocation, step in enumerate(session.steps):
            for turn in step.turns:
                if turn.get("tool") == "mcp__ledger__remember":
                    label = next(k for k, d in scenario.DECISIONS.items() if d.wording == turn["input"]["text"])
                    made.setdefault(label, session.slug)
            if step.says:
                made.setdefault(step.says, session.slug)
            if step.act != "compact":
                prompts.append({"session": session.slug, "invocation": invocation, "prompt": step.prompt, "act": step.act,
                                "asks": step.asks, "says": step.says})  # fmt: skip
    decisions = {
        label: {"wording": d.wording, "key": d.key, "stored": d.stored, "kind": d.kind, "said_by": d.said_by,
                "supersedes": d.supersedes, "session": made[label]}
        for label, d in scenario.DECISIONS.items()
    }  # fmt: skip
    return {"decisions": decisions, "prompts": prompts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--claude", default=default_claude(), help="the Claude Code CLI (default: ../tools/node_modules/.bin/claude, or on PATH)"
    )
    parser.add_argument("--mock", type=Path, default=REPO.parent / "shared" / "claude-code" / "mock_anthropic.py")
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/ledger-sessions-recording"), help="scratch folder (emptied first)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "recorded")
    parser.add_argument("--sessions", type=int, default=len(scenario.SESSIONS), help="record only the first N sessions")
    parser.add_argument("--labels-only", action="store_true", help="rewrite <out>/labels.json from scenario.py, record nothing")
    args = parser.parse_args()
    if args.labels_only:
        (args.out / "labels.json").write_text(json.dumps(labels(), indent=1, ensure_ascii=False) + "\n")
        return
    if not args.claude or not args.mock.exists():
        raise SystemExit("needs the Claude Code CLI (--claude) and mock_anthropic.py (--mock)")
    recorder = Recorder(args.work.resolve(), args.claude, args.mock.resolve())
    recorder.set_up()
    version = subprocess.run([args.claude, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    played: list[dict[str, Any]] = []
    for session in scenario.SESSIONS[: args.sessions]:
        for change in session.before:
            path = recorder.root / change.path
            text = path.read_text()
            if text.count(change.old) != 1:
                raise SystemExit(f"{session.slug}: the change before it does not apply to {change.path}")
            path.write_text(text.replace(change.old, change.new))
        session_id, transcript, events, logs = None, None, [], []
        for invocation, step in enumerate(session.steps):
            size = transcript.stat().st_size if transcript else 0
            started = time.perf_counter()
            result, taps = recorder.step(session.slug, invocation, step, session_id)
            if session_id is not None and result["session_id"] != session_id:
                raise SystemExit(f"{session.slug}: --resume {session_id} continued as {result['session_id']}")
            session_id = result["session_id"]
            transcript = Path(next(t["payload"]["transcript_path"] for t in taps))
            data = transcript.read_bytes()
            check_tools(session.slug, invocation, data, size)
            wanted = step.turns[-1].get("text") if step.act != "compact" else None
            if wanted is not None and result.get("result") != wanted:
                raise SystemExit(f"{session.slug} step {invocation}: the model's turns went astray: {result.get('result')!r}")
            recorder.learn_ids(transcript)
            events += [{**tap, "invocation": invocation} for tap in taps]
            logs.append((invocation, recorder.requests / f"{session.slug}-{invocation}.jsonl"))
            names = ",".join(t["payload"]["hook_event_name"] for t in taps)
            print(f"{session.slug} [{invocation}] {time.perf_counter() - started:.1f}s {step.prompt[:50]!r}: {names}", flush=True)
        assert transcript is not None
        played.append({"slug": session.slug, "session_id": session_id, "transcript": transcript, "events": events, "logs": logs})
    gists, pins = gists_and_pins(recorder.root / ".ledger" / "journal.sqlite3")
    markers = {
        "project_context": PROJECT_MARK,
        **{f"pin:{text[:60]}": text[:60] for text in pins},
        **{f"gist:{g}": g for g in gists},
    }
    write(args.out, recorder, played, markers)
    forms = sorted({r["form"] for s in played for r in s["results"]})
    (args.out / "recording.json").write_text(json.dumps({
        "recorded": datetime.now(UTC).strftime("%Y-%m-%d"),
        "claude_code": version,
        "ledger_commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False).stdout.strip(),
        "mock": "mock_anthropic.py from ../shared/claude-code",
        "ledger_result_forms": forms,
        "start_pack_markers": markers,
        "sessions": [{"slug": s["slug"], "session_id": s["session_id"], "invocations": len(s["logs"]), "hook_calls": len(s["events"])}
                     for s in played],
    }, indent=1) + "\n")  # fmt: skip
    (args.out / "labels.json").write_text(json.dumps(labels(), indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {len(played)} sessions into {args.out}; ledger results reached the model as: {', '.join(forms)}")


def write(out: Path, recorder: Recorder, played: list[dict[str, Any]], markers: dict[str, str]) -> None:
    for session in played:
        folder = out / session["slug"]
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        data, ends = kept_transcript(session["transcript"].read_bytes(), recorder.normalize)
        (folder / "transcript.jsonl").write_bytes(data)
        with (folder / "events.jsonl").open("w", encoding="utf-8") as out_events:
            for tap in session["events"]:
                payload = json.loads(recorder.normalize(json.dumps(tap["payload"], ensure_ascii=False)))
                line = {
                    "invocation": tap["invocation"],
                    "payload": payload,
                    "transcript_bytes": kept_size(ends, tap["transcript_bytes"]),
                    "agent_transcript_found": tap["agent_transcript_bytes"] is not None,
                    "context_tokens": TOKENS.count(hook_context(tap["output"])),
                    "exit": tap["exit"],
                    "ms": tap["ms"],
                }
                out_events.write(json.dumps(line, ensure_ascii=False) + "\n")
        stats = request_stats(session["logs"], markers)
        session["results"] = [result for request in stats for result in request["results"]]
        (folder / "requests.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
