"""Latency of the Claude Code hooks, process start included, as Claude Code pays it before each prompt.

    python benchmarks/hooks.py                    # 10k memories, 20 calls per event
    python benchmarks/hooks.py --size 1000 --runs 10
    python benchmarks/hooks.py --write            # also updates the README's table

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

COMMAND = [sys.executable, "-m", "project_ledger", "hook", "claude-code"]


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
        times["SessionStart"].append(timed_run(COMMAND, {**base, "hook_event_name": "SessionStart", "source": "startup"}, root)[0])
        elapsed, out = timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": query}, root)
        times["UserPromptSubmit"].append(elapsed)
        injected += bool(out.strip())
        with transcript.open("a") as handle:
            handle.write(assistant_line(start + n))
        times["Stop"].append(timed_run(COMMAND, {**base, "hook_event_name": "Stop", "stop_hook_active": False}, root)[0])
    return injected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the ledger")
    parser.add_argument("--runs", type=int, default=20, help="calls per event")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()

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
        for _ in range(args.runs):
            times["python"].append(timed_run([sys.executable, "-c", "pass"], None, root)[0])
            times["imports"].append(timed_run([sys.executable, "-c", "import project_ledger.cli.commands"], None, root)[0])
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
        timed_run(COMMAND, starting, root)
        before = len(log.read_text().splitlines())
        times["kept"] = [timed_run(COMMAND, starting, root)[0] for _ in range(args.runs)]
        if not all(" kept " in line for line in log.read_text().splitlines()[before:]):
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
            f"{args.size:,} memories, {args.runs} calls per event and setting.",
        ]
    )
    common.publish("hooks", table, args.write, command="python benchmarks/hooks.py", loads=[load_before, load_after])


if __name__ == "__main__":
    main()
