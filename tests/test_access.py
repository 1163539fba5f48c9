"""Who gets in: a token on loopback by default, scoped tokens (read, write, admin), the audit trail of destructive
calls, and the per-token rate limit. Servers run as users start them; a second local account, created for the test
and removed after it, knocks from outside through `runuser`; MCP calls go through the SDK's HTTP client."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from project_ledger.maintenance.access_service import SECRET_PREFIX, AccessService, covers, secret_hash
from project_ledger.mcp.http import RateLimit
from project_ledger.mcp.scopes import TOOL_SCOPES, needed_scope
from project_ledger.storage.access_store import AccessStore, StoredToken

from .conftest import EXECUTABLE, Project, connect, run_cli
from .test_http import client, free_port, post

pytestmark = pytest.mark.anyio

RUNUSER = shutil.which("runuser")
SYSTEM_PYTHON = "/usr/bin/python3"  # not the test venv: the other account runs nothing of ours
KNOCK = """
import os, sys, urllib.request, urllib.error
url, data_dir = sys.argv[1], sys.argv[2]
body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
request = urllib.request.Request(url, data=body if url.endswith("/mcp") else None,
    headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
try:
    status = urllib.request.urlopen(request, timeout=30).status
except urllib.error.HTTPError as exc:
    status = exc.code
try:
    os.listdir(data_dir)
    listing = "listed"
except PermissionError:
    listing = "denied"
print(status, listing)
"""


@pytest.fixture(scope="module")
def other_user() -> Iterator[str]:
    """A second local account with no home and no shell, made for these tests and deleted after them."""
    assert RUNUSER is not None and os.geteuid() == 0, "needs root and runuser (util-linux) to act as a second local user"
    name = f"ledger-test-{os.getpid()}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


def as_other_user(user: str, url: str, data_dir: Path) -> tuple[int, str]:
    """What another local account gets: the status of a request to `url`, and whether it can list `data_dir`."""
    assert RUNUSER is not None
    done = subprocess.run(
        [RUNUSER, "-u", user, "--", SYSTEM_PYTHON, "-c", KNOCK, url, str(data_dir)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    status, listing = done.stdout.split()
    return int(status), listing


@pytest.fixture
def shared_project() -> Iterator[Project]:
    """A project in a folder every account may enter, so that only the data directory's own mode keeps others out."""
    base = Path(tempfile.mkdtemp(prefix="ledger-shared-"))
    try:
        base.chmod(0o755)
        root = base / "repo"
        root.mkdir(mode=0o755)
        root.chmod(0o755)
        yield Project(root)
    finally:
        shutil.rmtree(base)


def ledger(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    """`project-ledger <args> --root <root>`, for commands in a group (`tokens create ...`)."""
    return subprocess.run(
        [EXECUTABLE, *args, "--root", str(project.root)],
        capture_output=True, text=True, env={**os.environ, **project.env}, cwd=project.root, timeout=300,
    )  # fmt: skip


def new_token(project: Project, name: str, scope: str) -> str:
    made = ledger(project, "tokens", "create", name, "--scope", scope)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@contextmanager
def running(project: Project, *args: str, banner: str) -> Iterator[tuple[str, str]]:
    """A server started as a user would (`project-ledger <args> --root <root>`); yields its stderr up to the line
    matching `banner` (a regex with one group) and that group."""
    log = project.root.parent / f"server-{free_port()}.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [EXECUTABLE, *args, "--root", str(project.root)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=project.root,
            env={**os.environ, **project.env},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not (found := re.search(banner, log.read_text())):
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, f"the server did not start: {log.read_text()}"
                time.sleep(0.1)
            address = found.group(1)
            if address.startswith("http://127.0.0.1:") and address.endswith("/mcp"):
                port = int(address.rsplit(":", 1)[1].split("/")[0])
                while True:
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=1).close()
                        break
                    except OSError:
                        assert time.monotonic() < deadline and process.poll() is None, log.read_text()
                        time.sleep(0.1)
            yield log.read_text(), address
        finally:
            process.terminate()
            process.wait(timeout=60)


def test_a_window_allows_its_requests_then_says_how_long_to_wait() -> None:
    limit = RateLimit(3, 10)
    assert [limit.retry_after("bot", now=t) for t in (0, 1, 2)] == [None, None, None]
    assert limit.retry_after("bot", now=3) == 7
    assert limit.retry_after("bot", now=9.5) == 1  # rounded up: never "retry after 0 seconds"
    assert limit.retry_after("someone-else", now=9.5) is None  # each caller has its own budget
    assert limit.retry_after("bot", now=10) is None  # a new window


def test_each_scope_covers_the_ones_below_and_an_unlisted_tool_needs_admin() -> None:
    assert covers("admin", "read") and covers("write", "write") and not covers("read", "write")
    assert not covers("superuser", "read")
    assert needed_scope("forget") == needed_scope("a_tool_added_later") == "admin"
    assert needed_scope("recall") == "read" and needed_scope("remember") == "write"


async def test_every_tool_the_server_offers_has_a_decided_scope(client) -> None:  # noqa: ANN001 - the conftest fixture
    offered = {tool.name for tool in (await client.list_tools()).tools}
    assert offered and offered <= set(TOOL_SCOPES)


def test_tokens_are_kept_hashed_revocable_and_audited(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    access = AccessService.open(journal)
    try:
        token, secret = access.create("ci-bot", "read")
        assert access.identify(secret) is not None and access.identify(secret).scope == "read"  # type: ignore[union-attr]
        assert access.identify(secret + "x") is None
        with pytest.raises(Exception, match="already exists"):
            access.create("ci-bot", "write")
        access.revoke("ci-bot")
        assert access.identify(secret) is None
        assert [(e.actor, e.tool, e.ids) for e in access.audit()] == [
            ("local", "tokens.create", [token.id]), ("local", "tokens.revoke", [token.id])
        ]
    finally:
        access.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("journal.sqlite3*"))
    assert secret.encode() not in stored and secret[4:].encode() not in stored


async def test_loopback_needs_a_token_that_another_local_user_does_not_have(shared_project: Project, other_user: str) -> None:
    project = shared_project
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (log, url):
        token_file = project.data_dir / "http_token"
        token = token_file.read_text().strip()
        assert token_file.stat().st_mode & 0o777 == 0o600 and project.data_dir.stat().st_mode & 0o777 == 0o700
        assert f"Authorization: Bearer {token}" in log  # printed once, at start, like Jupyter's URL
        assert as_other_user(other_user, url, project.data_dir) == (401, "denied")
        assert post(url).status_code == 401
        assert post(url, Authorization=f"Bearer {token}").status_code == 200
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (_, url):
        assert post(url, Authorization=f"Bearer {token}").status_code == 200  # the same token after a restart
    project.env["LEDGER_AUTH_TOKEN"] = own = "own-" + "f00d" * 8
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (log, url):
        assert post(url, Authorization=f"Bearer {token}").status_code == 401  # the owner's setting replaces the file's
        assert post(url, Authorization=f"Bearer {own}").status_code == 200 and own not in log  # and stays out of logs


async def test_no_auth_is_refused_off_loopback_and_explicit_on_it(project: Project) -> None:
    refused = run_cli(project, "serve", "--transport", "http", "--host", "0.0.0.0", "--no-auth")
    assert refused.returncode == 1 and "refusing --no-auth on 0.0.0.0" in refused.stderr and "Traceback" not in refused.stderr
    refused = run_cli(project, "inspect", "--host", "0.0.0.0", "--no-auth")
    assert refused.returncode == 1 and "refusing --no-auth on 0.0.0.0" in refused.stderr
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), "--no-auth", banner=r"at (http://\S+/mcp)") as (
        log,
        url,
    ):
        assert "any account on this machine can read, change and erase memories" in log
        assert post(url).status_code == 200
    assert not (project.data_dir / "http_token").exists()


