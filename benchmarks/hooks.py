"""Latency of the Claude Code hooks, process start included, as Claude Code pays it before each prompt.

    python benchmarks/hooks.py                    # 10k memories, 20 calls per event, 10 rounds of real sessions
    python benchmarks/hooks.py --size 1000 --runs 10 --rounds 4
    python benchmarks/hooks.py --part sessions    # only the real Claude Code sessions
    python benchmarks/hooks.py --write            # also updates the README's tables

Each call is what Claude Code runs: `python -m project_ledger hook claude-code` (the command `config claude-code
--hooks` writes) with the event's JSON on stdin, timed from spawn to exit. The ledger is the synthetic journal of
`performance.py` (texts from the benchmark corpus's vocabulary, stored vectors). UserPromptSubmit prompts are the
corpus's queries (retrieval on BM25, injection included); each Stop reads one new assistant message appended to a
transcript. The first hook on a ledger builds its index slot from the journal: timed apart. For scale, the cost
of starting Python alone and of importing the ledger's modules is measured the same way.

Each event is timed with no server (the hook does all the work itself) and with the project's `serve` up, as it
is while the agent's session runs (the hook hands the event to it over its local socket), in alternating blocks.
Every served call is checked in the hooks log to have been answered by the server. A session start with nothing
changed since the pack was last made (the usual start after a SessionEnd) hands out the kept pack: timed apart.

Then the same in real sessions (`--part sessions`): the real Claude Code CLI (`tests/setup.sh` installs it) against
the scripted model (`tests/claude_code/scripted_model.py`), on a project configured by `config claude-code --write`
and `--hooks --write`. Each round runs, in turn, `claude -p PROMPT` with no ledger, with the MCP server only, with
the hooks only and with both (its wall time), then, with the hooks only and with both, a session of four prompts in
one process (`--input-format stream-json`), each sent 2 s after the answer to the one before, where the MCP server
stays up between prompts as in an interactive session. Claude Code runs each hook through a shell wrapper that notes its start and end: UserPromptSubmit is timed
from its process start to its exit, as the user waits for it (the wrapper's own cost, a few ms, included). The first
prompt of a session meets a server that is starting; the later ones a server that is up.
"""

from __future__ import annotations

import argparse
import json
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import common
from common import percentile
from performance import queries, synthetic_journal
from project_ledger.hooks.log import HookRun, read_runs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' scripted model and session helper
from tests.claude_code.scripted_model import ScriptedModel
from tests.claude_session import ClaudeProject, claude_project, missing, texts

