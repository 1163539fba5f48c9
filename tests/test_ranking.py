"""How recalled memories are ordered and kept (`memory/ranking.py`), on plain records: boosts on the fused score,
the relevance floor, time windows, outdated turns and captured memories folded into their turn."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from project_ledger.memory.ranking import (
    SIGNALS,
    Ranked,
    Sources,
    admitted_neighbours,
    after_successors,
    arrange,
    for_window,
    outdated_turns,
    rank,
    rare_exact,
)
from project_ledger.models import Memory
from project_ledger.search.fusion import with_neighbours
from project_ledger.search.index import Candidates, Hit, SearchFilter
from project_ledger.search.tuning import CandidateParams, RankingParams

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
PARAMS = RankingParams()


def memory(memory_id: str, kind: str = "note", age_days: float = 0, **fields: Any) -> Memory:
    at = (NOW - timedelta(days=age_days)).isoformat().replace("+00:00", "Z")
    return Memory(id=memory_id, text=f"text of {memory_id}", kind=kind, created_at=at, updated_at=at, **fields)


def only(item: Memory, dense: float = 0.5, coverage: float = 0.0, params: RankingParams = PARAMS, **options: Any) -> Ranked:
    """`item` ranked alone, found by meaning with cosine `dense`."""
    kept, below = rank(Candidates(dense=[Hit(1, dense)], sparse=[]), {1: item}, {1: coverage}, params, NOW.timestamp(), **options)
    return [*kept, *below][0]


def said(memory_id: str, text: str, kind: str = "turn", age_days: float = 0, **fields: Any) -> Memory:
    at = (NOW - timedelta(days=age_days)).isoformat().replace("+00:00", "Z")
    return Memory(id=memory_id, text=text, kind=kind, created_at=at, updated_at=at, **fields)


def test_a_question_an_acknowledgement_and_a_log_line_weigh_less_than_a_statement_and_plumbing_never_ranks() -> None:
    texts = {
        1: "Remind me, what is our retry policy for the payment gateway client?",
        2: "[tool] Bash: pytest -q tests/test_gateway.py",
        3: "ok, thanks",
        4: "[tool] mcp__ledger__recall: payment gateway client retry policy",
        5: "The payment gateway client retries 4 times, backing off from 0.5 s.",
    }
    found = Candidates(dense=[Hit(seq, 0.9 - seq / 100) for seq in texts], sparse=[])
    kept, below = rank(found, {seq: said(f"t{seq}", text) for seq, text in texts.items()}, {}, PARAMS, NOW.timestamp(), floor=0.0)
    order = [item.memory.id for item in arrange(kept, {}, replace(PARAMS, echo_margin=math.inf))]  # every echo kept
    assert order[0] == "t5" and order[-1] == "t3" and "t4" not in order and below == []  # plumbing: gone
    acts = {item.memory.id: {"question", "acknowledgement", "log"} & set(item.sources.signals) for item in kept}
    assert acts == {"t1": {"question"}, "t2": {"log"}, "t3": {"acknowledgement"}, "t5": set()}


def ranked_as(memories: list[Memory]) -> list[Ranked]:
    """`memories` in this order, as `rank` would hand them to `arrange`."""
    found = Candidates(dense=[Hit(n, 0.9 - n / 100) for n in range(len(memories))], sparse=[])
    even = replace(PARAMS, weights={"places": 1.0})  # the list places alone
    kept, _ = rank(found, dict(enumerate(memories)), {}, even, NOW.timestamp(), floor=0.0)
    return kept


def test_the_score_is_the_sum_of_each_signal_times_its_weight() -> None:
    found = Candidates(dense=[Hit(1, 0.7), Hit(2, 0.6)], sparse=[Hit(2, 3.0)])
    memories = {1: memory("m1", "decision", access_count=4), 2: memory("m2", age_days=3, session="s1")}
    kept, _ = rank(found, memories, {1: 0.5, 2: 0.5}, PARAMS, NOW.timestamp(), session="s1")
    for item in kept:
        assert set(item.sources.signals) <= set(SIGNALS) and all(item.sources.signals.values())
        assert item.score == pytest.approx(sum(PARAMS.weights[name] * value for name, value in item.sources.signals.items()))
    sources = {item.memory.id: item.sources for item in kept}
    assert (sources["m1"].dense, sources["m1"].dense_rank, sources["m1"].bm25, sources["m1"].bm25_rank) == (0.7, 0, None, None)
    assert (sources["m2"].dense, sources["m2"].dense_rank, sources["m2"].bm25, sources["m2"].bm25_rank) == (0.6, 1, 3.0, 0)
    assert sources["m1"].signals["used"] == pytest.approx(math.log(5)) and sources["m1"].signals["decided"] == 1.0
    assert sources["m2"].signals["session"] == 1.0 and sources["m2"].signals["bm25_place"] == 1.0


def scored(item: Memory, **options: Any) -> float:
    return only(item, **options).score


def test_with_the_same_places_a_written_down_memory_outranks_a_turn_and_a_gist_ranks_below_both() -> None:
    assert scored(memory("m1", "decision")) >= scored(memory("m1", "note")) > scored(memory("m1", "turn")) > scored(memory("m1", "summary"))


def test_a_note_fades_with_age_but_decisions_definitions_and_pins_do_not() -> None:
    def kept(age_days: float) -> float:  # what is left of the `fresh` factor at this age
        return math.exp(only(memory("m1", age_days=age_days)).sources.signals["fresh"])

    half_life = PARAMS.half_life_days
    assert kept(half_life) == pytest.approx((1 + kept(100 * half_life)) / 2)  # one half-life takes half of what age can
    assert scored(memory("m1", age_days=0)) > scored(memory("m1", age_days=7)) > scored(memory("m1", age_days=400))
    for item in (memory("m1", "decision", 400), memory("m1", "definition", 400), memory("m1", age_days=400, pinned=True)):
        assert "fresh" not in only(item).sources.signals  # log(1): nothing taken off
    assert "fresh" not in only(memory("m1", age_days=400), params=replace(PARAMS, half_life_days=0)).sources.signals


def test_often_used_and_same_session_memories_rank_a_little_higher() -> None:
    assert scored(memory("m1", access_count=9)) > scored(memory("m1"))
    assert scored(memory("m1", session="s1"), session="s1") > scored(memory("m1", session="s1"), session="s2")


def test_superseded_memories_and_outdated_turns_rank_below_current_ones() -> None:
    found = Candidates(dense=[Hit(1, 0.8), Hit(2, 0.7), Hit(3, 0.6)], sparse=[])
    memories = {1: memory("m1", "decision", superseded_by="m3"), 2: memory("m2", "decision"), 3: memory("m3", "decision")}
    kept, _ = rank(found, memories, {}, PARAMS, NOW.timestamp())
    assert [item.memory.id for item in kept] == ["m2", "m3", "m1"]
    assert kept[-1].sources.signals["outdated"] == 1.0

    turn = only(memory("m4", "turn"), outdated={1: "m3"})
    assert turn.outdated_by == "m3" and turn.sources.signals["outdated"] == 1.0
    assert turn.score < scored(memory("m4", "turn"))


def test_results_under_the_relevance_floor_are_set_apart() -> None:
    found = Candidates(dense=[Hit(1, 0.9), Hit(2, 0.2), Hit(3, 0.1)], sparse=[Hit(3, 2.0)])
    memories = {1: memory("m1"), 2: memory("m2"), 3: memory("m3")}
    kept, below = rank(found, memories, {1: 0.0, 2: 0.0, 3: 0.5}, PARAMS, NOW.timestamp())
    assert [item.memory.id for item in kept] == ["m3", "m1"]  # the BM25 match covers half of the query's terms
    assert [(item.memory.id, item.relevance) for item in below] == [("m2", 0.2)]
    kept, below = rank(found, memories, {1: 0.0, 2: 0.0, 3: 0.5}, PARAMS, NOW.timestamp(), floor=0.0)
    assert {item.memory.id for item in kept} == {"m1", "m2", "m3"} and below == []


def test_candidates_that_are_not_live_memories_are_skipped() -> None:
    found = Candidates(dense=[Hit(1, 0.9), Hit(2, 0.8)], sparse=[])
    kept, below = rank(found, {2: memory("m2")}, {}, PARAMS, NOW.timestamp())
    assert [item.seq for item in kept + below] == [2]


def test_a_question_about_a_time_window_ignores_age_and_later_changes() -> None:
    assert for_window(PARAMS, SearchFilter()) is PARAMS
    windowed = for_window(PARAMS, SearchFilter(since=NOW.timestamp() - 86_400))
    assert (windowed.weights["fresh"], windowed.weights["outdated"], windowed.successors_first) == (0.0, 0.0, False)
    assert for_window(PARAMS, SearchFilter(until=NOW.timestamp())) == windowed
    assert scored(memory("m1", age_days=30, superseded_by="m2"), params=windowed) == pytest.approx(scored(memory("m1"), params=windowed))


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_turn_that_stated_a_since_superseded_decision_is_outdated() -> None:
    turns = {
        1: memory("t1", "turn", age_days=2, session="s1"),  # said it, then the decision was recorded
        2: memory("t2", "turn", age_days=2, session="s2"),  # another session
        3: memory("t3", "turn", age_days=0.5, session="s1"),  # said after the decision was recorded
        4: memory("t4", "turn", age_days=2, session="s1"),  # about something else
        5: memory("t5", "turn", age_days=2, session="s1"),  # no vector yet
    }
    retired = {10: memory("m10", "decision", age_days=1, session="s1", superseded_by="m11")}
    close, far = unit(1, 0.1, 0), unit(0, 0, 1)
    vectors = {1: close, 2: close, 3: close, 4: far, 10: unit(1, 0, 0)}
    assert outdated_turns(turns, retired, vectors, similarity=0.6, wording=0.7) == {1: "m11"}
    assert outdated_turns(turns, retired, vectors, similarity=0.999, wording=0.7) == {}


def test_a_turn_the_superseded_decision_restates_is_outdated_whatever_its_vector() -> None:
    def turn(memory_id: str, text: str, session: str = "s1", age_days: float = 2) -> Memory:
        return memory(memory_id, "turn", age_days=age_days, session=session).model_copy(update={"text": text})

    turns = {
        1: turn("t1", "100 requests per second per key, fixed window. 429 with Retry-After."),
        2: turn("t2", "rate limits: what do other billing APIs do about bursts?"),  # shares one word only
        3: turn("t3", "100 requests per second per key, fixed window.", session="s2"),  # another session
        4: turn("t4", "100 requests per second per key, fixed window.", age_days=0.5),  # said after it
        5: turn("t5", "100 requests per second per key, fixed window.", session="s3"),  # only an old gist says it again
    }
    old = memory("m10", "decision", age_days=1, session="s1", superseded_by="m11")
    retired = {
        10: old.model_copy(
            update={"text": "Rate limit: fixed window, 100 requests per second per API key; 429 with Retry-After: 1."}
        )
    }
    gist = memory("m20", "summary", age_days=1, session="s3", superseded_by="m21")  # replaced by the next gist
    retired[20] = gist.model_copy(update={"text": retired[10].text})
    far = {seq: unit(0, 0, 1) for seq in turns} | {10: unit(1, 0, 0), 20: unit(1, 0, 0)}
    assert outdated_turns(turns, retired, far, similarity=0.6, wording=0.7) == {1: "m11"}
    assert outdated_turns(turns, retired, {}, similarity=0.6, wording=0.7) == {1: "m11"}  # no vectors yet
    assert outdated_turns(turns, retired, far, similarity=0.6, wording=1.01) == {}


def test_a_short_turn_whose_few_words_the_decision_holds_is_not_outdated_by_its_words() -> None:
    """A turn of two or three content words, all in the retired decision, is a question about its topic, not a
    statement of it; from four on, a turn holding 0.7 of its words in the decision restates it."""

    def turn(memory_id: str, text: str) -> Memory:
        return memory(memory_id, "turn", age_days=2, session="s1").model_copy(update={"text": text})

    turns = {
        1: turn("t1", "money columns?"),  # two content words, both in the decision
        2: turn("t2", "numeric money columns?"),  # three
        3: turn("t3", "money columns stored as numeric, mapped to decimal"),  # six, all in it
    }
    old = memory("m10", "decision", age_days=1, session="s1", superseded_by="m11")
    retired = {10: old.model_copy(update={"text": "Money columns stored as NUMERIC(12,2), mapped to Decimal."})}
    far = {seq: unit(0, 0, 1) for seq in turns} | {10: unit(1, 0, 0)}
    assert outdated_turns(turns, retired, far, similarity=0.6, wording=0.7) == {3: "m11"}


def test_a_turn_close_in_meaning_to_a_replaced_session_gist_is_not_outdated() -> None:
    """A gist is made of its session's turns and replaced by the next gist: that changes nothing they said."""
    turns = {1: memory("t1", "turn", age_days=2, session="s1")}
    retired = {20: memory("m20", "summary", age_days=1, session="s1", superseded_by="m21")}
    assert outdated_turns(turns, retired, {1: unit(1, 0, 0), 20: unit(1, 0.05, 0)}, similarity=0.6, wording=0.7) == {}


