"""How recalled memories are ordered and which are relevant enough to return. Pure: no I/O.

The search index hands back two candidate lists (by meaning and by BM25). Each
candidate gets a score: a weighted sum of what is known about it (`SIGNALS`):
its places and scores in both lists, the share of the query's words it holds,
whether it was found through a neighbouring turn, whether it holds a rare
identifier the query names, what kind of memory it is and what it does in the
conversation (a question, an acknowledgement, a tool's log line, a statement
ending in a question), how fresh it is, whether it says when for a question
that asks when, whether it is outdated, whether it is the caller's session, how
often it was used. The weights are learned on two corpora nobody tuned them by
hand on, and cross-validated (`benchmarks/tune_fusion.py`); they are in
`search/tuning.py`.

A score says nothing about whether the best match is any good, so each
memory also gets an absolute *relevance* in [0, 1]: its cosine similarity to
the query, or the share of the query's terms it contains, whichever is
higher. A floor on that keeps an unrelated question from returning the
nearest noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from project_ledger.models import Memory
from project_ledger.search.fusion import lent_coverage, positions, relevance, with_meaning
from project_ledger.search.index import Candidates, SearchFilter
from project_ledger.search.tuning import RankingParams
from project_ledger.text.dialogue_act import dialogue_act, ends_asking
from project_ledger.text.text_signals import content_words, mentions, wording
from project_ledger.text.time_words import tells_time

if TYPE_CHECKING:
    import numpy as np

DAY = 86_400.0
PLACE = 10  # a list place's signal is PLACE / (PLACE + place): the top few of each list weigh most
# Content words a turn must share with a retired memory to count as restating it on words alone. A short turn is
# usually a question about the topic ("money columns?", "webhooks from stripe to us"): its two or three words are all
# in the decision that answered it, yet it stated nothing. The restatements on the project corpus share 6 to 12.
RESTATED_WORDS = 4
TYPED_KINDS = frozenset({"decision", "definition", "constraint"})  # what holds until replaced
ECHO_ACTS = frozenset({"question", "acknowledgement", "log"})  # what the conversation says about itself, not the project
RECORDED_WITHIN = 15 * 60.0  # seconds: a turn said this shortly before or after a memory written down on its topic ...
# ... and a third of whose content words are in it (or `RESTATED_WORDS` of them) is its source or its report: "We
# decided the retry policy for the gateway client." is; "Gateway calls time out after 10 seconds ..., and a timeout
# is retried like a 5xx", said before the retry decision and sharing three of its 17 words, states a fact of its own.
RECORDED_SHARE = 1 / 3


# What a candidate's score is made of, each a number the weights of `RankingParams.weights` multiply. A list place is
# PLACE / (PLACE + place from 0), 0 when not in that list; `places` is the log of the two summed, so that with weight
# 1 and the rest at 0 the order is reciprocal-rank fusion's.
SIGNALS = (
    "places",  # log(BM25 place + dense place): the fusion of the two lists
    "bm25_place",  # the BM25 list's place alone
    "dense_place",  # the dense list's place alone
    "bm25",  # its BM25 score (with what its neighbouring turns lent it) over the list's best
    "cosine",  # its cosine similarity to the query
    "cosine_gap",  # its cosine less the best candidate's: how far behind the nearest it is
    "coverage",  # the share of the query's terms it holds (or borrows from a neighbouring hit)
    "from_neighbour",  # 1 for a turn found through the words of the turn said next to it
    "exact",  # 1 when it holds a rare identifier the query names (see `rare_exact`)
    "bm25_first",  # for the BM25 list's first: how far ahead of the second it is, (s1 - s2) / s1
    "dense_first",  # for the dense list's first: 10 x its cosine's lead over the second's
    "question",  # 1 for a turn that only asks (`text/dialogue_act.py`)
    "acknowledgement",  # 1 for an "ok" or "thanks"
    "log",  # 1 for a tool call's log line
    "decided",  # 1 for a decision, definition or constraint: what holds
    "typed",  # 1 for any other memory written down (a note, todo, error), not a turn
    "summary",  # 1 for a session gist
    "fresh",  # log(0.7 + 0.3 x 0.5 ** (age / half-life)); 0 for pinned memories and the kinds that hold until superseded
    "timely",  # 1 when the query asks when and the memory says when (`text/time_words.py`)
    "outdated",  # 1 when superseded, or a turn that stated a decision since superseded
    "session",  # 1 when from the caller's session (`current_session`)
    "used",  # log(1 + times fetched by id or pinned)
    "ends_asking",  # 1 for a statement whose last sentence asks (`dialogue_act.ends_asking`), not the agent's
)
RECENCY_SHARE = 0.3  # of the `fresh` factor that decays with age (the share the earlier ranking was tuned to)


@dataclass(frozen=True)
class Sources:
    """Where a ranked memory's score came from, for explaining a ranking (`Recall.explain`)."""

    dense: float | None  # cosine similarity, when the dense list found it
    dense_rank: int | None  # its place in that list, from 0
    bm25: float | None  # BM25 score with its neighbouring turns' share (`fusion.with_neighbours`), when it has one
    bm25_rank: int | None
    coverage: float  # share of the query's terms it contains
    signals: Mapping[str, float]  # the nonzero `SIGNALS`, by name: the score is their sum, each times its weight
    exact: bool = False  # holds a rare identifier the query names: ranked before every other candidate


