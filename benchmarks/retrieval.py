"""Retrieval quality of `recall` and `context` on a long project conversation.

    python benchmarks/retrieval.py            # prints the tables
    python benchmarks/retrieval.py --write    # also updates the README, results/retrieval.json and its R@k figure
    python benchmarks/retrieval.py --plot-only  # redraws docs/bench/recall-at-k.png from results/retrieval.json

The main set (`data/project_conversation.json`, built by
`data/build_conversation.py`) is a 13-session, 664-turn conversation about
building one fictional billing service, plus the 90 decisions, definitions,
notes and todos an agent recorded along the way (20 of them superseded), and
176 questions with their evidence: facts stated once early, decisions that
later changed, identifiers, paraphrases, questions that need two turns, and
"what did we decide last week" questions (which pass `since`/`until` as an
agent would). 34 more questions have no answer in it, to calibrate the
relevance floor.

Everything goes through the real service: journal, offline model, Qdrant Edge
shard. The conversation is replayed on a simulated clock (the journal's
`utc_now` is patched while storing) so that its six weeks have real ages.

The ranking's weights are learned on this set and LoCoMo dev together by
`tune_fusion.py`, which also scores them cross-validated (tuned on some
sessions, measured on the others); its figures for the shipped weights are
printed beside the in-sample ones here. The earlier synthetic corpus
(`data/recall_corpus.json`), which no weight was learned on, is a held-out check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import common
import project_ledger.storage.journal.memories as journal_memories
from project_ledger.config import Settings
from project_ledger.factory import open_ledger
from project_ledger.memory.project_context import ProjectContextFile
from project_ledger.memory.ranking import Ranked, admitted_neighbours, arrange, for_window, rank
from project_ledger.memory.restatement import RestatementCheck
from project_ledger.memory.service import LedgerService
from project_ledger.memory.validation import parse_moment
from project_ledger.models import Memory
from project_ledger.search.fusion import fuse, with_neighbours
from project_ledger.search.index import Candidates, Hit, SearchFilter
from project_ledger.text.query_framing import topic
from project_ledger.search.tuning import CandidateParams, FusionParams, RankingParams
from project_ledger.text.text_signals import content_words, exact_terms, specifics
from project_ledger.text.time_words import asks_for_time

HERE = common.HERE
CONVERSATION = common.DATA / "project_conversation.json"
OLD_CORPUS = common.DATA / "recall_corpus.json"
PAIRS = common.DATA / "cleanliness_pairs.json"
RANKING_RESULTS = common.RESULTS / "ranking.json"  # the learned weights' cross-validated figures (`tune_fusion.py`)
POOL = 50  # candidates fetched per leg; the tuned setting uses fewer
CATEGORIES = ("early-fact", "current-decision", "identifier", "paraphrase", "two-turn", "temporal")
BUDGETS = (1000, 2000, 4000)
KS = range(1, 11)  # the R@k curve's k


@dataclass(frozen=True)
class Question:
    key: str
    category: str
    text: str
    evidence: list[set[int]]  # groups of seqs; any one seq answers its group
    stale: set[int]
    where: SearchFilter


@dataclass(frozen=True)
class Scores:
    r1: float
    r5: float
    r10: float
    mrr: float

    def row(self) -> str:
        return f"{self.r1:.3f} | {self.r5:.3f} | {self.r10:.3f} | {self.mrr:.3f}"


def recall_at(rankings: Sequence[Sequence[int]], questions: Sequence[Question], k: int) -> float:
    """R@k: the share of a question's evidence groups with a member in the top k, averaged over the questions."""
    shares = []
    for ranked, question in zip(rankings, questions, strict=True):
        top = set(ranked[:k])
        shares.append(sum(bool(group & top) for group in question.evidence) / len(question.evidence))
    return statistics.fmean(shares)


def score(rankings: Sequence[Sequence[int]], questions: Sequence[Question]) -> Scores:
    """R@1, R@5, R@10 (see `recall_at`) and MRR: the first evidence hit in the top 10."""
    mrr = []
    for ranked, question in zip(rankings, questions, strict=True):
        every = set().union(*question.evidence)
        rank_of = next((i for i, seq in enumerate(ranked[:10]) if seq in every), None)
        mrr.append(0.0 if rank_of is None else 1 / (rank_of + 1))
    return Scores(*(recall_at(rankings, questions, k) for k in (1, 5, 10)), statistics.fmean(mrr))


