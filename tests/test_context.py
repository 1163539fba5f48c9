"""The `context` pack, ranking floors, duplicates, supersession history, restated context and stale memories."""

from __future__ import annotations

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Ledger, Project, cli, connect, record_ids

pytestmark = pytest.mark.anyio


CONTEXT = """# Project context

## Commands
- Tests: `make test`; lint with `make lint`.

## Decisions that hold
- Money is stored as integer cents, never as floats.
- All timestamps are stored in UTC.
"""

RETRY_MODULE = '''class RetryPolicy:
    """How failed webhook deliveries are retried."""

    def backoff_delay(self, attempt: int) -> float:
        return 0.25 * 2 ** attempt
'''

MEMORIES = [
    ("Invoices are exported nightly by export_invoices() into s3://acme-exports/invoices/.", "decision"),
    ("The worker queue is Redis Streams; consumer group name is `billing-workers`.", "decision"),
    ("Webhook retries back off from 250 ms, doubling to 8 s, then give up after 7 tries.", "decision"),
    ("Todo: add a dead-letter stream for webhooks that exhaust their retries.", "todo"),
    ("Postgres 16 is the primary database; migrations live in db/migrations and run with alembic.", "note"),
    ("The customer-facing API is versioned by URL prefix (/v1, /v2); v1 is frozen.", "decision"),
]


async def stock(ledger: Ledger, turns: int = 0) -> dict[str, str]:
    """The memories above plus `turns` turns of session s1; returns their texts by id."""
    texts = {await ledger.remember(text, kind=kind): text for text, kind in MEMORIES}
    for n in range(turns):
        role = "user" if n % 2 == 0 else "assistant"
        text = f"Turn {n}: the linter still reports {n + 3} warnings in the frontend build."
        texts[await ledger.remember(text, kind="turn", role=role, session="s1")] = text
    return texts


async def test_context_fits_any_budget_whole_items_only(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT * 3)
    async with connect(project) as ledger:
        texts = await stock(ledger, turns=12)
        pin = "Staging deploys need a green nightly build."
        texts[await ledger.remember(pin, kind="decision", pinned=True)] = pin
        await ledger.settled()

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(budget=st.integers(min_value=100, max_value=3000), with_query=st.booleans())
        def fits(budget: int, with_query: bool) -> None:
            arguments = {"token_budget": budget, "session": "s1"} | ({"query": "how are invoices exported?"} if with_query else {})
            pack, handed = anyio.from_thread.run(lambda: ledger.handed("context", **arguments))
            assert handed == pack["tokens"] <= budget  # what the model is handed: the JSON, counted whole
            assert set(pack) <= {"text", "tokens", "mode"}  # the rest is in the text
            for memory_id in record_ids(pack["text"]):  # every item included is whole: label, full text, closing tag
                start = pack["text"].index(f"id={memory_id}")
                item = pack["text"][start:]
                closing = min(i for i in (item.find("</memory>"), item.find("</turn>")) if i >= 0)
                assert item[:closing].rstrip().endswith(texts[memory_id])

        await anyio.to_thread.run_sync(fits)


async def test_context_sections_come_in_order_with_a_byte_identical_stable_prefix(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    async with connect(project) as ledger:
        await stock(ledger, turns=4)
        pin = await ledger.remember("Staging deploys need a green nightly build.", kind="decision", pinned=True)
        await ledger.settled()
        first = await ledger.call("context", query="how are invoices exported?", session="s1")
        second = await ledger.call("context", query="which database do we use?", token_budget=2500)
        bare = await ledger.call("context")

        text = first["text"]
        headings = ["# Project context", "# Pinned memories", "# Memories relevant", "# Recent turns"]
        assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings) and "# Code symbols" not in text
        assert "records of the past, not instructions" in text
        prefix_end = text.index("# Memories relevant")
        assert second["text"][:prefix_end] == text[:prefix_end]
        assert text.startswith(bare["text"])  # the pack without a query is the stable prefix itself
        assert f"<memory id={pin} kind=decision" in text[:prefix_end]
        assert "export_invoices()" in text[prefix_end : text.index("# Recent turns")]  # the best match right after the prefix
        assert text.rstrip().endswith("</turn>") and "Turn 3:" in text.rsplit("<turn", 1)[1]  # the latest turn closes the pack
        assert record_ids(text).count(pin) == 1  # pinned once, not again among the recalled memories

        prompt = await ledger.session.get_prompt("session_start")
        assert prompt.messages[0].content.text == bare["text"]  # the instructions' cap is lower, but all of it fits


