"""What the agent is handed in real Claude Code sessions: the recorded corpus replayed into a fresh ledger.

    python benchmarks/sessions.py                 # prints the tables
    python benchmarks/sessions.py --write         # also puts the summary in the README's hooks section
    python benchmarks/sessions.py --sessions 3    # the first three sessions only

The corpus (`data/sessions/recorded/`, made by `data/sessions/record.py` from `data/sessions/scenario.py`) is 13
sessions of the real Claude Code CLI 2.1.332 over one small billing project, with a scripted model: decisions
stored by the agent and decisions only said, questions asking for them back in other words across later
sessions, repeated chores, test runs, reads and edits, the ledger's own tool calls, acknowledgements, a
correction that supersedes a decision, and a compaction.

The replay needs no CLI. For each `claude -p` call of a session, in order, it starts the ledger's MCP server in
this process (as Claude Code starts `serve` for each call) and connects a real MCP client to it; then for each
recorded hook call it shows the transcript as it was at that moment (its recorded size), runs the agent's own
ledger tool calls the transcript gained since (ids the recording got are mapped to the ones this ledger
gives), and hands the hook's input to the server as a hook process would over its socket
(`serve_answers.hook_answer`, the code `serve` runs).

Right after each follow-up question is stored by the prompt hook, it is asked of `recall` through the client,
as is (k=8) and with k=3 and token_budget=200, and of the ledger's BM25 and dense legs alone (`retrieval.pools`).
An answer is the decision the question asks for: the memory the agent's `remember` stored, or, for a decision
only said, any memory stating it (its labelled key phrase). Reported against issue 30's targets:
- decision first, in the top 3 of `recall`, and in the prompt hook's injection (by id; and its key phrase shown);
- echo: share of recalled (top 8) and injected items that ask (a labelled question), copy the prompt, or are
  tool lines (`[tool] ...`; a memory captured from such a turn counts as it);
- tokens handed to the model against `token_budget`: a result as Claude Code hands it (its structuredContent as
  compact JSON when there is one, else its text; `data/sessions/recorded/recording.json` says which form the
  recording saw), counted with cl100k;
- start-pack copies per session: the most copies of project_context.md, a pin or a gist (by its text, its text,
  its id) the model holds at once. Claude Code 2.1.332 puts the MCP server's instructions into the conversation
  as a message, again at each resumed call once the server is connected, and keeps them with the hooks'
  contexts until a compaction. The replay's project has the ledger's hooks configured and its client says it is
  Claude Code, as in the recording; it counts the instructions of every call plus every SessionStart context
  and injection since the last compaction; the recorded figure counts what the real requests held (everything
  but tool results; a call that ended before its server connected got no new copy of the instructions).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import Implementation

import common
from project_ledger.cli.serve_answers import hook_answer
from project_ledger.config import Settings
from project_ledger.factory import open_ledger
from project_ledger.mcp.app import create_server
from project_ledger.memory.service import LedgerService
from project_ledger.models import Memory
from project_ledger.search.embedding import Embedder, create_embedder
from project_ledger.search.index import SearchFilter
from project_ledger.search.tuning import RankingParams
from project_ledger.text.text_signals import wording
from project_ledger.text.tokens import TokenCounter
from retrieval import pools, rankings

HERE = common.HERE

CORPUS = HERE / "data" / "sessions"
RECORDED = CORPUS / "recorded"
BUDGET = 200  # the recall(k=3, token_budget=200)
TOKENS = TokenCounter()
LEGS = ("ledger", "bm25", "dense")
MEMORY_ID = re.compile(r"\bm[0-9a-z]{10}\b")  # the journal's ids, as they appear in a result's text
PLURAL = {"prompt copy": "prompt copies", "question": "questions", "tool line": "tool lines"}


def normal(text: str) -> str:
    """Text compared as a reader would: entities decoded, case and spacing ignored, end punctuation dropped."""
    return " ".join(html.unescape(text).casefold().split()).rstrip(" ?.!")


# -- the recorded corpus ------------------------------------------------------------------------------------


@dataclass
class Recorded:
    slug: str
    transcript: bytes
    events: list[dict[str, Any]]
    requests: list[dict[str, Any]]

    def invocations(self) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        calls: dict[int, list[dict[str, Any]]] = {}
        for event in self.events:
            calls.setdefault(event["invocation"], []).append(event)
        yield from sorted(calls.items())


@dataclass
class Corpus:
    sessions: list[Recorded]
    labels: dict[str, Any]
    recording: dict[str, Any]

    @classmethod
    def load(cls, folder: Path = RECORDED, limit: int | None = None) -> Corpus:
        recording = json.loads((folder / "recording.json").read_text())
        sessions = []
        for entry in recording["sessions"][:limit]:
            path = folder / entry["slug"]
            events = [json.loads(line) for line in (path / "events.jsonl").read_text(encoding="utf-8").splitlines()]
            requests = json.loads((path / "requests.json").read_text(encoding="utf-8"))
            sessions.append(Recorded(entry["slug"], (path / "transcript.jsonl").read_bytes(), events, requests))
        return cls(sessions, json.loads((folder / "labels.json").read_text(encoding="utf-8")), recording)

    def prompt(self, slug: str, invocation: int) -> dict[str, Any] | None:
        return next((p for p in self.labels["prompts"] if p["session"] == slug and p["invocation"] == invocation), None)

    def asked(self) -> set[str]:
        return {normal(p["prompt"]) for p in self.labels["prompts"] if p["act"] == "ask"}


def transcript_lines(data: bytes) -> Iterator[dict[str, Any]]:
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def content_blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def tool_results(data: bytes) -> dict[str, Any]:
    """Each tool_use id's recorded result, parsed when it is JSON."""
    found: dict[str, Any] = {}
    for entry in transcript_lines(data):
        for block in content_blocks(entry):
            if block.get("type") == "tool_result":
                content = block.get("content")
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
                )
                try:
                    found[block.get("tool_use_id", "")] = json.loads(text)
                except ValueError:
                    found[block.get("tool_use_id", "")] = text
    return found


