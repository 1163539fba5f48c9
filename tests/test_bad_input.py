"""Bad input gets a clear tool error, the server stays up, and text of any script survives byte for byte."""

from __future__ import annotations

import pytest

from .conftest import Project, serve

pytestmark = pytest.mark.anyio


async def test_bad_arguments_get_errors_that_say_what_to_do(project: Project) -> None:
    async with serve(project) as ledger:
        kept = await ledger.remember("This memory must outlive every bad call below.")

        assert "empty" in await ledger.error("remember", text="   ")
        assert "text" in await ledger.error("remember")  # missing required argument
        assert "kind" in await ledger.error("remember", text="x", kind="gossip")
        assert "tags" in await ledger.error("remember", text="x", tags="not-a-list")
        too_long = await ledger.error("remember", text="x" * (64 * 1024 + 1))
        assert "65537 bytes" in too_long and "split it" in too_long
        assert "greater than or equal to 1" in await ledger.error("recall", query="anything", k=0)
        assert "less than or equal to 100" in await ledger.error("recall", query="anything", k=101)
        assert "valid integer" in await ledger.error("recall", query="anything", k="eight")
        assert "not a date" in await ledger.error("recall", query="anything", since="last tuesday")
        assert "smaller age" in await ledger.error("recall", query="anything", since="99999999w")
        for tool in ("pin", "unpin", "forget"):
            assert "no memory with id 'm-nope'" in await ledger.error(tool, id="m-nope")
        assert "Unknown tool: no_such_tool" in await ledger.error("no_such_tool")

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
    async with serve(project) as ledger:
        memory = await ledger.remember(text, tags=["ünïcode", "标签"])
        hits = await ledger.recall(text, k=1)
    assert hits[0]["id"] == memory
    assert hits[0]["text"].encode("utf-8") == text.encode("utf-8")
    assert hits[0]["tags"] == ["ünïcode", "标签"]


async def test_cjk_memories_are_found_by_a_cjk_query(project: Project) -> None:
    async with serve(project) as ledger:
        tokyo = await ledger.remember("東京のサーバーで本番データベースを運用する。")
        await ledger.remember("The production database runs in Frankfurt.")
        hits = await ledger.recall("東京のサーバー", k=1)
    assert hits[0]["id"] == tokyo
