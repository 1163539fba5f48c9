"""The recorded Claude Code sessions (`benchmarks/data/sessions/recorded/`) replay end to end through
`benchmarks/sessions.py`: the hooks, the agent's own ledger calls and the follow-up questions. What is asserted
holds for any correct replay, whatever the ranking; the issue's targets are the benchmark's to report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from project_ledger.hooks.log import read_runs

from .conftest import shared_embedder

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from sessions import Corpus, Replay, content_blocks, transcript_lines  # a benchmark script, not a package

SESSIONS = 3  # a retry decision stored (01), a rule stored after a chore (02), the retry question asked back (03)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.load(limit=SESSIONS)


def remember_calls(corpus: Corpus) -> list[str]:
    """The text of every `remember` call the agent made in the recorded transcripts."""
    return [
        block["input"]["text"]
        for session in corpus.sessions
        for entry in transcript_lines(session.transcript)
        for block in content_blocks(entry)
        if block.get("type") == "tool_use" and block.get("name") == "mcp__ledger__remember"
    ]


def test_the_corpus_is_whole(corpus: Corpus) -> None:
    """Every session has its transcript, and hook calls whose transcript sizes only grow within it."""
    assert [s.slug for s in corpus.sessions] == [s["slug"] for s in corpus.recording["sessions"][:SESSIONS]]
    for session in corpus.sessions:
        names = [event["payload"]["hook_event_name"] for event in session.events]
        assert names.count("UserPromptSubmit") == sum(p["session"] == session.slug for p in corpus.labels["prompts"])
        sizes = [event["transcript_bytes"] or 0 for event in session.events]
        assert sizes == sorted(sizes) and sizes[-1] <= len(session.transcript)


@pytest.mark.anyio
async def test_a_replay_stores_what_the_agent_stored_and_asks_the_questions(corpus: Corpus, tmp_path: Path) -> None:
    replay = Replay(corpus, tmp_path, shared_embedder(), legs=False)
    observed = await replay.run()

    # Every remember call of the transcripts was made again, and each decision it stored is in the new ledger.
    stored = remember_calls(corpus)
    assert stored and observed.stored == len(stored) and not observed.failed_calls and not observed.unmapped
    labelled = [label for label, d in corpus.labels["decisions"].items() if d["stored"] and d["wording"] in stored]
    assert labelled and set(replay.decisions) == set(labelled)

    # Every prompt went through the prompt hook, in order; those that state something were recorded as user turns.
    played = [p for p in corpus.labels["prompts"] if p["session"] in {s.slug for s in corpus.sessions}]
    assert [prompt for prompt, _ in observed.injections] == [p["prompt"] for p in played]
    from project_ledger.factory import open_ledger

    ledger = open_ledger(replay.settings, replay.root, embedder=shared_embedder())
    try:
        turns = [m.text for m in ledger.journal.browse(kind="turn", limit=10_000)[0] if m.role == "user"]
        assert {p["prompt"] for p in played if p["act"] == "state"} <= set(turns)
        live = {m.id for m in ledger.journal.browse(limit=10_000)[0]}
        for label in labelled:
            assert ledger.journal.get(replay.decisions[label]).text == corpus.labels["decisions"][label]["wording"]
    finally:
        ledger.close()

    # The hook handed memories over on some prompt, and only memories that exist.
    injected = [item.id for _, items in observed.injections for item in items]
    assert injected and set(injected) <= live

    # The follow-up question was asked of recall, and its answer is the stored decision.
    questions = [p for p in played if p["act"] == "ask" and p["asks"]]
    assert [q.prompt for q in observed.questions] == [p["prompt"] for p in questions]
    for question in observed.questions:
        assert question.answers == {replay.decisions[question.asks]}
        assert question.ranked["ledger"] and question.budget_tokens > 0

    # The hooks ran on the replay's ledger, one log line per recorded hook call, and every session got its start pack.
    logged = read_runs(replay.root / ".ledger")
    assert len(logged) == sum(len(s.events) for s in corpus.sessions) and all(run.state == "ok" for run in logged)
    assert set(observed.pack_copies) == {s.slug for s in corpus.sessions} and min(observed.pack_copies.values()) >= 1