async def test_scoped_tokens_see_and_call_only_their_tools_and_forget_is_audited(project: Project) -> None:
    reader, writer, admin = (new_token(project, name, scope) for name, scope in [("reader", "read"), ("writer", "write"), ("ops", "admin")])
    secret_text = "The staging database password rotates every Tuesday at 09:00."
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (_, url):
        async with client(url, reader) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "recall" in names and "status" in names and not names & {"forget", "remember", "pin"}
            refused = await session.call_tool("forget", {"id": "m0000000000"})
            assert refused.is_error and "'reader' has scope 'read', and 'forget' needs 'admin'" in refused.content[0].text
            assert not (await session.call_tool("recall", {"query": "database"})).is_error
        async with client(url, writer) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"remember", "pin", "summarize_session"} <= names and "forget" not in names
            stored = await session.call_tool("remember", {"text": secret_text, "kind": "decision"})
            memory = stored.structured_content["id"]  # type: ignore[index]
            assert (await session.call_tool("forget", {"id": memory})).is_error
        async with client(url, admin) as session:
            assert "forget" in {tool.name for tool in (await session.list_tools()).tools}
            forgot = await session.call_tool("forget", {"id": memory})
            assert not forgot.is_error, forgot.content[0].text
        assert ledger(project, "tokens", "revoke", "reader").returncode == 0
        assert post(url, Authorization=f"Bearer {reader}").status_code == 401  # refused from the next request on
        assert post(url, Authorization=f"Bearer {writer}").status_code == 200

    shown = ledger(project, "audit", "--json")
    assert shown.returncode == 0, shown.stderr
    entries = json.loads(shown.stdout)
    ops = next(t["id"] for t in json.loads(ledger(project, "tokens", "list", "--json").stdout) if t["name"] == "ops")
    assert {"actor": f"ops ({ops})", "tool": "forget", "ids": [memory]} in [{k: e[k] for k in ("actor", "tool", "ids")} for e in entries]
    assert [e["tool"] for e in entries].count("tokens.create") == 3 and "tokens.revoke" in [e["tool"] for e in entries]
    assert "Tuesday" not in shown.stdout and "Tuesday" not in ledger(project, "audit").stdout  # ids, never the text
    listed = ledger(project, "tokens", "list", "--json")
    assert {t["name"]: t["revoked_at"] is not None for t in json.loads(listed.stdout)} == {"reader": True, "writer": False, "ops": False}
    assert reader not in listed.stdout and writer not in listed.stdout


