"""The web inspector (`project-ledger inspect`) in a real browser: Debian's Chromium driven by Playwright.

One project per module: memories stored through the MCP server, two source
files, and the inspector running on it as a user would start it. Changes made
on the page are checked through a separate MCP server on the same project,
the way an agent would see them.

Set LEDGER_SAVE_SCREENSHOT=1 to refresh docs/inspector.png (the README's picture).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import anyio
import pytest
from playwright.async_api import BrowserContext, Page, async_playwright

from .conftest import EXECUTABLE, Ledger, Project, connect, run_cli

# The module's tests share one project, inspector, browser and MCP client: keep them on one test worker.
pytestmark = pytest.mark.xdist_group("inspector")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "inspector.png"
READY_SECONDS = 180

RETRY = "src/retry.py"
RETRY_SOURCE = '''"""Outgoing HTTP calls, retried."""


class RetryPolicy:
    """Exponential backoff: 250ms, doubling up to 8s."""

    def delay(self, attempt: int) -> float:
        return min(0.25 * 2**attempt, 8.0)


def fetch_with_retry(url: str, policy: RetryPolicy) -> bytes:
    """Fetch a URL, waiting `policy.delay(n)` after the n-th failure."""
    raise NotImplementedError
'''
CACHE_SOURCE = '''def cache_key(user_id: int) -> str:
    """Redis keys are per user."""
    return f"user:{user_id}"
'''


@dataclass
class Site:
    """The seeded project and the inspector serving it."""

    project: Project
    url: str
    ids: dict[str, str]


async def _seed(project: Project) -> dict[str, str]:
    """Store the memories through the MCP server, and wait until it has embedded and indexed them."""
    async with connect(project) as ledger:
        ids = {"fixed": await ledger.remember("HTTP retries wait a fixed 1s between attempts", kind="decision", tags=["http"])}
        ids["backoff"] = await ledger.remember(
            "HTTP retries back off exponentially: 250ms, doubling up to 8s, then give up",
            kind="decision", tags=["http"], files=[RETRY], supersedes=ids["fixed"], session="s-retries",
        )  # fmt: skip
        ids["post"] = await ledger.remember("Never retry a POST that is not idempotent", kind="constraint", tags=["http"])
        ids["jitter"] = await ledger.remember("Add jitter to the retry backoff", kind="todo", session="s-retries")
        ids["backoff_term"] = await ledger.remember("Backoff: the wait between attempts, growing after each failure", kind="definition")
        ids["database"] = await ledger.remember("We use Postgres 16 for the main database", kind="decision", tags=["db"])
        ids["cache"] = await ledger.remember("The cache is Redis, keyed by user id", kind="note", tags=["cache"])
        ids["style"] = await ledger.remember("Code style: ruff, line length 140", kind="constraint", pinned=True)
        await ledger.settled()
    return ids


def _get(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, str]:
    """Status and body of one request, whatever the status."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


def _ready(url: str) -> bool:
    """The page answers, the model is loaded, the index has caught up, and the code is indexed."""
    try:
        _, status = _get(url + "status")
        _, code = _get(url + "code")
    except OSError:
        return False
    return (
        'id="embedding" data-state="ready"' in status
        and 'data-state="ready" data-lag="0" data-missing="0"' in status
        and 'data-files="2" data-search-lag="0" data-indexing=""' in code
    )