def test_an_outdated_item_never_ranks_above_what_replaced_it_outside_a_time_window() -> None:
    found = Candidates(dense=[Hit(1, 0.9), Hit(2, 0.8), Hit(3, 0.7), Hit(4, 0.6)], sparse=[Hit(1, 9.0), Hit(5, 8.0)])
    memories = {
        1: memory("t1", "turn"),  # both lists rank it first: even outdated, it outscores m4
        2: memory("m2", "decision", superseded_by="m3"),  # replaced by m3, itself replaced by m4
        3: memory("m3", "decision", superseded_by="m4"),
        4: memory("m4", "decision"),
        5: memory("m5"),
    }
    kept, _ = rank(found, memories, {}, PARAMS, NOW.timestamp(), floor=0.0, outdated={1: "m4"})
    assert [item.memory.id for item in kept] == ["m5", "m4", "t1", "m3", "m2"]
    windowed, _ = rank(
        found, memories, {}, for_window(PARAMS, SearchFilter(since=0.0)), NOW.timestamp(), floor=0.0, outdated={1: "m4"}
    )
    assert next(item.memory.id for item in windowed) == "t1"  # what was said then is what is asked for


def test_a_captured_memory_takes_the_better_place_of_it_and_its_turn_and_the_turn_goes() -> None:
    kept = ranked_as([memory("t3", "turn"), memory("m2"), memory("c1", "decision"), memory("c4", "todo")])
    arranged = arrange(kept, {"c1": "t3", "c4": "t9"}, PARAMS)  # c4's turn did not rank: c4 keeps its place
    assert [item.memory.id for item in arranged] == ["c1", "m2", "c4"]


