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
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from performance import percentile, queries, synthetic_journal

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the ledger")
    parser.add_argument("--runs", type=int, default=20, help="calls per event")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = synthetic_journal(Path(tmp), args.size)
        transcript = root / "transcript.jsonl"
        transcript.write_text("")
        base = {"session_id": "bench", "transcript_path": str(transcript), "cwd": str(root)}
        first, _ = timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": "warm up"}, root)
        times: dict[str, list[float]] = {"python": [], "imports": [], "SessionStart": [], "UserPromptSubmit": [], "Stop": []}
        injected = 0
        for n, query in enumerate(queries(args.runs)):
            times["python"].append(timed_run([sys.executable, "-c", "pass"], None, root)[0])
            times["imports"].append(timed_run([sys.executable, "-c", "import project_ledger.cli.commands"], None, root)[0])
            times["SessionStart"].append(timed_run(COMMAND, {**base, "hook_event_name": "SessionStart", "source": "startup"}, root)[0])
            elapsed, out = timed_run(COMMAND, {**base, "hook_event_name": "UserPromptSubmit", "prompt": query}, root)
            times["UserPromptSubmit"].append(elapsed)
            injected += bool(out.strip())
            with transcript.open("a") as handle:
                handle.write(assistant_line(n))
            times["Stop"].append(timed_run(COMMAND, {**base, "hook_event_name": "Stop", "stop_hook_active": False}, root)[0])
        log = (root / ".ledger" / "logs" / "hooks.log").read_text().splitlines()
        errors = [line for line in log if " error " in line]
        if errors:
            raise SystemExit(f"{len(errors)} hook calls failed, e.g. {errors[0]}")
    load_after = os.getloadavg()

    def row(label: str, values: list[float]) -> str:
        return f"| {label} | {statistics.median(values) * 1000:.0f} ms | {percentile(values, 95) * 1000:.0f} ms |"

    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"
    table = "\n".join(
        [
            "| hook call, process start included | median | p95 |",
            "|---|---|---|",
            row("SessionStart (session-start pack, 1,500 tokens)", times["SessionStart"]),
            row(f"UserPromptSubmit (turn stored, BM25 recall, injection: {injected} of {args.runs} prompts got some)", times["UserPromptSubmit"]),
            row("Stop (one new assistant message read and stored)", times["Stop"]),
            f"| first hook on this ledger (its index slot built from the journal) | {first * 1000:.0f} ms | |",
            row("for scale: `python -c pass`", times["python"]),
            row("for scale: importing the ledger's CLI", times["imports"]),
            "",
            (
                f"{args.size:,} memories, {args.runs} calls per event. Measured {time.strftime('%Y-%m-%d')} on {machine} "
                f"(shared; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after), with `python benchmarks/hooks.py`."
            ),
        ]
    )
    print(table)
    if args.write:
        from readme_table import replace_section

        replace_section("hooks", table)


if __name__ == "__main__":
    main()
