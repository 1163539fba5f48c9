"""detect-secrets on the same tests as `benchmarks/redaction.py`: the generated secrets, their lookalikes, and the
project's conversation and LoCoMo dev as memories. Not installed with the project; run it in a venv of its own:

    python -m venv /tmp/ds && /tmp/ds/bin/pip install detect-secrets==1.5.0 regex
    /tmp/ds/bin/python benchmarks/redaction_vs_detect_secrets.py

Two ways of calling it: `scan_file` on each text, as a pre-commit scan reads a file (its entropy plugins read
quoted strings only, its keyword plugin assignments), and `scan_line`, its ad hoc mode, which runs every plugin
eagerly over every word. A generated secret counts as caught when a reported value is part of it or holds it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from detect_secrets import SecretsCollection
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import default_settings

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "src"), str(REPO / "benchmarks")]  # the project's loaders, not installed here
import common  # noqa: E402
from redaction import CONVERSATION, conversation_memories, locomo_memories  # noqa: E402
from tests.generated_secrets import SEED, generate, lookalikes  # noqa: E402

FOLDER = Path(tempfile.mkdtemp())


def by_file(text: str) -> list[str]:
    path = FOLDER / "memory.txt"
    path.write_text(text)
    found = SecretsCollection()
    found.scan_file(str(path))
    return [secret.secret_value or "" for _, secret in found]


def by_line(text: str) -> list[str]:
    return [secret.secret_value or "" for line in text.splitlines() for secret in scan_line(line)]


def report(name: str, scan: Callable[[str], list[str]]) -> None:
    started = time.perf_counter()
    cases = generate(SEED)
    caught = sum(
        any(len(v) >= 6 and (v in case.secret.replace("\\n", "\n") or case.secret in v) for v in scan(case.text)) for case in cases
    )
    others = lookalikes(SEED)
    flagged = sum(bool(scan(case.text)) for case in others)
    rates = []
    for corpus, memories in ((CONVERSATION.name, conversation_memories()), (common.LOCOMO_DEV.name, locomo_memories(common.LOCOMO_DEV))):
        n = sum(bool(scan(memory)) for memory in memories)
        rates.append(f"{corpus} {n}/{len(memories)} ({n / len(memories):.2%})")
    print(
        f"{name}: generated secrets caught {caught}/{len(cases)} ({caught / len(cases):.3f}); lookalikes flagged "
        f"{flagged}/{len(others)}; memories flagged: {', '.join(rates)} ({time.perf_counter() - started:.0f} s)"
    )


def main() -> None:
    with default_settings():
        report("scan_file", by_file)
        report("scan_line", by_line)


if __name__ == "__main__":
    main()