def test_the_few_candidates_holding_an_identifier_the_query_names_come_first_even_under_the_floor() -> None:
    look_alikes = {
        seq: memory(f"m{seq}").model_copy(update={"text": f"ticket OPS-9409{seq} is about quotas"}) for seq in range(1, 6)
    }
    found = Candidates(dense=[Hit(seq, 0.8) for seq in (1, 2, 3, 4)], sparse=[Hit(1, 2.0), Hit(5, 1.9)])
    kept, below = rank(found, look_alikes, {}, PARAMS, NOW.timestamp(), floor=0.5, exact_terms=["ops-94095"])
    assert kept[0].memory.id == "m5" and kept[0].sources.exact and not below  # only BM25 found it, under the floor, yet it leads
    plain, _ = rank(found, look_alikes, {}, PARAMS, NOW.timestamp(), floor=0.0)
    assert plain[0].memory.id != "m5"  # without the exact term, a look-alike both lists found comes first


def test_an_identifier_many_candidates_hold_changes_no_order() -> None:
    shared = {seq: memory(f"m{seq}").model_copy(update={"text": f"RetryPolicy.backoff_ms rule {seq}"}) for seq in range(1, 6)}
    assert rare_exact(shared, set(shared), ["retrypolicy.backoff_ms"], 3) == set()
    assert rare_exact(shared, set(shared), ["retrypolicy.backoff_ms"], 5) == set(shared)
    assert rare_exact(shared, set(shared), ["retrypolicy.backoff"], 5) == set()  # a part of a name is not the name