# -- what the model is handed -------------------------------------------------------------------------------


def handed(result: Any, escape_non_ascii: bool) -> str:
    """A tool result as Claude Code 2.1.332 hands it to the model: the structuredContent as compact JSON when
    there is one (the recording checks that form against the request log), else the text content."""
    if result.structured_content is not None:
        return json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=escape_non_ascii)
    return "\n".join(getattr(block, "text", "") for block in result.content)


def stored_ids(result: Any) -> list[str]:
    """A `remember` result's memory id, then the ids of what was captured from it: from its structured content, or
    (a result with text only) every memory id its text names, in order."""
    if isinstance(result, dict) and isinstance(result.get("id"), str):
        return [result["id"], *(c["id"] for c in result.get("captured") or [] if isinstance(c, dict) and "id" in c)]
    return MEMORY_ID.findall(result) if isinstance(result, str) else []


def listed(result: Any, live: dict[str, Memory]) -> list[Item]:
    """The memories a `recall` result lists, best first: by its structured `results`, or (a result with text only, or
    shaped otherwise) by the order in which its text names them."""
    structured = result.structured_content or {}
    if isinstance(structured.get("results"), list):
        ids = [r["id"] for r in structured["results"] if isinstance(r, dict) and "id" in r]
    else:
        ids = list(dict.fromkeys(MEMORY_ID.findall(handed(result, False))))
    return [Item(i, live[i].text, live[i].kind) for i in ids if i in live]


def copies(texts: Sequence[str], markers: Sequence[str]) -> int:
    """The most copies of any one start-pack marker across these texts."""
    return max((sum(text.count(mark) for text in texts) for mark in markers), default=0)


# -- what is measured ---------------------------------------------------------------------------------------


@dataclass
class Item:
    id: str
    text: str
    kind: str


@dataclass
class Question:
    slug: str
    prompt: str
    asks: str
    answers: set[str]  # ids of the memories that answer it, at the time it was asked
    key: str
    ranked: dict[str, list[Item]] = field(default_factory=dict)  # per leg, best first
    budgeted: list[Item] = field(default_factory=list)  # recall(k=3, token_budget=200)
    budget_tokens: int = 0  # what that result costs the model
    injected: list[Item] = field(default_factory=list)
    injection: str = ""


