"""The conversation, recorded by the client's lifecycle hooks: prompts and replies become turns, relevant memories
are handed to the agent before it answers, and past transcripts can be imported.

Checked against Claude Code 2.1.332 (its hooks reference and a real run, see the README): every hook gets
`session_id`, `transcript_path`, `cwd` and `hook_event_name` as JSON on stdin; SessionStart adds `source`
(startup, resume, clear, compact), UserPromptSubmit `prompt`, SessionEnd `reason`, PreCompact `trigger`. Context
goes back as `{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}` on stdout. The transcript
is JSON lines: `user` lines (a string, or text, image and `tool_result` blocks), `assistant` lines (text,
`tool_use` and thinking blocks; one line per block, sharing `message.id`), and many other types that are skipped.

The pure parts (reading hook input and transcripts, choosing what to inject) are functions; `Conversation` wires
them to the ledger. Nothing here knows how it is called: the CLI decides that a hook never fails the agent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from project_ledger.errors import InvalidArgument, LedgerError
from project_ledger.models import RecallHit
from project_ledger.search.index import SearchFilter
from project_ledger.session_packs import AGAIN, hand, handed
from project_ledger.text.dialogue_act import TOOL_PREFIX, dialogue_act, is_plumbing
from project_ledger.text.excerpt import excerpt
from project_ledger.text.injection import attribute, defang
from project_ledger.text.text_signals import searchable_words
from project_ledger.text.tokens import TokenEstimate

if TYPE_CHECKING:
    from project_ledger.memory.service import LedgerService

log = logging.getLogger(__name__)

EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact", "SessionEnd")
TOOL_LINE_CHARS = 160  # a tool call is stored as one short line: its name and what it worked on
INJECTED_TEXT_TOKENS = 70  # longest excerpt of one memory in an injection
MAX_INJECTED = 4
ESTIMATE = TokenEstimate()  # what a hook counts tokens with: never the encoding, which a hook process would load
# The input field that best says what a tool call worked on, in order of preference.
TOOL_TARGETS = ("file_path", "notebook_path", "path", "command", "pattern", "url", "query", "description", "prompt")


class HookInputError(InvalidArgument):
    """The hook's input is not what the client documents."""


@dataclass(frozen=True)
class HookEvent:
    """One hook call: the fields every event has, and the event's own."""

    name: str
    session: str
    cwd: Path
    transcript: Path | None
    source: str | None = None  # SessionStart: startup, resume, clear or compact
    prompt: str | None = None  # UserPromptSubmit
    agent_transcript: Path | None = None  # SubagentStop, where the client names the subagent's own transcript
    reply: str | None = None  # AgentResponse (Cursor's afterAgentResponse): the agent's message, when no transcript is read


def parse_event(payload: Any) -> HookEvent:
    """The hook input as documented; anything else is `HookInputError`, naming what is wrong."""
    if not isinstance(payload, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(payload).__name__}")

    def text(key: str, required: bool = True) -> str | None:
        value = payload.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            raise HookInputError(f"hook input field {key!r} must be a non-empty string")
        return value

    name, session, cwd = text("hook_event_name"), text("session_id"), text("cwd")
    assert name is not None and session is not None and cwd is not None
    if name not in EVENTS:
        raise HookInputError(f"hook event {name!r} is not handled; configure the ledger's hook for {', '.join(EVENTS)}")
    transcript, agent = text("transcript_path", required=False), text("agent_transcript_path", required=False)
    return HookEvent(
        name=name,
        session=session,
        cwd=Path(cwd),
        transcript=Path(transcript) if transcript else None,
        source=text("source", required=False),
        prompt=text("prompt", required=name == "UserPromptSubmit"),
        agent_transcript=Path(agent) if agent else None,
    )


CURSOR_EVENTS = {"beforeSubmitPrompt": "UserPromptSubmit", "afterAgentResponse": "AgentResponse", "stop": "SessionEnd"}


def parse_cursor_event(payload: Any) -> HookEvent:
    """A Cursor hook's input (`.cursor/hooks.json`): `conversation_id` is the session, the first of
    `workspace_roots` the project. beforeSubmitPrompt carries `prompt`, afterAgentResponse `text`; `stop` ends a
    turn of the agent loop, and rolls the session's gist forward."""
    if not isinstance(payload, dict):
        raise HookInputError(f"hook input must be a JSON object, not {type(payload).__name__}")
    name, session, roots = payload.get("hook_event_name"), payload.get("conversation_id"), payload.get("workspace_roots")
    if name not in CURSOR_EVENTS:
        raise HookInputError(f"Cursor hook event {name!r} is not handled; configure the ledger's hook for {', '.join(CURSOR_EVENTS)}")
    if not isinstance(session, str) or not session.strip():
        raise HookInputError("hook input field 'conversation_id' must be a non-empty string")
    if not isinstance(roots, list) or not roots or not isinstance(roots[0], str):
        raise HookInputError("hook input field 'workspace_roots' must list the workspace's folders")
    field_name = {"beforeSubmitPrompt": "prompt", "afterAgentResponse": "text"}.get(name)
    text = payload.get(field_name) if field_name else None
    if field_name and not isinstance(text, str):
        raise HookInputError(f"hook input field {field_name!r} must be a string")
    return HookEvent(
        name=CURSOR_EVENTS[name], session=session, cwd=Path(roots[0]), transcript=None,
        prompt=text if name == "beforeSubmitPrompt" else None, reply=text if name == "afterAgentResponse" else None,
    )  # fmt: skip