def test_a_turn_next_to_the_turns_holding_the_words_ranks_without_having_them() -> None:
    turns = {seq: memory(f"t{seq}", "turn", session="s1") for seq in range(1, 8)}
    found = Candidates(dense=[], sparse=[Hit(3, 5.0), Hit(6, 1.0), Hit(1, 0.1), Hit(7, 0.1)])  # t3 asked, t4 answered
    around = {3: [2, 4], 6: [5, 7], 1: [2], 7: [6]}
    lexical = {3: 1.0, 6: 0.5, 1: 0.2, 7: 0.2}  # t2 and t4 hold none of the query's words
    sharing = replace(PARAMS, fusion=CandidateParams(neighbour_share=0.5))
    kept, _ = rank(with_neighbours(found, around, 0.5), turns, lexical, sharing, NOW.timestamp(), floor=0.45, neighbours=around)
    assert [item.memory.id for item in kept] == ["t3", "t2", "t4", "t6"]
    assert {item.memory.id: item.relevance for item in kept}["t4"] == pytest.approx(0.5)  # half of t3's coverage: over the floor
    alone, _ = rank(found, turns, lexical, PARAMS, NOW.timestamp(), floor=0.0)
    assert [item.memory.id for item in alone] == ["t3", "t6", "t1", "t7"]