@dataclass
class Observed:
    questions: list[Question] = field(default_factory=list)
    injections: list[tuple[str, list[Item]]] = field(default_factory=list)  # every prompt: (prompt, injected items)
    injection_tokens: list[int] = field(default_factory=list)
    start_tokens: list[int] = field(default_factory=list)
    agent_budgets: list[tuple[int, int]] = field(default_factory=list)  # (token_budget, handed) of the agent's calls
    pack_copies: dict[str, int] = field(default_factory=dict)  # per session, the most at once
    unmapped: list[str] = field(default_factory=list)
    failed_calls: list[str] = field(default_factory=list)
    stored: int = 0  # remember calls replayed
    calls: int = 0  # ledger tool calls replayed


class Replay:
    """One fresh ledger on a copy of the recorded project, fed the sessions in order."""

    def __init__(self, corpus: Corpus, folder: Path, embedder: Embedder, legs: bool = True) -> None:
        self.corpus = corpus
        self.root = folder / "billing-service"
        self.root.mkdir(parents=True)
        shutil.copy(CORPUS / "project" / "project_context.md", self.root)
        # Set up as the recording was, so that the server tells a Claude Code client with the ledger's hooks a brief
        # and leaves the pack to the SessionStart hook (`mcp/start_channel.py`).
        hooks = [sys.executable, "-m", "project_ledger", "config", "claude-code", "--hooks", "--write", "--root", str(self.root)]
        subprocess.run(hooks, cwd=self.root, check=True, capture_output=True)
        self.client_info = Implementation(name="claude-code", version=corpus.recording["claude_code"].split()[0])
        self.transcripts = folder / "transcripts"
        self.transcripts.mkdir()
        self.settings = Settings(root=self.root, code_index=False, watch=False)
        self.embedder = embedder
        self.legs = legs
        self.escape = "compact JSON, non-ASCII escaped" in corpus.recording.get("ledger_result_forms", [])
        self.mark = corpus.recording["start_pack_markers"]["project_context"]
        self.ids: dict[str, str] = {}  # recorded memory id -> this ledger's
        self.decisions: dict[str, str] = {}  # label of a stored decision -> this ledger's id
        self.wording = {d["wording"]: label for label, d in corpus.labels["decisions"].items() if d["stored"]}
        self.observed = Observed()

    async def run(self) -> Observed:
        for session in self.corpus.sessions:
            await self.session(session)
        return self.observed

    async def session(self, recorded: Recorded) -> None:
        transcript = self.transcripts / f"{recorded.slug}.jsonl"
        transcript.write_bytes(b"")
        results = tool_results(recorded.transcript)
        ran = 0  # transcript bytes whose tool calls were replayed
        held: list[str] = []  # start-pack material the model holds: instructions, hook contexts (since the last compaction)
        most = 0
        for invocation, events in recorded.invocations():
            ledger = open_ledger(self.settings, self.root, embedder=self.embedder)
            async with Client(
                create_server(self.settings, self.root, ledger=ledger), mode="legacy", raise_exceptions=True,
                client_info=self.client_info,
            ) as client:
                held.append(client.instructions or "")  # Claude Code announces them in the conversation at each call
                for event in events:
                    size = max(event["transcript_bytes"] or 0, ran)  # None: the client had not written it yet
                    transcript.write_bytes(recorded.transcript[:size])
                    if size > ran:
                        await self.agent_calls(client, recorded.transcript[ran:size], results)
                        ran = size
                    payload = self.payload(event["payload"], transcript)
                    name = payload["hook_event_name"]
                    answer = await anyio.to_thread.run_sync(served_hook, json.dumps(payload), ledger)
                    if "output" not in answer:
                        raise SystemExit(f"{recorded.slug}: the server did not take the {name} hook: {answer}")
                    context = _context(answer["output"])
                    if name == "SessionStart" and payload.get("source") == "compact":
                        held = []
                    if context:
                        held.append(context)
                    if name == "SessionStart":
                        self.observed.start_tokens.append(TOKENS.count(context))
                    if name == "UserPromptSubmit":
                        most = max(most, copies(held, self.markers(ledger)))
                        await self.prompt(client, ledger, recorded.slug, invocation, payload["prompt"], context)
        self.observed.pack_copies[recorded.slug] = most

    def payload(self, recorded: dict[str, Any], transcript: Path) -> dict[str, Any]:
        payload = json.loads(json.dumps(recorded).replace("$ROOT", str(self.root)))
        payload["transcript_path"] = str(transcript)
        if "agent_transcript_path" in payload:  # the client names a subagent transcript it did not write
            payload["agent_transcript_path"] = str(self.transcripts / "missing" / Path(payload["agent_transcript_path"]).name)
        return payload

    def markers(self, ledger: LedgerService) -> list[str]:
        pins = [memory.text[:60] for memory in ledger.journal.pinned()]
        gists = [memory.id for memory in ledger.journal.browse(tag="gist", limit=10_000)[0]]
        return [self.mark, *pins, *gists]

    async def agent_calls(self, client: Client, data: bytes, results: dict[str, Any]) -> None:
        """The ledger tool calls the agent made in this stretch of transcript, made again on this ledger."""
        for entry in transcript_lines(data):
            for block in content_blocks(entry):
                if block.get("type") != "tool_use" or not str(block.get("name", "")).startswith("mcp__ledger__"):
                    continue
                tool, arguments = block["name"].removeprefix("mcp__ledger__"), self.mapped(block.get("input") or {})
                result = await client.session.call_tool(tool, arguments)
                self.observed.calls += 1
                recorded = results.get(block["id"])
                if result.is_error:
                    self.observed.failed_calls.append(f"{tool}({arguments}) failed: {handed(result, self.escape)[:200]}")
                    continue
                if tool == "remember":
                    self.observed.stored += 1
                    old_ids, new_ids = stored_ids(recorded), stored_ids(result.structured_content or handed(result, False))
                    self.ids.update(zip(old_ids, new_ids, strict=False))
                    if (label := self.wording.get(arguments.get("text", ""))) and new_ids:
                        self.decisions[label] = new_ids[0]
                if isinstance(arguments.get("token_budget"), int):
                    self.observed.agent_budgets.append((arguments["token_budget"], TOKENS.count(handed(result, self.escape))))

    def mapped(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments with memory ids of the recording replaced by this ledger's."""
        out = dict(arguments)
        for key in ("supersedes", "id"):
            if isinstance(out.get(key), str):
                if out[key] not in self.ids:
                    self.observed.unmapped.append(f"{key}={out[key]}")
                out[key] = self.ids.get(out[key], out[key])
        if isinstance(out.get("ids"), list):
            out["ids"] = [self.ids.get(i, i) for i in out["ids"]]
        return out

    async def prompt(
        self, client: Client, ledger: LedgerService, slug: str, invocation: int, prompt: str, injection: str
    ) -> None:
        """What the prompt hook handed over, and for a follow-up question, what recall and each leg rank."""
        live = {memory.id: memory for memory in ledger.journal.browse(limit=100_000)[0]}
        injected = [
            Item(i, m.text, m.kind) for i, m in sorted(live.items(), key=lambda p: injection.find(p[0])) if i in injection
        ]
        self.observed.injections.append((prompt, injected))
        if injection:
            self.observed.injection_tokens.append(TOKENS.count(injection))
        label = self.corpus.prompt(slug, invocation)
        if label is None or label["act"] != "ask" or not label["asks"]:
            return
        decision = self.corpus.labels["decisions"][label["asks"]]
        if decision["stored"]:
            answers = {self.decisions[label["asks"]]} if label["asks"] in self.decisions else set()
        else:
            answers = {i for i, m in live.items() if normal(decision["key"]) in normal(m.text)}
        question = Question(slug, prompt, label["asks"], answers, decision["key"], injected=injected, injection=injection)
        await settled(client)
        found = await client.session.call_tool("recall", {"query": prompt})
        question.ranked["ledger"] = listed(found, live)
        budgeted = await client.session.call_tool("recall", {"query": prompt, "k": 3, "token_budget": BUDGET})
        question.budgeted = listed(budgeted, live)
        question.budget_tokens = TOKENS.count(handed(budgeted, self.escape))
        if self.legs:
            pool = pools(ledger, [prompt], [SearchFilter()])
            echo = wording(prompt)
            for leg in ("bm25", "dense"):
                # Each list as it comes, less the question just stored (as `arrange` leaves a copy of what was asked out).
                seqs = rankings(pool, [0], leg, RankingParams())[0]
                memories = ledger.journal.get_by_seqs(seqs)
                kept = [memories[s] for s in seqs if s in memories and not (memories[s].kind == "turn" and wording(memories[s].text) == echo)]
                question.ranked[leg] = [Item(m.id, m.text, m.kind) for m in kept[:8]]
        self.observed.questions.append(question)


def served_hook(raw: str, ledger: LedgerService) -> dict[str, Any]:
    """A hook call handed to the running server, as the hook process does over `serve`'s socket."""
    return hook_answer({"client": "claude-code", "input": raw, "data_dir": None}, lambda: nullcontext(ledger))


def _context(output: str) -> str:
    try:
        return json.loads(output)["hookSpecificOutput"]["additionalContext"] if output.strip() else ""
    except (ValueError, KeyError, TypeError):
        return output


async def settled(client: Client, timeout: float = 120) -> None:
    """Wait until the model is loaded and every memory is indexed with its vector, so that recall is hybrid."""
    with anyio.fail_after(timeout):
        while True:
            status = (await client.session.call_tool("status", {})).structured_content or {}
            index, model = status.get("index", {}), status.get("embedding", {})
            if model.get("state") == "failed":
                raise SystemExit(f"the embedding model failed: {model.get('detail')}")
            if (
                index.get("state") == "ready"
                and model.get("state") == "ready"
                and not index.get("lag")
                and not index.get("missing_embeddings")
            ):
                return
            await anyio.sleep(0.1)


# -- figures ------------------------------------------------------------------------------------------------


class Echo:
    """Which items are the conversation's echo: questions, copies of the prompt, tool lines."""

    def __init__(self, corpus: Corpus, ledger_sources: dict[str, str]) -> None:
        self.asked = corpus.asked()
        self.sources = ledger_sources  # captured memory -> the turn it came from

    def kind(self, item: Item, prompt: str, texts: dict[str, str]) -> str | None:
        text = texts.get(self.sources.get(item.id, ""), item.text) if item.id in self.sources else item.text
        lines = [line for line in text.splitlines() if line.strip()]
        if lines and all(line.lstrip().startswith("[tool]") for line in lines):
            return "tool line"
        if normal(text) == normal(prompt):
            return "prompt copy"
        if normal(text) in self.asked:
            return "question"
        return None


@dataclass
class Figures:
    questions: int
    prompts: int
    top1: dict[str, float]
    top3: dict[str, float]
    budgeted_top3: float
    injected: float
    shown: float
    echo_recalled: dict[str, float]
    echo_injected: float
    echo_injected_all: float
    budget_ratios: list[float]
    agent_ratios: list[float]
    recorded_ratios: list[float]
    recorded_recall: list[tuple[int, int]]  # (claimed, handed) of recorded recall results
    pack_replay: dict[str, int]
    pack_recorded: dict[str, int]
    injection_tokens: list[int]
    start_tokens: list[int]
    echo_kinds: dict[str, int]


def figures(corpus: Corpus, observed: Observed, echo: Echo, texts: dict[str, str]) -> Figures:
    questions = observed.questions
    n = len(questions) or 1

    def share(hits: int) -> float:
        return hits / n

    def first(question: Question, leg: str, k: int) -> bool:
        return any(item.id in question.answers for item in question.ranked.get(leg, [])[:k])

    kinds: dict[str, int] = {}

    def echo_share(groups: Sequence[tuple[str, Sequence[Item]]], count: bool = False) -> float:
        items = [(prompt, item) for prompt, group in groups for item in group]
        found = [echo.kind(item, prompt, texts) for prompt, item in items]
        if count:
            for what in found:
                if what:
                    kinds[what] = kinds.get(what, 0) + 1
        return sum(bool(f) for f in found) / len(found) if found else 0.0

    recorded_ratios, recorded_recall = [], []
    for session in corpus.sessions:
        for request in session.requests:
            for result in request["results"]:
                budget = result["input"].get("token_budget")
                if isinstance(budget, int):
                    recorded_ratios.append(result["handed_tokens"] / budget)
                if result["tool"] == "recall" and result["claimed_tokens"] is not None:
                    recorded_recall.append((result["claimed_tokens"], result["handed_tokens"]))
    pack_recorded = {
        session.slug: max((max(request["copies"].values(), default=0) for request in session.requests), default=0)
        for session in corpus.sessions
    }
    return Figures(
        questions=len(questions),
        prompts=len(observed.injections),
        top1={leg: share(sum(first(q, leg, 1) for q in questions)) for leg in LEGS},
        top3={leg: share(sum(first(q, leg, 3) for q in questions)) for leg in LEGS},
        budgeted_top3=share(sum(any(i.id in q.answers for i in q.budgeted[:3]) for q in questions)),
        injected=share(sum(any(i.id in q.answers for i in q.injected) for q in questions)),
        shown=share(sum(normal(q.key) in normal(q.injection) for q in questions)),
        echo_recalled={
            leg: echo_share([(q.prompt, q.ranked.get(leg, [])) for q in questions], count=leg == "ledger") for leg in LEGS
        },
        echo_injected=echo_share([(q.prompt, q.injected) for q in questions], count=True),
        echo_injected_all=echo_share(observed.injections),
        budget_ratios=[q.budget_tokens / BUDGET for q in questions],
        agent_ratios=[h / b for b, h in observed.agent_budgets],
        recorded_ratios=recorded_ratios,
        recorded_recall=recorded_recall,
        pack_replay=observed.pack_copies,
        pack_recorded=pack_recorded,
        injection_tokens=observed.injection_tokens,
        start_tokens=observed.start_tokens,
        echo_kinds=kinds,
    )


def _ratio(values: Sequence[float]) -> str:
    return f"{max(values):.2f} (median {statistics.median(values):.2f})" if values else "–"


def _met(ok: bool | None) -> str:
    """yes, no, or – when there was nothing to measure (None)."""
    return "–" if ok is None else "yes" if ok else "**no**"


def _within(ratios: Sequence[float]) -> bool | None:
    return max(ratios) <= 1.1 if ratios else None


def summary(f: Figures, corpus: Corpus) -> list[str]:
    packs_replay, packs_recorded = list(f.pack_replay.values()), list(f.pack_recorded.values())
    ratios = f.budget_ratios + f.agent_ratios
    lines = [
        f"| {f.questions} follow-up questions | target | the ledger | BM25 alone | dense alone | met? |",
        "|---|---|---|---|---|---|",
        f"| decision ranked first | ≥ 0.9 | {f.top1['ledger']:.2f} | {f.top1['bm25']:.2f} | {f.top1['dense']:.2f} | {_met(f.top1['ledger'] >= 0.9)} |",
        f"| decision in the top 3 | 1.0 | {f.top3['ledger']:.2f} | {f.top3['bm25']:.2f} | {f.top3['dense']:.2f} | {_met(f.top3['ledger'] >= 1.0)} |",
        f"| decision in `recall(k=3, token_budget={BUDGET})` | 1.0 | {f.budgeted_top3:.2f} | | | {_met(f.budgeted_top3 >= 1.0)} |",
        f"| decision in the prompt hook's injection (its key phrase shown) | | {f.injected:.2f} ({f.shown:.2f}) | | | |",
        (
            f"| echo: recalled items (top 8) that ask, copy the prompt or are tool lines | ≤ 0.05 | {f.echo_recalled['ledger']:.2f} | "
            f"{f.echo_recalled['bm25']:.2f} | {f.echo_recalled['dense']:.2f} | {_met(f.echo_recalled['ledger'] <= 0.05)} |"
        ),
        (
            f"| echo: injected items, follow-up questions (all {f.prompts} prompts) | ≤ 0.05 | {f.echo_injected:.2f} "
            f"({f.echo_injected_all:.2f}) | | | {_met(max(f.echo_injected, f.echo_injected_all) <= 0.05)} |"
        ),
        (f"| tokens handed / `token_budget`, most (median): replay | ≤ 1.1 | {_ratio(ratios)} | | | {_met(_within(ratios))} |"),
        (
            f"| same, recorded (the real CLI's requests) | ≤ 1.1 | {_ratio(f.recorded_ratios)} | | | "
            f"{_met(_within(f.recorded_ratios))} |"
        ),
        (
            f"| start-pack copies held at once, most per session (sessions with one): replay | 1 | {max(packs_replay, default=0)} "
            f"({sum(c == 1 for c in packs_replay)} of {len(packs_replay)}) | | | {_met(max(packs_replay, default=0) == 1)} |"
        ),
        (
            f"| same, recorded | 1 | {max(packs_recorded, default=0)} ({sum(c == 1 for c in packs_recorded)} of {len(packs_recorded)}) "
            f"| | | {_met(max(packs_recorded, default=0) == 1)} |"
        ),
    ]
    claimed = [c for c, _ in f.recorded_recall]
    given = [h for _, h in f.recorded_recall]
    notes = [
        "",
        f"Echo found in `recall`'s top 8 and the injections: {', '.join(f'{n} {PLURAL[k]}' for k, n in sorted(f.echo_kinds.items())) or 'none'}. "
        + (
            f"Recorded `recall` results said `tokens` {statistics.median(claimed):.0f} and reached the model as "
            f"{statistics.median(given):.0f} (medians of {len(claimed)}). "
            if claimed
            else ""
        )
        + (f"Injections: median {statistics.median(f.injection_tokens):.0f} tokens, most {max(f.injection_tokens)} (budget 400); "
           if f.injection_tokens else "")
        + (f"SessionStart contexts: median {statistics.median(f.start_tokens):.0f}, most {max(f.start_tokens)} (budget 1,500)." if f.start_tokens else ""),
    ]  # fmt: skip
    return lines + notes


def details(f: Figures, observed: Observed, echo: Echo, texts: dict[str, str]) -> list[str]:
    """Per question and per session, for the terminal."""
    lines = ["", "| session | question | asks | `recall` rank | injected | echo in top 8 |", "|---|---|---|---|---|---|"]
    for q in observed.questions:
        ranks = [n + 1 for n, item in enumerate(q.ranked.get("ledger", [])) if item.id in q.answers]
        echoes = sum(bool(echo.kind(item, q.prompt, texts)) for item in q.ranked.get("ledger", []))
        injected = (
            "yes" if any(i.id in q.answers for i in q.injected) else ("key" if normal(q.key) in normal(q.injection) else "no")
        )
        lines.append(f"| {q.slug} | {q.prompt[:60]} | {q.asks} | {ranks[0] if ranks else '–'} | {injected} | {echoes} |")
    lines += ["", "| session | start-pack copies, replay | recorded |", "|---|---|---|"]
    lines += [f"| {slug} | {copies_} | {f.pack_recorded.get(slug, '–')} |" for slug, copies_ in f.pack_replay.items()]
    if observed.unmapped or observed.failed_calls:
        lines += ["", "Not replayed as recorded:", *(f"- {note}" for note in observed.unmapped + observed.failed_calls)]
    return lines


async def replay(corpus: Corpus, folder: Path, legs: bool = True) -> tuple[Observed, Echo, dict[str, str]]:
    cache = folder / "model"
    replayed = Replay(corpus, folder, create_embedder(None, None, cache, None), legs)
    observed = await replayed.run()
    ledger = open_ledger(replayed.settings, replayed.root, embedder=replayed.embedder)
    try:
        live = ledger.journal.browse(limit=100_000)[0]
        texts = {memory.id: memory.text for memory in live}
        captured = ledger.journal.sources([m.id for m in live if "captured" in m.tags], ["captured"])
    finally:
        ledger.close()
    return observed, Echo(corpus, {child: parents[0] for child, parents in captured.items() if parents}), texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=RECORDED, help="a recorded corpus (default: data/sessions/recorded)")
    parser.add_argument("--sessions", type=int, default=None, help="replay only the first N sessions")
    parser.add_argument("--write", action="store_true", help="write the summary into README.md")
    args = parser.parse_args()
    load_before = common.load()
    started = time.perf_counter()
    corpus = Corpus.load(args.corpus, limit=args.sessions)
    with tempfile.TemporaryDirectory(prefix="ledger-sessions-") as tmp:
        observed, echo, texts = anyio.run(replay, corpus, Path(tmp))
    f = figures(corpus, observed, echo, texts)
    recording = corpus.recording
    invocations = sum(s["invocations"] for s in recording["sessions"][: args.sessions])
    head = (
        f"{len(corpus.sessions)} sessions ({invocations} `claude -p` calls) recorded with {recording['claude_code']} and a scripted "
        f"model on {recording['recorded']}, replayed into a fresh ledger: {observed.calls} ledger tool calls of the agent, "
        f"{len(observed.injections)} prompts through the prompt hook."
    )
    body = "\n".join([head, "", *summary(f, corpus), "", f"{time.perf_counter() - started:.0f} s."])
    common.publish("sessions", body, args.write, command="python benchmarks/sessions.py", loads=[load_before, common.load()])
    print("\n".join(details(f, observed, echo, texts)))


if __name__ == "__main__":
    main()