@dataclass(frozen=True)
class Ranked:
    seq: int
    memory: Memory
    score: float
    relevance: float
    outdated_by: str | None  # for a turn that stated a since-superseded decision: what replaced it
    sources: Sources


def for_window(params: RankingParams, where: SearchFilter) -> RankingParams:
    """A question asked about a time window ("what did we decide last week") is about what was said then:
    age and later changes do not count against it."""
    if where.since is None and where.until is None:
        return params
    return replace(params, weights={**params.weights, "fresh": 0.0, "outdated": 0.0}, successors_first=False)


def outdated_turns(
    turns: Mapping[int, Memory],
    retired: Mapping[int, Memory],
    vectors: Mapping[int, np.ndarray],
    similarity: float,
    wording: float,
) -> dict[int, str]:
    """Turns that stated what a superseded memory recorded: {turn seq: id of the memory that replaced it}.

    A decision is usually recorded right after the turns that made it. When it
    is superseded, those turns still say the old thing in the same words, and
    would outrank the new decision for the same question. A turn counts as a
    source of a retired memory when it is from the same session, came before
    it, and either is at least `similarity` close in meaning (unit vectors
    assumed) or has at least `wording` of its content words, `RESTATED_WORDS`
    or more, in the memory's text. The second test needs no
    vectors, so it holds while vectors are missing or being re-made, and it
    does not flip with vector noise: "100 requests per second per key, fixed
    window" is 0.597 close to the decision that restates it, just under a 0.6
    similarity. A retired session gist counts for neither: it is made of the
    session's turns and replaced by the next gist, which changes nothing they said.
    """
    found: dict[int, str] = {}
    said = {old_seq: content_words(old.text) for old_seq, old in retired.items() if old.kind != "summary"}
    for seq, turn in turns.items():
        words = content_words(turn.text)
        for old_seq, old in retired.items():
            if (
                old_seq not in said
                or old.superseded_by is None
                or old.session != turn.session
                or old.created_at < turn.created_at
            ):
                continue
            close = seq in vectors and old_seq in vectors and float(vectors[seq] @ vectors[old_seq]) >= similarity
            restated = len(shared := words & said[old_seq]) >= RESTATED_WORDS and len(shared) >= wording * len(words)
            if close or restated:
                found[seq] = old.superseded_by
                break
    return found


