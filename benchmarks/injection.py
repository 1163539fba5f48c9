"""How often `looks_like_instructions` flags ordinary text, and what it costs.

    python benchmarks/injection.py            # prints the table and every flagged text
    python benchmarks/injection.py --write    # also updates the README

Corpora of text that is not an injection, each item judged on its own:

- the LoCoMo dev conversations' turns (`../shared/data/locomo-dev.json`, 2,760 turns of chat);
- the project's own benchmark memories and conversation turns (`benchmarks/data/`);
- this repository's prose and code: every line of README.md and of the files in src/ (a line is a rough stand-in for
  a note someone might store).

A flag on any of them is a false positive: the memory would be withheld from context packs (it stays in recall).
The unit tests (`tests/test_injection.py`) hold the strings that must be flagged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import common
from project_ledger.text.injection import looks_like_instructions

HERE, REPO = common.HERE, common.REPO


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for conversation in json.loads(path.read_text()):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(turn["text"] for turn in session)
    return turns


def project_texts() -> list[str]:
    corpus = json.loads((HERE / "data" / "recall_corpus.json").read_text())
    conversation = json.loads((HERE / "data" / "project_conversation.json").read_text())
    texts = [m["text"] for m in corpus["memories"]] + [m["text"] for m in conversation["memories"]]
    for session in conversation["sessions"]:
        turns = session["turns"] if isinstance(session, dict) else session
        texts.extend(turn["text"] if isinstance(turn, dict) else str(turn) for turn in turns)
    return texts


def repository_lines() -> list[str]:
    files = [REPO / "README.md", *sorted((REPO / "src").rglob("*.py"))]
    return [line for path in files for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update the README's table")
    args = parser.parse_args()
    loads = [common.load()]
    corpora = {
        "LoCoMo dev turns": locomo_turns(common.LOCOMO_DEV),
        "project memories and turns": project_texts(),
        "README and src/ lines": repository_lines(),
    }
    rows, hits = [], []
    for name, texts in corpora.items():
        flagged = [text for text in texts if looks_like_instructions(text)]
        hits += [(name, text) for text in flagged]
        rows.append(f"| {name} | {len(texts):,} | {len(flagged)} | {100 * len(flagged) / len(texts):.2f}% |")
    every = [text for texts in corpora.values() for text in texts]
    timings = []
    for text in every[:2000]:
        started = time.perf_counter()
        looks_like_instructions(text)
        timings.append(time.perf_counter() - started)
    table = "\n".join(
        [
            "| corpus (none of it an injection) | texts | flagged | share |",
            "|---|---|---|---|",
            *rows,
            "",
            f"Median {statistics.median(timings) * 1e6:.1f} µs per text; the flagged texts are printed below the table.",
        ]
    )
    common.publish("injection", table, args.write, command="python benchmarks/injection.py", loads=[*loads, common.load()])
    for name, text in hits:
        print(f"{name}: {text[:160]!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
