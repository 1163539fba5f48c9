"""What a turn does in the conversation (`text/dialogue_act.py`): the signal recall weighs so that only a
statement answers, on real shapes of each act."""

from __future__ import annotations

import pytest

from project_ledger.text.dialogue_act import dialogue_act, ends_asking, is_plumbing


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("Remind me, what is our retry policy for the payment gateway client?", "question"),
        ("Remind me what we chose for retries.", "question"),
        ("Which region should host the staging cluster?", "question"),
        ("ok", "acknowledgement"),
        ("Thanks!", "acknowledgement"),
        ("Same as before.", "acknowledgement"),
        ("Sounds good, go ahead.", "acknowledgement"),
        ("Recorded as a definition.", "acknowledgement"),  # the agent's report of what it stored
        ("Done, I've saved that to the ledger.", "acknowledgement"),
        ("Recorded: the late fee starts on day 31.", "statement"),  # the report says what
        ("[tool] Bash: pytest -q", "log"),
        ("[tool] Read: src/billing/retry.py\n[tool] Edit: src/billing/retry.py", "log"),
        ("[tool] mcp__ledger__recall: payment gateway client retry policy", "plumbing"),
        ("[tool] ToolSearch: select:mcp__ledger__remember,mcp__ledger__recall", "plumbing"),
        ("We decided: retries back off 0.5 s doubling, at most 4 tries.", "statement"),
        ("When the queue is full, we drop events.", "statement"),  # starts like a question, states a rule
        ("Run the tests and fix what fails", "statement"),
        ("Yes, use Postgres 16 for the ledger tables.", "statement"),  # agrees, and says what
        ("Been busy volunteering at the shelter. Have you tried any classes?", "statement"),  # says something, then asks
        ("I'll run the tests.\n[tool] Bash: pytest -q", "statement"),
    ],
)
def test_each_turn_gets_the_act_it_performs(text: str, act: str) -> None:
    assert dialogue_act(text) == act


def test_the_ledgers_own_tools_and_the_clients_machinery_are_plumbing_and_other_tools_are_not() -> None:
    assert all(is_plumbing(name) for name in ("mcp__ledger__remember", "mcp__team-ledger__recall", "ToolSearch", "TodoWrite"))
    assert not any(is_plumbing(name) for name in ("Bash", "Edit", "Read", "mcp__github__create_issue", "WebSearch"))


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("That road trip sounds great! Where did you go?", True),
        ("Thanks, Joanna! What's your favorite dish from the show?", True),
        ("Retries back off from 0.5 s. Should I add a test for the cap?", True),
        ("Wait, you went to Woodhaven?!", True),
        ("Where did you go? I went to Woodhaven.", False),  # asks, then says: the answer is its own
        ("We went to Woodhaven, a small town in the Midwest.", False),
        ("Is it 5xx only?\n[tool] Bash: pytest -q", False),  # the last line is a tool's
        ("...", False),
        ("", False),
    ],
)
def test_a_turn_ends_asking_when_its_last_sentence_is_a_question(text: str, asks: bool) -> None:
    assert ends_asking(text) is asks


def test_only_the_last_sentence_with_a_word_counts_however_long_the_text() -> None:
    assert ends_asking("word " * 200_000 + "?") is True
    assert ends_asking("?" * 1_000_000) is False  # no sentence has a letter
