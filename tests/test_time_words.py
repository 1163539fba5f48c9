"""Whether a question asks for a time and whether a text says when (`text/time_words.py`)."""

from __future__ import annotations

import pytest

from project_ledger.text.time_words import asks_for_time, tells_time


@pytest.mark.parametrize(
    "question",
    [
        "When did we switch to Postgres?",
        "when was the retry budget raised",
        "When Jon has lost his job as a banker?",
        "When is Joanna going to make the ice cream?",
        "Since when do we pin the SDK?",
        "What year did Ana move to Lisbon?",
        "Which month was the outage?",
        "How long did the migration take?",
        "How many weeks has the flag been on?",
    ],
)
def test_questions_that_ask_when_or_how_long(question: str) -> None:
    assert asks_for_time(question)


@pytest.mark.parametrize(
    "question",
    [
        "When does ingest respond with E_PERIOD_CLOSED?",  # a condition, not a time
        "When is the cache invalidated?",
        "when the build fails, what do we do?",
        "What did we decide about retries?",
        "Which database do we use?",
    ],
)
def test_questions_about_conditions_or_things_do_not(question: str) -> None:
    assert not asks_for_time(question)


@pytest.mark.parametrize(
    "text",
    [
        "We moved billing to Postgres yesterday.",
        "I got mentored by a business coach last week",
        "Switched the queue over three months ago",
        "I've had them for 3 years now",
        "The freeze starts on Friday",
        "Cut the release in March",
        "We shipped it in May",
        "Released v2 in 2023",
        "We have run it since 1998",
        "In May we moved the queue",  # the preposition starts the sentence
        "The freeze lifts mid-May",
        "Signed on 8 May, 2023",
        "Back in the 1990s it ran on one box",
        "The rewrite lands mid-2020",
        "In 2020 users reported the bug",  # a count noun starts the next clause
        "by the end of 2020 we had moved",
        "It ran from 2019 to 2021",
        "Deadline is 2026-03-14",
        "I met the team again on the 15th",
        "Standup moved to 9:30",
    ],
)
def test_texts_that_say_when(text: str) -> None:
    assert tells_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "We use Postgres for billing.",
        "You may want to retry with backoff",  # "may" the verb
        "[1:56 pm on 8 May, 2023] Melanie: I love painting sunsets.",  # a leading stamp says when it was written
        "Retry 3 times with a 250 ms backoff",
        "Take care, talk soon!",
        "The buffer holds 2048 bytes",  # numbers in the range of years that count or measure
        "The proxy listens on port 2000",
        "The query took 1950 ms",
        "It fails in 2000 ms under load",
        "Send a batch of 2000 files",
        "The page size has a limit of 2048",
        "It passed 1990 out of 2000",
        "It converges after 2000 iterations",
        "Rename the midMay variable",
    ],
)
def test_texts_that_do_not(text: str) -> None:
    assert not tells_time(text)


def test_a_time_after_the_leading_stamp_still_counts() -> None:
    assert tells_time("[1:56 pm on 8 May, 2023] Melanie: I painted that lake sunrise last year!")


def test_a_long_question_is_read_only_near_its_start_and_in_linear_time() -> None:
    assert not asks_for_time("when is a " * 20_000)  # once quadratic in the "when"s: minutes, holding the GIL
    assert asks_for_time("When did we move billing to Postgres? " + "context " * 20_000)