# One event loop for the module, so the project, the inspector, the browser and the MCP client are started once.
@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    root = tmp_path_factory.mktemp("inspected") / "repo"
    (root / "src").mkdir(parents=True)
    (root / RETRY).write_text(RETRY_SOURCE)
    (root / "src" / "cache.py").write_text(CACHE_SOURCE)
    project = Project(root)
    ids = await _seed(project)
    log = root.parent / "inspector.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            # --no-auth: these tests are about the pages; test_access.py covers the inspector's token and cookie
            [EXECUTABLE, "inspect", "--root", str(root), "--port", "0", "--no-auth"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=root, env={**os.environ, **project.env},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + READY_SECONDS
            while not (found := re.search(r"at (http://127\.0\.0\.1:\d+/)", log.read_text())) or not await anyio.to_thread.run_sync(
                _ready, found.group(1)
            ):
                assert process.poll() is None, f"the inspector exited: {log.read_text()}"
                assert time.monotonic() < deadline, f"the inspector was not ready within {READY_SECONDS}s: {log.read_text()}"
                await anyio.sleep(0.2)
            yield Site(project, found.group(1), ids)
        finally:
            process.terminate()
            process.wait(timeout=60)


@pytest.fixture(scope="module")
async def chromium() -> AsyncIterator[BrowserContext]:
    """Debian's Chromium with a fresh profile."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: tests/setup.sh installs Debian's chromium")
    with tempfile.TemporaryDirectory() as profile:
        async with async_playwright() as playwright:
            context = await playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, viewport={"width": 1360, "height": 860}
            )
            try:
                yield context
            finally:
                await context.close()


@pytest.fixture
async def page(chromium: BrowserContext) -> AsyncIterator[Page]:
    page = await chromium.new_page()
    try:
        yield page
    finally:
        await page.close()


@pytest.fixture(scope="module")
async def agent(site: Site) -> AsyncIterator[Ledger]:
    """An MCP server on the same project, as the agent sees it."""
    async with connect(site.project) as ledger:
        yield ledger


async def row_ids(page: Page, table: str) -> list[str]:
    return await page.locator(f"table.{table} tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")


@pytest.mark.anyio
async def test_every_view_shows_the_project(site: Site, page: Page) -> None:
    await page.goto(site.url)
    assert page.url == site.url + "memories"
    listed = await row_ids(page, "memories")
    assert site.ids["backoff"] in listed and site.ids["fixed"] in listed  # superseded ones are listed too

    await page.select_option("select[name=kind]", "decision")
    await page.click("text=Filter")
    kinds = await page.locator("table.memories tbody tr td:nth-child(2) .kind").all_inner_texts()
    assert kinds and set(kinds) == {"decision"}
    await page.goto(site.url + "memories?pinned=1")
    assert await row_ids(page, "memories") == [site.ids["style"]]
    await page.goto(site.url + "memories?superseded=1")
    assert await row_ids(page, "memories") == [site.ids["fixed"]]
    await page.goto(site.url + "memories?tag=http&session=s-retries")
    assert await row_ids(page, "memories") == [site.ids["backoff"]]

    await page.click(f"a.id:text-is('{site.ids['backoff']}')")
    text = await page.locator("pre.memory-text").inner_text()
    assert text == "HTTP retries back off exponentially: 250ms, doubling up to 8s, then give up"
    assert await page.locator("ol.history li a.id").all_inner_texts() == [site.ids["fixed"], site.ids["backoff"]]
    assert await page.locator("ul.links li.file code").inner_text() == f"file {RETRY}"
    assert "unchanged" in await page.locator("ul.links").inner_text()
    assert re.search(r"\d+ times?", await page.locator("dd.access").inner_text())

    await page.goto(site.url + "code")
    await page.fill("input[name=symbol]", "RetryPolicy")
    await page.click("#find-symbol button")
    definitions = await page.locator("table.symbols").first.inner_text()
    assert "RetryPolicy" in definitions and f"{RETRY}:4" in definitions
    await page.fill("input[name=q]", "exponential backoff between attempts")
    await page.click("#search-code button")
    found = await page.locator("table.symbols").first.inner_text()
    assert "RetryPolicy" in found or "fetch_with_retry" in found
    assert await page.locator("pre.repo-map").count() == 0, "each form runs its own tool"
    await page.click("#map button")
    repo_map = await page.locator("pre.repo-map").inner_text()
    assert RETRY in repo_map and "src/cache.py" in repo_map
    assert "2 files" in await page.locator("#code-status").inner_text()

    await page.goto(site.url + "context")
    await page.fill("input[name=q]", "how do HTTP retries back off?")
    await page.fill("input[name=budget]", "800")
    await page.click("text=Build pack")
    rows = await page.locator("table.sections tbody tr").evaluate_all("rows => rows.map(r => [r.cells[0].innerText, r.cells[1].innerText])")
    sections = {name: int(tokens) for name, tokens in rows}
    assert {"guide", "pinned", "memories"} <= set(sections)
    summary = re.match(r"(\d+) of 800 tokens", await page.locator("p.summary").inner_text())
    assert summary is not None
    used = int(summary.group(1))
    # the sections, plus the few tokens of the JSON around the text that a client hands its model
    assert used <= 800 and 0 <= used - sum(sections.values()) <= 20 + len(sections)
    pack = await page.locator("pre.pack").inner_text()
    assert "250ms, doubling up to 8s" in pack and "Code style: ruff" in pack

    await page.goto(site.url + "status")
    assert "ready" in await page.locator("#embedding").inner_text()


@pytest.mark.anyio
async def test_the_recall_debugger_shows_each_score_and_matches_recall(site: Site, page: Page, agent: Ledger, tmp_path: Path) -> None:
    query = "how do HTTP retries back off?"
    await page.goto(site.url + "recall")
    await page.fill("input[name=q]", query)
    await page.click("text=Explain")
    assert "Mode hybrid" in await page.locator("p.summary").inner_text()
    order = await row_ids(page, "returned")
    assert order[0] == site.ids["backoff"]
    first = page.locator("table.returned tbody tr").first
    dense, bm25 = await first.locator("td.dense").inner_text(), await first.locator("td.bm25").inner_text()
    assert re.fullmatch(r"0\.\d{3} #\d+", dense) and re.fullmatch(r"\d+\.\d{3} #\d+", bm25)
    score = float(await first.locator("td.score").inner_text())
    signals = await first.locator("td.signals .signal").evaluate_all(
        "spans => spans.map(s => [s.dataset.name, Number(s.dataset.value), Number(s.dataset.weight)])"
    )
    assert "decided" in {name for name, _, _ in signals}  # a decision
    assert score == pytest.approx(sum(value * weight for _, value, weight in signals), abs=2e-3)  # the sum shown
    below = await row_ids(page, "below-floor")
    assert site.ids["database"] in below and site.ids["style"] in below
    assert site.ids["fixed"] not in order + below  # superseded: left out unless asked for

    shot = SCREENSHOT if os.environ.get("LEDGER_SAVE_SCREENSHOT") == "1" else tmp_path / "inspector.png"
    shot.parent.mkdir(exist_ok=True)
    await page.screenshot(path=str(shot), full_page=True)

    recalled = await agent.recall(query)
    assert [hit["id"] for hit in recalled] == order  # the debugger explains the very ranking recall returns

    await page.check("input[name=include_superseded]")
    await page.click("text=Explain")
    assert site.ids["fixed"] in await row_ids(page, "ranking")
    assert "outdated" in await page.locator(f"tr[data-id='{site.ids['fixed']}'] td.signals").inner_text()

    await page.goto(site.url + "recall?" + urlencode({"q": query, "k": "1"}))
    assert await row_ids(page, "returned") == order[:1]
    assert (await row_ids(page, "not-returned"))[0] == order[1]  # relevant, but past k


@pytest.mark.anyio
async def test_pin_and_unpin_on_the_page_are_what_recall_sees(site: Site, page: Page, agent: Ledger) -> None:
    memory = site.ids["database"]
    await page.goto(site.url + f"memories/{memory}")
    assert await page.locator("#pin-toggle").inner_text() == "Pin"
    await page.click("#pin-toggle")
    assert page.url == site.url + f"memories/{memory}"
    assert await page.locator("#pin-toggle").inner_text() == "Unpin"
    assert await page.locator("h1 .badge.pinned").count() == 1
    hits = await agent.recall("which database do we use?")
    assert hits[0]["id"] == memory and hits[0]["pinned"] is True

    await page.click("#pin-toggle")
    assert await page.locator("#pin-toggle").inner_text() == "Pin"
    hits = await agent.recall("which database do we use?")
    assert hits[0]["id"] == memory and hits[0]["pinned"] is False


@pytest.mark.anyio
async def test_forget_on_the_page_asks_first_then_erases(site: Site, page: Page, agent: Ledger) -> None:
    memory = site.ids["cache"]
    await page.goto(site.url + f"memories/{memory}")
    await page.click("#forget")
    assert "Forget memory" in await page.locator("h1").inner_text()
    assert memory in [hit["id"] for hit in await agent.recall("Redis cache keys")]  # nothing happened yet

    await page.click("#confirm-forget")
    assert page.url.startswith(site.url + "memories?forgotten=")
    assert f"Memory {memory} was forgotten" in await page.locator("p.notice").inner_text()
    assert memory not in await row_ids(page, "memories")

    assert memory not in [hit["id"] for hit in await agent.recall("Redis cache keys", min_relevance=0)]
    assert "forgotten" in await agent.error("recall", ids=[memory])
    await page.goto(site.url + f"memories/{memory}")
    assert "Forgotten on" in await page.locator("p.notice").inner_text()
    assert await page.locator("#pin-toggle").count() == 0


@pytest.mark.anyio
async def test_bad_input_is_a_readable_error_page(site: Site, page: Page) -> None:
    for path, status, message in [
        ("memories/m0000000000", 404, "no memory with id 'm0000000000'"),
        ("memories?kind=bogus", 400, "kind='bogus' is not one of"),
        ("memories?page=two", 400, "page must be a whole number, not 'two'"),
        ("recall?q=+", 400, "query is empty"),
        ("recall?q=retries&k=lots", 400, "k must be a whole number, not 'lots'"),
        ("recall?q=retries&min_relevance=2", 400, "min_relevance=2.0 is out of range"),
        ("context?q=retries&budget=abc", 400, "token budget must be a whole number, not 'abc'"),
        ("context?budget=5", 400, "token_budget=5 is out of range"),
        ("code?budget=-1", 400, "token_budget=-1 is out of range: give 1 to 25000 (LEDGER_MAX_RESULT_TOKENS)"),
        ("nowhere", 404, "No such page."),
    ]:
        response = await page.goto(site.url + path)
        assert response is not None and response.status == status, path
        shown = await page.locator("[role=alert]").inner_text()
        assert message in shown, (path, shown)
        assert "Traceback" not in await page.content()


@pytest.mark.anyio
async def test_other_sites_and_hosts_are_refused(site: Site) -> None:
    port = site.url.rsplit(":", 1)[1].strip("/")
    memory = site.ids["post"]
    assert _get(site.url + "memories", {"Host": f"attacker.example:{port}"})[0] == 421  # DNS rebinding
    status, _ = _get(site.url + f"memories/{memory}/pin", {"Origin": "http://attacker.example"}, b"pinned=1")
    assert status == 403  # another site's form
    status, body = _get(site.url + f"memories/{memory}/pin", {}, b"form_token=guessed&pinned=1")
    assert status == 403 and "not from this inspector" in body
    assert "badge pinned" not in _get(site.url + f"memories/{memory}")[1]

    refused = run_cli(site.project, "inspect", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 1 and "refusing to serve on 0.0.0.0 without a token" in refused.stderr


@pytest.mark.anyio
async def test_memories_whose_code_changed_are_marked_stale(site: Site, page: Page) -> None:
    with (site.project.root / RETRY).open("a") as source:
        source.write("\n\nMAX_ATTEMPTS = 5\n")
    await page.goto(site.url + "memories?stale=1")
    assert await row_ids(page, "memories") == [site.ids["backoff"]]
    assert await page.locator("table.memories tbody .badge.stale").count() == 1
    await page.goto(site.url + f"memories/{site.ids['backoff']}")
    assert await page.locator("ul.links li.file .badge.stale").inner_text() == f"file {RETRY} changed"
