"""Layered memory on the benchmark conversation: write-time capture, session gists, and recall after compaction.

    python benchmarks/layered_memory.py            # prints the tables
    python benchmarks/layered_memory.py --write    # also updates the README, results/layered_memory.json and its figure
    python benchmarks/layered_memory.py --plot-only  # redraws docs/bench/gist-compression.png from results/layered_memory.json

1. Capture: the model-free extractors (`memory/capture.py`) against hand labels
   (`data/capture_labels.json`: every one of the 664 turns labelled by a helper
   session that never saw the extractor code). The cues were tuned while looking
   at sessions s01-s06 only; s07-s13 are held out. A proposal counts as right
   when its turn carries a label of that kind.
2. Gists: every session's extractive gist (what `summarize_session` stores when
   the client offers no sampling). Coverage is the share of the session's
   current recorded decisions and definitions whose text is in the gist
   verbatim (whitespace runs collapsed); compression is gist tokens against the
   session's raw turn tokens.
3. Compaction: R@10 of `recall` (k=10, no relevance floor) on the 176
   questions before any gist exists and after every session has one. Nothing
   is deleted by compaction; this checks that gists do not crowd the evidence
   out. A captured memory found in place of its turn counts as that turn.

The sampling path needs a client's model and is not measured here; the tests
drive it with a scripted client and check its validation.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import common
from project_ledger.config import Settings
from project_ledger.factory import open_ledger
from project_ledger.memory.capture import propose
from project_ledger.memory.service import LedgerService
from retrieval import CONVERSATION, Question, Replay, questions_of, score

LABELS = common.DATA / "capture_labels.json"
KINDS = ("decision", "definition", "constraint", "todo")
TUNED_ON = 6  # sessions s01-s06
BUDGETS = (600, 1200)


def capture_table(data: dict, labels: dict[str, list[dict]]) -> list[str]:
    lines = [
        "| sessions | " + " | ".join(f"{k} P / R" for k in KINDS) + " | all P / R | proposals |",
        "|---|" + "---|" * (len(KINDS) + 2),
    ]
    for name, sessions in (("s01-s06 (tuned on)", data["sessions"][:TUNED_ON]), ("s07-s13 (held out)", data["sessions"][TUNED_ON:])):
        tp, fp, fn = Counter[str](), Counter[str](), Counter[str]()
        for session in sessions:
            for turn in session["turns"]:
                gold = {label["kind"] for label in labels.get(turn["id"], [])}
                got = {proposal.kind for proposal in propose(turn["text"])}
                tp.update(got & gold)
                fp.update(got - gold)
                fn.update(gold - got)

        def pr(t: int, f_p: int, f_n: int) -> str:
            return f"{t / max(t + f_p, 1):.2f} / {t / max(t + f_n, 1):.2f}"

        cells = [pr(tp[k], fp[k], fn[k]) for k in KINDS]
        total = pr(sum(tp.values()), sum(fp.values()), sum(fn.values()))
        lines.append(f"| {name} | {' | '.join(cells)} | {total} | {sum(tp.values()) + sum(fp.values())} |")
    return lines


def recall_at_10(ledger: LedgerService, data: dict, questions: list[Question], seq_of_id: dict[str, int]) -> float:
    parents = ledger.journal.sources(list(seq_of_id), ["captured"])
    rankings = []
    for q, raw in zip(questions, data["questions"], strict=True):
        found = ledger.recall(q.text, k=10, since=raw["since"], until=raw["until"], min_relevance=0).results
        rankings.append([seq_of_id[parents[hit.id][0]] if hit.id in parents else seq_of_id[hit.id] for hit in found])
    return score(rankings, questions).r10


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the tables into README.md, results/layered-memory.json and the figure")
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from results/layered-memory.json without a run")
    args = parser.parse_args()
    if args.write or args.plot_only:
        import plots  # before the run: without matplotlib (the `bench` extra) a run that is to be written stops here

        if args.plot_only:
            print(plots.gist_compression(common.load_results("layered-memory")))
            return
    loads = [common.load()]
    data = json.loads(CONVERSATION.read_text())
    labels = json.loads(LABELS.read_text())["labels"]
    started = time.perf_counter()
    capture = capture_table(data, labels)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(root=Path(tmp), data_dir=Path(tmp) / "data", code_index=False, compact_session_turns=1_000_000)
        ledger = open_ledger(settings, Path(tmp))
        ledger.sync.open_now()
        ledger.sync.embedder.load()
        replay = Replay(ledger, data)
        questions = questions_of(data, replay.seq_of)
        seq_of_id = {m.id: seq for seq, m in ledger.journal.get_by_seqs(list(range(1, 100_000))).items()}
        captured = Counter(m.kind for m in ledger.journal.get_by_seqs(list(seq_of_id.values())).values() if "captured" in m.tags)
        before = recall_at_10(ledger, data, questions, seq_of_id)

        retired = {m["supersedes"] for m in data["memories"] if m["supersedes"]}
        ids = {key: ledger.journal.get_by_seqs([seq])[seq].id for key, seq in replay.seq_of.items()}
        rows, gists = [], []
        coverage: dict[int, list[float]] = {budget: [] for budget in BUDGETS}
        ratios, gist_tokens, raw_tokens, build_ms = [], 0, 0, []
        for session in data["sessions"]:
            wanted = [
                squash(ledger.journal.get(ids[m["id"]]).text)
                for m in data["memories"]
                if m["session"] == session["id"] and m["kind"] in ("decision", "definition") and m["id"] not in retired
            ]
            raw = sum(ledger.tokens.count(turn["text"]) for turn in session["turns"])
            shares = {}
            for budget in sorted(BUDGETS, reverse=True):  # the default budget last: its gist is the current one
                began = time.perf_counter()
                gist = ledger.summarize_session(session["id"], budget)
                build_ms.append((time.perf_counter() - began) * 1000)
                text = squash(gist.text)
                shares[budget] = sum(w in text for w in wanted) / len(wanted) if wanted else 1.0
                coverage[budget].append(shares[budget])
            ratios.append(raw / gist.tokens)
            gist_tokens += gist.tokens
            raw_tokens += raw
            gists.append({"session": session["id"], "raw_tokens": raw, "gist_tokens": gist.tokens, "coverage": shares})
            rows.append(
                f"| {session['id']} | {len(session['turns'])} | {raw} | {gist.tokens} | {raw / gist.tokens:.1f}x | {gist.bullets} "
                f"(+{gist.left_out} left out) | {len(wanted)} | {shares[600]:.2f} | {shares[1200]:.2f} |"
            )
        while ledger.sync.embed_missing(256):
            pass
        ledger.sync.catch_up()
        after = recall_at_10(ledger, data, questions, seq_of_id | {m.id: s for s, m in ledger.journal.get_by_seqs(list(range(1, 100_000))).items()})
        ledger.close()
    seconds = time.perf_counter() - started

    text = "\n".join(
        [
            f"Capture at write time, against hand labels ({LABELS.name}; {sum(len(v) for v in labels.values())} labelled sentences "
            f"in {len(labels)} of 664 turns). Precision matters more than recall: a missed decision is still in its turn.",
            "",
            *capture,
            "",
            f"Replaying the conversation stored {sum(captured.values())} captured memories: "
            + ", ".join(f"{captured[k]} {k}s" for k in KINDS)
            + ".",
            "",
            "Extractive session gists (`summarize_session`, max_tokens 600; coverage also at 1200):",
            "",
            "| session | turns | raw turn tokens | gist tokens | compression | lines | current decisions + definitions | "
            "verbatim in gist @600 | @1200 |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Coverage of current decisions and definitions, mean over sessions: {statistics.fmean(coverage[600]):.2f} at 600 tokens, "
            f"{statistics.fmean(coverage[1200]):.2f} at 1200. Compression: {raw_tokens:,} raw turn tokens to {gist_tokens:,} gist tokens "
            f"({raw_tokens / gist_tokens:.1f}x overall, median {statistics.median(ratios):.1f}x per session). "
            f"Building a gist takes {statistics.median(build_ms):.0f} ms (median, in-process, no model).",
            "",
            f"Recall after compaction: R@10 {before:.3f} before any gist, {after:.3f} with every session gisted "
            f"({len(questions)} questions, k=10, no floor; target: the same).",
            "",
            f"{seconds:.0f} s.",
        ]
    )
    loads.append(common.load())
    command = "python benchmarks/layered_memory.py"
    figures = {"max_tokens": min(BUDGETS), "sessions": gists, "recall_at_10": {"before": before, "after": after}}
    if args.write:
        common.save_results("layered-memory", figures, command=command, loads=loads)
        figure = plots.gist_compression(common.load_results("layered-memory"))
        text += "\n\n" + plots.image_link("Raw turn tokens against gist tokens per session", figure)
    common.publish("layered-memory", text, args.write, command=command, loads=loads, figures=figures)


if __name__ == "__main__":
    main()
