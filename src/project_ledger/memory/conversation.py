"""The conversation, recorded by a client's lifecycle hooks: prompts and replies become turns, relevant memories
are handed to the agent before it answers, and past transcripts can be imported.

`Conversation` handles one `HookEvent` (`hooks/event.py`) on a project's ledger, whichever client's adapter read it
(`hooks/clients/`); it reads Claude Code transcripts with `memory/transcript.py` and chooses what a prompt gets with
`memory/hook_injection.py`. Nothing here knows how it is called: the CLI decides that a hook never fails the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from project_ledger.errors import InvalidArgument, LedgerError
from project_ledger.hooks.event import HookEvent
from project_ledger.memory.hook_injection import choose_injection, render_injection
from project_ledger.memory.transcript import read_transcript, transcript_session
from project_ledger.search.index import SearchFilter
from project_ledger.session_packs import AGAIN, hand, handed
from project_ledger.text.text_signals import searchable_words
from project_ledger.text.tokens import TokenEstimate

if TYPE_CHECKING:
    from project_ledger.memory.service import LedgerService

log = logging.getLogger(__name__)

ESTIMATE = TokenEstimate()  # what a hook counts tokens with: never the encoding, which a hook process would load


@dataclass(frozen=True)
class HookParams:
    start_tokens: int = 1500  # the session-start pack (LEDGER_HOOK_START_TOKENS)
    inject_tokens: int = 400  # memories injected into a prompt; 0 turns injection off (LEDGER_HOOK_INJECT_TOKENS)
    inject_floor: float = 0.5  # relevance a memory needs to be injected (LEDGER_HOOK_INJECT_FLOOR)
    record: bool = True  # store prompts and replies as turns (LEDGER_HOOK_RECORD)
    gist_tokens: int = 600


@dataclass
class Outcome:
    """What one hook call did, for its log line; `context` is what the agent gets."""

    context: str | None = None
    stored: int = 0
    injected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    handed: list[str] = field(default_factory=list)  # the memories a session-start pack in `context` holds


class Conversation:
    """The hooks' work on one project's ledger. `open_index` opens this process's search index (BM25 is enough: a
    hook never loads the embedding model)."""

    def __init__(self, ledger: LedgerService, params: HookParams, open_index: Callable[[], None]) -> None:
        self.ledger = ledger
        self.journal = ledger.journal
        self.params = params
        self._open_index = open_index

    def handle(self, event: HookEvent) -> Outcome:
        if event.name == "SessionStart":
            return self.session_start(event)
        if event.name == "UserPromptSubmit":
            return self.prompt(event)
        outcome = Outcome()
        transcript = event.reply_transcript
        if event.name == "SubagentStop" and transcript is not None and not transcript.exists():
            outcome.notes.append("the subagent left no transcript")  # a compaction's summarizer writes none (2.1.332)
        elif self.params.record:
            outcome.stored = self.store_reply(event)
        if event.rolls_gist:
            outcome.notes.append(self.write_gist(event.session))
        return outcome

    def store_reply(self, event: HookEvent) -> int:
        """The agent's reply as the client handed it over, else what its transcript added since it was last read;
        how many turns were new."""
        if event.reply is not None:
            if not event.reply.strip():
                return 0
            return int(self.ledger.remember(event.reply, kind="turn", session=event.session, role="assistant").created)
        transcript = event.reply_transcript
        return self.record(event.session, transcript, roles=("assistant",)) if transcript is not None else 0

    def session_start(self, event: HookEvent) -> Outcome:
        """The session-start pack, once per session (`session_packs`): nothing when the session is continued or
        resumed (its history holds the pack), the pack again after a compaction or a /clear (which dropped it)."""
        data_dir = self.ledger.paths.data_dir
        if event.source not in AGAIN and handed(data_dir, event.session) is not None:
            return Outcome(notes=["the session was handed its pack before"])
        outcome = self.start_pack(event)
        if outcome.context and not hand(data_dir, event.session, event.source, outcome.handed):
            return Outcome(notes=["the session was handed its pack before"])
        return outcome

    def start_pack(self, event: HookEvent) -> Outcome:
        """The session-start pack, whoever it is for; after a compaction it leads with this session's gist, which
        compaction did not drop."""
        budget = self.params.start_tokens
        if budget <= 0:  # turned off (LEDGER_HOOK_START_TOKENS=0)
            return Outcome()
        lead, handed_ids = "", []
        if event.source == "compact" and (gist := next(iter(self.journal.gists(event.session)), None)):
            lead = f"This session so far (its gist in the project ledger, {gist.id}):\n{gist.text}\n\n"
            budget -= ESTIMATE.count(lead)
            handed_ids.append(gist.id)
        if budget < 100:  # the pack's smallest budget; the gist alone fills what there is
            return Outcome(context=lead.strip() or None, handed=handed_ids)
        pack = self.ledger.context(None, token_budget=budget, tokens=ESTIMATE, leave_out=handed_ids)
        return Outcome(context=(lead + pack.text).strip() or None, handed=[*handed_ids, *pack.ids])

    def prompt(self, event: HookEvent) -> Outcome:
        """Store the prompt as a turn, then inject what clears the hook's floor, or nothing."""
        assert event.prompt is not None
        outcome = Outcome()
        said: list[str] = []  # the prompt just stored, and what was captured from it (or matched what it says)
        inject = self.params.inject_tokens > 0 and event.prompt.strip()
        if inject:
            self._open_index()  # before the write, so the turn's captured memories get their near-duplicate check
        if self.params.record and event.prompt.strip():
            result = self.ledger.remember(event.prompt, kind="turn", session=event.session, role="user")
            said, outcome.stored = [result.id, *(c.id for c in result.captured)], int(result.created)
        if not inject:
            return outcome
        retrieval = self.ledger.retrieval
        query = retrieval.validate.text(event.prompt, "prompt")
        # BM25 alone, also in a server whose model is loaded: the floor is a share of the prompt's terms.
        ranked = retrieval.retrieve(query, SearchFilter(), k=8, session=event.session, floor=self.params.inject_floor, lexical=True).ranked
        # Already in front of the agent: the prompt and what it says, what the session's start pack held, its own gist.
        shown = [*said, *(handed(self.ledger.paths.data_dir, event.session) or [])]
        shown += [gist.id for gist in self.journal.gists(event.session)]
        chosen = choose_injection(retrieval.hits(ranked), session=event.session, floor=self.params.inject_floor, exclude=shown)
        if injection := render_injection(chosen, self.params.inject_tokens, ESTIMATE.count, searchable_words(query)):
            outcome.context, outcome.injected = injection.text, injection.ids
        return outcome

    def record(self, session: str, transcript: Path, roles: Sequence[str], *, import_dates: bool = False) -> int:
        """Store what `transcript` added since it was last read into `session`; returns how many turns were new.

        The offset moves only past complete lines, and only after their turns are stored: a turn is never lost,
        and one stored again after a crash is caught by the journal (same text, same session).
        """
        key = str(transcript.expanduser().resolve())
        offset = self.journal.transcript_offset(session, key)
        with transcript.open("rb") as handle:
            size = handle.seek(0, 2)
            if size < offset:  # rewritten or cut: read it again; the journal keeps anything already stored once
                offset = 0
            handle.seek(offset)
            data = handle.read()
        chunk = read_transcript(data, 0, roles)
        stored = 0
        for turn in chunk.turns:
            try:
                result = self.ledger.remember(
                    turn.text, kind="turn", session=session, role=turn.role, said_at=turn.said_at if import_dates else None
                )
            except InvalidArgument as exc:  # too long for a memory, say: that turn is skipped, not the rest
                log.warning("%s: a %s turn was not stored: %s", transcript, turn.role, exc)
                continue
            stored += int(result.created)
        if chunk.end:
            self.journal.set_transcript_offset(session, key, offset + chunk.end)
        if chunk.unreadable:
            log.warning("%s: %d lines were not JSON and were skipped", transcript, chunk.unreadable)
        return stored

    def write_gist(self, session: str) -> str:
        """Write or roll forward the session's gist, extractively (a hook has no model to sample)."""
        try:
            gist = self.ledger.summarize_session(session, self.params.gist_tokens, why_not="written by a client hook")
        except InvalidArgument as exc:  # a session with nothing stored has no gist to write
            return f"no gist: {exc}"
        return f"gist {gist.id} ({'new' if gist.created else 'unchanged'})"

    def import_transcripts(
        self, files: Sequence[Path], gists: bool, progress: Callable[[str, int, int | None], None]
    ) -> TranscriptImport:
        """Read past transcripts into the ledger with their dates, then roll forward the gist of each session that
        got new turns. A transcript's session is the one its lines name, else its file's name."""
        done = TranscriptImport(files=len(files))
        for count, path in enumerate(files):
            progress("importing transcripts", count, len(files))
            session = transcript_session(path)
            try:
                stored = self.record(session, path, ("user", "assistant"), import_dates=True)
            except OSError as exc:
                raise LedgerError(f"cannot read {path}: {exc.strerror or exc}") from None
            done.new_turns[session] = done.new_turns.get(session, 0) + stored
        progress("importing transcripts", len(files), len(files))
        if gists:
            for count, (session, stored) in enumerate(done.new_turns.items()):
                progress("writing gists", count, len(done.new_turns))
                if stored:
                    done.gists[session] = self.write_gist(session)
        return done


@dataclass
class TranscriptImport:
    """What `import-transcripts` did: files read, new turns per session, and each written gist's note."""

    files: int
    new_turns: dict[str, int] = field(default_factory=dict)
    gists: dict[str, str] = field(default_factory=dict)
