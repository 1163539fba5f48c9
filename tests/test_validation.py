"""`parse_moment` (`memory/validation.py`): the dates and ages `recall` takes for `since` and `until`."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from project_ledger.errors import InvalidArgument
from project_ledger.memory.validation import parse_moment

DAY = 86_400


def utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-30", utc(2026, 11, 30)),
        ("2026-11-30T09:00:00Z", utc(2026, 11, 30, 9)),
        ("2026-11-30T09:00:00+02:00", utc(2026, 11, 30, 7)),
        ("2026-11-30T09:00", utc(2026, 11, 30, 9)),  # no zone: UTC
        ("  2026-11-30 ", utc(2026, 11, 30)),
    ],
)
def test_iso_dates_and_datetimes_are_read_as_utc_unless_they_say_otherwise(value: str, expected: float) -> None:
    assert parse_moment(value, "since") == expected


def test_until_a_bare_date_means_the_end_of_that_day_but_a_time_is_taken_as_given() -> None:
    assert parse_moment("2026-11-30", "until", end_of_day=True) == pytest.approx(utc(2026, 12, 1) - 1e-6)
    assert parse_moment("2026-11-30T09:00:00Z", "until", end_of_day=True) == utc(2026, 11, 30, 9)


@pytest.mark.parametrize(
    ("value", "seconds"), [("30m", 30 * 60), ("12h", 12 * 3600), ("2d", 2 * DAY), ("1w", 7 * DAY), (" 3 d ", 3 * DAY)]
)
def test_an_age_is_that_long_before_now(value: str, seconds: int) -> None:
    before = time.time()
    moment = parse_moment(value, "since")
    after = time.time()
    assert before - seconds <= moment <= after - seconds


@pytest.mark.parametrize("value", ["last tuesday", "2d ago", "yesterday", "2026-13-01", "", "5y"])
def test_anything_else_is_refused_with_the_forms_that_work(value: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_moment(value, "until")
    message = str(refused.value)
    assert message.startswith(f"until={value!r} is not a date") and "2026-11-30" in message and "2d, 12h, 1w" in message


def test_an_age_reaching_back_past_year_one_says_to_ask_for_less() -> None:
    with pytest.raises(InvalidArgument, match=r"since='99999999w' reaches back past year 1; use a smaller age or an ISO date"):
        parse_moment("99999999w", "since")
