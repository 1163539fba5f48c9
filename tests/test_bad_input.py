"""Bad input gets a clear tool error, the server stays up, and text of any script survives byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Project, connect

pytestmark = pytest.mark.anyio


async def test_bad_arguments_get_errors_that_say_what_to_do(project: Project) -> None:
    async with connect(project) as ledger:
        kept = await ledger.remember("This memory must outlive every bad call below.")

        assert "empty" in await ledger.error("remember", text="   ")
        assert "text" in await ledger.error("remember")  # missing required argument
        assert "kind" in await ledger.error("remember", text="x", kind="gossip")
        assert "tags" in await ledger.error("remember", text="x", tags="not-a-list")
        too_long = await ledger.error("remember", text="x" * (64 * 1024 + 1))
        assert "65537 bytes" in too_long and "split it" in too_long
        assert "k=0 is out of range: give 1 to 100 (LEDGER_MAX_K)" in await ledger.error("recall", query="anything", k=0)
        assert "k=101 is out of range" in await ledger.error("recall", query="anything", k=101)
        assert "k='eight' is not a whole number" in await ledger.error("recall", query="anything", k="eight")
        assert "not a date" in await ledger.error("recall", query="anything", since="last tuesday")
        assert "smaller age" in await ledger.error("recall", query="anything", since="99999999w")
        for tool in ("pin", "unpin", "forget"):
            assert "no memory with id 'm-nope'" in await ledger.error(tool, id="m-nope")
        assert "Unknown tool: no_such_tool" in await ledger.error("no_such_tool")
        for noise in ("?!...", "what is the", "-- // **"):
            for tool in ("recall", "context"):
                said = await ledger.error(tool, query=noise)
                assert "nothing to search for" in said and "words that matter" in said, (tool, said)
        assert (await ledger.call("recall", query="v2"))["mode"] == "hybrid"  # a short word is a query, not an error

        hits = await ledger.recall("outlive every bad call")
        assert [hit["id"] for hit in hits] == [kept]


@pytest.mark.parametrize(
    "text",
    [
        "决定：缓存时间为六十秒。東京のサーバーを使う。데이터베이스 백업은 매일.",
        "Ship it 🚀🔥 — but only after the 🧪 suite is green ✅ (family: 👩‍👩‍👧‍👦).",
        "القرار: نستخدم قاعدة بيانات واحدة لكل مستأجر. עברית גם כאן.",
        "NUL inside\x00the text, a tab\tand\r\nWindows line ends, and a zero-width\u200bjoiner.",
    ],
    ids=["cjk", "emoji", "rtl", "control"],
)
async def test_unicode_round_trips_byte_for_byte(project: Project, text: str) -> None:
    async with connect(project) as ledger:
        memory = await ledger.remember(text, tags=["ünïcode", "标签"])
        hits = await ledger.recall(text, k=1)
    assert hits[0]["id"] == memory
    assert hits[0]["text"].encode("utf-8") == text.encode("utf-8")
    assert hits[0]["tags"] == ["ünïcode", "标签"]


async def test_cjk_memories_are_found_by_a_cjk_query(project: Project) -> None:
    async with connect(project) as ledger:
        tokyo = await ledger.remember("東京のサーバーで本番データベースを運用する。")
        await ledger.remember("The production database runs in Frankfurt.")
        hits = await ledger.recall("東京のサーバー", k=1)
    assert hits[0]["id"] == tokyo


async def test_paths_stay_inside_the_project_root(project: Project, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secrets.py").write_text("def leak() -> None:\n    pass\n")
    (project.root / "vendor").symlink_to(outside)
    async with connect(project) as ledger:
        refusals = {
            "..": await ledger.error("remember", text="Deploy notes.", files=["../elsewhere/secrets.py"]),
            "absolute": await ledger.error("remember", text="Deploy notes.", files=[str(outside / "secrets.py")]),
            "symlink": await ledger.error("remember", text="Deploy notes.", files=["vendor/secrets.py"]),
            "code filter": await ledger.error("find_symbol", name="leak", path="../elsewhere"),
            "code search": await ledger.error("search_code", query="leak", path="vendor"),
        }
        assert "contains '..'" in refusals[".."] and "contains '..'" in refusals["code filter"]
        assert "outside the project root" in refusals["absolute"]
        assert "through a symlink" in refusals["symlink"] and "through a symlink" in refusals["code search"]
        assert all("inside" in text for text in refusals.values()), refusals
        assert (await ledger.call("status"))["counts"] == {}


async def test_limits_are_settings_and_no_result_passes_the_cap(project: Project) -> None:
    project.env.update(
        {"LEDGER_MAX_TAGS": "2", "LEDGER_MAX_LABEL_CHARS": "12", "LEDGER_MAX_K": "10", "LEDGER_MAX_RESULT_TOKENS": "2000"}
    )
    paragraph = " ".join(f"Region {n} keeps its invoices in bucket invoices-{n} with a 90-day lifecycle rule." for n in range(12))
    async with connect(project) as ledger:
        assert "at most 2" in await ledger.error("remember", text="x", tags=["a", "b", "c"])
        assert "LEDGER_MAX_LABEL_CHARS" in await ledger.error("remember", text="x", tags=["thirteen-char"])
        assert "LEDGER_MAX_K" in await ledger.error("recall", query="invoices", k=11)
        assert "LEDGER_MAX_RESULT_TOKENS" in await ledger.error("recall", query="invoices", token_budget=2001)
        assert "LEDGER_MAX_RESULT_TOKENS" in await ledger.error("context", query="invoices", token_budget=2001)

        previous = None
        for version in range(8):
            previous = await ledger.remember(f"Version {version}: {paragraph}", kind="decision", supersedes=previous)
        result = await ledger.call("recall", query="invoice buckets lifecycle", k=10, include_superseded=True, min_relevance=0)
        assert 0 < len(result["results"]) < 8 and "2000-token result cap" in result["note"]
        assert "over the 2000-token cap" in await ledger.error("history", id=previous)
        assert (await ledger.call("context", query="invoices", token_budget=2000))["tokens"] <= 2000