COMMAND = [sys.executable, "-m", "project_ledger", "hook", "claude-code"]
# Runs a hook as Claude Code would, noting "<event> <start ns> <end ns>" in the file named first.
TIMER = """#!/bin/sh
times=$1; shift
start=$(date +%s%N)
input=$(cat)
printf '%s' "$input" | "$@"
status=$?
end=$(date +%s%N)
event=$(printf '%s' "$input" | sed -n 's/.*"hook_event_name": *"\\([A-Za-z]*\\)".*/\\1/p')
echo "$event $start $end" >> "$times"
exit $status
"""
# A prompt hook working alone, step by step in one fresh process (argv[1]: its input): what each step costs.
PHASES = """
import json, sys, time
from pathlib import Path
marks = [time.perf_counter()]
import project_ledger.cli.fast_path  # the short way to a server: standard library only
marks.append(time.perf_counter())
from project_ledger.cli.hook_run import hook_settings  # where a hook no server answers goes on to: not click, the CLI
import project_ledger.config  # its settings (pydantic)
marks.append(time.perf_counter())
from project_ledger.factory import open_services
from project_ledger.memory.conversation import ESTIMATE
from project_ledger.memory.hook_injection import choose_injection, render_injection
from project_ledger.search.index import SearchFilter
marks.append(time.perf_counter())
event = json.loads(sys.argv[1])
root = Path(event["cwd"])
settings = hook_settings(None).model_copy(update={"root": root})
services = open_services(settings, root)
marks.append(time.perf_counter())
services.maintenance.open_index(bm25_only=True)
marks.append(time.perf_counter())
ledger = services.ledger
stored = ledger.remember(event["prompt"], kind="turn", session=event["session_id"], role="user")
marks.append(time.perf_counter())
floor = settings.hook_inject_floor
ranked = ledger.retrieval.retrieve(event["prompt"], SearchFilter(), k=8, session=event["session_id"], floor=floor, lexical=True)
chosen = choose_injection(ledger.retrieval.hits(ranked.ranked), session=event["session_id"], floor=floor, exclude=[stored.id])
render_injection(chosen, settings.hook_inject_tokens, ESTIMATE.count)
marks.append(time.perf_counter())
services.close()
marks.append(time.perf_counter())
print(json.dumps([b - a for a, b in zip(marks, marks[1:])]))
"""
PHASE_NAMES = (
    "importing the short way (socket client, project finder)",
    "importing the hook's settings (pydantic; not click nor the CLI's commands)",
    "importing the hook's services (journal, index, capture, ranking)",
    "reading the settings, opening the journal",
    "opening the index slot (BM25 only, caught up with the journal)",
    "storing the prompt (redaction, journal write, capture)",
    "BM25 retrieval and the injection",
    "closing (index slot flushed)",
)
THINK_SECONDS = 2.0  # between an answer and the session's next prompt: a user reading it and typing, at the least
SETUPS = {"no ledger": (False, False), "MCP server only": (True, False), "hooks only": (False, True), "MCP server and hooks": (True, True)}


def timed_run(argv: list[str], payload: dict[str, object] | None, cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    completed = subprocess.run(
        argv, input=json.dumps(payload) if payload is not None else "", capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"{argv} failed: {completed.stderr}")
    return elapsed, completed.stdout


def assistant_line(n: int) -> str:
    message = {"id": f"msg_{n}", "role": "assistant", "content": [{"type": "text", "text": f"Step {n}: the export now retries."}]}
    return json.dumps({"type": "assistant", "sessionId": "bench", "timestamp": "2026-12-01T10:00:00Z", "message": message}) + "\n"


@contextmanager
def serving(root: Path) -> Iterator[None]:
    """The project's `serve`, as a client starts it: over stdio, initialized, its hook socket up."""
    process = subprocess.Popen(
        [sys.executable, "-m", "project_ledger", "serve", "--root", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hooks-benchmark", "version": "1"}}
        process.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}) + "\n").encode())
        process.stdin.flush()
        if not select.select([process.stdout], [], [], 300)[0]:
            raise SystemExit("serve did not answer initialize")
        process.stdout.readline()
        deadline = time.monotonic() + 120
        while not (root / ".ledger" / "serve.sock").exists():
            if time.monotonic() > deadline:
                raise SystemExit("serve opened no hook socket")
            time.sleep(0.05)
        yield
    finally:
        process.stdin.close()
        process.wait(timeout=120)
        process.stdout.close()


def measure(root: Path, base: dict[str, object], transcript: Path, prompts: list[str], times: dict[str, list[float]], start: int) -> int:
    """One call of each event per prompt into `times`; how many prompts got an injection."""
    injected = 0
    for n, query in enumerate(prompts):
        started = {**base, "session_id": f"start-{start + n}", "hook_event_name": "SessionStart", "source": "startup"}  # a new session
        times["SessionStart"].append(timed_run(COMMAND, started, root)[0])
        elapsed, out = timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": query}, root)
        times["UserPromptSubmit"].append(elapsed)
        injected += bool(out.strip())
        with transcript.open("a") as handle:
            handle.write(assistant_line(start + n))
        times["Stop"].append(timed_run(COMMAND, {**base, "hook_event_name": "Stop", "stop_hook_active": False}, root)[0])
    return injected