def hook_output(event: str, context: str | None) -> str:
    """What the hook prints: the context to add for the event, or nothing at all."""
    if not context:
        return ""
    # ASCII escapes: valid JSON whatever encoding the client gave this process's stdout.
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


# -- transcripts ---------------------------------------------------------------------


@dataclass(frozen=True)
class SpokenTurn:
    role: str  # user or assistant
    text: str
    said_at: str | None
    session: str | None
    subagent: bool = False


@dataclass
class TranscriptChunk:
    """Turns read from a transcript, and the byte offset just past the last complete line they came from."""

    turns: list[SpokenTurn] = field(default_factory=list)
    end: int = 0
    unreadable: int = 0  # complete lines that were not JSON


def tool_line(block: dict[str, Any]) -> str | None:
    """A tool call as one short line: `[tool] Name: what it worked on`; its output is never stored. None for
    plumbing (`dialogue_act.is_plumbing`): loading tools, the agent's scratch list, the ledger's own calls.

    What is left says what happened to the project (a test run, a file read or edited, a search, a subagent's
    task), which a later session may ask about; recall ranks such a line as a log, not an answer."""
    name = str(block.get("name") or "tool")
    if is_plumbing(name):
        return None
    arguments = block.get("input") if isinstance(block.get("input"), dict) else {}
    target = next((arguments[key] for key in TOOL_TARGETS if isinstance(arguments.get(key), str) and arguments[key].strip()), "")
    line = f"{TOOL_PREFIX}{name}: {' '.join(target.split())}" if target else f"{TOOL_PREFIX}{name}"
    return line if len(line) <= TOOL_LINE_CHARS else line[: TOOL_LINE_CHARS - 1] + "…"


def _user_text(entry: dict[str, Any], content: Any) -> str:
    """What the user typed: text, never tool results or images; nothing for the client's own meta messages."""
    if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isSidechain"):
        return ""  # a subagent's "user" is the main agent's task, already a tool line of the main agent
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    else:
        return ""
    text = "\n".join(p for p in parts if isinstance(p, str)).strip()
    # Slash commands and their local output are the client talking to itself.
    return "" if text.startswith(("<command-", "<local-command-")) else text


def _assistant_parts(content: Any) -> list[str]:
    """Text and one line per tool call; thinking blocks are left out."""
    if isinstance(content, str):
        return [content.strip()] if content.strip() else []
    parts = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            parts.append(block["text"].strip())
        elif block.get("type") == "tool_use" and (line := tool_line(block)) is not None:
            parts.append(line)
    return parts


def read_transcript(data: bytes, start: int = 0, roles: Sequence[str] = ("user", "assistant")) -> TranscriptChunk:
    """The turns of `roles` in `data[start:]`, up to its last complete line.

    A last line without its newline is still being written (or was cut off): it is left for the next read, which
    starts at `end`. The content blocks of one assistant message (one line each, sharing `message.id`) make one
    turn. Lines that are not JSON, and line types this does not know, are skipped.
    """
    stop = data.rfind(b"\n", start) + 1
    chunk = TranscriptChunk(end=start if stop == 0 else stop)
    pending: tuple[str | None, SpokenTurn] | None = None  # the assistant message being assembled

    def flush() -> None:
        nonlocal pending
        if pending is not None and pending[1].text:
            chunk.turns.append(pending[1])
        pending = None

    for raw in data[start:chunk.end].splitlines():
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except ValueError:
            chunk.unreadable += 1
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        said_at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        session = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else None
        if entry["type"] == "user":
            text = _user_text(entry, message.get("content"))
            if text:  # a tool result (no text) does not end the assistant's message: its next block may follow
                flush()
                if "user" in roles:
                    chunk.turns.append(SpokenTurn("user", text, said_at, session))
            continue
        if "assistant" not in roles:
            continue
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        parts = _assistant_parts(message.get("content"))
        if pending is not None and message_id is not None and pending[0] == message_id:
            turn = pending[1]
            pending = (message_id, SpokenTurn("assistant", "\n".join([turn.text, *parts]).strip(), turn.said_at, turn.session, turn.subagent))
            continue
        flush()
        pending = (message_id, SpokenTurn("assistant", "\n".join(parts), said_at, session, bool(entry.get("isSidechain"))))
    flush()
    return chunk


