"""The ledger service: remember, recall, context, history, pin, forget and status.

It knows nothing of MCP or the CLI; both call these methods (the MCP tools from
a worker thread, since everything here is synchronous). The journal is written
first and is the truth; the index follows it through `IndexSync`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from importlib import metadata
from typing import TextIO

from project_ledger.code.links import CodeAnchors, describe
from project_ledger.code.service import CodeService
from project_ledger.config import ProjectPaths
from project_ledger.errors import IndexUnavailable, InvalidArgument, MemoryForgotten, StorageError
from project_ledger.memory.capture import propose
from project_ledger.memory.context_pack import Pack, PackCache, assemble, cache_key
from project_ledger.memory.context_sections import query_sections, render_hit, render_memory, stable_sections
from project_ledger.memory.gist_sampling import Writer
from project_ledger.memory.project_context import ProjectContextFile, missing_context_text
from project_ledger.memory.ranking import Ranked, RankingParams, collapse_captured, for_window, outdated_turns, rank
from project_ledger.memory.restatement import RestatementCheck
from project_ledger.memory.session_gists import SessionGists
from project_ledger.models import (
    KINDS,
    Ack,
    Captured,
    CodeHit,
    ContextResult,
    EmbeddingStatus,
    ExplainedHit,
    Fate,
    ForgetResult,
    GistResult,
    HistoryResult,
    IndexStatus,
    ListedMemory,
    Memory,
    MemoryDetail,
    MemoryLink,
    MemoryPage,
    RecallExplanation,
    RecallHit,
    RecallMode,
    RecallResult,
    Relation,
    RememberResult,
    StaleMemory,
    Status,
)
from project_ledger.search.index import Candidates, SearchFilter
from project_ledger.storage.backup import FORMAT, VERSION, ExportHeader, read_export, write_export
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Anchor, Journal, Restored, utc_now
from project_ledger.text.redaction import redact
from project_ledger.text.text_signals import content_words, specifics
from project_ledger.text.tokens import TokenCounter

log = logging.getLogger(__name__)

MAX_LINKS = 100  # files and symbols a memory may name
RESULT_ENVELOPE_TOKENS = 1_000  # room a recall result keeps under the cap for its note and other fields
MODEL_WAIT_SECONDS = 5.0
MIN_CONTEXT_TOKENS = 100
CONTEXT_MEMORIES = 12
CONTEXT_SYMBOLS = 6
CONTEXT_TURNS = 8
CONTEXT_TURNS_COMPACTED = 3  # a long session with a gist: the gist and retrieved turns carry the rest
MAX_STALE_LISTED = 50
RESERVED_TAGS = frozenset({"captured", "gist"})
NEAR_DUPLICATE_CANDIDATES = 5
_RELATIVE = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class Limits:
    """What one call may ask for or get back; each is a setting (see `config.Settings`)."""

    max_text_bytes: int
    instructions_tokens: int
    max_k: int = 100
    max_tags: int = 32
    max_label_chars: int = 200  # tags, session, role, file and symbol names
    max_result_tokens: int = 25_000


@dataclass(frozen=True)
class Quality:
    """Thresholds that keep the ledger clean (shares of content words); see `benchmarks/retrieval.py`."""

    near_duplicate: float = 0.8
    restated_context: float = 0.6
    reject_restated: bool = False
    capture: bool = True  # propose typed memories from what turns clearly state
    redact: bool = True  # replace secrets before anything is stored (see `redaction`)


def version() -> str:
    try:
        return metadata.version("project-ledger")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def parse_moment(value: str, what: str, end_of_day: bool = False) -> float:
    """An ISO date or datetime, or an age such as `30m`, `12h`, `2d`, `1w` (that long ago); epoch seconds.

    With `end_of_day`, a bare date means the end of that day (for `until`).
    """
    relative = _RELATIVE.match(value)
    if relative:
        try:
            return (datetime.now(UTC) - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})).timestamp()
        except OverflowError:
            raise InvalidArgument(f"{what}={value!r} reaches back past year 1; use a smaller age or an ISO date") from None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            f"{what}={value!r} is not a date: use ISO 8601 (2026-11-30 or 2026-11-30T09:00:00Z) or an age like 2d, 12h, 1w"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end_of_day and len(value.strip()) == 10:
        moment += timedelta(days=1, microseconds=-1)
    return moment.timestamp()


class LedgerService:
    def __init__(
        self,
        paths: ProjectPaths,
        journal: Journal,
        sync: IndexSync,
        limits: Limits,
        tokens: TokenCounter,
        code: CodeService | None,
        ranking: RankingParams,
        quality: Quality,
        gists: SessionGists,
    ) -> None:
        self.paths = paths
        self.journal = journal
        self.sync = sync
        self.limits = limits
        self.ranking = ranking
        self.quality = quality
        self.tokens = tokens
        self.code = code
        self.gists = gists
        self.project_context = ProjectContextFile(paths.project_context)
        self.pack_cache = PackCache(paths.data_dir / "session_start.json")
        self.anchors = CodeAnchors(
            paths.root, code.store if code is not None else None, lambda: code is not None and code.indexer.progress.running
        )
        self.restatement = RestatementCheck(self.project_context, quality.restated_context)

    def start(self) -> None:
        """Background start-up for a long-running server: the index and model, and the tokenizer's
        half-second load, all kept off the first request."""
        self.sync.start()
        if self.code is not None:
            self.code.start()
        threading.Thread(target=self.tokens.count, args=("warm up",), name="ledger-tokens", daemon=True).start()

    def close(self) -> None:
        self.gists.close()
        if self.code is not None:
            self.code.close()
        self.sync.stop()
        self.journal.close()

    def require_code(self) -> CodeService:
        if self.code is None:
            raise InvalidArgument("the code index is turned off (LEDGER_CODE_INDEX=false)")
        return self.code

    # -- validation --------------------------------------------------------------

    def _text(self, text: str, what: str = "text") -> str:
        if not text or not text.strip():
            raise InvalidArgument(f"{what} is empty: pass the words to store or search for")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
        if size > self.limits.max_text_bytes:
            raise InvalidArgument(
                f"{what} is {size} bytes; the limit is {self.limits.max_text_bytes} (LEDGER_MAX_TEXT_BYTES). "
                "Store the essential part, or split it into several memories."
            )
        return text

    @staticmethod
    def _kind(kind: str) -> str:
        if kind not in KINDS:
            raise InvalidArgument(f"kind={kind!r} is not one of {', '.join(KINDS)}")
        return kind

    def _labels(self, values: list[str], what: str, limit: int | None = None) -> list[str]:
        if limit is not None and len(values) > limit:
            raise InvalidArgument(f"{len(values)} {what} given; at most {limit} are kept per memory")
        cleaned = []
        for value in values:
            if not value.strip():
                raise InvalidArgument(f"{what} may not contain empty strings")
            if len(value) > self.limits.max_label_chars:
                raise InvalidArgument(
                    f"each of {what} must be at most {self.limits.max_label_chars} characters (LEDGER_MAX_LABEL_CHARS)"
                )
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidArgument(f"{what} holds an unpaired UTF-16 surrogate; send valid Unicode") from None
            if value not in cleaned:
                cleaned.append(value)
        return cleaned

    def _label(self, value: str | None, what: str) -> str | None:
        return None if value is None else self._labels([value], what)[0]

    @staticmethod
    def _floor(value: float | None) -> float | None:
        if value is not None and not 0 <= value <= 1:
            raise InvalidArgument(f"min_relevance={value} is out of range: give 0 (no floor) to 1")
        return value

    # -- writes ----------------------------------------------------------------

    def remember(
        self,
        text: str,
        kind: str = "note",
        tags: list[str] | None = None,
        session: str | None = None,
        role: str | None = None,
        files: list[str] | None = None,
        symbols: list[str] | None = None,
        pinned: bool = False,
        supersedes: str | None = None,
    ) -> RememberResult:
        """Store a memory, unless it is already there.

        Turns are records of a conversation and are stored as said. Other kinds
        are compared with project_context.md and with live memories of the same
        kind. Both checks are lexical: the model never runs while `remember`
        answers; the background worker embeds the new memory.
        """
        text, kind = self._text(text), self._kind(kind)
        redacted = redact(text) if self.quality.redact else None
        if redacted is not None:
            text = redacted.text
        secrets = {"redacted": redacted.count, "redacted_types": redacted.found} if redacted is not None else {}
        tags = self._labels(tags or [], "tags", self.limits.max_tags)
        if reserved := sorted(RESERVED_TAGS.intersection(tags)):
            raise InvalidArgument(f"the tags {', '.join(reserved)} are reserved: the ledger sets them on captured memories and gists")
        session, role = self._label(session, "session"), self._label(role, "role")
        files = self._labels(files or [], "files", MAX_LINKS)
        symbols = self._labels(symbols or [], "symbols", MAX_LINKS)
        notes: list[str] = []
        restated = self.restatement.check(text) if kind != "turn" else None
        if restated is not None and self.quality.reject_restated:
            raise InvalidArgument(
                f"not stored: this only restates project_context.md (section {restated.section!r}: {restated.block[:120]!r}). "
                "Edit the file instead, or store what is new (LEDGER_REJECT_RESTATED_CONTEXT=false allows it)."
            )
        if kind != "turn" and supersedes is None and self.sync.state() != "ready":
            notes.append(f"near-duplicate check skipped: the search index is {self.sync.state()}")
        elif kind != "turn" and supersedes is None:
            duplicate = self._near_duplicate(text, kind)
            if duplicate is not None:
                seq, twin, overlap = duplicate
                self.journal.touch([seq])
                if pinned and not twin.pinned:
                    self.pin(twin.id)
                return RememberResult(
                    id=twin.id, created=False, duplicate_of=twin.id, similarity=round(overlap, 4), **secrets,
                    note=f"a live {kind} already says this ({overlap:.0%} of the words, the same numbers and names); "
                    "its access data was refreshed",
                )  # fmt: skip
        anchors, link_notes = self.anchors.resolve(text, files, symbols)
        memory_id, created = self.journal.insert(
            text=text, kind=kind, tags=tags, session=session, role=role, files=files, symbols=symbols, pinned=pinned,
            supersedes=supersedes, anchors=anchors,
        )  # fmt: skip
        captured: list[Captured] = []
        if created:
            if kind == "turn" and self.quality.capture:
                captured = self._capture(memory_id, text, session)
            self.sync.kick()
            if kind == "turn" and session is not None:
                self.gists.turn_added(session)
        else:
            notes.append(f"the same text is already stored as a {kind} in this session")
        if restated is not None:
            notes.append(f"this restates project_context.md (section {restated.section!r}); consider editing the file instead")
        return RememberResult(
            id=memory_id,
            created=created,
            duplicate_of=None if created else memory_id,
            restates_context=restated is not None,
            context_section=restated.section if restated is not None else None,
            **secrets,
            links=[f"{a.target} {a.name + ' in ' if a.name else ''}{a.path}" for a in anchors] if created else [],
            captured=captured,
            note="; ".join([*notes, *link_notes]) or None,
        )

    def _capture(self, turn_id: str, text: str, session: str | None) -> list[Captured]:
        """A typed memory, linked to the turn, for each thing it clearly states (see `capture`); one that a live
        memory of its kind already says is not stored again."""
        found = []
        for proposal in propose(text):
            twin = self._near_duplicate(proposal.text, proposal.kind) if self.sync.state() == "ready" else None
            if twin is not None:
                found.append(Captured(id=twin[1].id, kind=proposal.kind, text=proposal.text, created=False))
                continue
            try:
                child_id, created = self.journal.insert(
                    text=proposal.text, kind=proposal.kind, tags=["captured"], session=session, role=None, files=[],
                    symbols=[], pinned=False, supersedes=None, sources=[(turn_id, "captured")],
                )  # fmt: skip
            except MemoryForgotten:  # the turn was forgotten meanwhile: nothing may be derived from it
                return []
            found.append(Captured(id=child_id, kind=proposal.kind, text=proposal.text, created=created))
        return found

    def _near_duplicate(self, text: str, kind: str) -> tuple[int, Memory, float] | None:
        """A live, current memory of `kind` that says the same thing: the best BM25 matches whose content words
        overlap this text's by the threshold (Jaccard) and whose numbers, identifiers and negations are the same.

        A write never waits on the index: if it is unavailable, the memory is stored unchecked.
        """
        try:
            found = self.sync.candidates(text, None, SearchFilter(kinds=[kind]), NEAR_DUPLICATE_CANDIDATES)
        except IndexUnavailable as exc:
            log.warning("near-duplicate check skipped: %s", exc)
            return None
        memories = self.journal.get_by_seqs([hit.seq for hit in found.sparse])
        words, own = content_words(text), specifics(text)
        for hit in found.sparse:
            memory = memories.get(hit.seq)
            if memory is None or specifics(memory.text) != own:
                continue
            theirs = content_words(memory.text)
            overlap = len(words & theirs) / len(words | theirs) if words | theirs else 1.0
            if overlap >= self.quality.near_duplicate:
                return hit.seq, memory, overlap
        return None

    def pin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, True)
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def unpin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, False)
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def forget(self, memory_id: str) -> ForgetResult:
        """Scrub the journal row; searches skip it from then on, and the index drops it at its next catch-up.

        Memories derived from it go too (see `Journal.forget`), and so does the session-start cache, which
        may quote a pinned text or a gist.
        """
        derived = self.journal.forget(memory_id)
        self.pack_cache.clear()
        self.sync.kick()
        return ForgetResult(id=memory_id, ok=True, also_forgotten=derived)

    # -- recall ----------------------------------------------------------------

    def _retrieve(
        self, query: str, where: SearchFilter, k: int, session: str | None, floor: float | None
    ) -> tuple[list[Ranked], int, RecallMode, list[str]]:
        """Ranked memories above the floor (at most `k`), how many fell under it, the mode, and notes."""
        kept, below, _, mode, notes = self._rank(query, where, k, session, floor)
        return collapse_captured(kept, self._captured_parents(kept))[:k], len(below), mode, notes

    def _rank(
        self, query: str, where: SearchFilter, k: int, session: str | None, floor: float | None
    ) -> tuple[list[Ranked], list[Ranked], Candidates, RecallMode, list[str]]:
        """Every candidate ranked: those above the floor and those under it (best first), the index's two
        candidate lists, the mode, and notes."""
        self.sync.index()  # fails fast, with the reason, if the index could not open
        embedder = self.sync.embedder
        notes: list[str] = []
        dense: list[float] | None = None
        if embedder.state in ("not-loaded", "loading"):
            self.sync.wait_for_model(MODEL_WAIT_SECONDS)
        if embedder.state == "ready":
            dense = embedder.embed_query(query).tolist()
        else:
            notes.append(f"BM25 only: the embedding model is {embedder.state}" + (f" ({embedder.detail})" if embedder.detail else ""))
        found = self.sync.candidates(query, dense, where, max(self.ranking.fusion.candidates, k))
        memories = self.journal.get_by_seqs(sorted({hit.seq for hit in (*found.dense, *found.sparse)}))
        lexical = self.sync.coverage(query, {seq: memory.text for seq, memory in memories.items()})
        params = for_window(self.ranking, where)
        kept, below = rank(found, memories, lexical, params, time.time(), session, floor, self.outdated(memories))
        return kept, below, found, "hybrid" if dense is not None else "bm25-only", notes

    def _captured_parents(self, ranked: list[Ranked]) -> dict[str, str]:
        """The turn each captured memory among these was captured from, by id."""
        parents = self.journal.sources([r.memory.id for r in ranked if "captured" in r.memory.tags], ["captured"])
        return {child: found[0] for child, found in parents.items()}

    def outdated(self, memories: Mapping[int, Memory]) -> dict[int, str]:
        """Which of these turns (and memories captured from turns) stated a decision that was later superseded
        (see `ranking.outdated_turns`). A captured sentence shares its turn's fate, both ways: the sentence
        alone may be too short to match the retired decision, or the turn too long."""
        parents = self.journal.sources([m.id for m in memories.values() if "captured" in m.tags], ["captured"])
        turns = {seq: m for seq, m in memories.items() if m.kind == "turn" or m.id in parents}
        turns |= self.journal.live_by_seq([found[0] for found in parents.values()])
        turns = {seq: m for seq, m in turns.items() if m.session is not None}
        retired = self.journal.superseded_in_sessions(sorted({m.session for m in turns.values() if m.session}))
        if not turns or not retired:
            return {}
        import numpy as np  # kept off the import path of `serve`: the handshake does not need it

        vectors = {}
        for seq, blob in self.journal.vectors([*turns, *retired], self.sync.embedder.identity).items():
            vector = np.frombuffer(blob, dtype=np.float32)
            vectors[seq] = vector / (np.linalg.norm(vector) or 1.0)
        found = outdated_turns(turns, retired, vectors, self.ranking.outdated_turn_similarity)
        seq_of = {m.id: seq for seq, m in turns.items()}
        for child, (parent, *_) in parents.items():
            pair = (seq_of.get(child), seq_of.get(parent))
            replaced = next((found[seq] for seq in pair if seq in found), None)
            if replaced is not None and None not in pair:
                found.update(dict.fromkeys(pair, replaced))
        return found

    def _hits(self, ranked: list[Ranked]) -> list[RecallHit]:
        """Recall results, marked stale where the code they are anchored to has changed."""
        anchors = self.journal.anchors([r.memory.id for r in ranked])
        hits = []
        for r in ranked:
            changed = self.anchors.changes(anchors.get(r.memory.id, []), partial(self.journal.settle_anchor, r.memory.id))
            hits.append(_hit(r.memory, changed, r))
        return hits

    def _fetched(self, memories: list[Memory], source_of: dict[str, str]) -> list[RecallHit]:
        """Memories handed back by id (or because a gist cites them): unranked, marked stale like recall's."""
        anchors = self.journal.anchors([m.id for m in memories])
        return [
            _hit(m, self.anchors.changes(anchors.get(m.id, []), partial(self.journal.settle_anchor, m.id)), source_of=source_of.get(m.id))
            for m in memories
        ]

    def _expand(self, hits: list[RecallHit]) -> list[RecallHit]:
        """Each gist or captured memory followed by the memories it cites or was captured from."""
        sources = self.journal.sources([h.id for h in hits], ["cites", "captured"])
        wanted = list(dict.fromkeys(i for h in hits for i in sources.get(h.id, [])))
        found = self.journal.live(wanted)
        shown = {h.id for h in hits}
        expanded: list[RecallHit] = []
        for hit in hits:
            expanded.append(hit)
            extra = [found[i] for i in sources.get(hit.id, []) if i in found and i not in shown]
            shown.update(m.id for m in extra)
            expanded += self._fetched(extra, dict.fromkeys((m.id for m in extra), hit.id))
        return expanded

    def _by_ids(self, ids: list[str]) -> tuple[list[RecallHit], list[str]]:
        """Memories by id, in the order given; and the ids that are unknown or forgotten."""
        if len(ids) > self.limits.max_k:
            raise InvalidArgument(f"{len(ids)} ids given; fetch at most {self.limits.max_k} at a time (LEDGER_MAX_K)")
        ids = list(dict.fromkeys(self._labels(ids, "ids")))
        found = self.journal.live(ids)
        return self._fetched([found[i] for i in ids if i in found], {}), [i for i in ids if i not in found]

    def _touch(self, seqs: list[int]) -> None:
        try:
            self.journal.touch(seqs)
        except StorageError as exc:  # access stats are not worth failing a read for
            log.warning("access stats not recorded: %s", exc)

    def recall(
        self,
        query: str | None,
        k: int = 8,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        include_superseded: bool = False,
        token_budget: int | None = None,
        current_session: str | None = None,
        min_relevance: float | None = None,
        expand: bool = False,
        ids: list[str] | None = None,
    ) -> RecallResult:
        """Ranked memories for `query`; or, with `ids` instead, those memories. `expand` follows each gist
        or captured memory to the memories it cites or came from."""
        if ids:
            if query is not None:
                raise InvalidArgument("give either a query or ids, not both")
            return self._recall_ids(ids, expand, token_budget)
        if query is None:
            raise InvalidArgument("give a query to search for, or ids of memories to fetch")
        query = self._text(query, "query")
        self._check_k(k)
        self._check_budget(token_budget)
        where = self._where(kinds, tags, session, since, until, include_superseded)
        ranked, below, mode, notes = self._retrieve(
            query, where, k, self._label(current_session, "current_session"), self._floor(min_relevance)
        )
        hits = self._hits(ranked)
        kept, left_out, why = self._fit(self._expand(hits) if expand else hits, token_budget)
        if left_out:
            notes.append(f"left out to fit {why}: {', '.join(left_out)}")
        if not kept and below:
            floor = self.ranking.floor if min_relevance is None else min_relevance
            notes.append(f"no relevant memory: {below} weaker matches fell under min_relevance={floor:g}; pass a lower one to see them")
        kept_ids = {hit.id for hit in kept}
        self._touch([r.seq for r in ranked if r.memory.id in kept_ids])
        return RecallResult(
            results=kept, tokens=self.tokens.count(render_results(kept)), mode=mode, below_floor=below, note="; ".join(notes) or None
        )

    def _check_k(self, k: int) -> None:
        if not 1 <= k <= self.limits.max_k:
            raise InvalidArgument(f"k={k} is out of range: ask for 1 to {self.limits.max_k} results (LEDGER_MAX_K)")

    def _where(
        self,
        kinds: list[str] | None,
        tags: list[str] | None,
        session: str | None,
        since: str | None,
        until: str | None,
        include_superseded: bool,
    ) -> SearchFilter:
        where = SearchFilter(
            kinds=[self._kind(kind) for kind in kinds] if kinds else None,
            tags=self._labels(tags, "tags") if tags else None,
            session=self._label(session, "session"),
            since=parse_moment(since, "since") if since else None,
            until=parse_moment(until, "until", end_of_day=True) if until else None,
            include_superseded=include_superseded,
        )
        if where.since is not None and where.until is not None and where.since > where.until:
            raise InvalidArgument(f"since={since!r} is after until={until!r}; nothing can match")
        return where

    def explain_recall(
        self,
        query: str,
        k: int = 8,
        kinds: list[str] | None = None,
        tags: list[str] | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        include_superseded: bool = False,
        current_session: str | None = None,
        min_relevance: float | None = None,
    ) -> RecallExplanation:
        """What `recall` would return for these arguments, and why: every candidate with its dense and BM25
        scores and places, fused score, boosts and relevance, including those past `k`, collapsed into their
        turn, or under the floor.

        It runs the same ranking as `recall` but records no access: looking must not change the next ranking.
        A token budget is not applied (it only cuts the tail of `results`).
        """
        query = self._text(query, "query")
        self._check_k(k)
        where = self._where(kinds, tags, session, since, until, include_superseded)
        floor = self._floor(min_relevance)
        kept, below, found, mode, notes = self._rank(query, where, k, self._label(current_session, "current_session"), floor)
        parents = self._captured_parents(kept)
        collapsed = collapse_captured(kept, parents)
        returned = {r.seq for r in collapsed[:k]}
        placed = {r.seq for r in collapsed}
        fusion = self.ranking.fusion
        return RecallExplanation(
            query=query,
            mode=mode,
            k=k,
            floor=self.ranking.floor if floor is None else floor,
            fusion={"k": fusion.k, "dense_weight": fusion.dense_weight, "sparse_weight": fusion.sparse_weight,
                    "candidates": max(fusion.candidates, k)},
            candidates={"dense": len(found.dense), "bm25": len(found.sparse)},
            results=[_explained(r, "returned") for r in collapsed[:k]],
            not_returned=[
                _explained(r, "past k") if r.seq in placed else _explained(r, "collapsed", parents.get(r.memory.id))
                for r in kept
                if r.seq not in returned
            ],
            below_floor=[_explained(r, "below floor") for r in below],
            notes=notes,
        )  # fmt: skip

    def _check_budget(self, token_budget: int | None) -> None:
        if token_budget is not None and not 1 <= token_budget <= self.limits.max_result_tokens:
            raise InvalidArgument(
                f"token_budget={token_budget} is out of range: give 1 to {self.limits.max_result_tokens} "
                "(LEDGER_MAX_RESULT_TOKENS, the largest result any tool returns)"
            )

    def _recall_ids(self, ids: list[str], expand: bool, token_budget: int | None) -> RecallResult:
        self._check_budget(token_budget)
        hits, missing = self._by_ids(ids)
        if not hits:
            raise InvalidArgument(f"no live memory has these ids: {', '.join(missing)}; they are unknown or were forgotten")
        kept, left_out, why = self._fit(self._expand(hits) if expand else hits, token_budget)
        notes = [f"not found or forgotten: {', '.join(missing)}"] if missing else []
        if left_out:
            notes.append(f"left out to fit {why}: {', '.join(left_out)}")
        mode: RecallMode = "hybrid" if self.sync.embedder.state == "ready" else "bm25-only"
        return RecallResult(results=kept, tokens=self.tokens.count(render_results(kept)), mode=mode, note="; ".join(notes) or None)

    def _fit(self, results: list[RecallHit], budget: int | None) -> tuple[list[RecallHit], list[str], str]:
        """Keep results in rank order while they fit; one that does not is skipped whole, never cut.

        Then, whatever the budget, stop before the result the client receives (the JSON, the larger of the
        two renderings) would pass the cap on every tool's result. Returns what is kept, the ids left out,
        and why they were.
        """
        kept, reason = results, ""
        if budget is not None:
            kept, used = [], 0
            for hit in results:
                cost = self.tokens.count(render_hit(hit)) + (1 if kept else 0)  # "\n\n" between items is one token
                if used + cost <= budget:
                    kept.append(hit)
                    used += cost
            while kept and not self.tokens.fits(render_results(kept), budget):  # the sum is an estimate: confirm
                kept.pop()
            reason = f"token_budget={budget}"
        room = self.limits.max_result_tokens - RESULT_ENVELOPE_TOKENS
        encoded = [hit.model_dump_json() for hit in kept]
        if sum(len(text.encode("utf-8")) for text in encoded) <= room:  # a token is at least a byte: no need to count
            encoded = []
        for n, text in enumerate(encoded):
            room -= self.tokens.count(text)
            if room < 0:
                kept = kept[:n]
                reason = f"the {self.limits.max_result_tokens}-token result cap (LEDGER_MAX_RESULT_TOKENS)"
                break
        kept_ids = {hit.id for hit in kept}
        return kept, [hit.id for hit in results if hit.id not in kept_ids], reason

    def history(self, memory_id: str) -> HistoryResult:
        chain = self.journal.history(self._label(memory_id, "id") or memory_id)
        return HistoryResult(id=memory_id, current=chain[-1].id, chain=chain)

    # -- browsing (the web inspector) --------------------------------------------

    def browse(
        self,
        kind: str | None = None,
        tag: str | None = None,
        session: str | None = None,
        pinned: bool = False,
        superseded: bool = False,
        stale: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """Live memories, newest first, filtered by each condition given; `pinned`, `superseded` and `stale`
        keep only those. Each is marked stale when code it is anchored to changed."""
        if not 1 <= limit <= self.limits.max_k:
            raise InvalidArgument(f"limit={limit} is out of range: give 1 to {self.limits.max_k}")
        if offset < 0:
            raise InvalidArgument(f"offset={offset} is negative; give 0 or more")
        changed = set(self._anchor_changes(self.journal.anchors())) if stale else None
        memories, total = self.journal.browse(
            kind=self._kind(kind) if kind else None,
            tag=self._label(tag, "tag"),
            session=self._label(session, "session"),
            pinned=pinned,
            superseded=superseded,
            ids=sorted(changed) if changed is not None else None,
            limit=limit,
            offset=offset,
        )
        if changed is None:
            changed = set(self._anchor_changes(self.journal.anchors([m.id for m in memories])))
        tags, sessions = self.journal.labels()
        return MemoryPage(
            memories=[ListedMemory(**m.model_dump(), stale=m.id in changed) for m in memories],
            total=total, offset=offset, limit=limit, tags=tags, sessions=sessions,
        )  # fmt: skip

    def _anchor_changes(self, anchors: Mapping[str, list[Anchor]]) -> dict[str, list[str]]:
        """What changed in each of these memories' anchored code since it was stored; unchanged ones left out."""
        changes = {memory_id: self.anchors.changes(found, partial(self.journal.settle_anchor, memory_id)) for memory_id, found in anchors.items()}
        return {memory_id: changed for memory_id, changed in changes.items() if changed}

    def memory_detail(self, memory_id: str) -> MemoryDetail:
        """One memory (a forgotten one shows as its tombstone), its supersession chain, code links and relations."""
        memory = self.journal.get(self._label(memory_id, "id") or memory_id)
        settle = partial(self.journal.settle_anchor, memory.id)
        links = [
            MemoryLink(target=anchor.target, description=describe(anchor), changed=next(iter(self.anchors.changes([anchor], settle)), None))
            for anchor in self.journal.anchors([memory.id]).get(memory.id, [])
        ]
        return MemoryDetail(
            memory=memory,
            history=self.journal.history(memory.id),
            links=links,
            relations=[Relation(relation=r, id=other, direction=d) for r, other, d in self.journal.relations(memory.id)],
        )

    # -- context packs -----------------------------------------------------------

    def context(
        self, query: str | None = None, token_budget: int = 4000, session: str | None = None, record_access: bool = True
    ) -> ContextResult:
        """One block within `token_budget`: project context, pins, then (for a query) the memories and code
        it needs, then the session's latest turns. A preview (`record_access=False`) leaves access stats,
        which rank later recalls, as they were."""
        if not MIN_CONTEXT_TOKENS <= token_budget <= self.limits.max_result_tokens:
            raise InvalidArgument(
                f"token_budget={token_budget} is out of range: give {MIN_CONTEXT_TOKENS} to {self.limits.max_result_tokens} "
                "(LEDGER_MAX_RESULT_TOKENS)"
            )
        session = self._label(session, "session")
        pinned = self.journal.pinned()
        sections = stable_sections(self.project_context.read(), self.paths.project_context, pinned)
        # A question alone gets what is relevant to it; a session (or a session start) also gets the gists.
        gists = self.gists.for_context(session) if session is not None or query is None else []
        shown = {m.id for m in (*pinned, *gists)}
        mode: RecallMode = "hybrid" if self.sync.embedder.state == "ready" else "bm25-only"
        memories: list[RecallHit] = []
        symbols: list[CodeHit] = []
        if query is not None:
            query = self._text(query, "query")
            ranked, _, mode, _ = self._retrieve(query, SearchFilter(), CONTEXT_MEMORIES + len(shown), session, None)
            ranked = [r for r in ranked if r.memory.id not in shown][:CONTEXT_MEMORIES]
            memories = self._hits(ranked)
            if record_access:
                self._touch([r.seq for r in ranked])
            if self.code is not None and self.code.search.is_open:  # a pack never waits for the code index to open
                found = self.code.search_code(query, CONTEXT_SYMBOLS).results
                symbols = [hit for hit in found if hit.relevance >= self.ranking.floor]
        turns = self.journal.recent_turns(session, self._recent_turns(session, gists)) if session else []
        shown |= {hit.id for hit in memories}
        sections += query_sections(query or "", gists, memories, symbols, [t for t in turns if t.id not in shown], session)
        pack = assemble(sections, token_budget, self.tokens)
        return ContextResult(
            text=pack.text, tokens=pack.tokens, token_budget=token_budget, sections=pack.sections, ids=pack.ids,
            left_out=pack.left_out, mode=mode,
        )  # fmt: skip

    def summarize_session(
        self, session: str, max_tokens: int = 600, writer: Writer | None = None, why_not: str | None = None
    ) -> GistResult:
        """The session's gist, written by `writer` (the client's model) when given, else extractively."""
        return self.gists.summarize(self._labels([session], "session")[0], max_tokens, writer, why_not)

    def _recent_turns(self, session: str, gists: list[Memory]) -> int:
        """8 recent turns; for a long session with a gist, the turns newer than its gist (at least 3, at most 8)."""
        if not any(g.session == session for g in gists) or not self.gists.is_long(session):
            return CONTEXT_TURNS
        uncovered = self.gists.uncovered_turns(session) or 0
        return min(max(uncovered, CONTEXT_TURNS_COMPACTED), CONTEXT_TURNS)

    def session_start(self) -> Pack:
        """The pack without a query, capped for the server's instructions; cached on disk across starts.

        After the stable part comes the newest session gist: what happened last time rides into the next session.
        """
        forgets = self.journal.forget_count()
        sections = stable_sections(self.project_context.read(), self.paths.project_context, self.journal.pinned())
        sections += query_sections("", self.gists.for_context(None), [], [], [], None)
        key = cache_key(sections, self.limits.instructions_tokens)
        if (cached := self.pack_cache.get(key)) is not None:
            return cached
        pack = assemble(sections, self.limits.instructions_tokens, self.tokens)
        if self.journal.forget_count() == forgets:  # a forget meanwhile may have erased text this pack quotes
            self.pack_cache.put(key, pack)
        return pack

    # -- backup -------------------------------------------------------------------

    def export(self, out: TextIO) -> ExportHeader:
        """Write every memory, tombstones included, as JSON lines (see `backup`)."""
        memories = self.journal.dump()
        tombstones = sum(memory.deleted_at is not None for memory in memories)
        header = ExportHeader(
            format=FORMAT,
            version=VERSION,
            exported_at=utc_now(),
            journal_id=self.journal.journal_id(),
            memories=len(memories) - tombstones,
            tombstones=tombstones,
        )
        write_export(header, memories, out)
        return header

    def import_export(self, lines: Iterable[str]) -> Restored:
        """Read an export back in; the whole file is checked before anything is written, and secrets in it are
        redacted as `remember` would (an export from a ledger with redaction off may hold them)."""
        _, memories = read_export(lines)
        redacted = 0
        if self.quality.redact:
            for n, memory in enumerate(memories):
                if (found := redact(memory.text)).count:
                    memories[n] = memory.model_copy(update={"text": found.text})
                    redacted += found.count
        restored = self.journal.restore(memories)
        restored.redacted = redacted
        return restored

    # -- resources, status --------------------------------------------------------

    def project_context_text(self) -> str:
        return self.project_context.read() or missing_context_text(self.paths.project_context)

    def pinned_text(self) -> str:
        pinned = self.journal.pinned()
        return "\n\n".join(render_memory(m) for m in pinned) or "No pinned memories. Pin one with the `pin` tool."

    def reindex(self) -> int:
        return self.sync.rebuild()

    def stale_memories(self) -> list[StaleMemory]:
        changes = self._anchor_changes(self.journal.anchors())
        return [StaleMemory(id=memory_id, changed=changed) for memory_id, changed in changes.items()][:MAX_STALE_LISTED]

    def status(self) -> Status:
        counts = self.journal.counts()
        journal_rev = self.journal.rev()
        embedder = self.sync.embedder
        state: str = self.sync.state()
        index = self.sync.index(timeout=0) if state == "ready" else None
        figures = self.sync.figures(timeout=2.0) if index else (0, 0)
        if figures is None:  # a rebuild holds the index; report what is known without waiting for it
            state, figures = "busy", (0, 0)
        indexed_rev, points = figures
        return Status(
            version=version(),
            root=str(self.paths.root),
            data_dir=str(self.paths.data_dir),
            journal=str(self.journal.path),
            counts=counts.by_kind,
            pinned=counts.pinned,
            superseded=counts.superseded,
            forgotten=counts.forgotten,
            project_context=str(self.paths.project_context) if self.paths.project_context.exists() else None,
            session_start_cut=self.session_start().truncated,
            index=IndexStatus(
                backend=index.backend if index else "unknown",
                location=index.location if index else str(self.paths.index_dir),
                state=state,
                indexed_rev=indexed_rev,
                journal_rev=journal_rev,
                lag=max(journal_rev - indexed_rev, 0) if state != "busy" else 0,
                points=points,
                missing_embeddings=self.journal.count_missing_embeddings(embedder.identity),
                events=[*self.sync.events, *([f"open failed: {self.sync.open_error}"] if self.sync.open_error else [])],
                compaction=self.sync.compaction_state(),
            ),
            embedding=EmbeddingStatus(model=embedder.identity, state=embedder.state, detail=embedder.detail),
            stale=self.stale_memories(),
            gists=self.gists.status(),
            code=self.code.status() if self.code is not None else None,
        )


_HIT_FIELDS = set(RecallHit.model_fields) - {"score", "relevance", "outdated_by", "stale", "changed", "source_of"}


def _hit(memory: Memory, changed: list[str], ranked: Ranked | None = None, source_of: str | None = None) -> RecallHit:
    return RecallHit(
        **memory.model_dump(include=_HIT_FIELDS),
        score=round(ranked.score, 6) if ranked else None,
        relevance=round(ranked.relevance, 4) if ranked else None,
        outdated_by=ranked.outdated_by if ranked else None,
        stale=bool(changed),
        changed=changed,
        source_of=source_of,
    )


def _explained(ranked: Ranked, fate: Fate, collapsed_into: str | None = None) -> ExplainedHit:
    memory, sources = ranked.memory, ranked.sources
    return ExplainedHit(
        **memory.model_dump(include={"id", "text", "kind", "tags", "session", "created_at", "pinned", "superseded_by"}),
        outdated_by=ranked.outdated_by,
        dense=sources.dense,
        dense_rank=sources.dense_rank,
        bm25=sources.bm25,
        bm25_rank=sources.bm25_rank,
        coverage=sources.coverage,
        relevance=ranked.relevance,
        fused=sources.fused,
        boosts=dict(sources.boosts),
        score=ranked.score,
        fate=fate,
        collapsed_into=collapsed_into,
    )


def render_results(results: list[RecallHit]) -> str:
    return "\n\n".join(render_hit(hit) for hit in results)
