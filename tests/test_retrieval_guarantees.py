"""What recall promises whatever the corpus: asking questions never changes a later ranking, and a memory holding
an identifier the query names exactly ranks first among look-alikes. Over stdio, through `project-ledger serve`."""

from __future__ import annotations

import pytest

from .conftest import Project, serve

pytestmark = pytest.mark.anyio

TOPICAL = [
    "Deploys go out through the Helm chart in deploy/chart; staging first, then production.",
    "A deploy to production needs a green staging run from the same commit.",
    "Rollback of a bad deploy is helm rollback to the previous release, never a hotfix on top.",
    "The deploy pipeline posts its status to the #releases channel.",
]
OTHERS = [
    "All money amounts are stored as integer cents, never floats.",
    "User sessions live in Redis with a 30 minute idle timeout.",
    "Webhook deliveries retry with exponential backoff starting at 250 ms.",
    "Invoices are numbered per tenant, without gaps, by a database sequence.",
    "The public API is versioned in the URL path, /v1 and /v2 side by side.",
    "Background jobs run on a Postgres-backed queue, not on a separate broker.",
    "Tax rates come from a table keyed by country and date, never hard-coded.",
    "Logs are JSON lines with a request id on every line.",
]
UNRELATED_QUESTIONS = [
    "how are money amounts stored",
    "where do sessions live",
    "what happens when a webhook fails",
    "how are invoices numbered",
    "how is the API versioned",
    "what runs background jobs",
]


async def test_asking_questions_changes_no_later_ranking_only_explicit_use_counts(project: Project) -> None:
    async with serve(project) as ledger:
        ids = [await ledger.remember(text, kind="note") for text in TOPICAL + OTHERS]
        await ledger.settled()

        async def ranking() -> list[tuple[str, float]]:
            return [(hit["id"], hit["score"]) for hit in await ledger.recall("how do we deploy to production", k=5)]

        async def access(memory_id: str) -> int:
            return (await ledger.call("history", id=memory_id))["chain"][-1]["access_count"]

        before = await ranking()
        assert {memory_id for memory_id, _ in before[:3]} <= set(ids[: len(TOPICAL)])
        for n in range(300):
            await ledger.recall(UNRELATED_QUESTIONS[n % len(UNRELATED_QUESTIONS)], k=5)
        await ledger.call("context", query="what runs background jobs", token_budget=2000)
        assert await ranking() == before  # the same memories, in the same order, with the same scores
        assert [await access(memory_id) for memory_id in ids] == [0] * len(ids)

        # Explicit use counts: a fetch by id and a pin.
        await ledger.call("recall", ids=[ids[-1]])
        await ledger.call("pin", id=ids[-2])
        assert (await access(ids[-1]), await access(ids[-2]), await access(ids[-3])) == (1, 1, 0)