def curve(name: str, method: str, rankings: Sequence[Sequence[int]], questions: Sequence[Question]) -> dict:
    """One method's line in results/retrieval.json: R@k for every k in KS, and its MRR."""
    return {
        "name": name,
        "baseline": method in BASELINES,
        "recall_at_k": [round(recall_at(rankings, questions, k), 4) for k in KS],
        "mrr": round(score(rankings, questions).mrr, 4),
    }


def superseded_first(rankings: Sequence[Sequence[int]], questions: Sequence[Question]) -> int:
    """Questions where an outdated version (superseded memory or a turn stating the old choice) outranks the current one."""
    count = 0
    for ranked, question in zip(rankings, questions, strict=True):
        if not question.stale:
            continue
        every = set().union(*question.evidence)
        current = next((i for i, seq in enumerate(ranked) if seq in every), len(ranked))
        old = next((i for i, seq in enumerate(ranked) if seq in question.stale), None)
        count += old is not None and old < current and old < 10
    return count


class Replay:
    """The conversation stored through the service on a simulated clock."""

    def __init__(self, ledger: LedgerService, data: dict) -> None:
        self.ledger = ledger
        self.seq_of: dict[str, int] = {}
        self.merged = 0
        end = datetime.now(UTC) - timedelta(minutes=30)
        events: list[tuple[datetime, str, dict]] = []
        turn_time: dict[str, datetime] = {}
        for session in data["sessions"]:
            start = end + timedelta(days=session["day"], hours=-3)
            for n, turn in enumerate(session["turns"]):
                turn_time[turn["id"]] = start + timedelta(seconds=90 * n)
                events.append((turn_time[turn["id"]], "turn", {**turn, "session": session["id"]}))
        for memory in data["memories"]:
            events.append((turn_time[memory["after_turn"]] + timedelta(seconds=20), "memory", memory))
        events.sort(key=lambda event: event[0])
        ids: dict[str, str] = {}
        original = journal_memories.utc_now
        try:
            for moment, what, item in events:
                journal_memories.utc_now = lambda m=moment: m.isoformat(timespec="microseconds").replace("+00:00", "Z")
                if what == "turn":
                    result = ledger.remember(item["text"], kind="turn", session=item["session"], role=item["role"])
                else:
                    supersedes = ids[item["supersedes"]] if item["supersedes"] else None
                    result = ledger.remember(item["text"], kind=item["kind"], tags=item["tags"], session=item["session"], supersedes=supersedes)
                    self.merged += not result.created
                ids[item["id"]] = result.id
        finally:
            journal_memories.utc_now = original
        while ledger.sync.embed_missing(256):
            pass
        ledger.sync.catch_up()
        by_id = {m.id: seq for seq, m in ledger.journal.get_by_seqs(list(range(1, 100_000))).items()}
        self.seq_of = {key: by_id[memory_id] for key, memory_id in ids.items()}


def questions_of(data: dict, seq_of: dict[str, int]) -> list[Question]:
    found = []
    for q in data["questions"]:
        where = SearchFilter(
            since=parse_moment(q["since"], "since") if q["since"] else None,
            until=parse_moment(q["until"], "until") if q["until"] else None,
        )
        found.append(
            Question(
                q["id"], q["category"], q["question"], [{seq_of[key] for key in group} for group in q["evidence"]],
                {seq_of[key] for key in q["stale"]}, where,
            )
        )  # fmt: skip
    return found


@dataclass
class Pools:
    """Per question: the candidates of both legs, the memories they name, and their query-term coverage."""

    candidates: list[Candidates]
    lexical: list[dict[int, float]]
    memories: dict[int, Memory]
    outdated: dict[int, str]
    wheres: list[SearchFilter]
    parent_seq: dict[int, int]  # captured memory -> its turn: recall shows the turn in the better place of the two
    cosines: list[dict[int, float]]  # per question, every candidate's similarity to it, as `recall` computes for BM25-only ones
    exact: list[list[str]]  # per question, the identifiers it names (`text_signals.exact_terms`)
    neighbours: list[dict[int, list[int]]]  # per question, the turns next to each BM25 hit that it admits, as `recall` finds them
    widened: list[list[Hit] | None]  # per question, the BM25 list widened by feedback (`IndexSync.widened`, default settings)
    asks_time: list[bool]  # per question, whether it asks when (`time_words.asks_for_time`), as `recall` tells `rank`
    texts: list[str]  # the questions, which `arrange` takes out copies of
    now: float  # when the questions are asked: half an hour after the newest memory, so a rerun gives the same ages

    def sparse(self, i: int, fusion: CandidateParams) -> list[Hit]:
        """Question `i`'s BM25 list as a setting ranks it: the widened one where the setting asks for feedback."""
        widened = self.widened[i]
        return widened if fusion.feedback_hits and widened is not None else self.candidates[i].sparse

    def collapse(self, seqs: Sequence[int]) -> list[int]:
        """Each captured memory scored as its turn: the sentence it quotes is the turn's evidence."""
        return list(dict.fromkeys(self.parent_seq.get(seq, seq) for seq in seqs))

    def arranged(self, kept: Sequence[Ranked], i: int, params: RankingParams) -> list[int]:
        """Question `i`'s ranked candidates as `recall` returns them (`ranking.arrange`), as scored seqs."""
        memory_id = {seq: m.id for seq, m in self.memories.items()}
        parent_of = {memory_id[c]: memory_id[p] for c, p in self.parent_seq.items() if c in memory_id and p in memory_id}
        return self.collapse([item.seq for item in arrange(kept, parent_of, params, asked=self.texts[i])])


