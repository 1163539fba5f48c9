"""Session gists on plain records (`memory/gist.py`): the extractive gist and fitting it to a token budget."""

from __future__ import annotations

from typing import Any

import pytest

from project_ledger.memory.gist import Bullet, Material, extractive, fit, header, render
from project_ledger.models import Memory
from project_ledger.text.tokens import TokenCounter


def memory(memory_id: str, text: str, kind: str, minute: int, **fields: Any) -> Memory:
    at = f"2026-03-02T10:{minute:02d}:00Z"
    return Memory(id=memory_id, text=text, kind=kind, session="s1", created_at=at, updated_at=at, **fields)


TURNS = [
    memory("m0000000001", "Let's use Celery for background jobs with Redis as the broker.", "turn", 0),
    memory("m0000000002", "Uploads must never exceed 25 MB per file.", "turn", 1),
    memory("m0000000003", "The retry budget is still an open question for the webhook client.", "turn", 2),
    memory("m0000000004", "Which region should host the staging cluster?", "turn", 3),
]
MEMORIES = [
    memory("m0000000005", "Background jobs run on Celery with Redis as the broker.", "decision", 0, superseded_by="m0000000006"),
    memory("m0000000006", "Background jobs run on Dramatiq with Redis as the broker.", "decision", 5),
    memory("m0000000007", "Uploads must never exceed 25 MB per file.", "constraint", 1),
]
SESSION = Material("s1", TURNS, MEMORIES, captured_from={"m0000000007": "m0000000002"})


@pytest.fixture(scope="module")
def tokens() -> TokenCounter:
    return TokenCounter()


def test_typed_memories_become_bullets_citing_their_ids_and_open_questions_are_listed() -> None:
    bullets = extractive(SESSION)
    assert [(b.section, b.text, b.sources, b.superseded_by) for b in bullets] == [
        ("decisions", MEMORIES[0].text, ("m0000000005", "m0000000001"), "m0000000006"),  # and the turn that said it
        ("decisions", MEMORIES[1].text, ("m0000000006",), None),
        ("constraints", MEMORIES[2].text, ("m0000000007",), None),
        ("questions", TURNS[2].text, ("m0000000003",), None),  # says it is an open question
        ("questions", TURNS[3].text, ("m0000000004",), None),  # the session's last word is a question
    ]
    # the current decision first, then what was captured, then questions; a superseded decision last of all
    assert [b.priority for b in bullets] == [5, 0, 1, 3, 3]


def test_a_turn_sentence_no_memory_holds_becomes_a_bullet_citing_the_turn() -> None:
    turn = memory(
        "m0000000008", "Deploys go out on Tuesdays. Let's switch the CI runners to ARM machines next sprint.", "turn", 0
    )
    assert extractive(Material("s1", [turn], [])) == [
        Bullet("decisions", "Let's switch the CI runners to ARM machines next sprint.", ("m0000000008",), priority=2)
    ]


def test_what_the_agent_recorded_from_a_turn_wins_over_what_was_captured_from_it() -> None:
    turn = memory("m0000000001", "Let's use Postgres 16 for the ledger tables. TODO: add a read replica later.", "turn", 0)
    captured_decision = memory("m0000000002", "Let's use Postgres 16 for the ledger tables.", "decision", 0)
    captured_todo = memory("m0000000003", "TODO: add a read replica later.", "todo", 0)
    recorded = memory("m0000000004", "The ledger tables live in Postgres 16 from now on.", "decision", 1)
    material = Material(
        "s1", [turn], [captured_decision, captured_todo, recorded], {"m0000000002": "m0000000001", "m0000000003": "m0000000001"}
    )
    # the captured decision gives way to the agent's; the captured todo stays; the turn itself is not read again
    assert [(b.section, b.sources) for b in extractive(material)] == [
        ("todos", ("m0000000003",)),
        ("decisions", ("m0000000004",)),
    ]


def test_a_bullet_renders_with_its_marker_sources_and_indented_continuation_lines() -> None:
    assert Bullet("decisions", "Use Dramatiq.", ("m1",), superseded_by="m2").render() == "- (superseded by m2) Use Dramatiq. [m1]"
    assert Bullet("definitions", "```\ndef f(x: int) -> int: ...\n```", ("m1", "m2")).render() == (
        "- ```\n  def f(x: int) -> int: ...\n  ``` [m1, m2]"
    )


def test_when_everything_fits_every_bullet_is_kept_under_its_section_title(tokens: TokenCounter) -> None:
    bullets = extractive(SESSION)
    head = header(SESSION, "extractive")
    assert head.startswith("Gist of session s1 (4 turns, 2026-03-02 to 2026-03-02; extractive).")
    chosen, left_out, text = fit(head, bullets, 10_000, tokens, "s1")
    assert chosen == bullets and left_out == 0
    assert text == render(head, bullets)
    titles = [line for line in text.splitlines() if line.endswith(":")]
    assert titles == ["Decisions:", "Constraints and conditions:", "Open questions:"]  # in section order, empty ones left out


@pytest.mark.parametrize("budget", [120, 150, 200])
def test_a_short_budget_keeps_the_most_important_bullets_and_says_how_many_were_left_out(
    tokens: TokenCounter, budget: int
) -> None:
    bullets = extractive(SESSION)
    head = header(SESSION, "extractive")
    chosen, left_out, text = fit(head, bullets, budget, tokens, "s1")
    assert tokens.count(text) <= budget
    assert 0 < len(chosen) < len(bullets) and left_out == len(bullets) - len(chosen)
    assert text.endswith(f"(+{left_out} more left out to fit {budget} tokens: recall with session=s1)")
    assert chosen[0].sources == ("m0000000006",)  # the current decision is the first thing kept
    assert bullets[0] not in chosen  # the superseded one is the first to go
    kept = sorted(bullets.index(b) for b in chosen)
    assert chosen == [bullets[i] for i in kept]  # in their original order


def test_a_budget_too_small_for_any_bullet_keeps_only_the_header_and_the_count(tokens: TokenCounter) -> None:
    head = header(SESSION, "extractive")
    chosen, left_out, text = fit(head, extractive(SESSION), 60, tokens, "s1")
    assert chosen == [] and left_out == 5
    assert text == f"{head}\n(+5 more left out to fit 60 tokens: recall with session=s1)"


def test_a_rule_said_three_times_is_one_bullet_citing_each_statement_and_different_rules_stay_apart() -> None:
    turns = [
        memory("m0000000011", "We just decided: the gateway client retries at most 4 times, backing off from 0.5 s.", "turn", 0),
        memory("m0000000012", "OK: the gateway client will retry at most 4 times, backing off from 0.5 s.", "turn", 1),
        memory("m0000000013", "Let's switch the invoice exporter to Dramatiq workers.", "turn", 2),
        memory("m0000000014", "We decided the gateway client retries at most 5 times for refunds.", "turn", 3),
    ]
    bullets = extractive(Material("s1", turns, []))
    assert [(b.section, b.sources) for b in bullets] == [
        ("decisions", ("m0000000011", "m0000000012")),  # the statement and the restatement: one rule
        ("decisions", ("m0000000013",)),
        ("decisions", ("m0000000014",)),  # 5 times is another rule
    ]
