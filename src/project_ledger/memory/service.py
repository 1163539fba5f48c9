"""The ledger service: remember, recall, context, history, pin, forget, import and status.

It knows nothing of MCP or the CLI; both call these methods (the MCP tools from
a worker thread, since everything here is synchronous). The journal is written
first and is the truth; the index follows it through `IndexSync`. Recall, and
the ranked memories of a context pack, come from `Recall`; reading the ledger
page by page (the inspector, export) from `MemoryBrowser` (`browsing`); the
session-start pack from `SessionStartPack` (`session_start`). The factory wires
them and hands them in, and the entry points reach them as this service's
`retrieval`, `browsing` and `session_start`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

from project_ledger.code.links import CodeAnchors
from project_ledger.config import ProjectPaths
from project_ledger.errors import IndexUnavailable, InvalidArgument, MemoryForgotten
from project_ledger.memory.browsing import MemoryBrowser
from project_ledger.memory.capture import propose
from project_ledger.memory.context_pack import assemble
from project_ledger.memory.context_sections import query_sections, render_memory, stable_sections
from project_ledger.memory.gist_sampling import Writer
from project_ledger.memory.project_context import ProjectContextFile, missing_context_text, placeholder_count
from project_ledger.memory.recall import Recall
from project_ledger.memory.restatement import RestatementCheck
from project_ledger.memory.session_gists import SessionGists
from project_ledger.memory.session_start import SessionStartPack
from project_ledger.memory.validation import Limits, Validator, parse_moment
from project_ledger.models import (
    Ack,
    Captured,
    CodeHit,
    ContextResult,
    EmbeddingStatus,
    ForgetResult,
    GistResult,
    HistoryResult,
    IndexState,
    IndexStatus,
    Memory,
    RecallHit,
    RememberResult,
    Status,
)
from project_ledger.search.index import SearchFilter
from project_ledger.storage.backup import read_export
from project_ledger.storage.index_sync import IndexSync
from project_ledger.storage.journal import Journal, Restored, iso_utc
from project_ledger.storage.search_gateway import SearchGateway
from project_ledger.text.dialogue_act import dialogue_act
from project_ledger.text.injection import looks_like_instructions
from project_ledger.text.redaction import Scrubber
from project_ledger.text.text_signals import content_words, specifics
from project_ledger.text.tokens import AsJsonString, TokenCounter, handed_count

if TYPE_CHECKING:  # the code index's modules load with the code service (`factory.open_code_service`): a hook has none
    from project_ledger.code.service import CodeService

log = logging.getLogger(__name__)

MAX_LINKS = 100  # files and symbols a memory may name
MIN_CONTEXT_TOKENS = 100
CONTEXT_MEMORIES = 12
CONTEXT_SYMBOLS = 6
CONTEXT_TURNS = 8
CONTEXT_TURNS_COMPACTED = 3  # a long session with a gist: the gist and retrieved turns carry the rest
CONTEXT_ENVELOPE_TOKENS = 20  # a context result's fields besides its text, as handed to a model: {"text":...,"tokens":N,...}
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
        gateway: SearchGateway,
        limits: Limits,
        tokens: TokenCounter,
        code: CodeService | None,
        quality: Quality,
        gists: SessionGists,
        project_context: ProjectContextFile,
        anchors: CodeAnchors,
        retrieval: Recall,
        browsing: MemoryBrowser,
        session_start: SessionStartPack,
    ) -> None:
        self.paths = paths
        self.journal = journal
        self.sync = sync
        self.gateway = gateway
        self.limits = limits
        self.validate = Validator(limits)
        self.quality = quality
        self.tokens = tokens
        self.code = code
        self.gists = gists
        self.project_context = project_context
        self.anchors = anchors
        self.restatement = RestatementCheck(project_context, quality.restated_context)
        self.retrieval = retrieval
        self.browsing = browsing
        self.session_start = session_start
        # The entry points' names for the retrieval's own methods: recall, and the recall debugger's explanation.
        self.recall = self.retrieval.recall
        self.explain_recall = self.retrieval.explain
        self._closing = threading.Lock()
        self._closed = False
        self._released = threading.Event()  # the start-up's heavy part may go on
        self._hold_seconds = 0.0

    def expect_start(self) -> None:
        """This service runs in a server, which calls `start` once its client has said hello."""
        if self.code is not None:
            self.code.expect_start()

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
            found = self.gateway.candidates(text, None, SearchFilter(kinds=kinds), NEAR_DUPLICATE_CANDIDATES)
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
        self.session_start.discard()
        self.sync.kick()
        return ForgetResult(id=memory_id, ok=True, also_forgotten=derived)

    def history(self, memory_id: str) -> HistoryResult:
        chain = self.journal.history(self.validate.label(memory_id, "id") or memory_id)
        return HistoryResult(id=memory_id, current=chain[-1].id, chain=chain)

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
            if self.code is not None and self.code.search_open():  # a pack never waits for the code index to open
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
        return result.model_copy(update={"tokens": handed_count(counter, result.for_model_json())})

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

    # -- import (the export is `browsing.export`) -----------------------------------

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

    def status(self) -> Status:
        counts = self.journal.counts()
        journal_rev = self.journal.rev()
        embedder = self.sync.embedder
        state: IndexState = self.sync.state()
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
            session_start_cut=self.session_start.cut(),
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
            stale=self.browsing.stale_memories(),
            gists=self.gists.status(),
            code=self.code.status() if self.code is not None else None,
        )
