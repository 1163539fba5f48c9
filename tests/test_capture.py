"""Write-time capture (`memory/capture.py`): which sentences of a turn become typed memories, on plain strings."""

from __future__ import annotations

import pytest

from project_ledger.memory.capture import MAX_PER_TURN, MAX_SENTENCE_CHARS, Proposal, classify, propose, sentences


def kinds_and_texts(text: str) -> list[tuple[str, str]]:
    return [(proposal.kind, proposal.text) for proposal in propose(text)]


def test_a_turn_yields_its_decision_constraint_and_todo_verbatim_in_order() -> None:
    turn = (
        "Let's use Postgres 16 for the ledger tables. Card numbers must never be stored in them. TODO: add a read replica later."
    )
    assert kinds_and_texts(turn) == [
        ("decision", "Let's use Postgres 16 for the ledger tables."),
        ("constraint", "Card numbers must never be stored in them."),
        ("todo", "TODO: add a read replica later."),
    ]


@pytest.mark.parametrize(
    "turn",
    [
        "Should we use Redis for the rate limiter?",
        "Maybe we could switch the rate limiter to Redis.",
        "I'd suggest we switch the rate limiter to Redis.",
        "Sounds good, thanks for looking at it so quickly.",
        "Use Redis.",  # too few content words to state anything
        "Recorded the retry decision in the ledger and implemented it: charge() now retries only 5xx and timeouts.",
        "I've saved that we only support EUR and USD to the ledger.",
        "Remind me how late fees work for overdue invoices",
        "remind me of the rounding rule for invoice line items",
    ],
    ids=[
        "question", "maybe", "suggestion", "small-talk", "too-short", "report-of-storing", "saved-to-the-ledger",
        "remind-me-how", "remind-me-of",
    ],  # fmt: skip
)
def test_questions_hedges_and_small_talk_yield_nothing(turn: str) -> None:
    assert propose(turn) == []


def test_asking_to_be_reminded_to_do_something_is_a_todo() -> None:
    assert classify("Remind me to rotate the staging webhook secret.") == "todo"
    assert classify("Remind me next week to rotate the staging webhook secret.") == "todo"


def test_adjacent_sentences_of_one_kind_are_one_proposal_and_separated_ones_are_two() -> None:
    together = "Let's use Celery for background jobs. We'll use Redis as the broker."
    assert kinds_and_texts(together) == [("decision", together)]
    apart = "Let's use Celery for background jobs. The weather was nice today in the office. We'll use Redis as the broker for the queue."
    assert kinds_and_texts(apart) == [
        ("decision", "Let's use Celery for background jobs."),
        ("decision", "We'll use Redis as the broker for the queue."),
    ]


def test_a_definition_must_name_an_identifier() -> None:
    assert classify("The signature is `charge(customer_id: str, cents: int) -> None` from now.") == "definition"
    assert classify("The schema is: id, name and email.") is None


def test_a_fenced_code_block_stays_whole_and_can_be_a_definition() -> None:
    block = "```python\ndef charge(customer_id: str, cents: int) -> None:\n    pass\n```"
    assert sentences(f"Here it is:\n{block}") == ["Here it is:", block]
    assert propose(f"Here it is:\n{block}") == [Proposal("definition", block)]


def test_a_turn_yields_at_most_a_few_proposals() -> None:
    turn = (
        "Let's use Celery for background jobs. Uploads must never exceed 25 MB per file. "
        "TODO: add retries to the webhook client. Let's keep the API versioned by URL prefix."
    )
    found = propose(turn)
    assert len(found) == MAX_PER_TURN
    assert [p.kind for p in found] == ["decision", "constraint", "todo"]


def test_an_overlong_sentence_is_not_captured() -> None:
    sentence = "Let's use Postgres 16 for the ledger tables, " + "and the reporting tables too, " * 30 + "from now on."
    assert len(sentence) > MAX_SENTENCE_CHARS
    assert classify(sentence) is None


@pytest.mark.parametrize(
    "sentence",
    [
        "We just decided: retries back off 0.5 s doubling, at most 4 tries.",
        "We decided the public API must stay backwards compatible for v1 clients.",  # a decision, though it says "must"
        "I have finally settled on Redis for the rate limiter.",
    ],
)
def test_what_was_said_to_be_decided_is_a_decision_whatever_else_it_holds(sentence: str) -> None:
    assert classify(sentence) == "decision"


def test_a_report_of_what_was_stored_is_not_captured_but_a_version_pinned_in_the_code_is() -> None:
    assert propose("Recorded: build an adjustments endpoint for usage corrections.") == []  # its remember made it
    pinned = "Pinned the Stripe API version: it must stay 2024-04-10 until the webhooks move."  # pinned in the code
    assert [(proposal.kind, proposal.text) for proposal in propose(pinned)] == [("constraint", pinned)]
