"""The web inspector: a local page over one project's ledger, started by `project-ledger inspect`.

Pages are rendered on the server from `templates/`; there is no
script. Each route makes its service calls in a worker thread (the service is
synchronous and touches disk), so a slow search does not hold up other pages.
The service runs in this process, opened and started like a server's: the
index and the model load in the background while the first pages are served.

Looking is read-only: the recall debugger and the context preview record no
access (access counts rank later recalls). Only the POST forms change
anything: pin, unpin and forget. Bad input is shown as a message on the page
with a 4xx status, never a traceback.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode

import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from project_ledger.errors import IndexUnavailable, InvalidArgument, LedgerError, MemoryForgotten, MemoryNotFound, StorageError
from project_ledger.inspector.params import flag, fraction, text, whole
from project_ledger.inspector.security import ASGIApp, FormToken, Guard
from project_ledger.memory.service import LedgerService
from project_ledger.models import KINDS

T = TypeVar("T")

HERE = Path(__file__).parent
PAGE_SIZE = 50
MAX_PAGE = 1_000_000  # keeps the offset within SQLite's integers
MAX_FORM_BYTES = 16 * 1024
DEFAULT_K = 8
DEFAULT_CONTEXT_TOKENS = 4000
DEFAULT_MAP_TOKENS = 1024
SYMBOL_LIMIT = 20
CODE_RESULTS = 10


def status_of(exc: LedgerError) -> int:
    """The HTTP status for a ledger error: the caller's mistake (4xx) or the ledger's state (503)."""
    if isinstance(exc, MemoryNotFound):
        return 404
    if isinstance(exc, MemoryForgotten):
        return 409
    if isinstance(exc, IndexUnavailable | StorageError):
        return 503
    return 400


def number(value: float | None, digits: int = 3) -> str:
    """A score for a table cell: rounded, or a dash when the list did not have it."""
    return "—" if value is None else f"{value:.{digits}f}"


_CITATION = re.compile(r"\[(m[0-9a-z]{10}(?:,\s*m[0-9a-z]{10})*)\]")
_MEMORY_ID = re.compile(r"m[0-9a-z]{10}")


def cited(text: str) -> Markup:
    """A memory's text, escaped, with the ids in its `[m…]` citations (a gist's sources) as links."""

    def links(match: re.Match[str]) -> str:
        return _MEMORY_ID.sub(lambda m: f'<a class="id" href="/memories/{m[0]}">{m[0]}</a>', match[0])

    return Markup(_CITATION.sub(links, str(escape(text))))


Audit = Callable[[str, list[str]], None]


class Inspector:
    """The routes, as bound methods over one open service."""

    def __init__(self, ledger: LedgerService, form_token: FormToken, audit: Audit) -> None:
        self.ledger = ledger
        self.form_token = form_token
        self.audit = audit
        self.templates = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["number"] = number
        self.templates.filters["cited"] = cited

    def render(self, request: Request, template: str, http_status: int = 200, **values: Any) -> HTMLResponse:
        page = self.templates.get_template(template).render(
            path=request.url.path, root=str(self.ledger.paths.root), form_token=self.form_token.value, **values
        )
        return HTMLResponse(page, http_status)

    def problem(self, request: Request, http_status: int, message: str) -> HTMLResponse:
        return self.render(request, "error.html", http_status, error_status=http_status, message=message)

    @staticmethod
    async def call(fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    async def form(self, request: Request) -> dict[str, str] | None:
        """The submitted form's fields, or None when its form token is missing or stale (another process's)."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise InvalidArgument(f"the form is {len(body)} bytes; the inspector's forms send well under {MAX_FORM_BYTES}")
        fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        return fields if self.form_token.valid(fields.get("form_token")) else None

    # -- memories -----------------------------------------------------------------

    async def memories(self, request: Request) -> Response:
        query = request.query_params
        page = whole(query, "page", 1)
        if not 1 <= page <= MAX_PAGE:
            raise InvalidArgument(f"page={page} is out of range: pages are numbered from 1 to at most {MAX_PAGE}")
        result = await self.call(
            lambda: self.ledger.browsing.browse(
                kind=text(query, "kind"),
                tag=text(query, "tag"),
                session=text(query, "session"),
                pinned=flag(query, "pinned"),
                superseded=flag(query, "superseded"),
                stale=flag(query, "stale"),
                limit=PAGE_SIZE,
                offset=(page - 1) * PAGE_SIZE,
            )
        )
        filters = {key: value for key, value in query.items() if key not in {"page", "forgotten", "also"} and value.strip()}
        return self.render(
            request, "memories.html", result=result, kinds=KINDS, filters=filters, page=page,
            pages=max(-(-result.total // PAGE_SIZE), 1), filter_query=urlencode(filters),
            forgotten=text(query, "forgotten"), also_forgotten=whole(query, "also", 0),
        )  # fmt: skip

    async def memory(self, request: Request) -> Response:
        memory_id = request.path_params["id"]
        detail = await self.call(lambda: self.ledger.browsing.memory_detail(memory_id))
        return self.render(request, "memory.html", detail=detail, memory=detail.memory)

    async def pin(self, request: Request) -> Response:
        memory_id = request.path_params["id"]
        fields = await self.form(request)
        if fields is None:
            return self.expired(request)
        pinned = flag(fields, "pinned")
        await self.call(lambda: self.ledger.pin(memory_id) if pinned else self.ledger.unpin(memory_id))
        await self.call(lambda: self.audit("pin" if pinned else "unpin", [memory_id]))
        return RedirectResponse(f"/memories/{quote(memory_id, safe='')}", status_code=303)

    async def confirm_forget(self, request: Request) -> Response:
        memory_id = request.path_params["id"]
        preview = await self.call(lambda: self.ledger.browsing.forget_preview(memory_id))
        if preview.memory.deleted_at is not None:
            raise MemoryForgotten(memory_id)
        return self.render(request, "forget.html", memory=preview.memory, derived=preview.also)

    async def forget(self, request: Request) -> Response:
        memory_id = request.path_params["id"]
        fields = await self.form(request)
        if fields is None:
            return self.expired(request)
        result = await self.call(lambda: self.ledger.forget(memory_id))
        await self.call(lambda: self.audit("forget", [memory_id, *result.also_forgotten]))
        also = f"&also={len(result.also_forgotten)}" if result.also_forgotten else ""
        return RedirectResponse(f"/memories?forgotten={quote(memory_id, safe='')}{also}", status_code=303)

    def expired(self, request: Request) -> Response:
        return self.problem(request, 403, "This form is not from this inspector (it was restarted, or another page sent it). Reload and try again.")

    # -- recall, context ---------------------------------------------------------

    async def recall(self, request: Request) -> Response:
        query = request.query_params
        explanation, error, http_status = None, None, 200
        if "q" in query:
            try:
                explanation = await self.call(
                    lambda: self.ledger.explain_recall(
                        query.get("q", ""),
                        k=whole(query, "k", DEFAULT_K),
                        kinds=[kind] if (kind := text(query, "kind")) else None,
                        tags=[tag] if (tag := text(query, "tag")) else None,
                        session=text(query, "session"),
                        include_superseded=flag(query, "include_superseded"),
                        current_session=text(query, "current_session"),
                        min_relevance=fraction(query, "min_relevance"),
                    )
                )
            except LedgerError as exc:
                error, http_status = str(exc), status_of(exc)
        return self.render(
            request, "recall.html", http_status, form=dict(query), kinds=KINDS, explanation=explanation, error=error
        )

    async def context(self, request: Request) -> Response:
        query = request.query_params
        pack, error, http_status = None, None, 200
        if "budget" in query or "q" in query:
            try:
                pack = await self.call(
                    lambda: self.ledger.context(
                        text(query, "q"),
                        whole(query, "budget", DEFAULT_CONTEXT_TOKENS, "token budget"),
                        session=text(query, "session"),
                    )
                )
            except LedgerError as exc:
                error, http_status = str(exc), status_of(exc)
        return self.render(request, "context.html", http_status, form=dict(query), pack=pack, error=error)

    # -- code, status ------------------------------------------------------------

    async def code(self, request: Request) -> Response:
        query = request.query_params
        values: dict[str, Any] = {"form": dict(query), "symbols": None, "hits": None, "repo_map": None, "code_status": None, "error": None}
        try:
            code = self.ledger.require_code()
            values["code_status"] = await self.call(code.status)
            if (name := text(query, "symbol")) is not None:
                values["symbols"] = await self.call(lambda: code.find_symbol(name, limit=SYMBOL_LIMIT))
            if (words := text(query, "q")) is not None:
                values["hits"] = await self.call(lambda: code.search_code(words, CODE_RESULTS))
            if values["symbols"] is None and values["hits"] is None:  # each form runs its own tool: the map has its own
                budget = whole(query, "budget", DEFAULT_MAP_TOKENS, "token budget")
                values["repo_map"] = await self.call(lambda: code.repo_map(budget))
        except LedgerError as exc:
            return self.render(request, "code.html", status_of(exc), **{**values, "error": str(exc)})
        return self.render(request, "code.html", **values)

    async def status(self, request: Request) -> Response:
        return self.render(request, "status.html", ledger_status=await self.call(self.ledger.status))

    # -- errors ------------------------------------------------------------------

    async def ledger_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, LedgerError)
        return self.problem(request, status_of(exc), str(exc))

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = "No such page." if exc.status_code == 404 else str(exc.detail)
        return self.problem(request, exc.status_code, message)

    async def unexpected(self, request: Request, exc: Exception) -> Response:
        """The page says what failed; Starlette re-raises the error afterwards, so the traceback is logged."""
        return self.problem(request, 500, f"Unexpected {type(exc).__name__}: {exc}. Nothing stored was changed by showing this page; the log has the details.")


def inspector_app(
    ledger: LedgerService, hosts: set[str], origins: set[str], token: str | None, audit: Audit | None = None
) -> ASGIApp:
    """The ASGI app: the routes behind the Host/Origin/token guard. It starts the service (index and model
    load in the background) and closes it on shutdown. `audit(tool, ids)` records each pin, unpin and forget."""
    pages = Inspector(ledger, FormToken(), audit or (lambda tool, ids: None))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(ledger.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(ledger.close)

    async def home(_: Request) -> Response:
        return RedirectResponse("/memories", status_code=303)

    handlers: Mapping[Any, Callable[[Request, Exception], Any]] = {
        LedgerError: pages.ledger_error,
        HTTPException: pages.http_error,
        Exception: pages.unexpected,
    }
    app = Starlette(
        routes=[
            Route("/", home),
            Route("/memories", pages.memories),
            Route("/memories/{id}", pages.memory),
            Route("/memories/{id}/pin", pages.pin, methods=["POST"]),
            Route("/memories/{id}/forget", pages.confirm_forget),
            Route("/memories/{id}/forget", pages.forget, methods=["POST"]),
            Route("/recall", pages.recall),
            Route("/context", pages.context),
            Route("/code", pages.code),
            Route("/status", pages.status),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        exception_handlers=dict(handlers),
        lifespan=lifespan,
    )
    return Guard(app, hosts, origins, token)