class Setups:
    """The project's Claude Code files for each setup, written by `config claude-code [--hooks] --write` once, with
    every hook run through the timer; `use` puts one setup's files in place."""

    def __init__(self, project: ClaudeProject, timer: Path, times: Path) -> None:
        self.project = project
        project.configure(mcp=True, hooks=True)
        self.mcp = project.root / ".mcp.json"
        self.hooks = project.root / ".claude" / "settings.local.json"
        settings = json.loads(self.hooks.read_text())
        for groups in settings["hooks"].values():
            for group in groups:
                for hook in group["hooks"]:
                    hook["command"] = f"sh {timer} {times} {hook['command']}"
        self.files = {self.mcp: self.mcp.read_text(), self.hooks: json.dumps(settings)}

    def use(self, name: str) -> None:
        for path, wanted in zip((self.mcp, self.hooks), SETUPS[name], strict=True):
            if wanted:
                path.write_text(self.files[path])
            else:
                path.unlink(missing_ok=True)


def prompt_times(times: Path, hooks: list[HookRun]) -> list[tuple[float, bool]]:
    """Each UserPromptSubmit the timer noted since `times` was emptied (seconds, process start included), with
    whether the running server answered it: the hook runs logged within its time were all served. (A server that has
    not answered in 3 s is left to finish while the hook works alone: two runs, one of them not served.)"""
    logged = [(round(run.at.timestamp() * 1e9), run.served) for run in hooks if run.event == "UserPromptSubmit" and run.at]
    found = []
    for line in times.read_text().splitlines():
        event, start, end = line.split()
        if event != "UserPromptSubmit":
            continue
        within = [served for at, served in logged if int(start) <= at <= int(end)]
        if not within:
            raise SystemExit(f"no hooks log line for the prompt hook timed {start}-{end}: {hooks}")
        found.append(((int(end) - int(start)) / 1e9, all(within)))
        print(f"  prompt hook {found[-1][0] * 1000:.0f} ms, {'served' if found[-1][1] else 'alone'}", file=sys.stderr)
    return found


def sessions(size: int, rounds: int) -> str:
    """The real Claude Code sessions' tables (see the module's docstring)."""
    if (why := missing()) is not None:
        raise SystemExit(f"no real sessions: {why}")
    walls: dict[str, list[float]] = {name: [] for name in SETUPS}
    prompts: dict[tuple[str, str], list[tuple[float, bool]]] = {
        (name, when): [] for name in ("hooks only", "MCP server and hooks") for when in ("first", "later")
    }
    asked = iter(queries(rounds * 12 + 8))
    model = ScriptedModel()
    url = model.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = synthetic_journal(Path(tmp) / "project", size)
            timer, times = Path(tmp) / "timer.sh", Path(tmp) / "hook-times.txt"
            timer.write_text(TIMER)
            project = claude_project(root, Path(tmp) / "home", model, url)
            project.wait_for_servers = False  # as users run it: Claude Code connects MCP servers in the background
            setups = Setups(project, timer, times)
            for name in SETUPS:  # the first hook on the ledger builds its index slot; the first start, the pack
                setups.use(name)
                project.run(next(asked))
            for _ in range(rounds):
                for name in SETUPS:
                    setups.use(name)
                    times.write_text("")
                    run = project.run(next(asked))
                    walls[name].append(run.seconds)
                    if name in ("hooks only", "MCP server and hooks"):
                        prompts[name, "first"] += prompt_times(times, run.hooks)
                for name in ("hooks only", "MCP server and hooks"):
                    setups.use(name)
                    times.write_text("")
                    run = project.converse([next(asked) for _ in range(4)], pause=THINK_SECONDS)
                    first, *later = prompt_times(times, run.hooks)
                    prompts[name, "first"].append(first)
                    prompts[name, "later"] += later
            errors = [run for run in read_runs(project.data_dir) if run.state == "error"]
            if errors:
                raise SystemExit(f"{len(errors)} hook calls failed, e.g. {errors[0].line()}")
    finally:
        model.stop()

    def ms(values: list[float], p: int | None = None) -> str:
        return f"{(percentile(values, p) if p else statistics.median(values)) * 1000:,.0f} ms"

    lines = [
        "| `claude -p PROMPT`, one prompt, scripted model | wall time: median | p95 |",
        "|---|---|---|",
        *(f"| {name} | {ms(walls[name])} | {ms(walls[name], 95)} |" for name in SETUPS),
        "",
        "| UserPromptSubmit in those sessions, process start included | median | p95 | answered by `serve` |",
        "|---|---|---|---|",
    ]
    labels = {"first": "first prompt of a session", "later": f"later prompts, {THINK_SECONDS:.0f} s after the answer (the server is up)"}
    for (name, when), found in prompts.items():
        if name == "hooks only" and when == "later":
            label = f"hooks only: later prompts, {THINK_SECONDS:.0f} s after the answer"
        else:
            label = f"{name}: {labels[when]}" + (" (the server is starting)" if name != "hooks only" and when == "first" else "")
        seconds = [elapsed for elapsed, _ in found]
        served = sum(answered for _, answered in found)
        lines.append(f"| {label} | {ms(seconds)} | {ms(seconds, 95)} | {served} of {len(found)} |")
    lines += [
        "",
        f"Claude Code 2.1.332, {size:,} memories, {rounds} rounds.",
    ]
    return "\n".join(lines)


