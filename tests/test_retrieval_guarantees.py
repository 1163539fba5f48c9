"""What recall promises whatever the corpus: asking questions never changes a later ranking, and a memory holding
an identifier the query names exactly ranks first among look-alikes (both over stdio, through `project-ledger
serve`); an index from before whole identifiers were indexed is rebuilt."""

from __future__ import annotations

import json

import pytest

from project_ledger.search.index import STATE_FORMAT

from .conftest import Project, connect, serve

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
    project.env["LEDGER_RECENCY_HALF_LIFE_DAYS"] = "0"  # no decay: however long the recalls take, scores may not move
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
        after = await ranking()
        assert [memory_id for memory_id, _ in after] == [memory_id for memory_id, _ in before]  # same memories, same order
        # The same scores (an access boost would be 2% or more).
        assert [score for _, score in after] == pytest.approx([score for _, score in before], rel=1e-4)
        assert [await access(memory_id) for memory_id in ids] == [0] * len(ids)

        # Explicit use counts: a fetch by id and a pin.
        await ledger.call("recall", ids=[ids[-1]])
        await ledger.call("pin", id=ids[-2])
        assert (await access(ids[-1]), await access(ids[-2]), await access(ids[-3])) == (1, 1, 0)


LOOK_ALIKE_SHAPES = [
    "OPS-9409{n}", "v5.31.27{n}", "0x9f3a2c1{n}", "ERR_QUOTA_412{n}", "quota_retry_window_{n}", "fetchQuotaLimit{n}",
    "billing.retry.quota.v{n}", "MAX_RETRY_LIMIT_{n}", "--quota-retry-{n}", "src/billing/retry_handler{n}.py",
]  # fmt: skip
LOOK_ALIKE_SENTENCES = [
    "The {id} setting was raised after the incident on the billing workers.",
    "We traced the failed nightly export to {id} and rolled the change back.",
    "Keep {id} as it is: the retry queue depends on it for tenant refunds.",
]


async def test_the_memory_holding_an_identifier_comes_first_among_look_alikes(project: Project) -> None:
    async with serve(project) as ledger:
        id_of = {}
        for shape in LOOK_ALIKE_SHAPES:
            for n in range(10):
                identifier = shape.format(n=n)
                text = LOOK_ALIKE_SENTENCES[n % len(LOOK_ALIKE_SENTENCES)].format(id=identifier)
                id_of[identifier] = await ledger.remember(text, kind="note")
        assert len(set(id_of.values())) == len(id_of)  # no look-alike was taken for a duplicate of another
        await ledger.settled()
        for shape in LOOK_ALIKE_SHAPES:
            identifier = shape.format(n=7)
            for query in (identifier, f"why did {identifier} come up during the incident?"):
                hits = await ledger.recall(query, k=3)
                assert hits and hits[0]["id"] == id_of[identifier], (query, [hit["text"] for hit in hits])


async def test_an_index_built_by_an_older_format_is_rebuilt_and_then_finds_whole_identifiers(project: Project) -> None:
    async with connect(project) as ledger:
        flagged = await ledger.remember("Nightly exports run with --retry-export-window set to six hours.", kind="note")
        for n in range(20):
            await ledger.remember(f"Note {n}: the export retry window is tuned per tenant.", kind="note")
        await ledger.settled()
    states = list(project.data_dir.rglob("state.json"))
    assert states
    for state in states:  # as an index written by the format before this one
        written = state.read_text()
        assert f'"format": {STATE_FORMAT}' in written
        state.write_text(written.replace(f'"format": {STATE_FORMAT}', f'"format": {STATE_FORMAT - 1}'))
    async with connect(project) as ledger:
        await ledger.settled()
        hits = await ledger.recall("--retry-export-window", k=1)
        assert [hit["id"] for hit in hits] == [flagged]
        assert "older index format: rebuilt" in json.dumps(await ledger.call("status"))


CONVERSATION = [
    ("user", "Did Marta ever say where she adopted Zorbelino, her greyhound?"),
    ("assistant", "Casa dos Galgos, up in Porto. It took three visits before they let her take him home."),
    ("user", "Good to know. Anyway, the staging deploy failed again last night."),
    ("assistant", "The migration step timed out; I raised its limit to ten minutes."),
    ("user", "Then let's rerun it after lunch."),
]
DOG_TALK = [
    "The office is dog-friendly on Fridays, as long as the dogs stay out of the kitchen.",
    "Pets are not allowed in the server room, whatever the owner says.",
    "Jonas walks his two beagles at noon, so he is away from his desk then.",
    "The shelter downtown asked whether we could sponsor their adoption day.",
    "Someone's puppy chewed through the conference room's HDMI cable.",
    "We put a water bowl for visiting dogs next to the reception desk.",
    "Rita fosters kittens from the animal rescue every spring.",
    "The team photo this year had three dogs and one very patient cat in it.",
]