def pools(ledger: LedgerService, texts: Sequence[str], wheres: Sequence[SearchFilter]) -> Pools:
    embedder = ledger.sync.embedder
    vectors = [embedder.embed_query(text).tolist() for text in texts]
    terms = [ledger.gateway.terms(topic(text)) for text in texts]  # as `Recall.retrieve` asks
    candidates = [ledger.gateway.search(t, v, where, POOL) for t, v, where in zip(terms, vectors, wheres, strict=True)]
    fusion = RankingParams().fusion
    firsts = ledger.journal.get_by_seqs(sorted({hit.seq for c in candidates for hit in c.sparse[: fusion.feedback_hits]}))
    widened = [
        ledger.gateway.widened(t, [firsts[hit.seq].text for hit in c.sparse[: fusion.feedback_hits]], where, POOL, fusion)
        if fusion.feedback_hits and c.sparse
        else None
        for t, c, where in zip(terms, candidates, wheres, strict=True)
    ]
    sparse = [[*c.sparse, *(wide or [])] for c, wide in zip(candidates, widened, strict=True)]  # either list may be ranked
    around = ledger.journal.neighbours(sorted({hit.seq for hits in sparse for hit in hits}))
    listed = {hit.seq for c, hits in zip(candidates, sparse, strict=True) for hit in (*c.dense, *hits)}
    memories = ledger.journal.get_by_seqs(sorted(listed | {n for near in around.values() for n in near}))
    neighbours = [
        admitted_neighbours({hit.seq: around[hit.seq] for hit in hits if hit.seq in around}, memories, where, asked=text)
        for hits, where, text in zip(sparse, wheres, texts, strict=True)
    ]
    considered = [
        sorted(({hit.seq for hit in (*c.dense, *hits)} | {n for near in nb.values() for n in near}) & memories.keys())
        for c, hits, nb in zip(candidates, sparse, neighbours, strict=True)
    ]
    cosines = [ledger.gateway.cosines(v, these) for v, these in zip(vectors, considered, strict=True)]
    lexical = [
        ledger.gateway.coverage(t, {seq: memories[seq].text for seq in these if seq in memories})
        for t, these in zip(terms, considered, strict=True)
    ]
    stored = ledger.journal.get_by_seqs(list(range(1, 100_000)))
    seq_of = {m.id: seq for seq, m in stored.items()}
    now = max(datetime.fromisoformat(m.created_at.replace("Z", "+00:00")) for m in stored.values()) + timedelta(minutes=30)
    captured = ledger.journal.sources([m.id for m in memories.values() if "captured" in m.tags], ["captured"])
    parent_seq = {seq_of[child]: seq_of[parents[0]] for child, parents in captured.items()}
    exact = [exact_terms(text) for text in texts]
    outdated = ledger.retrieval.outdated(memories)
    asks = [asks_for_time(text) for text in texts]
    return Pools(
        candidates, lexical, memories, outdated, list(wheres), parent_seq, cosines, exact, neighbours, widened, asks, list(texts),
        now.timestamp(),
    )  # fmt: skip


def cut(pool: Pools, i: int, params: RankingParams, depth: int = 0) -> Candidates:
    """The candidates a setting ranks for question `i`: its number (at least `depth`) from each list, the BM25 one
    widened by feedback if the setting asks, its hits lending their neighbours a share (as `recall`)."""
    n = max(params.fusion.candidates, depth)
    first = Candidates(dense=pool.candidates[i].dense[:n], sparse=pool.sparse(i, params.fusion)[:n])
    return with_neighbours(first, pool.neighbours[i], params.fusion.neighbour_share)