def admitted_neighbours(
    neighbours: Mapping[int, Sequence[int]], memories: Mapping[int, Memory], where: SearchFilter, asked: str | None = None
) -> dict[int, list[int]]:
    """The neighbouring turns (`Journal.neighbours`) the search's filter lets in: only they may join the
    candidates. A turn outside the asked kinds, tags or time window, superseded or forgotten, lends no score
    and borrows none. `memories` holds the lending hits too, and two of them lend nothing:

    - a tool's log line: the path it names ("[tool] Edit: billing/money.py") matches a question on money, and says
      nothing of what was said around it;
    - a copy of the question (`asked`, as `arrange` compares it), such as the prompt the prompt hook stored just
      before this search: it matches the query best of all, and would lift whatever the agent said last before it.
    """
    echo = wording(asked) if asked else None
    kept: dict[int, list[int]] = {}
    for seq, around in neighbours.items():
        lender = memories.get(seq)
        if lender is not None and (
            dialogue_act(lender.text) in ("log", "plumbing") or (echo and _said(lender) and wording(lender.text) == echo)
        ):
            continue
        if inside := [n for n in around if n in memories and _admits(where, memories[n])]:
            kept[seq] = inside
    return kept


def _admits(where: SearchFilter, memory: Memory) -> bool:
    """The filter's own conditions (`SearchFilter.admits`), on the payload the memory has in the index."""
    payload = {
        "kind": memory.kind,
        "tags": memory.tags,
        "session": memory.session or "",
        "superseded": int(memory.superseded_by is not None),
        "created": datetime.fromisoformat(memory.created_at).timestamp(),  # stored with a Z: aware, UTC
    }
    return where.admits(payload)


def _signals(
    memory: Memory, act: str, params: RankingParams, now: float, session: str | None, values: Mapping[str, float]
) -> dict[str, float]:
    """`values` (the signals the candidate lists gave) and what the memory itself says, without the zeros."""
    found = dict(values)
    found[act] = 1.0
    # The agent's own question at the end of an answer offers the next step ("First cut with a fixed backoff?"): what
    # it answered is in the sentences before it. Anyone else's asks for what the next turn says.
    if act == "statement" and memory.role != "assistant" and ends_asking(memory.text):
        found["ends_asking"] = 1.0
    if memory.kind in TYPED_KINDS:
        found["decided"] = 1.0
    elif memory.kind == "summary":
        found["summary"] = 1.0
    elif memory.kind != "turn":
        found["typed"] = 1.0
    if not (memory.pinned or memory.kind in params.no_decay_kinds or params.half_life_days <= 0):
        created = datetime.fromisoformat(memory.created_at).timestamp()
        decay = 0.5 ** (max(now - created, 0.0) / DAY / params.half_life_days)
        found["fresh"] = math.log(1 - RECENCY_SHARE + RECENCY_SHARE * decay)
    if session is not None and memory.session == session:
        found["session"] = 1.0
    if memory.access_count:
        found["used"] = math.log1p(memory.access_count)
    return {name: value for name, value in found.items() if value and name in SIGNALS}


def _leads(found: Candidates) -> dict[tuple[str, int], float]:
    """How far each list's first is ahead of its second: BM25 as a share of the first's score, the dense list as ten
    times the difference of cosines (they differ by hundredths). A first far ahead is more often the answer."""
    leads: dict[tuple[str, int], float] = {}
    for name, hits, scale in (("bm25", found.sparse, None), ("dense", found.dense, 10.0)):
        ordered = sorted(hits, key=lambda hit: (-hit.score, hit.seq))
        if ordered:
            first, second = ordered[0].score, ordered[1].score if len(ordered) > 1 else 0.0
            lead = (first - second) * scale if scale else ((first - second) / first if first > 0 else 0.0)
            leads[(name, ordered[0].seq)] = lead
    return leads


