"""How recalled memories are ordered and which are relevant enough to return. Pure: no I/O.

The search index hands back two candidate lists (by meaning and by BM25). They
are fused with weighted reciprocal-rank fusion, then adjusted by what the
index does not know: how old a memory is, how often it was used (fetched by id or pinned), its
kind, whether it comes from the caller's session, whether it is outdated:
superseded itself, or a turn that stated a decision that was later superseded
(`outdated_turns`), and, for a question that asks when, whether it says when. The weights are in `search/tuning.py`.

Rank fusion says nothing about whether the best match is any good, so each
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
from project_ledger.search.fusion import fuse, lent_coverage, positions, relevance, with_meaning, with_time
from project_ledger.search.index import Candidates, SearchFilter
from project_ledger.search.tuning import RankingParams
from project_ledger.text.dialogue_act import dialogue_act
from project_ledger.text.text_signals import content_words, mentions, wording
from project_ledger.text.time_words import tells_time

if TYPE_CHECKING:
    import numpy as np

DAY = 86_400.0
# Content words a turn must share with a retired memory to count as restating it on words alone. A short turn is
# usually a question about the topic ("money columns?", "webhooks from stripe to us"): its two or three words are all
# in the decision that answered it, yet it stated nothing. The restatements on the project corpus share 6 to 12.
RESTATED_WORDS = 4


@dataclass(frozen=True)
class Sources:
    """Where a ranked memory's score came from, for explaining a ranking (`Recall.explain`)."""

    dense: float | None  # cosine similarity, when the dense list found it
    dense_rank: int | None  # its place in that list, from 0
    bm25: float | None  # BM25 score with its neighbouring turns' share (`fusion.with_neighbours`), when it has one
    bm25_rank: int | None
    coverage: float  # share of the query's terms it contains
    fused: float  # reciprocal-rank fusion of the two places, before boosts
    boosts: Mapping[str, float]  # factors the fused score was multiplied by, by name
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
    return replace(params, recency_share=0.0, superseded_factor=1.0)


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
    neighbours: Mapping[int, Sequence[int]], memories: Mapping[int, Memory], where: SearchFilter
) -> dict[int, list[int]]:
    """The neighbouring turns (`Journal.neighbours`) the search's filter lets in: only they may join the
    candidates. A turn outside the asked kinds, tags or time window, superseded or forgotten, lends no score
    and borrows none."""
    kept: dict[int, list[int]] = {}
    for seq, around in neighbours.items():
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


