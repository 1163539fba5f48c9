"""CPU per text for what every text or source file goes through, over texts built to make regular expressions slow.

    python benchmarks/pathological.py            # prints the table
    python benchmarks/pathological.py --write    # also updates the README

The texts are `tests/pathological.py`'s, built from the literal words of every pattern in the package: 64 KiB
runs of whitespace, separators and words, openers (a private-key header, `password = `, `<memory `) followed by
runs that never close them, and each pattern's words run together (`key=key=...`). Each stage is timed in CPU
seconds of the calling thread, per text:

- `redact`, `looks_like_instructions` and `capture.propose`: the scans a stored text gets;
- `remember`: the whole call on an open ledger (validation, redaction, the near-duplicate check, the journal
  write, capture, the instruction check), the texts cut to the 64 KiB limit;
- the code index's parse of a Python file holding the text as a string literal and a comment;
- the UserPromptSubmit hook, process start included, for the 20 texts `remember` found slowest (CPU of the child).

Target (issue 29): no text costs any stage more than 2 s of CPU.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common

common.on_path(common.REPO)  # the repository's tests package holds the texts

from tests.pathological import SIZE, pathological_texts  # noqa: E402
from tests.test_regex_bounds import PATTERNS  # noqa: E402

from project_ledger.code.languages import Grammars  # noqa: E402
from project_ledger.code.parsing import parse_file  # noqa: E402
from project_ledger.config import Settings  # noqa: E402
from project_ledger.factory import open_ledger  # noqa: E402
from project_ledger.memory.capture import propose  # noqa: E402
from project_ledger.text.injection import looks_like_instructions  # noqa: E402
from project_ledger.text.redaction import redact  # noqa: E402

TARGET_SECONDS = 2.0
HOOKED = 20


def texts() -> list[str]:
    """Every pattern's texts, once each, cut to the size limit on a memory (64 KiB of UTF-8)."""
    found: dict[str, None] = {}
    for pattern in PATTERNS.values():
        for text in pathological_texts(pattern.pattern, SIZE - 1):
            found[text.encode()[:SIZE].decode(errors="ignore")] = None
    return list(found)


def cpu(call: Callable[[], object]) -> float:
    started = time.thread_time()
    call()
    return time.thread_time() - started


def hook_cpu(root: Path, text: str) -> float:
    """CPU seconds of one `project-ledger hook claude-code` process for a UserPromptSubmit holding `text`."""
    payload = {"session_id": "bench", "transcript_path": str(root / "none.jsonl"), "cwd": str(root),
               "hook_event_name": "UserPromptSubmit", "prompt": text}  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [str(Path(sys.executable).with_name("project-ledger")), "hook", "claude-code"], input=json.dumps(payload),
        capture_output=True, text=True, cwd=root, timeout=600, check=True,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def row(stage: str, seconds: list[float], worst_text: str) -> str:
    worst = max(seconds)
    return (
        f"| {stage} | {len(seconds)} | {statistics.median(seconds) * 1e3:.1f} ms | {worst * 1e3:.0f} ms | "
        f"`{json.dumps(worst_text[:24])[1:-1]}…` | {'yes' if worst <= TARGET_SECONDS else '**no**'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update the README's table")
    args = parser.parse_args()
    load_before = common.load()
    logging.getLogger("project_ledger.text").setLevel(logging.ERROR)  # counted below instead
    corpus = texts()
    cut_short = sum(1 for text in corpus if redact(text).cut_short)
    rows = []
    for stage, call in (("`redact`", redact), ("`looks_like_instructions`", looks_like_instructions), ("`capture.propose`", propose)):
        seconds = [cpu(lambda t=text: call(t)) for text in corpus]
        rows.append(row(stage, seconds, corpus[seconds.index(max(seconds))]))
        print(rows[-1], flush=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".git").mkdir()
        ledger = open_ledger(Settings(root=root, watch=False), root)
        ledger.start()
        try:
            seconds = [cpu(lambda t=text: ledger.remember(t, kind="note")) for text in corpus]
        finally:
            ledger.close()
        rows.append(row("`remember`, in process", seconds, corpus[seconds.index(max(seconds))]))
        print(rows[-1], flush=True)
        slowest = [corpus[i] for i in sorted(range(len(corpus)), key=seconds.__getitem__)[-HOOKED:]]
        grammars, parsed = Grammars(), []
        for text in corpus:
            (root / "sample.py").write_text(f"def sample():\n    # {text[:2000]}\n    return {json.dumps(text)}\n")
            size = (root / "sample.py").stat().st_size
            parsed.append(cpu(lambda: parse_file(grammars, root, "sample.py", "python", size, 0, redact=True)))
        rows.append(row("code index, one file", parsed, corpus[parsed.index(max(parsed))]))
        print(rows[-1], flush=True)
        hooked = [hook_cpu(root, text) for text in slowest]
        rows.append(row(f"UserPromptSubmit hook, process ({HOOKED} slowest for `remember`)", hooked, slowest[hooked.index(max(hooked))]))
        print(rows[-1], flush=True)
    body = "\n".join(
        [
            "| stage | texts | median CPU | worst CPU | worst text | ≤ 2 s |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            f"{len(corpus):,} texts of up to 64 KiB from `tests/pathological.py`, built from the words of "
            f"{len(PATTERNS)} patterns; {cut_short} of them cut a secret scan short (its 0.5 s budget or its read "
            "limit), and were redacted around every secret-like word instead.",
        ]
    )
    common.publish("pathological", body, args.write, command="python benchmarks/pathological.py", loads=[load_before, common.load()])


if __name__ == "__main__":
    main()