def test_only_neighbouring_turns_the_search_filter_admits_may_join() -> None:
    memories = {
        1: memory("t1", "turn", session="s1", tags=["billing"]),
        2: memory("t2", "turn", session="s1", tags=["billing"], superseded_by="t9"),
        3: memory("t3", "turn", age_days=10, session="s1", tags=["billing"]),
        4: memory("t4", "turn", session="s1", tags=["other"]),
    }
    around = {10: [1, 2], 11: [3, 4], 12: [5]}  # 5 was forgotten: not among the live memories
    assert admitted_neighbours(around, memories, SearchFilter()) == {10: [1], 11: [3, 4]}
    recent = SearchFilter(since=(NOW - timedelta(days=2)).timestamp(), tags=["billing"])
    assert admitted_neighbours(around, memories, recent) == {10: [1]}
    assert admitted_neighbours(around, memories, SearchFilter(kinds=["decision"])) == {}
    assert admitted_neighbours(around, memories, SearchFilter(include_superseded=True, session="s1")) == {10: [1, 2], 11: [3, 4]}


def test_a_tool_log_line_lends_its_neighbours_nothing() -> None:
    memories = {
        1: said("t1", "One failure: format_cents divided by 100 as a float; it is back to integer arithmetic."),
        10: said("t10", "[tool] Edit: $ROOT/billing/money.py"),
        11: said("t11", "Do we store amounts as floats or something else?"),
    }
    assert admitted_neighbours({10: [1], 11: [1]}, memories, SearchFilter()) == {11: [1]}


def test_every_field_a_search_filters_on_has_a_payload_index() -> None:
    from project_ledger.code.search import CODE_PAYLOAD, code_filter
    from project_ledger.search.index import MEMORY_PAYLOAD

    widest = SearchFilter(kinds=["note"], tags=["t"], session="s", since=0.0, until=1.0)
    assert {match.field for match in widest.conditions()} == set(MEMORY_PAYLOAD)
    assert {match.field for match in code_filter("python", "src/")} == set(CODE_PAYLOAD)


def test_a_question_that_asks_when_lifts_the_memory_that_says_when_within_bounds() -> None:
    said = memory("a").model_copy(update={"text": "We moved billing to Postgres last week."})
    plain = memory("b").model_copy(update={"text": "Billing runs on Postgres; the schema lives in billing/."})
    found = Candidates(dense=[Hit(2, 0.62), Hit(1, 0.6)], sparse=[Hit(2, 3.0), Hit(1, 2.9)])
    memories, coverage = {1: said, 2: plain}, {1: 0.5, 2: 0.5}
    asked, _ = rank(found, memories, coverage, PARAMS, NOW.timestamp(), floor=0.0, asks_time=True)
    assert [r.seq for r in asked] == [1, 2]
    assert asked[0].sources.signals["timely"] == 1.0 and asked[0].relevance == 0.6  # the order moves; relevance stays
    assert "timely" not in asked[1].sources.signals
    other, _ = rank(found, memories, coverage, PARAMS, NOW.timestamp(), floor=0.0)  # the same words, not asking when
    assert [r.seq for r in other] == [2, 1] and all("timely" not in r.sources.signals for r in other)
    far = Candidates(dense=[Hit(2, 0.85), Hit(3, 0.8), Hit(1, 0.3)], sparse=[Hit(2, 3.0), Hit(3, 2.0)])
    memories[3] = memory("c").model_copy(update={"text": "Postgres holds the billing tables."})
    kept, _ = rank(far, memories, {1: 0.25, 2: 0.5, 3: 0.5}, PARAMS, NOW.timestamp(), floor=0.0, asks_time=True)
    assert [r.seq for r in kept][-1] == 1  # a time is no reason to pass far better matches