# -- what a prompt gets -----------------------------------------------------------------


def choose_injection(
    hits: Iterable[RecallHit], *, session: str, floor: float, exclude: Iterable[str] = ()
) -> list[RecallHit]:
    """Of a recall's results (best first), those worth handing the agent unasked: relevant above the hook's own
    floor, statements (`dialogue_act`: an earlier question, an "ok" or a tool's log line answers nothing), and not
    already in front of it (this session's turns, the prompt just stored, what its start pack delivered).

    The one place that decides what is injected. A memory whose text reads like an instruction to the model
    (`suspicious`) is never pushed into a prompt: it reaches the agent only when asked for, through `recall`.
    """
    skip = set(exclude)
    chosen = [
        hit
        for hit in hits
        if hit.relevance is not None
        and hit.relevance >= floor
        and dialogue_act(hit.text) == "statement"
        and hit.id not in skip
        and not hit.suspicious
        and not (hit.kind == "turn" and hit.session == session)
    ]
    # What was decided or written down comes before what was merely said; the sort keeps rank order otherwise.
    chosen.sort(key=lambda hit: hit.kind == "turn")
    return chosen[:MAX_INJECTED]


@dataclass(frozen=True)
class Injection:
    text: str
    ids: list[str]  # the memories `text` holds, best first


def render_injection(
    hits: Sequence[RecallHit], budget: int, count: Callable[[str], int], terms: Collection[str] = ()
) -> Injection | None:
    """Ids, kinds and an excerpt of each, best first, within `budget` tokens, and how to get more; None for none.

    An excerpt is the lines of the memory that hold the prompt's `terms` (`text.excerpt`), at most
    `INJECTED_TEXT_TOKENS`: what it was injected for, not its first lines (a gist's header, a turn's preamble).
    Each sits inside its own `<memory>` record, escaped so that no text can close it: stored text is handed over
    as a record of the project, never as instructions."""
    if not hits or budget <= 0:
        return None
    head = "Memories from the project ledger that may bear on this prompt, as records:"
    foot = "Full text: the ledger's `recall` tool with ids=[...]; it also searches for more."
    lines: list[str] = []
    ids: list[str] = []
    for hit in hits:
        shown = " ".join(excerpt(hit.text, terms, count, INJECTED_TEXT_TOKENS).split())
        fields = " ".join(attribute(*pair) for pair in (("id", hit.id), ("kind", hit.kind), ("created", hit.created_at[:10])))
        line = f"- <memory {fields}>{defang(shown)}</memory>"
        if count("\n".join([head, *lines, line, foot])) > budget:
            break
        lines.append(line)
        ids.append(hit.id)
    return Injection("\n".join([head, *lines, foot]), ids) if lines else None


# -- the service ----------------------------------------------------------------------------


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
        if event.reply is not None:
            if self.params.record and event.reply.strip():
                outcome.stored = int(self.ledger.remember(event.reply, kind="turn", session=event.session, role="assistant").created)
            return outcome
        transcript = event.agent_transcript if event.name == "SubagentStop" and event.agent_transcript else event.transcript
        if event.name == "SubagentStop" and transcript is not None and not transcript.exists():
            outcome.notes.append("the subagent left no transcript")  # a compaction's summarizer writes none (2.1.332)
        elif transcript is not None and self.params.record:
            outcome.stored = self.record(event.session, transcript, roles=("assistant",))
        if event.name in ("PreCompact", "SessionEnd"):
            outcome.notes.append(self.write_gist(event.session))
        return outcome

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
        stored_id = None
        inject = self.params.inject_tokens > 0 and event.prompt.strip()
        if inject:
            self._open_index()  # before the write, so the turn's captured memories get their near-duplicate check
        if self.params.record and event.prompt.strip():
            result = self.ledger.remember(event.prompt, kind="turn", session=event.session, role="user")
            stored_id, outcome.stored = result.id, int(result.created)
        if not inject:
            return outcome
        retrieval = self.ledger.retrieval
        query = retrieval.validate.text(event.prompt, "prompt")
        # BM25 alone, also in a server whose model is loaded: the floor is a share of the prompt's terms.
        ranked = retrieval.retrieve(query, SearchFilter(), k=8, session=event.session, floor=self.params.inject_floor, lexical=True).ranked
        # Already in front of the agent: the prompt just stored, what the session's start pack held, its own gist.
        shown = [stored_id or "", *(handed(self.ledger.paths.data_dir, event.session) or [])]
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


def transcript_session(path: Path) -> str:
    """The session a Claude Code transcript belongs to: the `sessionId` of its first line that has one, else its
    file name without `.jsonl`."""
    try:
        with path.open("rb") as handle:
            for _, raw in zip(range(50), handle, strict=False):
                try:
                    entry = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("sessionId"), str) and entry["sessionId"]:
                    return entry["sessionId"]
    except OSError as exc:
        raise LedgerError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    return path.stem