async def test_a_question_whose_words_sit_in_the_turn_before_the_answer_finds_the_answer(project: Project) -> None:
    async with serve(project) as ledger:
        ids = [await ledger.remember(text, kind="turn", role=role, session="chat-1") for role, text in CONVERSATION]
        for text in DOG_TALK:
            await ledger.remember(text, kind="note", session="office")
        await ledger.settled()
        answer = ids[1]  # shares no word with the question: the turn before it holds them
        found = [hit["id"] for hit in await ledger.recall("where did Marta adopt her greyhound", k=3)]
        assert answer in found
        assert answer in [hit["id"] for hit in await ledger.recall("Zorbelino", k=3)]

        # Forgetting the turn that held the words takes its share with it: nothing it said still lifts the answer.
        await ledger.call("forget", id=ids[0])
        assert answer not in [hit["id"] for hit in await ledger.recall("Zorbelino", k=3)]


ORCHESTRA = [  # what the question's words are said with: the orchestra, its hall
    "Zephyrine joined the Riverside orchestra this spring; she sits with the violas.",
    "Zephyrine says the Riverside orchestra's violas are short of players.",
    "Zephyrine practises the viola part before every Riverside orchestra rehearsal.",
]
ANSWER = "The Riverside orchestra tours Norway in June."  # none of the question's words
WEEKENDS = [  # closer to the question in meaning (where people play), and sharing none of its words either
    "Musicians perform at the square every evening.",
    "Football practice is on the pitch behind the school.",
    "Board game nights are held at the corner café.",
    "The tennis courts by the river are free before noon.",
    "Rehearsals of the brass band moved to the old tram depot.",
]


async def test_the_words_the_best_hits_share_find_a_memory_that_lacks_the_questions_words(project: Project) -> None:
    async with serve(project) as ledger:
        hits = [await ledger.remember(text, kind="note") for text in ORCHESTRA]
        answer = await ledger.remember(ANSWER, kind="note")
        for text in WEEKENDS:
            await ledger.remember(text, kind="note")
        await ledger.settled()
        found = [hit["id"] for hit in await ledger.recall("where does Zephyrine play", k=4, min_relevance=0)]
        assert set(found[:3]) == set(hits)
        assert found[3] == answer

        # The widening is read from the memories there are now: with the hits forgotten, nothing lifts the answer.
        for memory_id in hits:
            await ledger.call("forget", id=memory_id)
        assert answer not in [hit["id"] for hit in await ledger.recall("where does Zephyrine play", k=1, min_relevance=0)]


POSTGRES = [  # the question's words, and no time
    "The billing database is Postgres 16; its schema lives in billing/migrations.",
    "Billing's Postgres database keeps invoices and payments in separate schemas.",
    "Backups of the billing database run from a Postgres replica, never the primary.",
    "The billing database's Postgres connection pool holds twenty connections.",
]
SWITCHED = "Postgres took over from MySQL for billing three weeks ago."  # fewer of the words, and a time


async def test_a_question_that_asks_when_finds_the_memory_that_says_when(project: Project) -> None:
    async with serve(project) as ledger:
        for text in POSTGRES:
            await ledger.remember(text, kind="note")
        answer = await ledger.remember(SWITCHED, kind="note")
        await ledger.settled()
        asked = [hit["id"] for hit in await ledger.recall("When did we move the billing database to Postgres?", k=5)]
        plain = [hit["id"] for hit in await ledger.recall("Which Postgres does the billing database run?", k=5)]
        # Asking when lifts the memory that says when above those holding more of the words (the learned weights put
        # it second here, behind the one holding all of them and nearest in meaning); asked without "when", the
        # memories that match the words better come first.
        assert asked.index(answer) <= 1 and asked.index(answer) < (plain.index(answer) if answer in plain else len(plain))


CHAT = [  # a chat log stored a line at a time, as `[when] Speaker: text`, a day a session
    ("8 May", "[8 May, 2023] Melanie: I've been painting a lake at sunrise with the kids."),
    ("8 May", "[8 May, 2023] Caroline: The support group met again; it felt good to be heard."),
    ("9 May", "[9 May, 2023] Melanie: Caroline, adoption agencies, what a big step! Which agencies are you researching?"),
    ("9 May", "[9 May, 2023] Caroline: I've been researching adoption agencies; one in Portland looks right."),
]


async def test_a_line_that_ends_by_asking_comes_after_the_answer_said_next(project: Project) -> None:
    async with serve(project) as ledger:
        ids = [await ledger.remember(text, kind="turn", session=day) for day, text in CHAT]
        await ledger.settled()
        # Melanie's line holds more of the question's words, and was said first; it asks what Caroline's line answers.
        found = await ledger.recall("Which adoption agencies has Caroline been researching?", k=3)
        assert found[0]["id"] == ids[3]