def rank(
    found: Candidates,
    memories: Mapping[int, Memory],
    lexical: Mapping[int, float],
    params: RankingParams,
    now: float,
    *,
    session: str | None = None,
    floor: float | None = None,
    outdated: Mapping[int, str] | None = None,
    cosines: Mapping[int, float] | None = None,
    exact_terms: Sequence[str] = (),
    neighbours: Mapping[int, Sequence[int]] | None = None,
    asks_time: bool = False,
) -> tuple[list[Ranked], list[Ranked]]:
    """(kept, below the floor), each best first.

    `memories` holds the live candidates (others are skipped), `lexical` their
    query-term coverage, `outdated` the turns `outdated_turns` found,
    `cosines` the similarity to the query of candidates the dense list may lack
    (see `fusion.with_meaning`), and `exact_terms` the identifiers the query
    names (`text_signals.exact_terms`): the few candidates holding one come
    first (see `rare_exact`). BM25 hits have already lent their neighbouring
    turns a share of their score (`fusion.with_neighbours`, applied by the
    caller, before it fetches what the candidates need); `neighbours` says which
    turns those were (`admitted_neighbours`), so that they borrow a share of the
    query-term coverage too (`fusion.lent_coverage`). `asks_time` says the query
    asks when something happened (`time_words.asks_for_time`): the candidates
    that say when (`time_words.tells_time`) get the `timely` signal. Each
    candidate's score is the weighted sum of its `SIGNALS`.
    """
    outdated = outdated or {}
    lent = lent_coverage(lexical, neighbours or {}, params.fusion.neighbour_share)
    found = with_meaning(found, cosines or {})
    exact = rare_exact(memories, {hit.seq for hit in (*found.dense, *found.sparse)}, exact_terms, params.exact_most)
    dense = {hit.seq: hit.score for hit in found.dense}
    bm25 = {hit.seq: hit.score for hit in found.sparse}
    dense_rank, bm25_rank = positions(found.dense), positions(found.sparse)
    best_bm25, best_cosine = max(bm25.values(), default=0.0), max(dense.values(), default=0.0)
    leads = _leads(found)
    floor = params.floor if floor is None else floor
    weights = params.weights
    kept: list[Ranked] = []
    dropped: list[Ranked] = []
    for seq in sorted(dense.keys() | bm25.keys()):
        memory = memories.get(seq)
        if memory is None or (act := dialogue_act(memory.text)) == "plumbing":  # the client's machinery says nothing
            continue
        cosine, covered = dense.get(seq), max(lexical.get(seq, 0.0), lent.get(seq, 0.0))
        bm25_place = PLACE / (PLACE + bm25_rank[seq]) if seq in bm25_rank else 0.0
        dense_place = PLACE / (PLACE + dense_rank[seq]) if seq in dense_rank else 0.0
        from_lists = {
            "places": math.log(bm25_place + dense_place),
            "bm25_place": bm25_place,
            "dense_place": dense_place,
            "bm25": bm25.get(seq, 0.0) / best_bm25 if best_bm25 > 0 else 0.0,
            "cosine": cosine or 0.0,
            "cosine_gap": (cosine - best_cosine) if cosine is not None else -best_cosine,
            "coverage": covered,
            "from_neighbour": float(lent.get(seq, 0.0) > lexical.get(seq, 0.0)),
            "exact": float(seq in exact),
            "bm25_first": leads.get(("bm25", seq), 0.0),
            "dense_first": leads.get(("dense", seq), 0.0),
            "timely": float(asks_time and tells_time(memory.text)),
            "outdated": float(memory.superseded_by is not None or seq in outdated),
        }
        signals = _signals(memory, act, params, now, session, from_lists)
        item = Ranked(
            seq=seq,
            memory=memory,
            score=sum(weights.get(name, 0.0) * value for name, value in signals.items()),
            relevance=relevance(cosine, covered),
            outdated_by=outdated.get(seq),
            sources=Sources(
                dense=cosine,
                dense_rank=dense_rank.get(seq),
                bm25=bm25.get(seq),
                bm25_rank=bm25_rank.get(seq),
                coverage=lexical.get(seq, 0.0),
                signals=signals,
                exact=seq in exact,
            ),
        )
        (kept if item.relevance >= floor or seq in exact else dropped).append(item)
    kept, dropped = sorted(kept, key=_order), sorted(dropped, key=_order)
    if params.successors_first:  # off in a time window (`for_window`): later changes do not count there
        return after_successors(kept), after_successors(dropped)
    return kept, dropped


def after_successors(ranked: Sequence[Ranked]) -> list[Ranked]:
    """Each superseded memory or outdated turn moved to just after what replaced it, when that ranks lower.

    The outdated factor only scales a score. A stale turn that both lists rank high can still beat its successor,
    found by one list only, and whether it does turns on a few thousandths of cosine similarity: vector noise.
    A supersession link is explicit, so when both are candidates it decides their order outright. The rest keep
    their order.
    """
    return placed_after(ranked, {item.memory.id: successor for item in ranked if (successor := item.outdated_by or item.memory.superseded_by)})


