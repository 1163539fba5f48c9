"""The ledger service: remember, recall, context, history, pin, forget and status.

It knows nothing of MCP or the CLI; both call these methods (the MCP tools from
a worker thread, since everything here is synchronous). The journal is written
first and is the truth; the index follows it through `IndexSync`. Recall, and
the ranked memories of a context pack, come from `Recall`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import Any, TextIO

from project_ledger.code.links import CodeAnchors, describe
from project_ledger.code.service import CodeService
from project_ledger.config import ProjectPaths
from project_ledger.errors import IndexUnavailable, InvalidArgument, MemoryForgotten
from project_ledger.memory.capture import propose
from project_ledger.memory.context_pack import Pack, PackCache, PackSection, assemble, cache_key
from project_ledger.memory.context_sections import query_sections, render_memory, stable_sections
from project_ledger.memory.gist_sampling import Writer
from project_ledger.memory.project_context import ProjectContextFile, missing_context_text, placeholder_count
from project_ledger.memory.recall import Recall
from project_ledger.memory.restatement import RestatementCheck
from project_ledger.memory.session_gists import SessionGists
from project_ledger.memory.validation import Limits, Validator, parse_moment
from project_ledger.models import (
    Ack,
    Captured,
    CodeHit,
    ContextResult,
    EmbeddingStatus,
    ForgetPreview,
    ForgetResult,
    GistResult,
    HistoryResult,
    IndexStatus,
    ListedMemory,
    Memory,
    MemoryDetail,
    MemoryLink,
    MemoryPage,
    RecallHit,
    Relation,
    RememberResult,
    StaleMemory,
    Status,
)
from project_ledger.search.index import SearchFilter
from project_ledger.search.tuning import RankingParams
from project_ledger.start_pack import discard as discard_kept_start
from project_ledger.storage.backup import FORMAT, VERSION, ExportHeader, read_export, write_export
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Anchor, Journal, Restored, iso_utc, utc_now
from project_ledger.text.dialogue_act import dialogue_act
from project_ledger.text.injection import looks_like_instructions
from project_ledger.text.redaction import Scrubber
from project_ledger.text.text_signals import content_words, specifics
from project_ledger.text.tokens import AsJsonString, TokenBound, TokenCounter

log = logging.getLogger(__name__)

MAX_LINKS = 100  # files and symbols a memory may name
MIN_CONTEXT_TOKENS = 100
CONTEXT_MEMORIES = 12
CONTEXT_SYMBOLS = 6
CONTEXT_TURNS = 8
CONTEXT_TURNS_COMPACTED = 3  # a long session with a gist: the gist and retrieved turns carry the rest
CONTEXT_ENVELOPE_TOKENS = 20  # a context result's fields besides its text, as handed to a model: {"text":...,"tokens":N,...}
MAX_STALE_LISTED = 50
RESERVED_TAGS = frozenset({"captured", "gist"})
NEAR_DUPLICATE_CANDIDATES = 5
RESTATED_KINDS = ("constraint", "decision", "definition")  # what a captured sentence may only restate
INDEX_FIRST_SECONDS = 10.0  # the longest the code index and the tokenizer wait for the memory index to open


@dataclass(frozen=True, kw_only=True)
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


class LedgerService:
    def __init__(
        self,
        *,
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
        self.validate = Validator(limits)
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
        self.retrieval = Recall(journal=journal, sync=sync, anchors=self.anchors, tokens=tokens, limits=limits, params=ranking)
        # The entry points' names for the retrieval's own methods: recall, and the recall debugger's explanation.
        self.recall = self.retrieval.recall
        self.explain_recall = self.retrieval.explain
        self._closing = threading.Lock()
        self._closed = False
        self._released = threading.Event()  # the start-up's heavy part may go on
        self._hold_seconds = 0.0

    def start(self, hold_seconds: float = 0.0) -> None:
        """Background start-up for a long-running server: the index and model, and the tokenizer's
        half-second load, all kept off the first request.

        The memory index opens first, on its own: a prompt hook the server answers as its session starts waits for
        it, and the code scan, the file watcher and the tokenizer's load begun beside it made that take a second
        instead of a tenth of one. Then, for up to `hold_seconds` or until `release_start`, the rest waits (the
        model's load, the code index, the tokenizer): a server whose client runs the ledger's prompt hook gets that
        hook within a second or two of its start, and answers it on an otherwise idle process."""
        self._hold_seconds = hold_seconds
        if hold_seconds <= 0:
            self._released.set()
        self.sync.start(before_model=self._held)
        threading.Thread(target=self._start_after_index, name="ledger-start", daemon=True).start()

    def release_start(self) -> None:
        """The first hook or tool call is answered (or one is waiting): the start-up's held part goes on."""
        self._released.set()

    def _held(self) -> None:
        self._released.wait(self._hold_seconds)

    def _start_after_index(self) -> None:
        self.sync.opened(INDEX_FIRST_SECONDS)
        self._held()
        with self._closing:
            if self._closed:
                return
            if self.code is not None:
                self.code.start()
        self.tokens.count("warm up")

    def close(self) -> None:
        with self._closing:
            self._closed = True
        self._released.set()
        self.gists.close()
        if self.code is not None:
            self.code.close()
        self.sync.stop()
        self.journal.close()

    def require_code(self) -> CodeService:
        if self.code is None:
            raise InvalidArgument("the code index is turned off (LEDGER_CODE_INDEX=false)")
        return self.code

    def index_ready(self) -> bool:
        """Whether the search index is open, so that a write gets its near-duplicate check (`remember` skips it, and
        says so, while the index opens)."""
        return self.sync.state() == "ready"

    # -- writes ----------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "note",
        tags: list[str] | None = None,
        session: str | None = None,
        role: str | None = None,
        files: list[str] | None = None,
        symbols: list[str] | None = None,
        pinned: bool = False,
        supersedes: str | None = None,
        said_at: str | None = None,
    ) -> RememberResult:
        """Store a memory, unless it is already there.

        `said_at` (ISO 8601) dates a turn said earlier than now, as an imported transcript's are; recency ranks
        by it.

        Turns are records of a conversation and are stored as said. Other kinds
        are compared with project_context.md and with live memories of the same
        kind. Both checks are lexical: the model never runs while `remember`
        answers; the background worker embeds the new memory.
        """
        text, kind = self.validate.text(text), self.validate.kind(kind)
        tags = self.validate.labels(tags or [], "tags", self.limits.max_tags)
        if reserved := sorted(RESERVED_TAGS.intersection(tags)):
            raise InvalidArgument(f"the tags {', '.join(reserved)} are reserved: the ledger sets them on captured memories and gists")
        session, role = self.validate.label(session, "session"), self.validate.label(role, "role")
        files = self.validate.labels(files or [], "files", MAX_LINKS)
        symbols = self.validate.labels(symbols or [], "symbols", MAX_LINKS)
        notes: list[str] = []
        secrets: dict[str, Any] = {}
        if self.quality.redact:
            scrub = Scrubber()
            text, tags, files, symbols = scrub(text), scrub.each(tags), scrub.each(files), scrub.each(symbols)
            session, role = scrub.optional(session), scrub.optional(role)
            secrets = {"redacted": scrub.count, "redacted_types": dict(scrub.found)}
            if scrub.cut_short:
                notes.append("the secret scan was cut short on this text, so it was redacted around every secret-like word")
        created_at = iso_utc(parse_moment(said_at, "said_at")) if said_at is not None else None
        restated = self.restatement.check(text) if kind != "turn" else None
        if restated is not None and self.quality.reject_restated:
            raise InvalidArgument(
                f"not stored: this only restates project_context.md (section {restated.section!r}: {restated.block[:120]!r}). "
                "Edit the file instead, or store what is new (LEDGER_REJECT_RESTATED_CONTEXT=false allows it)."
            )
        if kind != "turn" and supersedes is None and self.sync.state() != "ready":
            why = "still opening" if self.sync.state() == "opening" else f"unavailable ({self.sync.open_error})"
            notes.append(f"near-duplicate check skipped: the search index is {why}")
        elif kind != "turn" and supersedes is None:
            duplicate = self._near_duplicate(text, kind)
            if duplicate is not None:
                _, twin, overlap = duplicate
                self.journal.touch([twin.id])
                if pinned and not twin.pinned:
                    self.pin(twin.id)
                return RememberResult(
                    id=twin.id, created=False, duplicate_of=twin.id, similarity=round(overlap, 4), **secrets,
                    suspicious=twin.suspicious,
                    note=f"a live {kind} already says this ({overlap:.0%} of the words, the same numbers and names); "
                    "its access data was refreshed",
                )  # fmt: skip
        anchors, link_notes = self.anchors.resolve(text, files, symbols)
        memory_id, created = self.journal.insert(
            text=text, kind=kind, tags=tags, session=session, role=role, files=files, symbols=symbols, pinned=pinned,
            supersedes=supersedes, anchors=anchors, created_at=created_at,
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
            suspicious=looks_like_instructions(text),
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
        memory of its kind already says, or that a decision, definition or constraint already holds (the agent
        answering "Retries back off 0.5 s, at most 4 tries" restates the decision it was asked for), is not stored
        again."""
        found = []
        for proposal in propose(text):
            twin = self._near_duplicate(proposal.text, proposal.kind, restating=True) if self.sync.state() == "ready" else None
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

    def _near_duplicate(self, text: str, kind: str, *, restating: bool = False) -> tuple[int, Memory, float] | None:
        """A live, current memory of `kind` that says the same thing: the best BM25 matches whose content words
        overlap this text's by the threshold (Jaccard) and whose numbers, identifiers and negations are the same.
        With `restating`, also a decision, definition or constraint holding the threshold's share of this text's
        content words and all its numbers, identifiers and negations: the text says nothing it does not.

        A write never waits on the index: if it is unavailable, the memory is stored unchecked.
        """
        kinds = sorted({kind, *RESTATED_KINDS}) if restating else [kind]
        try:
            found = self.sync.candidates(text, None, SearchFilter(kinds=kinds), NEAR_DUPLICATE_CANDIDATES)
        except IndexUnavailable as exc:
            log.warning("near-duplicate check skipped: %s", exc)
            return None
        memories = self.journal.get_by_seqs([hit.seq for hit in found.sparse])
        words, own = content_words(text), specifics(text)
        for hit in found.sparse:
            memory = memories.get(hit.seq)
            if memory is None:
                continue
            theirs, their_specifics = content_words(memory.text), specifics(memory.text)
            overlap = len(words & theirs) / len(words | theirs) if words | theirs else 1.0
            if memory.kind == kind and their_specifics == own and overlap >= self.quality.near_duplicate:
                return hit.seq, memory, overlap
            held = len(words & theirs) / len(words) if words else 1.0
            if restating and memory.kind in RESTATED_KINDS and own <= their_specifics and held >= self.quality.near_duplicate:
                return hit.seq, memory, overlap
        return None

    def pin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, True)
        self.retrieval.touch([memory_id])  # pinning is use, as a fetch by id is
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def unpin(self, memory_id: str) -> Ack:
        self.journal.set_pinned(memory_id, False)
        self.sync.kick()
        return Ack(id=memory_id, ok=True)

    def forget(self, memory_id: str) -> ForgetResult:
        """Scrub the journal row; searches skip it from then on, and the index drops it at its next catch-up.

        Memories derived from it go too (see `Journal.forget`), and so do the session-start packs kept for the
        server and for the hooks, which may quote a pinned text or a gist.
        """
        derived = self.journal.forget(memory_id)
        self.pack_cache.clear()
        discard_kept_start(self.paths.data_dir)
        self.sync.kick()
        return ForgetResult(id=memory_id, ok=True, also_forgotten=derived)

    def forget_preview(self, memory_id: str) -> ForgetPreview:
        """What `forget` would erase, for a confirmation that shows it; `MemoryNotFound` for an unknown id."""
        memory = self.journal.get(self.validate.label(memory_id, "id") or memory_id)
        return ForgetPreview(memory=memory, also=self.journal.derived(memory.id) if memory.deleted_at is None else [])

    def history(self, memory_id: str) -> HistoryResult:
        chain = self.journal.history(self.validate.label(memory_id, "id") or memory_id)
        return HistoryResult(id=memory_id, current=chain[-1].id, chain=chain)

    # -- browsing (the web inspector) --------------------------------------------

    def browse(
        self,
        *,
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
            kind=self.validate.kind(kind) if kind else None,
            tag=self.validate.label(tag, "tag"),
            session=self.validate.label(session, "session"),
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
        memory = self.journal.get(self.validate.label(memory_id, "id") or memory_id)
        settle = partial(self.journal.settle_anchor, memory.id)
        links = [
            MemoryLink(
                target=anchor.target, name=anchor.name if anchor.target == "symbol" else None,
                description=describe(anchor), changed=next(iter(self.anchors.changes([anchor], settle)), None),
            )  # fmt: skip
            for anchor in self.journal.anchors([memory.id]).get(memory.id, [])
        ]
        return MemoryDetail(
            memory=memory,
            history=self.journal.history(memory.id),
            links=links,
            relations=related(self.journal.relations(memory.id)),
        )

    # -- context packs -----------------------------------------------------------

    def context(
        self,
        query: str | None = None,
        token_budget: int = 4000,
        *,
        session: str | None = None,
        tokens: TokenCounter | None = None,
        leave_out: Collection[str] = (),
    ) -> ContextResult:
        """One block within `token_budget`: project context, pins, then (for a query) the memories and code
        it needs, then the session's latest turns. Being put in a pack is not use: access stats stay as they
        were (see `Recall.touch`). `tokens` counts instead of the ledger's tiktoken counter (a hook's estimate);
        the gists in `leave_out` are left out (the hook's pack after a compaction leads with the session's own)."""
        if not MIN_CONTEXT_TOKENS <= token_budget <= self.limits.max_result_tokens:
            raise InvalidArgument(
                f"token_budget={token_budget} is out of range: give {MIN_CONTEXT_TOKENS} to {self.limits.max_result_tokens} "
                "(LEDGER_MAX_RESULT_TOKENS)"
            )
        session = self.validate.label(session, "session")
        pinned = self.journal.pinned()
        sections = stable_sections(self.project_context.read(), self.paths.project_context, pinned)
        # A question alone gets what is relevant to it; a session (or a session start) also gets the gists.
        gists = self.gists.for_context(session) if session is not None or query is None else []
        gists = [gist for gist in gists if gist.id not in leave_out]
        shown = {m.id for m in (*pinned, *gists)}
        mode = self.retrieval.mode()
        memories: list[RecallHit] = []
        symbols: list[CodeHit] = []
        if query is not None:
            query = self.validate.query(query)
            ranked, _, mode, _ = self.retrieval.retrieve(query, SearchFilter(), k=CONTEXT_MEMORIES + len(shown), session=session)
            # Only what states something: an earlier question, an "ok" or a tool's log line answers nothing here.
            ranked = [r for r in ranked if r.memory.id not in shown and dialogue_act(r.memory.text) == "statement"][:CONTEXT_MEMORIES]
            memories = self.retrieval.hits(ranked)
            if self.code is not None and self.code.search.is_open:  # a pack never waits for the code index to open
                found = self.code.search_code(query, CONTEXT_SYMBOLS).results
                symbols = [hit for hit in found if hit.relevance >= self.retrieval.params.floor]
        turns = self.journal.recent_turns(session, self._recent_turns(session, gists)) if session else []
        shown |= {hit.id for hit in memories}
        sections += query_sections(query or "", gists, memories, symbols, [t for t in turns if t.id not in shown], session)
        # Counted as the text reads inside the JSON a client hands its model, within what that JSON's other fields leave.
        counter = tokens or self.tokens
        pack = assemble(sections, token_budget - CONTEXT_ENVELOPE_TOKENS, AsJsonString(counter))
        result = ContextResult(
            text=pack.text, tokens=0, token_budget=token_budget, sections=pack.sections, ids=pack.ids,
            left_out=pack.left_out, mode=mode,
        )  # fmt: skip
        return result.model_copy(update={"tokens": counter.count(result.for_model_json())})

    def summarize_session(
        self, session: str, max_tokens: int = 600, *, writer: Writer | None = None, why_not: str | None = None
    ) -> GistResult:
        """The session's gist, written by `writer` (the client's model) when given, else extractively."""
        session = self.validate.labels([session], "session")[0]
        return self.gists.summarize(session, max_tokens=max_tokens, writer=writer, why_not=why_not)

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
        return self._session_start_pack(self._session_start_sections(), forgets)

    def session_start_text(self) -> str:
        """The session-start pack's text: the server's instructions, built before the MCP handshake is answered."""
        return self._session_start_outline()[0]

    def session_start_cut(self) -> bool:
        """Whether the session-start pack leaves something out (`status` says so)."""
        return self._session_start_outline()[1]

    def _session_start_outline(self) -> tuple[str, bool]:
        """The session-start pack's text and whether it is cut, without its token counts. A pack not cached yet (a new
        project; a pin, a gist or the context file changed) is not assembled with the encoding when its byte length
        fits the cap: it is then all its sections, the text `session_start` gives, and loading the encoding costs a
        tenth of a second or more (on the way to the `initialize` answer; more than the rest of `status`)."""
        forgets = self.journal.forget_count()
        sections = self._session_start_sections()
        if (cached := self.pack_cache.get(cache_key(sections, self.limits.instructions_tokens))) is not None:
            return cached.text, cached.truncated
        if not (bound := assemble(sections, self.limits.instructions_tokens, TokenBound())).truncated:
            return bound.text, False  # it fits by a count never below the encoding's, so nothing is cut
        pack = self._session_start_pack(sections, forgets)
        return pack.text, pack.truncated

    def _session_start_pack(self, sections: list[PackSection], forgets: int) -> Pack:
        """The pack of `sections`, from the cache or assembled and cached (unless something was forgotten since
        `forgets` was read: a forget meanwhile may have erased text this pack quotes)."""
        key = cache_key(sections, self.limits.instructions_tokens)
        if (cached := self.pack_cache.get(key)) is not None:
            return cached
        pack = assemble(sections, self.limits.instructions_tokens, self.tokens)
        if self.journal.forget_count() == forgets:
            self.pack_cache.put(key, pack)
        return pack

    def _session_start_sections(self) -> list[PackSection]:
        sections = stable_sections(self.project_context.read(), self.paths.project_context, self.journal.pinned())
        return sections + query_sections("", self.gists.for_context(None), [], [], [], None)

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
        scrub = Scrubber()
        if self.quality.redact:
            for n, memory in enumerate(memories):
                update = {
                    "text": scrub(memory.text), "tags": scrub.each(memory.tags), "files": scrub.each(memory.files),
                    "symbols": scrub.each(memory.symbols), "session": scrub.optional(memory.session),
                    "role": scrub.optional(memory.role),
                }  # fmt: skip
                if any(value != getattr(memory, field) for field, value in update.items()):
                    memories[n] = memory.model_copy(update=update)
        restored = self.journal.restore(memories)
        restored.redacted = scrub.count
        return restored

    # -- resources, status --------------------------------------------------------

    def project_context_text(self) -> str:
        return self.project_context.read() or missing_context_text(self.paths.project_context)

    def pinned_text(self) -> str:
        pinned = self.journal.pinned()
        return "\n\n".join(render_memory(m) for m in pinned) or "No pinned memories. Pin one with the `pin` tool."

    def stale_memories(self) -> list[StaleMemory]:
        changes = self._anchor_changes(self.journal.anchors())
        return [StaleMemory(id=memory_id, changed=changed) for memory_id, changed in changes.items()][:MAX_STALE_LISTED]

    def status(self) -> Status:
        counts = self.journal.counts()
        journal_rev = self.journal.rev()
        embedder = self.sync.embedder
        state: str = self.sync.state()
        index = self.sync.index(timeout=0) if state == "ready" else None
        recorded = self.sync.recorded if state == "not-opened" else None
        backend, location = "unknown", str(self.paths.index_dir)
        figures: tuple[int, int] | None = (0, 0)
        if index:
            backend, location, figures = index.backend, index.location, self.sync.figures(timeout=2.0)
        elif recorded:  # the CLI's status, which read what the slot recorded instead of opening it
            backend, location, figures = recorded.backend, recorded.location, (recorded.watermark, recorded.points)
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
            project_context_placeholders=placeholder_count(self.project_context.read()),
            session_start_cut=self.session_start_cut(),
            index=IndexStatus(
                backend=backend,
                location=location,
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


def related(relations: Iterable[tuple[str, str, str]]) -> list[Relation]:
    """One entry per other memory and direction, its relations joined ("cites and covers" from one gist)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for relation, other, direction in relations:
        grouped.setdefault((other, direction), []).append(relation)
    return [Relation(relation=" and ".join(names), id=other, direction=d) for (other, d), names in grouped.items()]