# A small project for the walk through a session: its context file, two pins and three decisions left for recall.
WALK_CONTEXT = """# Billing service

## Architecture
- `billing/api/`: HTTP handlers only; `billing/core/`: invoicing rules; `billing/store/`: the only SQL.
- Invoices render to PDF in the `render` worker queue, never inside a request.

## Conventions
- Money is integer cents; never floats. Currency codes are ISO 4217.
- Tests: `make test` (fast subset: `make test-fast`).
"""
WALK_PINS = (
    "Invoices are immutable once sent; a correction is a credit note referencing the original.",
    "Every job is idempotent: workers may run it twice after a crash.",
)
WALK_MEMORIES = (
    "Invoice export retries back off exponentially from 250 ms, doubling to 8 s, at most 5 tries.",
    "Export retries log each attempt to the export_audit table; they never page anyone.",
    "Tax rounding is per line, half-even, before the invoice total is summed.",
)
WALK = (  # (label, prompt, continuing)
    ("`claude -p`: the session's first prompt", "How do invoice export retries back off?", False),
    ("`claude -p --continue`", "Do export retries page anyone when they fail?", True),
    ("`claude -p --continue` again", "How is tax rounded on an invoice line?", True),
    ("`claude -p --continue` after `/compact`", "Remind me how export retries back off.", True),
)