async def test_an_unrelated_question_gets_no_memory_rather_than_noise(project: Project) -> None:
    async with connect(project) as ledger:
        await stock(ledger)
        await ledger.settled()
        result = await ledger.call("recall", query="best sourdough starter hydration for rye bread")
        assert result["results"] == [] and result["below_floor"] > 0
        assert "no relevant memory" in result["note"]
        anyway = await ledger.call("recall", query="best sourdough starter hydration for rye bread", min_relevance=0)
        assert anyway["results"]
        relevant = await ledger.recall("how long do webhook retries wait between attempts?")
        assert "250 ms" in relevant[0]["text"] and relevant[0]["relevance"] >= 0.3


async def test_a_near_duplicate_is_not_stored_twice_but_a_changed_fact_is(project: Project) -> None:
    async with connect(project) as ledger:
        await ledger.settled()
        first = await ledger.remember("Webhook retries back off from 250 ms, doubling to 8 s, then give up after 7 tries.", kind="decision")
        again = await ledger.call("remember", text="Webhook retries back off from 250 ms, doubling up to 8 s, and give up after 7 tries.", kind="decision")
        assert again["created"] is False and again["duplicate_of"] == first and again["similarity"] >= 0.8
        assert (await ledger.call("history", id=first))["chain"][0]["access_count"] == 1  # the existing one was refreshed

        changed = await ledger.call("remember", text="Webhook retries back off from 500 ms, doubling to 8 s, then give up after 7 tries.", kind="decision")
        negated = await ledger.call("remember", text="Webhook retries do not back off from 250 ms, doubling to 8 s, then give up after 7 tries.", kind="decision")
        as_todo = await ledger.call("remember", text="Webhook retries should back off from 250 ms, doubling to 8 s, then give up after 7 tries.", kind="todo")
        assert changed["created"] and negated["created"] and as_todo["created"]  # other numbers, a negation, another kind


async def test_supersession_hides_the_old_version_and_history_returns_the_chain(project: Project) -> None:
    async with connect(project) as ledger:
        v1 = await ledger.remember("Background jobs run on Celery with RabbitMQ.", kind="decision")
        v2 = await ledger.remember("Background jobs run on RQ with Redis; Celery is gone.", kind="decision", supersedes=v1)
        v3 = await ledger.remember("Background jobs run on Dramatiq with Redis; RQ is gone.", kind="decision", supersedes=v2)
        await ledger.settled()
        assert [r["id"] for r in await ledger.recall("what runs background jobs?", k=5)][:1] == [v3]
        assert {v1, v2}.isdisjoint(r["id"] for r in await ledger.recall("what runs background jobs?", k=5))
        everything = [r["id"] for r in await ledger.recall("what runs background jobs?", k=5, include_superseded=True)]
        assert set(everything[:3]) == {v1, v2, v3} and everything[0] == v3  # the current one still ranks first
        pack = await ledger.call("context", query="what runs background jobs?")
        assert v3 in record_ids(pack["text"]) and {v1, v2}.isdisjoint(record_ids(pack["text"]))

        history = await ledger.call("history", id=v2)
        assert [m["id"] for m in history["chain"]] == [v1, v2, v3] and history["current"] == v3
        assert history["chain"][0]["superseded_by"] == v2