def _boosts(
    memory: Memory, params: RankingParams, now: float, session: str | None, outdated: bool, timely: bool, act: str
) -> dict[str, float]:
    boosts: dict[str, float] = {}
    if (weight := params.act_weights.get(act, 1.0)) != 1.0:
        boosts["act"] = weight
    if not memory.pinned and memory.kind not in params.no_decay_kinds and params.half_life_days > 0:
        created = datetime.fromisoformat(memory.created_at.replace("Z", "+00:00")).timestamp()
        age_days = max(now - created, 0.0) / DAY
        decay = 0.5 ** (age_days / params.half_life_days)
        boosts["recency"] = 1 - params.recency_share + params.recency_share * decay
    if memory.access_count:
        boosts["access"] = 1 + params.access_weight * math.log1p(memory.access_count)
    if (weight := params.kind_weights.get(memory.kind, 1.0)) != 1.0:
        boosts["kind"] = weight
    if session is not None and memory.session == session:
        boosts["session"] = 1 + params.session_boost
    if memory.superseded_by is not None or outdated:
        boosts["superseded"] = params.superseded_factor
    if timely and params.time_boost:
        boosts["time"] = 1 + params.time_boost
    return boosts


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
    query-term coverage too (`fusion.lent_coverage`). `asks_time` says the query asks
    when something happened (`time_words.asks_for_time`): the candidates that say
    when (`time_words.tells_time`) then move up the dense list as if `time_lift`
    closer in meaning (`fusion.with_time`), and their score is multiplied by
    1 + `time_boost`.
    """
    outdated = outdated or {}
    lent = lent_coverage(lexical, neighbours or {}, params.fusion.neighbour_share)
    found = with_meaning(found, cosines or {})
    exact = rare_exact(memories, {hit.seq for hit in (*found.dense, *found.sparse)}, exact_terms, params.exact_most)
    dense = {hit.seq: hit.score for hit in found.dense}  # the true cosines: relevance is judged on them
    timely = {seq for seq, memory in memories.items() if tells_time(memory.text)} if asks_time else set()
    found = with_time(found, timely, params.time_lift)
    bm25 = {hit.seq: hit.score for hit in found.sparse}
    dense_rank, bm25_rank = positions(found.dense), positions(found.sparse)
    floor = params.floor if floor is None else floor
    kept: list[Ranked] = []
    dropped: list[Ranked] = []
    for hit in fuse(found, params.fusion, len(found.dense) + len(found.sparse)):
        memory = memories.get(hit.seq)
        if memory is None or (act := dialogue_act(memory.text)) == "plumbing":  # the client's machinery says nothing
            continue
        boosts = _boosts(memory, params, now, session, hit.seq in outdated, hit.seq in timely, act)
        score = hit.score * math.prod(boosts.values())
        item = Ranked(
            seq=hit.seq,
            memory=memory,
            score=score,
            relevance=relevance(dense.get(hit.seq), max(lexical.get(hit.seq, 0.0), lent.get(hit.seq, 0.0))),
            outdated_by=outdated.get(hit.seq),
            sources=Sources(
                dense=dense.get(hit.seq),
                dense_rank=dense_rank.get(hit.seq),
                bm25=bm25.get(hit.seq),
                bm25_rank=bm25_rank.get(hit.seq),
                coverage=lexical.get(hit.seq, 0.0),
                fused=hit.score,
                boosts=boosts,
                exact=hit.seq in exact,
            ),
        )
        (kept if item.relevance >= floor or hit.seq in exact else dropped).append(item)
    kept, dropped = sorted(kept, key=_order), sorted(dropped, key=_order)
    if params.superseded_factor < 1.0:  # 1.0 in a time window (`for_window`): later changes do not count there
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

    - A turn that is the question itself (`asked`, the same words whatever their case and punctuation) is left
      out: an earlier copy of a prompt is an echo, not an answer.
    - A captured memory (a decision, definition, constraint or todo a turn stated) takes the better place of it
      and its turn, which goes: the memory is the sentence that answers, and `recall(expand=true)` leads back to
      the turn. A turn that restates a typed memory among the results (most of its content words are in it)
      follows it.
    - Turns that say the same words (a prompt sent again, "run the tests and fix what fails") are one result:
      the newest, in the better place.
    """
    echo = wording(asked) if asked else None
    kept = [r for r in ranked if not (echo and r.memory.kind == "turn" and wording(r.memory.text) == echo)]
    kept = _captured_first(kept, parent_of)
    kept = placed_after(kept, _restated(kept, params.restated_share))
    return _newest_of_repeats(kept)


TYPED_KINDS = frozenset({"decision", "definition", "constraint"})


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


def _restated(ranked: Sequence[Ranked], share: float) -> dict[str, str]:
    """{turn id: id of the typed memory it restates}, for turns among `ranked` most of whose content words
    (`RESTATED_WORDS` or more) are in a decision, definition or constraint among them."""
    typed = [(r.memory.id, content_words(r.memory.text)) for r in ranked if r.memory.kind in TYPED_KINDS]
    found: dict[str, str] = {}
    if not typed:
        return found
    for r in ranked:
        if r.memory.kind != "turn":
            continue
        words = content_words(r.memory.text)
        for memory_id, said in typed:
            if len(shared := words & said) >= RESTATED_WORDS and len(shared) >= share * len(words):
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
