"""What the prompt hook injects at each relevance floor (LEDGER_HOOK_INJECT_FLOOR), on BM25 as the hook runs.

    python benchmarks/hook_injection.py                 # the project corpus, and LoCoMo's dev split if present
    python benchmarks/hook_injection.py --write         # also updates the README's table

Corpora:
- the project's own conversation (`data/project_conversation.json`): every turn and recorded memory stored through
  `remember`; its 176 answerable questions (evidence ids) and 34 unanswerable ones;
- LoCoMo's development split (`../shared/data/locomo-dev.json`, not in the repository): every turn of each
  conversation stored as a turn of its own ledger; its questions, adversarial ones (category 5) counted apart.

Each question goes through the hook's own path: BM25-only retrieval with the floor, then `choose_injection` (the
asking session is a new one, so no turn is left out as "already in front of the agent"). Reported per floor:
- answered: share of answerable questions whose injection holds at least one evidence memory;
- injected: share of answerable questions that got any injection; precision: evidence among injected memories;
- silent on unanswerable: share of unanswerable (or adversarial) questions that got nothing.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import common
from project_ledger.config import Settings
from project_ledger.factory import open_services
from project_ledger.memory.hook_injection import choose_injection
from project_ledger.search.index import SearchFilter

PROJECT = common.DATA / "project_conversation.json"
FLOORS = [0.2, 0.3, 0.4, 0.5, 0.6]


class Corpus:
    """One ledger filled with a corpus, and its questions as (text, evidence id sets or None)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True)
        self.services = open_services(Settings(root=root, code_index=False, watch=False), root)
        self.services.maintenance.open_index(bm25_only=True)
        self.ledger = self.services.ledger
        self.ids: dict[str, str] = {}

    def store(self, key: str, text: str, **fields: Any) -> None:
        self.ids[key] = self.ledger.remember(text, **fields).id

    def injected(self, question: str, floor: float) -> list[str]:
        retrieval = self.ledger.retrieval
        ranked = retrieval.retrieve(question, SearchFilter(), k=8, session="hook-eval", floor=floor).ranked
        return [hit.id for hit in choose_injection(retrieval.hits(ranked), session="hook-eval", floor=floor)]

    def close(self) -> None:
        self.services.close()


def measure(corpus: Corpus, answerable: list[tuple[str, set[str]]], unanswerable: list[str]) -> dict[float, dict[str, float]]:
    results = {}
    for floor in FLOORS:
        answered = injected_any = evidence = total = 0
        for question, wanted in answerable:
            got = corpus.injected(question, floor)
            injected_any += bool(got)
            answered += bool(wanted & set(got))
            evidence += len(wanted & set(got))
            total += len(got)
        silent = sum(not corpus.injected(question, floor) for question in unanswerable)
        results[floor] = {
            "answered": answered / len(answerable),
            "injected": injected_any / len(answerable),
            "precision": evidence / total if total else 0.0,
            "silent": silent / len(unanswerable) if unanswerable else float("nan"),
        }
        print(f"floor {floor}: {results[floor]}")
    return results


def project_corpus(tmp: Path) -> dict[float, dict[str, float]]:
    data = json.loads(PROJECT.read_text())
    corpus = Corpus(tmp / "project")
    try:
        after: dict[str, list[dict[str, Any]]] = {}
        for memory in data["memories"]:
            after.setdefault(memory["after_turn"], []).append(memory)
        for session in data["sessions"]:
            for turn in session["turns"]:
                corpus.store(turn["id"], turn["text"], kind="turn", session=session["id"], role=turn["role"])
                for memory in after.get(turn["id"], []):
                    supersedes = corpus.ids.get(memory["supersedes"]) if memory["supersedes"] else None
                    corpus.store(memory["id"], memory["text"], kind=memory["kind"], session=memory["session"], supersedes=supersedes)
        answerable = [(q["question"], {corpus.ids[key] for group in q["evidence"] for key in group}) for q in data["questions"]]
        return measure(corpus, answerable, [q["question"] for q in data["unanswerable"]])
    finally:
        corpus.close()


def locomo(tmp: Path, conversations: int) -> dict[float, dict[str, float]]:
    """Each conversation in its own ledger; the results pooled over questions."""
    pooled: dict[float, dict[str, float]] = {}
    counts = {"answerable": 0, "adversarial": 0}
    for sample in json.loads(common.LOCOMO_DEV.read_text())[:conversations]:
        corpus = Corpus(tmp / sample["sample_id"])
        try:
            talk = sample["conversation"]
            for n in range(1, 100):
                for turn in talk.get(f"session_{n}", []):
                    text = f"[{talk[f'session_{n}_date_time']}] {turn['speaker']}: {turn['text']}"
                    if turn.get("blip_caption"):
                        text += f" (shares {turn['blip_caption']})"
                    corpus.store(turn["dia_id"], text, kind="turn", session=f"session_{n}", role="user")
            answerable, adversarial = [], []
            for qa in sample["qa"]:
                keys = {k.strip() for e in qa.get("evidence", []) for k in e.replace(";", ",").split(",")}
                wanted = {corpus.ids[k] for k in keys if k in corpus.ids}
                if qa["category"] == 5:
                    adversarial.append(qa["question"])
                elif wanted:
                    answerable.append((qa["question"], wanted))
            result = measure(corpus, answerable, adversarial)
        finally:
            corpus.close()
        for floor, figures in result.items():
            into = pooled.setdefault(floor, dict.fromkeys(figures, 0.0))
            for name, value in figures.items():
                weight = len(adversarial) if name == "silent" else len(answerable)
                into[name] += value * weight
        counts["answerable"] += len(answerable)
        counts["adversarial"] += len(adversarial)
    for figures in pooled.values():
        for name in figures:
            figures[name] /= counts["adversarial"] if name == "silent" else counts["answerable"]
    return pooled


def table(name: str, results: dict[float, dict[str, float]], unanswerable: str) -> list[str]:
    lines = [f"| {name}: floor | answered | injected | precision | silent on {unanswerable} |", "|---|---|---|---|---|"]
    for floor, r in results.items():
        lines.append(f"| {floor:.1f} | {r['answered']:.2f} | {r['injected']:.2f} | {r['precision']:.2f} | {r['silent']:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo-conversations", type=int, default=5, help="how many of the dev split's five (0: none)")
    parser.add_argument("--write", action="store_true", help="write the table into README.md")
    args = parser.parse_args()
    loads = [common.load()]
    with tempfile.TemporaryDirectory() as tmp:
        lines = table("project conversation", project_corpus(Path(tmp)), "unanswerable")
        if args.locomo_conversations and common.LOCOMO_DEV.exists():
            lines += ["", *table(f"LoCoMo dev, {args.locomo_conversations} conversations", locomo(Path(tmp), args.locomo_conversations), "adversarial")]
    loads.append(common.load())
    common.publish("hook-injection", "\n".join(lines), args.write, command="python benchmarks/hook_injection.py", loads=loads)


if __name__ == "__main__":
    main()