def ranked_candidates(pool: Pools, i: int, params: RankingParams, floor: float = 0.0) -> list[Ranked]:
    """Question `i`'s candidates above `floor`, scored and ordered by `rank` as `recall` does (before `arrange`)."""
    windowed = for_window(params, pool.wheres[i])
    kept, _ = rank(
        cut(pool, i, params), pool.memories, pool.lexical[i], windowed, pool.now, floor=floor,
        outdated=pool.outdated, cosines=pool.cosines[i], exact_terms=pool.exact[i], neighbours=pool.neighbours[i],
        asks_time=pool.asks_time[i],
    )  # fmt: skip
    return kept


def rankings(pool: Pools, subset: Sequence[int], method: str, params: RankingParams, floor: float = 0.0) -> list[list[int]]:
    found = []
    for i in subset:
        candidates = pool.candidates[i]
        if method == "bm25":
            found.append(pool.collapse([hit.seq for hit in candidates.sparse])[:10])
        elif method == "dense":
            found.append(pool.collapse([hit.seq for hit in candidates.dense])[:10])
        elif method == "rrf":
            found.append(pool.collapse([hit.seq for hit in fuse(candidates, FusionParams(k=60, dense_weight=1.0, candidates=POOL), POOL)])[:10])
        else:
            found.append(pool.arranged(ranked_candidates(pool, i, params, floor), i, params)[:10])
    return found


def cross_validated(corpus: str) -> str:
    """The line giving `corpus`'s cross-validated figures for the shipped weights, from `tune_fusion.py`'s results."""
    found = json.loads(RANKING_RESULTS.read_text()) if RANKING_RESULTS.exists() else None
    if found is None or found["weights"] != dict(RankingParams().weights):
        return "Cross-validated figures: run `python benchmarks/tune_fusion.py --write` (none for the shipped weights yet)."

    def figures(key: str) -> str:
        return ", ".join(f"{name} {found[key][corpus][name]:.3f}" for name in ("R@1", "R@5", "R@10", "MRR"))

    return (
        f"Cross-validated ({found['folds']}, `python benchmarks/tune_fusion.py`): the shipped weights (learned on every "
        f"question) with the signals added last learned alone in each fold, {figures('added_alone_cross_validated')}; "
        f"every weight learned again in each fold, {figures('cross_validated')}."
    )


def calibrate_floor(pool: Pools, questions: list[Question], unanswerable: Pools, params: RankingParams) -> tuple[float, list[str]]:
    """The highest floor that costs at most 0.02 R@10 on answerable questions; the table of what each floor does."""
    everything = list(range(len(questions)))
    base = score(rankings(pool, everything, "full", params), questions).r10
    lines = ["| floor | R@10, answerable | unanswerable questions with no result |", "|---|---|---|"]
    chosen = 0.0
    for floor in [x / 100 for x in range(20, 62, 4)]:
        r10 = score(rankings(pool, everything, "full", params, floor), questions).r10
        empty = sum(
            not rank(
                cut(unanswerable, i, params), unanswerable.memories, unanswerable.lexical[i], params, unanswerable.now, floor=floor,
                outdated=unanswerable.outdated, cosines=unanswerable.cosines[i], exact_terms=unanswerable.exact[i],
                neighbours=unanswerable.neighbours[i], asks_time=unanswerable.asks_time[i],
            )[0]
            for i in range(len(unanswerable.candidates))
        )
        lines.append(f"| {floor:.2f} | {r10:.3f} | {empty} of {len(unanswerable.candidates)} |")
        if base - r10 <= 0.02:
            chosen = floor
    return chosen, lines


def context_usage(ledger: LedgerService, questions: list[Question]) -> list[str]:
    """Tokens a `context` pack uses against its budget, and how much evidence it carries."""
    key_of = {seq: m.id for seq, m in ledger.journal.get_by_seqs(list(range(1, 100_000))).items()}
    lines = ["| budget | tokens used, median (max) | evidence groups in the pack |", "|---|---|---|"]
    for budget in BUDGETS:
        used, carried, groups = [], 0, 0
        for q in questions:
            pack = ledger.context(q.text, budget)
            used.append(pack.tokens)
            ids = set(pack.ids)
            carried += sum(any(key_of[seq] in ids for seq in group) for group in q.evidence)
            groups += len(q.evidence)
        lines.append(f"| {budget} | {statistics.median(used):.0f} ({max(used)}) | {carried / groups:.3f} |")
    return lines