def test_an_outdated_item_follows_its_successor_and_looping_links_lose_nothing() -> None:
    def ranked(memory_id: str, outdated_by: str | None = None) -> Ranked:
        sources = Sources(dense=None, dense_rank=None, bm25=None, bm25_rank=None, coverage=0.0, signals={})
        return Ranked(0, memory(memory_id), 1.0, 1.0, outdated_by, sources)

    def order(*items: Ranked) -> list[str]:
        return [item.memory.id for item in after_successors(items)]

    assert order(ranked("old", outdated_by="new"), ranked("x"), ranked("new")) == ["x", "new", "old"]
    assert order(ranked("old", outdated_by="gone"), ranked("x")) == ["old", "x"]  # its successor is no candidate
    assert order(ranked("a"), ranked("self", outdated_by="self"), ranked("c")) == ["a", "self", "c"]
    assert order(ranked("p", outdated_by="q"), ranked("q", outdated_by="p"), ranked("c")) == ["c", "p", "q"]


def test_a_turn_restating_a_decision_follows_it_and_a_turn_that_says_something_else_keeps_its_place() -> None:
    kept = ranked_as([
        said("t1", "OK so retries back off from 0.5 s, doubling, at most 4 tries for the gateway client.", age_days=2),
        said("t2", "The gateway client also logs every retry at warning level.", age_days=2),
        said("d3", "Gateway client retries back off from 0.5 s doubling, at most 4 tries.", "decision"),
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["t2", "d3", "t1"]


def test_a_turn_said_shortly_before_a_decision_was_written_down_on_its_topic_follows_it() -> None:
    kept = ranked_as([
        said("t1", "We decided the retry policy for the payment gateway client. Remember it.", age_days=0.005, session="s1"),
        said("t2", "The payment gateway client logs every retry.", age_days=1, session="s1"),  # a day before: not its source
        said("t3", "Lunch is at noon.", age_days=0.005, session="s1"),  # nothing in common
        said("d4", "Payment gateway client retries back off 0.5 s doubling, at most 4 tries.", "decision"),  # no session given
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["t2", "t3", "d4", "t1"]


def test_turns_with_the_same_words_are_one_result_the_newest_and_a_copy_of_the_question_is_none() -> None:
    kept = ranked_as([
        said("t1", "Run the tests and fix what fails.", age_days=3),
        said("t2", "Remind me: what is the retry policy?", age_days=2),
        said("t3", "run the tests and fix what fails", age_days=1),
        said("m4", "Run the tests and fix what fails.", "note"),  # a memory, not a turn: never collapsed
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["t3", "t2", "m4"]
    assert [item.memory.id for item in arrange(kept, {}, PARAMS, asked="remind me: WHAT is the retry policy")] == ["t3", "m4"]


def test_a_memory_captured_word_for_word_from_an_earlier_copy_of_the_question_is_no_answer_either() -> None:
    kept = ranked_as([
        said("c1", "Remind me how late fees work", "todo", tags=["captured"]),
        said("n2", "Remind me how late fees work", "note"),  # written down on purpose: it stays
        said("d3", "Late fees are 1.5% a month, capped at 25 EUR.", "decision"),
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS, asked="remind me how late fees work?")] == ["n2", "d3"]


def test_a_question_or_log_line_far_below_the_best_result_is_left_out_and_one_near_it_stays() -> None:
    kept = [
        replace(item, score=score)
        for item, score in zip(
            ranked_as([
                said("d1", "Amounts are integer cents everywhere in billing.", "constraint"),
                said("t2", "[tool] Edit: billing/money.py"),
                said("t3", "Do we store amounts as floats?"),
                said("t4", "Which currencies do we support?"),
            ]),  # fmt: skip
            [1.0, -0.2, 0.5, -0.9],
            strict=True,
        )
    ]
    assert PARAMS.echo_margin == 1.0
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["d1", "t3"]


def test_a_turn_stating_a_fact_of_its_own_before_a_decision_on_a_neighbouring_topic_is_not_its_source() -> None:
    kept = ranked_as([
        said("t1", "Gateway calls time out after 10 seconds (connect plus read, per call), and a timeout is retried like "
             "a 5xx. I set TIMEOUT_SECONDS = 10 in billing/gateway.py.", age_days=0.005, session="s1"),
        said("d2", "Payment gateway client retries: at most 3 attempts, on HTTP 5xx, timeouts and 429.", "decision"),
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["t1", "d2"]


def test_the_agents_report_of_a_decision_it_just_wrote_down_and_the_long_request_that_led_to_it_follow_it() -> None:
    kept = ranked_as([
        said("t1", "The gateway client retries every error three times with a fixed one-second sleep. Let's decide the "
             "retry policy for the payment gateway client properly.", age_days=0.006, session="s1"),
        said("t2", "Recorded the retry decision and implemented it: charge() now retries only 5xx and timeouts, "
             "sleeping 0.5 s, 1 s, 2 s between at most 4 attempts.", age_days=0.004, session="s1"),
        said("t3", "Lunch is at noon, and the office closes early on Friday.", age_days=0.004, session="s1"),
        said("d4", "Payment gateway client retries: exponential backoff from 0.5 s, doubling, at most 4 attempts, "
             "only on HTTP 5xx and timeouts.", "decision", age_days=0.005),
    ])  # fmt: skip
    assert [item.memory.id for item in arrange(kept, {}, PARAMS)] == ["t3", "d4", "t1", "t2"]


def test_a_copy_of_the_question_lends_its_neighbours_nothing() -> None:
    memories = {
        1: said("t1", "Added late_fee() in billing/invoices.py with its cap and start day; 15 tests pass."),
        2: said("t2", "What did we decide about representing money in billing?"),
        3: said("t3", "Amounts are integer cents everywhere in billing, never floats."),
    }
    around = {2: [1], 3: [1]}
    assert admitted_neighbours(around, memories, SearchFilter(), asked="what did we decide about representing money in billing") == {3: [1]}
    assert admitted_neighbours(around, memories, SearchFilter()) == {2: [1], 3: [1]}


def test_a_statement_that_ends_by_asking_ranks_below_the_answer_that_follows_it() -> None:
    asking = said("t1", "[10 July, 2022] Nate: That road trip sounds great! Where did you go on your road trip?")
    answer = said("t2", "[10 July, 2022] Joanna: On my road trip I went to Woodhaven, a small town in the Midwest.")
    found = Candidates(dense=[Hit(1, 0.61), Hit(2, 0.6)], sparse=[Hit(1, 3.0), Hit(2, 2.95)])
    memories, coverage = {1: asking, 2: answer}, {1: 0.75, 2: 0.75}
    ranked, _ = rank(found, memories, coverage, PARAMS, NOW.timestamp(), floor=0.0)
    assert [r.seq for r in ranked] == [2, 1]
    assert ranked[1].sources.signals["ends_asking"] == 1.0 and "ends_asking" not in ranked[0].sources.signals
    unweighted = replace(PARAMS, weights={**PARAMS.weights, "ends_asking": 0.0})
    assert [r.seq for r in rank(found, memories, coverage, unweighted, NOW.timestamp(), floor=0.0)[0]] == [1, 2]


def test_a_turn_that_only_asks_keeps_its_own_signal_not_ending_asking_too() -> None:
    memories = {1: said("t1", "Where did you go?")}
    ranked, _ = rank(Candidates(dense=[Hit(1, 0.6)], sparse=[]), memories, {1: 0.5}, PARAMS, NOW.timestamp(), floor=0.0)
    assert ranked[0].sources.signals.get("question") == 1.0 and "ends_asking" not in ranked[0].sources.signals


def test_the_agents_answer_that_ends_by_offering_the_next_step_is_not_ending_asking() -> None:
    answer = said("t1", "A RetryPolicy dataclass in webhooks/retry.py. First cut with a fixed backoff?", role="assistant")
    users = said("t2", "Thanks. Which module defines the RetryPolicy dataclass?", role="user")
    found = Candidates(dense=[Hit(1, 0.6), Hit(2, 0.6)], sparse=[])
    ranked, _ = rank(found, {1: answer, 2: users}, {1: 0.5, 2: 0.5}, PARAMS, NOW.timestamp(), floor=0.0)
    signals = {r.seq: r.sources.signals for r in ranked}
    assert "ends_asking" not in signals[1] and signals[2]["ends_asking"] == 1.0