def placed_after(ranked: Sequence[Ranked], follows: Mapping[str, str]) -> list[Ranked]:
    """Each item whose id `follows` maps to another present item's id moved to just after that one, when that one
    ranks lower; the rest keep their order."""
    present = {item.memory.id for item in ranked}
    waiting: dict[str, list[Ranked]] = {}
    ordered: list[Ranked] = []
    placed: set[str] = set()

    def place(item: Ranked) -> None:
        ordered.append(item)
        placed.add(item.memory.id)
        for later in waiting.pop(item.memory.id, []):
            place(later)

    for item in ranked:
        leader = follows.get(item.memory.id)
        if leader in present and leader not in placed and leader != item.memory.id:
            waiting.setdefault(leader, []).append(item)
        else:
            place(item)
    # Links that loop (two items each waiting for the other) never come free: such items keep their order, last.
    ordered += [item for item in ranked if item.memory.id not in placed]
    return ordered


def rare_exact(memories: Mapping[int, Memory], candidates: set[int], terms: Sequence[str], most: int) -> set[int]:
    """The candidates holding, as a whole token, an identifier the query names that at most `most` of them hold.

    A ticket key, version or hash written verbatim in a handful of memories is the strongest evidence a query
    can give, yet rank fusion flattens it: one exact BM25 hit gets one list's reciprocal rank while the dense
    list's look-alikes collect both. These go first, whatever their fused score. A name held by many
    candidates says little about which one is meant, and changes nothing. The BM25 list holds every memory
    with the term when it is rare, so counting among the candidates counts the ledger.
    """
    chosen: set[int] = set()
    for term in terms:
        holding = {seq for seq in candidates if seq in memories and mentions(memories[seq].text, term)}
        if len(holding) <= most:
            chosen |= holding
    return chosen


def _order(item: Ranked) -> tuple[bool, float, int]:
    return not item.sources.exact, -item.score, item.seq


def arrange(ranked: Sequence[Ranked], parent_of: Mapping[str, str], params: RankingParams, asked: str | None = None) -> list[Ranked]:
    """The ranked memories as the caller sees them: no copy of what was asked, what was written down before what
    was said about it, and a repeated turn once.

    - A turn that is the question itself (`asked`, the same words whatever their case and punctuation), or a
      memory captured word for word from such a turn, is left out: an earlier copy of a prompt is an echo, not an
      answer.
    - A question, acknowledgement or log line scoring more than `echo_margin` below the best result is left out:
      its act's weight keeps it below a statement that matches as well, and once it is that far below it only
      fills a place (an earlier "Which currencies do we support?", `[tool] Edit: billing/money.py` for a question
      on money).
    - A captured memory (a decision, definition, constraint or todo a turn stated) takes the better place of it
      and its turn, which goes: the memory is the sentence that answers, and `recall(expand=true)` leads back to
      the turn. A turn, or a captured sentence, that restates a decision, definition or constraint written down
      on purpose among the results (most of its content words are in it) follows it; so does a turn of the same
      session, on its topic, said shortly before or after it was written down: what it was recorded from, or the
      report of it.
    - Turns that say the same words (a prompt sent again, "run the tests and fix what fails") are one result:
      the newest, in the better place.
    - An acknowledgement ("ok", "thanks", "Same as before.") comes after everything else: it answers nothing.
    """
    echo = wording(asked) if asked else None
    kept = [r for r in ranked if not (echo and _said(r.memory) and wording(r.memory.text) == echo)]
    best = max((r.score for r in kept), default=0.0)
    kept = [r for r in kept if r.score >= best - params.echo_margin or dialogue_act(r.memory.text) not in ECHO_ACTS]
    kept = _captured_first(kept, parent_of)
    kept = placed_after(kept, {**_recorded_from(kept), **_restated(kept, params.restated_share)})
    kept = _newest_of_repeats(kept)
    return sorted(kept, key=lambda r: dialogue_act(r.memory.text) == "acknowledgement")  # stable: the rest keep their order



