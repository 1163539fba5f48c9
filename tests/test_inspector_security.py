"""The inspector's sign-in redirect stays on the inspector, whatever the path the token came with.

The inspector's ASGI app runs under uvicorn on a loopback port; requests go over HTTP with `http.client`, which
sends each request target as written (a browser or httpx would normalise some of them first), and Debian's
Chromium follows the redirects a browser would mistake for another host.
"""

from __future__ import annotations

import http.client
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import uvicorn
from playwright.async_api import async_playwright

from project_ledger.inspector.app import inspector_app
from project_ledger.inspector.security import allowed_hosts, allowed_origins, same_site_path
from project_ledger.memory.service import LedgerService

from .test_inspector import CHROMIUM, CHROMIUM_ARGS

TOKEN = "inspector-token-" + "5eed" * 8
SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-._~%")


def test_a_path_becomes_a_location_on_this_site() -> None:
    assert same_site_path("/memories/m0123456789") == "/memories/m0123456789"
    assert same_site_path("/\\evil.example") == "/%5Cevil.example"
    assert same_site_path("//evil.example") == same_site_path("///evil.example") == "/evil.example"
    assert same_site_path("/\t/evil.example") == "/%09/evil.example"
    assert same_site_path("http://evil.example/") == same_site_path("\\evil.example") == "/"
    assert same_site_path("/\r\nSet-Cookie: x=1") == "/%0D%0ASet-Cookie%3A%20x%3D1"
    assert same_site_path("") == "/" and same_site_path("/café") == "/caf%C3%A9"


@pytest.fixture
def inspector(ledger: LedgerService) -> Iterator[str]:
    """The inspector, with a token, served by uvicorn on a loopback port bound here; yields `host:port`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    app = inspector_app(ledger, allowed_hosts("127.0.0.1", port, []), allowed_origins("127.0.0.1", port, []), TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the inspector did not start"
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        listener.close()


def signed_in(address: str, target: str) -> tuple[int, str | None]:
    """The status and Location of a GET of `target`, sent as written, with the token appended to its query."""
    connection = http.client.HTTPConnection(address, timeout=30)
    try:
        connection.putrequest("GET", f"{target}{'&' if '?' in target else '?'}token={TOKEN}", skip_host=True)
        connection.putheader("Host", address)  # also for an absolute target, whose host http.client would send
        connection.endheaders()
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("location")
    finally:
        connection.close()


def test_the_sign_in_redirect_never_leaves_the_inspector(inspector: str) -> None:
    expected = {
        "/memories?kind=decision": "/memories?kind=decision",
        "/%5Cevil.example": "/%5Cevil.example",
        "/\\evil.example": "/%5Cevil.example",
        "/%5C%5Cevil.example": "/%5C%5Cevil.example",
        "/%2F%2Fevil.example": "/evil.example",
        "//evil.example": "/evil.example",
        "/%09/evil.example": "/%09/evil.example",
        "/%0D%0ALocation:%20http://evil.example": "/%0D%0ALocation%3A%20http%3A//evil.example",
        "http://evil.example/": "/",  # the absolute form, which uvicorn passes on whole as the path
        "http://evil.example//evil.example/x": "/",
    }
    for target, location in expected.items():
        status, given = signed_in(inspector, target)
        assert (status, given) == (303, location), target
        path = urlsplit(given).path
        assert set(path) <= SAFE and not path.startswith("//"), target
        assert urlsplit(urljoin(f"http://{inspector}/", given)).netloc == inspector, target


@pytest.mark.anyio
async def test_a_browser_following_the_redirect_stays_on_the_inspector(inspector: str) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: tests/setup.sh installs Debian's chromium")
    with tempfile.TemporaryDirectory() as profile:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                for target in ("%5Cevil.example", "%09/evil.example", "%2F%2Fevil.example", "%5C%5Cevil.example"):
                    response = await page.goto(f"http://{inspector}/{target}?token={TOKEN}")
                    assert urlsplit(page.url).netloc == inspector, (target, page.url)
                    assert response is not None and response.status == 404, target  # signed in, on a page that is not there
            finally:
                await browser.close()