def old_corpus(params: RankingParams) -> tuple[list[str], list[dict]]:
    """The held-out corpus's table rows, and its R@k curves."""
    corpus = json.loads(OLD_CORPUS.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        ledger = open_ledger(Settings(root=Path(tmp), data_dir=Path(tmp) / "data", code_index=False), Path(tmp))
        ledger.sync.open_now()
        ledger.sync.embedder.load()
        id_of = {
            memory["key"]: ledger.remember(memory["text"], kind=memory["kind"], tags=memory["tags"], session=memory["session"]).id
            for memory in corpus["memories"]
        }
        seq_of_id = {m.id: seq for seq, m in ledger.journal.get_by_seqs(list(range(1, 10_000))).items()}
        seq_by_key = {key: seq_of_id[memory_id] for key, memory_id in id_of.items()}
        while ledger.sync.embed_missing(256):
            pass
        ledger.sync.catch_up()
        questions = [
            Question(str(i), q["type"], q["query"], [{seq_by_key[key]} for key in q["relevant"]], set(), SearchFilter())
            for i, q in enumerate(corpus["queries"])
        ]
        pool = pools(ledger, [q.text for q in questions], [q.where for q in questions])
        everything = list(range(len(questions)))
        lines, curves = [], []
        for name, method in METHODS:
            floor = params.floor if method == "floor" else 0.0
            found = rankings(pool, everything, "full" if method == "floor" else method, params, floor)
            lines.append(f"| {name} | {score(found, questions).row()} |")
            curves.append(curve(name, method, found, questions))
        ledger.close()
    return lines, curves


def cleanliness(tmp: Path) -> list[str]:
    """How the near-duplicate and restated-context thresholds behave on labelled pairs, with and without
    the check that numbers (with units), identifiers and negations agree."""
    pairs = json.loads(PAIRS.read_text())

    def jaccard(a: str, b: str) -> float:
        x, y = content_words(a), content_words(b)
        return len(x & y) / len(x | y)

    duplicates = [(jaccard(p["old"], p["new"]), specifics(p["old"]) == specifics(p["new"]), p["same"]) for p in pairs["duplicates"]]
    total, others = sum(same for *_, same in duplicates), sum(not same for *_, same in duplicates)
    lines = [
        "| near-duplicate word overlap (Jaccard) | duplicates merged | different facts merged | different facts merged on overlap alone |",
        "|---|---|---|---|",
    ]
    for threshold in (0.6, 0.7, 0.8, 0.9):
        merged = sum(j >= threshold and agree and same for j, agree, same in duplicates)
        wrong = sum(j >= threshold and agree and not same for j, agree, same in duplicates)
        wrong_alone = sum(j >= threshold and not same for j, _, same in duplicates)
        lines.append(f"| {threshold:.1f} | {merged} of {total} | {wrong} of {others} | {wrong_alone} of {others} |")
    lines += ["", "| restated-context word share | restatements flagged | new facts flagged |", "|---|---|---|"]
    context = ProjectContextFile(tmp / "project_context.md")
    restates = sum(p["restates"] for p in pairs["restatements"])
    for threshold in (0.5, 0.6, 0.7, 0.8):
        check = RestatementCheck(context, threshold)
        flagged = {True: 0, False: 0}
        for pair in pairs["restatements"]:
            context.path.write_text(f"# Project context\n\n{pair['block']}\n")
            flagged[pair["restates"]] += check.check(pair["memory"]) is not None
        lines.append(f"| {threshold:.1f} | {flagged[True]} of {restates} | {flagged[False]} of {len(pairs['restatements']) - restates} |")
    return lines


METHODS = (
    ("BM25 alone", "bm25"),
    ("dense alone", "dense"),
    ("plain RRF (k=60)", "rrf"),
    ("learned ranking, in-sample", "full"),
    ("as shipped (learned ranking, relevance floor applied)", "floor"),
)
BASELINES = {"bm25", "dense", "rrf"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the tables into README.md, results/retrieval.json and the figure")
    parser.add_argument("--plot-only", action="store_true", help="redraw the figure from results/retrieval.json without a run")
    args = parser.parse_args()
    if args.write or args.plot_only:
        import plots  # before the run: without matplotlib (the `bench` extra) a run that is to be written stops here

        if args.plot_only:
            print(plots.recall_at_k(common.load_results("retrieval")))
            return
    data = json.loads(CONVERSATION.read_text())
    loads = [common.load()]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = open_ledger(Settings(root=Path(tmp), data_dir=Path(tmp) / "data", code_index=False), Path(tmp))
        ledger.sync.open_now()
        ledger.sync.embedder.load()
        replay = Replay(ledger, data)
        questions = questions_of(data, replay.seq_of)
        pool = pools(ledger, [q.text for q in questions], [q.where for q in questions])
        unanswerable = pools(ledger, [u["question"] for u in data["unanswerable"]], [SearchFilter()] * len(data["unanswerable"]))
        everything = list(range(len(questions)))

        final = RankingParams()
        floor, floor_lines = calibrate_floor(pool, questions, unanswerable, final)

        def ranked_by(subset: Sequence[int], method: str) -> list[list[int]]:
            if method == "floor":
                return rankings(pool, subset, "full", final, final.floor)
            return rankings(pool, subset, method, final)

        def table(subset: Sequence[int], method: str) -> Scores:
            return score(ranked_by(subset, method), [questions[i] for i in subset])

        by_category = {c: [i for i, q in enumerate(questions) if q.category == c] for c in CATEGORIES}
        lines = [
            "| method | R@1 | R@5 | R@10 | MRR | R@10 " + " | ".join(CATEGORIES) + " | outdated version ranked above the current one |",
            "|---|---|---|---|---|" + "---|" * len(CATEGORIES) + "---|",
        ]
        curves = []
        for name, method in METHODS:
            found = ranked_by(everything, method)
            per = " | ".join(f"{table(by_category[c], method).r10:.3f}" for c in CATEGORIES)
            lines.append(f"| {name} | {score(found, questions).row()} | {per} | {superseded_first(found, questions)} |")
            curves.append(curve(name, method, found, questions))
        best_leg = max(table(everything, "bm25").r10, table(everything, "dense").r10)
        gain = table(everything, "full").r10 - best_leg
        gain_floored = table(everything, "floor").r10 - best_leg
        usage = context_usage(ledger, questions)
        clean = cleanliness(Path(tmp))
        ledger.close()
    held_out, held_out_curves = old_corpus(final)
    seconds = time.perf_counter() - started

    text = "\n".join(
        [
            f"{len(questions)} questions over {sum(len(s['turns']) for s in data['sessions'])} turns in {len(data['sessions'])} sessions "
            f"plus {len(data['memories'])} recorded memories ({replay.merged} merged as near-duplicates when stored). "
            "Superseded memories are hidden by default, as `recall` does; turns that stated an old choice are not.",
            "",
            *lines,
            "",
            f"Full ranking minus the best single leg: {gain:+.3f} R@10 (target ≥ +0.05); {gain_floored:+.3f} with the relevance floor.",
            cross_validated("own conversation"),
            f"The relevance floor {final.floor:.2f} ({'as calibrated below' if floor == final.floor else f'calibrated below: {floor:.2f}'}).",
            "",
            "Relevance floor (the highest that costs at most 0.02 R@10 is chosen):",
            "",
            *floor_lines,
            "",
            "`context` packs for the same questions (project context empty, no pins, no session):",
            "",
            *usage,
            "",
            f"Keeping the ledger clean, on {PAIRS.name} (labelled pairs; the chosen thresholds are the defaults in the README):",
            "",
            *clean,
            "",
            f"Held-out check, the earlier synthetic corpus ({OLD_CORPUS.name}, 360 memories, 122 queries), chosen settings:",
            "",
            "| method | R@1 | R@5 | R@10 | MRR |",
            "|---|---|---|---|---|",
            *held_out,
            "",
            f"{seconds / 60:.0f} min.",
        ]
    )
    command, loads = "python benchmarks/retrieval.py", [*loads, common.load()]
    figures = {
        "ks": list(KS),
        "chosen": f"learned signal weights (search/tuning.py); relevance floor {final.floor:.2f}",
        "corpora": [
            {"title": f"Project conversation ({len(questions)} questions)", "methods": curves},
            {"title": f"Held-out synthetic corpus ({OLD_CORPUS.name})", "methods": held_out_curves},
        ],
    }
    if args.write:
        common.save_results("retrieval", figures, command=command, loads=loads)
        figure = plots.recall_at_k(common.load_results("retrieval"))
        text += "\n\n" + plots.image_link("Recall@k of the ledger's ranking against its baselines", figure)
    common.publish("retrieval", text, args.write, command=command, loads=loads, figures=figures)


if __name__ == "__main__":
    main()