def _said(memory: Memory) -> bool:
    """A turn, or a memory captured from one: words somebody said in the conversation."""
    return memory.kind == "turn" or "captured" in memory.tags


def _captured_first(ranked: Sequence[Ranked], parent_of: Mapping[str, str]) -> list[Ranked]:
    """Each captured memory in the better place of it and its turn; the turn goes."""
    present = {r.memory.id for r in ranked}
    child_of: dict[str, str] = {}  # a turn -> its best-ranked captured memory among the results
    for r in ranked:
        if (parent := parent_of.get(r.memory.id)) in present:
            child_of.setdefault(parent, r.memory.id)
    by_id = {r.memory.id: r for r in ranked}
    result: list[Ranked] = []
    for r in ranked:
        chosen = by_id[child_of.get(r.memory.id, r.memory.id)]
        if chosen not in result:
            result.append(chosen)
    return result


def _recorded_from(ranked: Sequence[Ranked]) -> dict[str, str]:
    """{turn id: id of the memory written down on its topic}: a decision, definition or constraint written down on
    purpose, and a turn said at most `RECORDED_WITHIN` before or after it, in its session (or any, when the agent gave
    it none), that shares two of its content words or more, and `RECORDED_SHARE` of them or `RESTATED_WORDS`. Before
    it: what it was recorded from ("Let's decide the retry policy for the payment gateway client properly.", the
    proposal the user agreed to); after it: the agent's report of what it recorded and did ("Recorded the retry
    decision and implemented it: `charge()` now retries only 5xx and timeouts, ...")."""
    written = [r.memory for r in ranked if r.memory.kind in TYPED_KINDS and "captured" not in r.memory.tags]
    found: dict[str, str] = {}
    for r in ranked:
        turn = r.memory
        if turn.kind != "turn":
            continue
        said = content_words(turn.text)
        for memory in written:
            same = memory.session is None or memory.session == turn.session
            if (
                same
                and abs(_seconds_between(turn, memory)) <= RECORDED_WITHIN
                and len(shared := said & content_words(memory.text)) >= 2
                and (len(shared) >= RECORDED_SHARE * len(said) or len(shared) >= RESTATED_WORDS)
            ):
                found[turn.id] = memory.id
                break
    return found


def _seconds_between(earlier: Memory, later: Memory) -> float:
    def moment(memory: Memory) -> float:
        return datetime.fromisoformat(memory.created_at).timestamp()

    return moment(later) - moment(earlier)


def _restated(ranked: Sequence[Ranked], share: float) -> dict[str, str]:
    """{id: id of the memory it restates}: for turns among `ranked`, and memories captured from turns, most of whose
    content words (`RESTATED_WORDS` or more) are in a decision, definition or constraint among them that was written
    down on purpose (not itself captured)."""
    typed = [(r.memory.id, content_words(r.memory.text)) for r in ranked if r.memory.kind in TYPED_KINDS and "captured" not in r.memory.tags]
    found: dict[str, str] = {}
    if not typed:
        return found
    for r in ranked:
        if r.memory.kind != "turn" and "captured" not in r.memory.tags:
            continue
        words = content_words(r.memory.text)
        for memory_id, said in typed:
            if memory_id != r.memory.id and len(shared := words & said) >= RESTATED_WORDS and len(shared) >= share * len(words):
                found[r.memory.id] = memory_id
                break
    return found


def _newest_of_repeats(ranked: Sequence[Ranked]) -> list[Ranked]:
    newest: dict[str, Ranked] = {}
    for r in ranked:
        if r.memory.kind == "turn":
            key = wording(r.memory.text)
            if key not in newest or r.memory.created_at > newest[key].memory.created_at:
                newest[key] = r
    result: list[Ranked] = []
    shown: set[str] = set()
    for r in ranked:
        if r.memory.kind != "turn":
            result.append(r)
        elif (key := wording(r.memory.text)) not in shown:
            result.append(newest[key])
            shown.add(key)
    return result
