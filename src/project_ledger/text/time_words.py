"""Whether a question asks for a time, and whether a text says when something happened. Pure, English only.

"When did we switch to Postgres?" is answered by the memory that says "we moved to Postgres last week", not by the
ten that discuss Postgres without a time. Neither the words nor the meaning of the question single that one out:
"when" is a stop word, and a time expression shares no word with it. These two tests let the ranking give such
memories a lift for such questions: the `timely` signal of `ranking.rank`, whose weight is learned.
"""

from __future__ import annotations

import re

_UNITS = r"(?:second|minute|hour|day|night|week|weekend|month|year|decade|semester|season)s?"
_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_MONTHS = r"(?:january|february|march|april|june|july|august|september|october|november|december)"  # "may" apart
_SEASONS = r"(?:spring|summer|autumn|fall|winter)"
_COUNT = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of|several|few|couple of)"

# A year: 19xx or 20xx after a word that puts a time on it, where a bare number in that range is as often a count or
# a size ("port 2000", "2048 bytes", "a batch of 2000 files"). After in/since/during and the like ("in 2022", "since
# 1998", "mid-2020") it is a year unless a unit of measure follows ("in 2000 ms"); a count noun may start the next
# clause ("In 2020 users asked for it"). After by/after/from, which as often take a count ("after 2000 iterations"),
# only where the phrase ends ("by 2030.", "from 2019 to 2021"); after "of" only a part of a year's ("summer of 2019",
# "the end of 2020"), not a limit or a share ("a limit of 2048", "out of 2000"). After a month ("May 2023", "8 March,
# 2021") the month already says when.
_YEAR = re.compile(  # on lowercased text, tried only where a 19xx/20xx number is (`_NUMBER`): most texts hold none
    rf"\b(?:(?:in|since|until|till|during|before|around|circa|through|early|late|{_SEASONS})\s+|(?:mid|early|late)-\s*)"
    r"(?:the\s+)?(?:year\s+)?(?:19|20)\d{2}\b"
    r"(?![.,]\d|\s*(?:%|ms|s|sec|secs|seconds?|minutes?|hours?|bytes?|kb|mb|gb|tb|px)\b)"
    r"|\b(?:by|after|from)\s+(?:the\s+)?(?:year\s+)?(?:19|20)\d{2}\b(?=\s*(?:$|[.,;:!?)]|and\b|to\b|until\b|-|–))"
    rf"|\b(?:{_SEASONS}|{_MONTHS}|may|end|start|beginning|middle|half|quarter)\s+of\s+(?:19|20)\d{{2}}\b"
)
_NUMBER = re.compile(r"\b(?:19|20)\d{2}\b")

_TELLS = re.compile(  # on lowercased text; one leading word boundary, so each alternative is tried only at a word's start
    r"\b(?:"
    + "|".join(
        [
            r"(?:yesterday|today|tonight|tomorrow|the other day|nowadays)\b",
            rf"(?:last|next|this|past|coming|previous|upcoming)\s+(?:{_UNITS}|{_WEEKDAYS}|{_SEASONS}|morning|afternoon|evening)\b",
            rf"{_COUNT}\s+{_UNITS}\s+(?:ago|back|earlier|later|from now)\b",
            r"(?:a while|long)\s+ago\b",
            rf"(?:for|in|over|within|after)\s+(?:the\s+)?(?:past\s+|last\s+|next\s+)?{_COUNT}\s+{_UNITS}\b",
            rf"{_MONTHS}\b",
            rf"{_WEEKDAYS}\b",
            r"(?:19|20)\d0s\b",  # a decade: "the 1990s"
            r"\d{4}-\d{2}-\d{2}\b|\d{1,2}/\d{1,2}/\d{2,4}\b",  # a date
            r"the\s+\d{1,2}(?:st|nd|rd|th)\b",  # "on the 15th"
            r"\d{1,2}:\d{2}\b|\d{1,2}\s*(?:am|pm)\b",  # a clock time
        ]
    )
    + ")"
)
# "May" is a month only where it cannot be the verb: capitalised and next to a day, a year or a preposition of time.
# The word before it may start a sentence ("In May we moved"), so it is matched in any case; "mid-May" is one word.
_MAY = re.compile(
    r"\b(?i:in|on|of|since|by|until|till|before|after|during|through|from|early|late|last|next|this)\s+May\b"
    r"|\b(?i:mid)(?:-|\s+)May\b|\bMay,?\s+\d|\b\d{1,2}(?:st|nd|rd|th)?\s+May\b"
)
# A leading stamp in brackets, as chat exports and logs write before every line: it says when the text was written,
# which the memory's own time already says, not when the thing it tells of happened.
_STAMP = re.compile(r"^\s*\[[^\]\n]{0,60}\]")

_ASKS = re.compile(
    "|".join(
        [
            # past or future, the subject before or after the verb ("when did Ana", "when Ana has"); "when does the
            # export fail" asks for a condition, not a time, so the present tense counts only for a plan
            r"\bwhen\s+(?:[\w']+\s+){0,3}?(?:did|was|were|will|would|had|has|have)\b",
            r"\bwhen\s+(?:[\w']+\s+){0,3}?(?:is|are)\b[^?.!]{0,80}?\b(?:going to|planning|planned|scheduled|due|supposed to|expected)\b",
            r"\bsince\s+when\b",
            r"\b(?:what|which)\s+(?:year|month|day|date|time|week|weekend|season|decade)\b",
            r"\bhow\s+(?:long|soon)\b",
            rf"\bhow\s+many\s+{_UNITS}\b",
        ]
    ),
    re.IGNORECASE,
)


ASKS_WITHIN = 1_000  # characters of a question looked at: a question says what it asks near its start


def asks_for_time(question: str) -> bool:
    """Whether the question asks when something happened or how long it took ("when did", "what year", "how long")."""
    return _ASKS.search(question[:ASKS_WITHIN]) is not None


def tells_time(text: str) -> bool:
    """Whether the text says when something happened: a relative time ("yesterday", "last week", "three years ago",
    "for two months"), a month, weekday, year, date or clock time. A leading bracketed stamp (`_STAMP`) does not
    count."""
    body = _STAMP.sub("", text, count=1)
    lowered = body.lower()
    if _TELLS.search(lowered) is not None or ("May" in body and _MAY.search(body) is not None):  # "in" first: 30x faster
        return True
    return _NUMBER.search(lowered) is not None and _YEAR.search(lowered) is not None