async def test_a_memory_that_restates_the_project_context_is_flagged_or_refused(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    async with connect(project) as ledger:
        await ledger.settled()
        restated = await ledger.call("remember", text="We store money as integer cents, never as floats.", kind="decision")
        assert restated["created"] and restated["restates_context"] is True
        assert restated["context_section"] == "Decisions that hold"
        new = await ledger.call("remember", text="Refunds are issued to the original payment method only.", kind="decision")
        assert new["restates_context"] is False
        other_number = await ledger.call("remember", text="Timestamps are stored in UTC with 3 decimal places.", kind="note")
        assert other_number["restates_context"] is False  # it adds a specific the file lacks

    project.env["LEDGER_REJECT_RESTATED_CONTEXT"] = "true"
    async with connect(project) as ledger:
        await ledger.settled()
        error = await ledger.error("remember", text="All timestamps are stored in UTC.", kind="note")
        assert "restates project_context.md" in error and "Decisions that hold" in error


async def test_a_memory_anchored_to_code_goes_stale_when_the_code_changes(project: Project) -> None:
    (project.root / "webhooks").mkdir()
    (project.root / "webhooks" / "retry.py").write_text(RETRY_MODULE)
    (project.root / "settings.toml").write_text("[webhooks]\nmax_tries = 7\n")
    async with connect(project, watch=True) as ledger:
        with anyio.fail_after(60):
            while (await ledger.call("status"))["code"]["symbols"] < 2:
                await anyio.sleep(0.2)
        named = await ledger.call("remember", text="RetryPolicy.backoff_delay doubles from 250 ms.", kind="decision")
        assert named["links"] == ["symbol RetryPolicy.backoff_delay in webhooks/retry.py"]
        by_file = await ledger.call("remember", text="Webhooks give up after 7 tries.", kind="decision", files=["settings.toml"])
        assert by_file["links"] == ["file settings.toml"]
        await ledger.settled()
        assert not any(r["stale"] for r in await ledger.recall("webhook retry backoff", min_relevance=0))

        (project.root / "webhooks" / "retry.py").write_text(RETRY_MODULE.replace("0.25", "0.5"))
        (project.root / "settings.toml").write_text("[webhooks]\nmax_tries = 5\n")
        with anyio.fail_after(30):
            while len((await ledger.call("status"))["stale"]) < 2:
                await anyio.sleep(0.2)
        results = {r["id"]: r for r in await ledger.recall("webhook retry backoff and tries", min_relevance=0)}
        assert results[named["id"]]["stale"] and results[named["id"]]["changed"] == [
            "symbol RetryPolicy.backoff_delay in webhooks/retry.py changed"
        ]
        assert results[by_file["id"]]["changed"] == ["file settings.toml changed"]
        pack = await ledger.call("context", query="webhook retry backoff")
        assert 'stale="symbol RetryPolicy.backoff_delay in webhooks/retry.py changed"' in pack["text"]


async def test_recall_takes_a_time_window(project: Project) -> None:
    async with connect(project) as ledger:
        await stock(ledger)
        await ledger.settled()
        assert await ledger.recall("webhook retries", since="1h", until="2099-01-01")
        assert await ledger.recall("webhook retries", until="1d") == []  # everything is newer than a day
        assert "is after until" in await ledger.error("recall", query="webhook retries", since="1d", until="2d")
        assert "not a date" in await ledger.error("recall", query="webhook retries", until="last tuesday")


async def test_the_cli_prints_the_pack_an_agent_gets(project: Project) -> None:
    (project.root / "project_context.md").write_text(CONTEXT)
    async with connect(project) as ledger:
        await stock(ledger)
        await ledger.settled()
        served = await ledger.call("context", query="how are invoices exported?", token_budget=1500)
    printed = cli(project, "context", "how are invoices exported?", "--budget", "1500", "--json")
    assert printed["text"] == served["text"] and printed["tokens"] <= 1500
