"""Run by Claude Code in place of the ledger's hook while `record.py` records a session: it appends the hook's input,
the transcript's size at that moment and what the hook printed to LOG, and prints what the hook printed.

    hook_tap.py LOG -- COMMAND...     (COMMAND: the hook command `config claude-code --hooks` wrote)

Standard library only, so that the tap adds little to the hook's own time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def size(path: object) -> int | None:
    return os.path.getsize(path) if isinstance(path, str) and os.path.isfile(path) else None


def main() -> int:
    log, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1 :]
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    fields = payload if isinstance(payload, dict) else {}
    transcript, agent = size(fields.get("transcript_path")), size(fields.get("agent_transcript_path"))
    at, started = time.time(), time.perf_counter()
    done = subprocess.run(command, input=raw, capture_output=True, check=False)
    elapsed = round((time.perf_counter() - started) * 1000)
    sys.stdout.buffer.write(done.stdout)
    sys.stdout.flush()
    record = {
        "at": at,  # hooks may run side by side (two SubagentStop): the recorder orders them by start
        "payload": payload,
        "transcript_bytes": transcript,
        "agent_transcript_bytes": agent,
        "output": done.stdout.decode("utf-8", "replace"),
        "exit": done.returncode,
        "ms": elapsed,
    }
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