def walk() -> str:
    """What the model is handed through a session with the MCP server and the hooks on: per request, the tokens the
    ledger added through each channel (cl100k, read from the transcript Claude Code writes) and how many copies of
    the start pack the request holds (a line of project_context.md)."""
    if (why := missing()) is not None:
        raise SystemExit(f"no real sessions: {why}")
    from project_ledger.text.tokens import TokenCounter

    tokens = TokenCounter()
    model = ScriptedModel()
    url = model.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            project = claude_project(Path(tmp) / "billing", Path(tmp) / "home", model, url)
            (project.root / "project_context.md").write_text(WALK_CONTEXT)
            for pin in WALK_PINS:
                project.ledger("pin", project.ledger("remember", pin, "--kind", "decision").strip())
            for text in WALK_MEMORIES:
                project.ledger("remember", text, "--kind", "decision")
            project.configure(mcp=True, hooks=True)
            seen = 0
            for label, prompt, continuing in WALK:
                if label.endswith("after `/compact`"):
                    project.run("/compact", continuing=True)
                run = project.run(prompt, continuing=continuing)
                lines = run.transcript.read_text().splitlines()
                added = [json.loads(line).get("attachment") or {} for line in lines[seen:]]
                seen = len(lines)
                by_hook = {
                    hook: sum(tokens.count(text) for a in added if a.get("type") == "hook_additional_context"
                              and a.get("hookName") == hook for text in a.get("content", []))
                    for hook in ("SessionStart", "UserPromptSubmit")
                }  # fmt: skip
                instructions = sum(
                    tokens.count(block) for a in added if a.get("type") == "mcp_instructions_delta" for block in a.get("addedBlocks", [])
                )
                body = run.conversation()[0]
                copies = sum(text.count("Money is integer cents") for text in texts(body))
                rows.append(
                    f"| {label} | {by_hook['SessionStart']:,} | {instructions:,} | {by_hook['UserPromptSubmit']:,} | {copies} |"
                )
    finally:
        model.stop()
    return "\n".join(
        [
            ("| request (MCP server and hooks on) | SessionStart context | the server's instructions | prompt injection | "
            "start-pack copies in the request |"),
            "|---|---|---|---|---|",
            *rows,
            "",
            ("Tokens (cl100k) the ledger added to the request, per channel, read from the transcript Claude Code 2.1.332 "
            "writes; `python benchmarks/hooks.py --part walk`."),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the ledger")
    parser.add_argument("--runs", type=int, default=20, help="calls per event")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of real Claude Code sessions")
    parser.add_argument(
        "--part", choices=("all", "calls", "sessions", "walk"), default="all", help="the hook calls, the sessions, the walk, or all"
    )
    parser.add_argument("--write", action="store_true", help="write the tables into README.md")
    args = parser.parse_args()
    if args.part in ("all", "calls"):
        calls(args)
    if args.part in ("all", "sessions"):
        load_before = common.load()
        body = sessions(args.size, args.rounds)
        command = "python benchmarks/hooks.py --part sessions"
        common.publish("hooks-sessions", body, args.write, command=command, loads=[load_before, common.load()])
    if args.part in ("all", "walk"):
        load_before = common.load()
        body = walk()
        common.publish("hooks-walk", body, args.write, command="python benchmarks/hooks.py --part walk", loads=[load_before, common.load()])


def calls(args: argparse.Namespace) -> None:
    """The hook calls' table (see the module's docstring)."""
    load_before = common.load()
    with tempfile.TemporaryDirectory() as tmp:
        root = synthetic_journal(Path(tmp), args.size)
        transcript = root / "transcript.jsonl"
        transcript.write_text("")
        base = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(root)}
        first, _ = timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": "warm up"}, root)
        events = ("SessionStart", "UserPromptSubmit", "Stop")
        alone: dict[str, list[float]] = {name: [] for name in events}
        served: dict[str, list[float]] = {name: [] for name in events}
        times: dict[str, list[float]] = {"python": [], "imports": []}
        phases: list[list[float]] = []
        for n in range(args.runs):
            times["python"].append(timed_run([sys.executable, "-c", "pass"], None, root)[0])
            times["imports"].append(timed_run([sys.executable, "-c", "import project_ledger.cli.commands"], None, root)[0])
            prompt = {**base, "session_id": "phases", "hook_event_name": "UserPromptSubmit", "prompt": f"{queries(args.runs)[n]} (phases)"}
            phases.append(json.loads(timed_run([sys.executable, "-c", PHASES, json.dumps(prompt)], None, root)[1]))
        # Two blocks of each, alternating, so that a change of the machine's load falls on both settings.
        prompts, half = queries(args.runs), args.runs // 2
        log = root / ".ledger" / "logs" / "hooks.log"
        injected, answered = 0, []
        for start, block in ((0, prompts[:half]), (half, prompts[half:])):
            injected += measure(root, base, transcript, block, alone, 2 * start)
            with serving(root):
                timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": "warm up the server"}, root)
                before = len(log.read_text().splitlines())
                measure(root, base, transcript, [f"{prompt} (again)" for prompt in block], served, 2 * start + len(block))
                answered += log.read_text().splitlines()[before:]
        # The server's own share of each served call, as it logs it ("<n>ms served").
        inside = {name: [int(line.split("ms served")[0].rsplit(" ", 1)[1]) / 1000 for line in answered if f" {name} " in line] for name in events}
        if not all(" served " in line for line in answered):
            raise SystemExit(f"a hook meant for the server worked alone: {next(line for line in answered if ' served ' not in line)}")
        # A start with nothing changed since the pack was last made: the hook hands out the kept one, no server needed.
        starting = {**base, "hook_event_name": "SessionStart", "source": "startup"}
        timed_run(COMMAND, {**starting, "session_id": "kept-0"}, root)
        before = len(log.read_text().splitlines())
        times["kept"] = [timed_run(COMMAND, {**starting, "session_id": f"kept-{n + 1}"}, root)[0] for n in range(args.runs)]
        if not all(" kept " in line and "handed-before" not in line for line in log.read_text().splitlines()[before:]):
            raise SystemExit("a session start with nothing changed did not use the kept pack")
        errors = [line for line in log.read_text().splitlines() if " error " in line]
        if errors:
            raise SystemExit(f"{len(errors)} hook calls failed, e.g. {errors[0]}")
    load_after = common.load()

    def ms(values: list[float], p: int | None = None) -> str:
        return f"{(percentile(values, p) if p else statistics.median(values)) * 1000:.0f} ms"

    def row(label: str, name: str) -> str:
        return f"| {label} | {ms(alone[name])} | {ms(alone[name], 95)} | {ms(served[name])} | {ms(served[name], 95)} |"

    table = "\n".join(
        [
            "| hook call, process start included | no server: median | p95 | `serve` up: median | p95 |",
            "|---|---|---|---|---|",
            row("SessionStart (session-start pack, 1,500 tokens, made: a memory changed since the last one)", "SessionStart"),
            f"| SessionStart, nothing changed since the last start or SessionEnd (the kept pack) | {ms(times['kept'])} | {ms(times['kept'], 95)} | | |",
            row(f"UserPromptSubmit (turn stored, BM25 recall, injection: {injected} of {args.runs} prompts got some)", "UserPromptSubmit"),
            row("Stop (one new assistant message read and stored)", "Stop"),
            "| of which in the server, UserPromptSubmit / SessionStart / Stop (from its log) | | | "
            + " / ".join(ms(inside[name]) for name in ("UserPromptSubmit", "SessionStart", "Stop"))
            + " | "
            + " / ".join(ms(inside[name], 95) for name in ("UserPromptSubmit", "SessionStart", "Stop"))
            + " |",
            f"| first hook on this ledger, no server (its index slot built from the journal) | {first * 1000:.0f} ms | | | |",
            f"| for scale: `python -c pass` | {ms(times['python'])} | {ms(times['python'], 95)} | | |",
            f"| for scale: importing the ledger's CLI | {ms(times['imports'])} | {ms(times['imports'], 95)} | | |",
            "",
            "| where a UserPromptSubmit working alone spends its time, step by step in one process | median | p95 |",
            "|---|---|---|",
            f"| starting the interpreter (`python -c pass`, above) | {ms(times['python'])} | {ms(times['python'], 95)} |",
            *(
                f"| {name} | {ms([run[n] for run in phases])} | {ms([run[n] for run in phases], 95)} |"
                for n, name in enumerate(PHASE_NAMES)
            ),
            "",
            f"{args.size:,} memories, {args.runs} calls per event and setting.",
        ]
    )
    common.publish("hooks", table, args.write, command="python benchmarks/hooks.py", loads=[load_before, load_after])


if __name__ == "__main__":
    main()