async def test_past_the_rate_limit_429_then_service_resumes_after_retry_after(project: Project) -> None:
    # A window long enough that the first four calls fall in it on a loaded machine, short enough to wait out.
    project.env |= {"LEDGER_HTTP_RATE_LIMIT": "3", "LEDGER_HTTP_RATE_WINDOW_SECONDS": "8"}
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (log, url):
        bearer = "Bearer " + (project.data_dir / "http_token").read_text().strip()
        assert [post(url, Authorization=bearer).status_code for _ in range(3)] == [200, 200, 200]
        limited = post(url, Authorization=bearer)
        assert limited.status_code == 429 and 1 <= int(limited.headers["retry-after"]) <= 8
        time.sleep(int(limited.headers["retry-after"]))
        assert post(url, Authorization=bearer).status_code == 200


async def test_the_inspector_wants_its_token_once_then_a_cookie_and_audits_its_pins(shared_project: Project, other_user: str) -> None:
    project = shared_project
    memory = run_cli(project, "remember", "Invoices are sent on the 3rd business day.", "--kind", "decision").stdout.split()[0]
    with running(project, "inspect", "--port", "0", banner=r"at (http://127\.0\.0\.1:\d+/\?token=\S+)") as (_, address):
        base, _, token = address.partition("?token=")
        assert token == (project.data_dir / "http_token").read_text().strip()
        assert as_other_user(other_user, base + "status", project.data_dir) == (401, "denied")
        with httpx2.Client(timeout=30, follow_redirects=False) as browser:
            assert browser.get(base + "status").status_code == 401
            assert browser.get(base + "status?token=wrong-token-wrong-token").status_code == 401
            signed_in = browser.get(f"{base}memories?kind=decision&token={token}")
            assert signed_in.status_code == 303 and signed_in.headers["location"] == "/memories?kind=decision"
            cookie = signed_in.headers["set-cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
            assert browser.get(base + "status").status_code == 200  # the cookie, not the token, from now on
            page = browser.get(f"{base}memories/{memory}")
            form_token = re.search(r'name="form_token" value="([^"]+)"', page.text)
            assert page.status_code == 200 and form_token is not None
            pinned = browser.post(f"{base}memories/{memory}/pin", data={"form_token": form_token.group(1), "pinned": "1"})
            assert pinned.status_code == 303
    entries = json.loads(ledger(project, "audit", "--json").stdout)
    assert [(e["actor"], e["tool"], e["ids"]) for e in entries] == [("owner", "pin", [memory])]


async def test_a_local_client_is_audited_as_local_and_the_trail_outlives_the_forget(project: Project) -> None:
    async with connect(project) as agent:
        memory = await agent.remember("The billing cron runs at 02:00 UTC on the worker host.", kind="decision")
        await agent.call("pin", id=memory)
        await agent.call("forget", id=memory)
        assert "forget" in {tool.name for tool in (await agent.session.list_tools()).tools}  # this machine's user: all
    forgot_on_the_shell = run_cli(project, "remember", "Payroll exports are encrypted with age.").stdout.split()[0]
    assert run_cli(project, "forget", forgot_on_the_shell, "--yes").returncode == 0
    shown = ledger(project, "audit", "--json").stdout
    assert [(e["actor"], e["tool"], e["ids"]) for e in json.loads(shown)] == [
        ("local", "pin", [memory]), ("local", "forget", [memory]), ("local", "forget", [forgot_on_the_shell])
    ]
    assert "billing" not in shown and "Payroll" not in shown


def test_a_token_may_not_take_a_built_in_principal_name_in_any_case_or_width(project: Project) -> None:
    for name in ("owner", "Local", "ANONYMOUS", "\uff4f\uff57\uff4e\uff45\uff52", " local "):  # the 4th: fullwidth owner
        refused = ledger(project, "tokens", "create", name, "--scope", "read")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert "is reserved" in refused.stderr and "Pick another name for the token" in refused.stderr, refused.stderr
    assert json.loads(ledger(project, "tokens", "list", "--json").stdout) == []
    assert new_token(project, "owner-bot", "read").startswith(SECRET_PREFIX)


def legacy_token(project: Project, name: str, scope: str) -> tuple[StoredToken, str]:
    """A token as a ledger made before built-in names were refused may hold one: written to the store directly."""
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    store = AccessStore(project.data_dir / "journal.sqlite3")
    try:
        return store.add_token("t" + secrets.token_hex(5), name, scope, secret_hash(secret)), secret
    finally:
        store.close()


async def test_an_old_token_named_like_the_owner_or_local_shares_neither_their_rate_limit_nor_their_audit_name(
    project: Project,
) -> None:
    memory = run_cli(project, "remember", "Deploys freeze on Fridays after 15:00.", "--kind", "decision").stdout.split()[0]
    _, impostor = legacy_token(project, "owner", "read")
    local, local_secret = legacy_token(project, "local", "write")
    project.env |= {"LEDGER_HTTP_RATE_LIMIT": "10", "LEDGER_HTTP_RATE_WINDOW_SECONDS": "600"}  # a window no run outlasts
    with running(project, "serve", "--transport", "http", "--port", str(free_port()), banner=r"at (http://\S+/mcp)") as (_, url):
        owner = (project.data_dir / "http_token").read_text().strip()
        assert [post(url, Authorization=f"Bearer {impostor}").status_code for _ in range(11)] == [200] * 10 + [429]
        assert post(url, Authorization=f"Bearer {owner}").status_code == 200  # the owner's own budget is untouched
        async with client(url, local_secret) as session:
            pinned = await session.call_tool("pin", {"id": memory})
            assert not pinned.is_error, pinned.content[0].text
    entries = json.loads(ledger(project, "audit", "--json").stdout)
    assert [(e["actor"], e["tool"], e["ids"]) for e in entries] == [(f"local ({local.id})", "pin", [memory])]
    assert f"local ({local.id})" in ledger(project, "audit").stdout
