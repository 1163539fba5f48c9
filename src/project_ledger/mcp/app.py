"""The MCP surface: thin adapters from tools, resources and prompts to `LedgerService`.

Each tool validates its arguments through its signature, runs one service call
in a worker thread (the service is synchronous and may touch disk), and returns
structured content plus a compact text rendering for the model. Ledger errors
become tool errors (`is_error`) whose text says what to do next.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Annotated, TypeVar

import anyio.from_thread
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageResult,
    NotificationParams,
    SamplingCapability,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from project_ledger.code.service import render_symbol
from project_ledger.code.symbols import SymbolKind
from project_ledger.config import Settings
from project_ledger.errors import LedgerError
from project_ledger.factory import limits, open_ledger
from project_ledger.hooks.clients.claude_code import ledger_hook_events
from project_ledger.mcp import sdk
from project_ledger.mcp.arguments import LedgerServer
from project_ledger.mcp.handle import LedgerHandle
from project_ledger.mcp.roots import ClientRoots
from project_ledger.mcp.scopes import ScopeGuard
from project_ledger.mcp.start_channel import StartPackChannel
from project_ledger.memory.context_sections import render_memory
from project_ledger.memory.gist_sampling import SamplingFailed, Writer
from project_ledger.memory.recall import render_results
from project_ledger.memory.service import LedgerService, version
from project_ledger.models import (
    Ack,
    ContextResult,
    FindSymbolResult,
    ForgetResult,
    GistResult,
    HistoryResult,
    Kind,
    RecallResult,
    Record,
    ReferencesResult,
    RememberResult,
    RepoMapResult,
    SearchCodeResult,
    Status,
    handed_json,
)
from project_ledger.project_root import RootChoice, from_working_directory
from project_ledger.text.wording import plural

log = logging.getLogger(__name__)
T = TypeVar("T")
GREETING_SECONDS = 1.0  # a client that never sends `notifications/initialized` gets the background start-up then
# How long a server whose project runs the ledger's prompt hook holds back the heavy part of its start-up (the model,
# the code index) for that hook or a first tool call (`LedgerService.start`); Claude Code sends it within a second or two.
HOOK_HOLD_SECONDS = 3.0
# Sampling is deprecated from protocol 2026-07-28 on; every client in use today negotiates an earlier one.
warnings.filterwarnings("ignore", message=".*sampling capability is deprecated.*", category=MCPDeprecationWarning)

MemoryId = Annotated[str, Field(description="A memory id, as returned by remember or recall.")]


class LedgerTools:
    """The tools, resources and prompt, as bound methods over one service."""

    def __init__(self, handle: LedgerHandle, roots: ClientRoots, sampling: bool, sampling_timeout: float) -> None:
        self.handle = handle
        self.roots = roots
        self.sampling = sampling
        self.sampling_timeout = sampling_timeout

    @property
    def ledger(self) -> LedgerService:
        """The service; while it cannot be opened, a tool error that says why."""
        try:
            return self.handle.get()
        except LedgerError as exc:
            raise ToolError(str(exc)) from exc

    def _writer(self, ctx: Context) -> tuple[Writer | None, str | None]:
        """A gist writer that asks the client's model (sampling), or None and the reason there is none.

        The service calls it from a worker thread; each request hops back to the event loop.
        """
        if not self.sampling:
            return None, "sampling is turned off (LEDGER_SAMPLING=false)"
        session = ctx.session
        if not session.check_client_capability(ClientCapabilities(sampling=SamplingCapability())):
            return None, "the client does not offer sampling"
        timeout, request_id = self.sampling_timeout, ctx.request_context.request_id

        async def ask(system: str, prompt: str, max_tokens: int) -> CreateMessageResult:
            with anyio.fail_after(timeout):
                return await session.create_message(
                    [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                    max_tokens=max_tokens, system_prompt=system, related_request_id=request_id,
                )  # fmt: skip

        def write(system: str, prompt: str, max_tokens: int) -> str:
            try:
                result = anyio.from_thread.run(ask, system, prompt, max_tokens)
            except TimeoutError:
                raise SamplingFailed(f"the client did not answer within {timeout:g}s (LEDGER_SAMPLING_TIMEOUT_SECONDS)") from None
            except MCPError as exc:
                raise SamplingFailed(f"the client refused: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - a dropped connection or malformed answer: the gist falls back, never fails
                raise SamplingFailed(f"the request failed ({type(exc).__name__}: {exc})") from None
            if not isinstance(result.content, TextContent):
                raise SamplingFailed(f"the client answered with {result.content.type}, not text")
            return result.content.text

        return write, None

    def _answer(self, model: Record, text: str) -> CallToolResult:
        """The result: its lean JSON (`Record.for_model`, which is what Claude Code hands its model) and a text
        for clients that read that instead; unless it is larger than any tool may return (the service fits its own
        results under the cap; this catches the rest, such as a very long history). A token is at least a byte, so
        only a result longer in bytes than the cap is counted."""
        cap = self.ledger.limits.max_result_tokens
        structured = model.for_model()
        larger = max(text, handed_json(structured), key=len)
        if len(larger.encode("utf-8")) > cap and (size := self.ledger.tokens.count(larger)) > cap:
            raise ToolError(
                f"the result would be {size} tokens, over the {cap}-token cap on a tool result (LEDGER_MAX_RESULT_TOKENS); "
                "ask for less: a smaller k, limit or token_budget, or one memory by id"
            )
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)

    async def _call(self, fn: Callable[[LedgerService], T], error: type[Exception] = ToolError) -> T:
        """Run `fn` on the service off the event loop, once the project root is settled; failures become `error`
        (a tool or a resource error)."""
        await self.roots.settled()

        def leased() -> T:  # in the worker thread: a lease may wait for a switch, which must not hold up the event loop
            with self.handle.lease() as ledger:  # a switch to another root waits for this call before closing it
                ledger.release_start()
                return fn(ledger)

        try:
            return await anyio.to_thread.run_sync(leased)
        except LedgerError as exc:
            raise error(str(exc)) from exc
        except Exception as exc:
            log.exception("unexpected failure in a ledger call")
            raise error(f"internal error ({type(exc).__name__}); nothing stored was lost. Details are in the server log.") from exc

    async def remember(
        self,
        text: Annotated[str, Field(description="What to keep, verbatim: a decision, definition, constraint, todo...")],
        kind: Kind = "note",
        tags: list[str] = [],  # noqa: B006 - the schema default the clients see; never mutated
        session: Annotated[str | None, Field(description="Any stable id for this conversation, the same on each of its turns.")] = None,
        role: Annotated[str | None, Field(description="Who said it, for turns: user or assistant.")] = None,
        files: Annotated[list[str], Field(description="Files it is about, from the project root: edits to them mark it stale.")] = [],  # noqa: B006
        symbols: Annotated[list[str], Field(description="Symbols it is about (qualified names), as for files.")] = [],  # noqa: B006
        pinned: Annotated[bool, Field(description="Show it at the start of every session.")] = False,
        supersedes: Annotated[str | None, Field(description="Id of a memory this one replaces.")] = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store a memory in the project's ledger. It survives restarts and comes back through recall."""
        result = await self._call(
            lambda ledger: ledger.remember(
                text, kind=kind, tags=tags, session=session, role=role, files=files, symbols=symbols, pinned=pinned,
                supersedes=supersedes,
            )
        )  # fmt: skip
        if result.created:
            text = f"remembered as {result.id}"
        elif result.similarity is not None:  # the note says the same: it is for the CLI
            text = (
                f"not stored again: {result.id} already says this ({result.similarity:.0%} of the words in common, the same "
                "numbers and names); its access data was refreshed"
            )
        else:
            text = f"already remembered as {result.id} (same text, same session)"
        captured = ", ".join(f"{c.kind} {c.id}" + ("" if c.created else " (already known)") for c in result.captured)
        secrets = ", ".join(f"{n} {kind}" for kind, n in result.redacted_types.items())
        extras = [
            f"linked to {', '.join(result.links)}" if result.links else "",
            f"captured {captured}" if captured else "",
            f"redacted before storing: {secrets}" if secrets else "",
            "flagged suspicious: it reads like an instruction to a model, so context packs withhold it" if result.suspicious else "",
            (result.note or "") if result.similarity is None else "",
        ]
        return self._answer(result, "; ".join([text, *filter(None, extras)]))

    async def recall(
        self,
        query: Annotated[str | None, Field(description="Question or keywords; exact identifiers work too.")] = None,
        k: Annotated[int, Field(ge=1)] = 8,  # the upper bound is LEDGER_MAX_K (see `arguments.SETTING_BOUNDS`)
        kinds: list[Kind] | None = None,
        tags: list[str] | None = None,
        session: str | None = None,
        since: Annotated[str | None, Field(description="Created at or after: ISO date, or an age like 2d, 12h, 1w.")] = None,
        until: Annotated[str | None, Field(description="Created at or before: ISO date (the whole day), or an age.")] = None,
        include_superseded: bool = False,
        token_budget: Annotated[int | None, Field(ge=150, description="Fit the result in this many tokens.")] = None,
        current_session: Annotated[str | None, Field(description="Your session id: its memories rank a little higher.")] = None,
        min_relevance: Annotated[
            float | None, Field(ge=0, le=1, description="Relevance floor (default from settings); 0 returns the nearest anyway.")
        ] = None,
        expand: Annotated[bool, Field(description="Follow each gist or captured memory to the memories it cites.")] = False,
        ids: Annotated[list[str] | None, Field(description="Fetch these memories instead of searching (no query).")] = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Search the project's memories (hybrid: meaning plus exact words) with a query, or fetch them by ids: one
        of the two is required, and the filters narrow either. Best matches first; nothing under the relevance
        floor. Stale results say which code changed since they were stored."""
        result = await self._call(lambda ledger: ledger.recall(
            query, k=k, kinds=list(kinds) if kinds else None, tags=tags, session=session, since=since, until=until,
            include_superseded=include_superseded, token_budget=token_budget, current_session=current_session,
            min_relevance=min_relevance, expand=expand, ids=ids,
        ))  # fmt: skip
        header = f"{plural(len(result.results), 'memory', 'memories')} ({'by id' if result.mode == 'by-id' else result.mode})"
        header += f"; {result.note}" if result.note else ""
        # With nothing shown, the note says why (under the floor, or too long for token_budget): no second verdict.
        body = render_results(result.results) if result.results else "" if result.note else "No relevant memory."
        return self._answer(result, f"{header}\n\n{body}".strip())

    async def context(
        self,
        query: Annotated[str | None, Field(description="The task or question; without it, the session-start pack.")] = None,
        token_budget: Annotated[int, Field(ge=100)] = 4000,
        session: Annotated[str | None, Field(description="Your session id: its latest turns close the pack.")] = None,
    ) -> Annotated[CallToolResult, ContextResult]:
        """Everything relevant in one block within token_budget: project context, pins, memories and code
        for the query, recent turns. Says what was left out and how to get it."""
        result = await self._call(lambda ledger: ledger.context(query, token_budget, session=session))
        return self._answer(result, result.text)

    async def history(self, id: MemoryId) -> Annotated[CallToolResult, HistoryResult]:
        """A memory's supersession chain, oldest first: how a decision changed over time."""
        result = await self._call(lambda ledger: ledger.history(id))
        text = "\n\n".join(render_memory(m) for m in result.chain)
        return self._answer(result, f"{plural(len(result.chain), 'version')}; current: {result.current}\n\n{text}")

    async def pin(self, id: MemoryId) -> Annotated[CallToolResult, Ack]:
        """Pin a memory: it is shown at the start of every session."""
        return self._answer(await self._call(lambda ledger: ledger.pin(id)), f"pinned {id}")

    async def unpin(self, id: MemoryId) -> Annotated[CallToolResult, Ack]:
        """Unpin a memory."""
        return self._answer(await self._call(lambda ledger: ledger.unpin(id)), f"unpinned {id}")

    async def forget(self, id: MemoryId) -> Annotated[CallToolResult, ForgetResult]:
        """Erase a memory's text for good, leaving only a tombstone; what was captured from it and gists that
        quote it go too. Cannot be undone."""
        result = await self._call(lambda ledger: ledger.forget(id))
        also = f"; also erased what was derived from it: {', '.join(result.also_forgotten)}" if result.also_forgotten else ""
        return self._answer(result, f"forgot {id}: its text is erased{also}")

    async def summarize_session(
        self,
        session: Annotated[str, Field(description="The session id the turns were remembered with.")],
        ctx: Context,
        max_tokens: Annotated[int, Field(ge=100, le=8000)] = 600,
    ) -> Annotated[CallToolResult, GistResult]:
        """Write or roll forward a session's gist: current decisions, definitions, constraints, open questions
        and todos, each line citing the memories it came from. Uses your model (sampling) when offered."""
        writer, why_not = self._writer(ctx)
        result = await self._call(lambda ledger: ledger.summarize_session(session, max_tokens, writer=writer, why_not=why_not))
        size = f"{plural(result.bullets, 'line')}, {plural(result.tokens, 'token')}"
        header = f"gist {result.id} of session {session} ({result.method}, {size})"
        extras = [
            "unchanged" if not result.created else f"supersedes {result.supersedes}" if result.supersedes else "",
            f"{result.dropped} lines dropped in validation" if result.dropped else "",
            result.note or "",
        ]
        return self._answer(result, "; ".join([header, *filter(None, extras)]) + "\n\n" + result.text)

    async def status(self) -> Annotated[CallToolResult, Status]:
        """Ledger health: counts, paths, index lag, embedding model state, version."""
        result = await self._call(lambda ledger: ledger.status())
        result = result.model_copy(update={"root_source": self.roots.source, "root_note": self.roots.note})
        return self._answer(result, result.model_dump_json(indent=1))

    # -- code index ----------------------------------------------------------------

    async def find_symbol(
        self,
        name: Annotated[str, Field(description="A name (update_profile) or qualified name (UserService.update_profile).")],
        kind: SymbolKind | None = None,
        language: Annotated[str | None, Field(description="python, typescript, go, rust, ...")] = None,
        path: Annotated[str | None, Field(description="Only under this file or directory (relative to the root).")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> Annotated[CallToolResult, FindSymbolResult]:
        """Where a function, class, method or constant is defined: file, lines, signature and docstring.
        Tries the exact name, the exact qualified name, case-insensitive, then prefix."""
        result = await self._call(
            lambda ledger: ledger.require_code().find_symbol(name, kind=kind, language=language, path=path, limit=limit)
        )
        shown = plural(len(result.symbols), "definition")
        if result.truncated:
            shown = f"{len(result.symbols)} of {plural(result.total, 'definition')}"
        header = f"{shown} ({result.matched_by})" + ("; a higher limit shows more" if result.truncated else "")
        header += f"; {result.note}" if result.note else ""
        return self._answer(result, "\n".join([header, *(render_symbol(s) for s in result.symbols)]))

    async def search_code(
        self,
        query: Annotated[str, Field(description="What the code does, or words from its names: 'retry backoff'.")],
        k: Annotated[int, Field(ge=1, le=100)] = 10,
        language: str | None = None,
        path: Annotated[str | None, Field(description="Only under this file or directory.")] = None,
    ) -> Annotated[CallToolResult, SearchCodeResult]:
        """Find code symbols by meaning and by identifier words (hybrid search). Best first."""
        result = await self._call(lambda ledger: ledger.require_code().search_code(query, k, language=language, path=path))
        header = f"{plural(len(result.results), 'symbol')} ({result.mode})" + (f"; {result.note}" if result.note else "")
        return self._answer(result, "\n".join([header, *(render_symbol(s) for s in result.results)]))

    async def find_references(
        self,
        name: Annotated[str, Field(description="The name whose use sites to list.")],
        path: Annotated[str | None, Field(description="Only uses under this file or directory.")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> Annotated[CallToolResult, ReferencesResult]:
        """Where a name is used (calls, type uses, imports), with the line of code."""
        result = await self._call(lambda ledger: ledger.require_code().find_references(name, path, limit))
        header = plural(len(result.references), "use") + (" (more not shown)" if result.truncated else "")
        header += f"; {result.note}" if result.note else ""
        lines = [f"{r.path}:{r.line}: {r.context}" for r in result.references]
        return self._answer(result, "\n".join([header, *lines]))

    async def repo_map(
        self,
        token_budget: Annotated[int, Field(ge=1)] = 1024,
        focus: Annotated[
            list[str], Field(description="Files, directories or symbol names to centre the map on.")
        ] = [],  # noqa: B006 - the schema default the clients see; never mutated
    ) -> Annotated[CallToolResult, RepoMapResult]:
        """An outline of the repository's most important files and definitions, within a token budget."""
        result = await self._call(lambda ledger: ledger.require_code().repo_map(token_budget, list(focus)))
        header = f"repo map: {result.definitions} of {result.total_definitions} definitions in {result.files} files, {result.tokens} tokens"
        header += f"; {result.note}" if result.note else ""
        return self._answer(result, f"{header}\n{result.text}")

    async def project_context(self) -> str:
        return await self._call(lambda ledger: ledger.project_context_text(), error=ResourceError)

    async def pinned_memories(self) -> str:
        return await self._call(lambda ledger: ledger.pinned_text(), error=ResourceError)

    async def session_start(self) -> str:
        """Project context and pinned memories: what to know before working on this project (the `context` pack without a query)."""
        return (await self._call(lambda ledger: ledger.session_start.pack())).text


def create_server(
    settings: Settings,
    cwd: Path | None = None,
    *,
    follow_roots: bool = True,
    ledger: LedgerService | None = None,
    alongside: Callable[[Callable[[], AbstractContextManager[LedgerService]]], AbstractContextManager[object]] | None = None,
    tools_at_start: bool = False,
) -> LedgerServer:
    """Open the journal, build the instructions, and register the surface. The index and model open in the lifespan.

    If the journal cannot be opened (a read-only or damaged data directory), the server still starts: its
    instructions and every call say why, and each call tries again. Without `--root`, the project is the client's
    workspace (MCP roots) when it offers one and `follow_roots` is set, else the working directory's project, never
    the home directory or `/`. A server shared by several clients (HTTP) does not follow roots: they would pull it
    from one project to another. A `ledger` opened by the caller is served instead, and closed with the server.
    `alongside`, given a lease on the served ledger (`LedgerHandle.lease`), runs beside the server for its lifetime
    (serve's hook socket).
    The tools are registered when first listed or called, after the `initialize` answer; with `tools_at_start`, now
    (over HTTP the SDK checks a request's Mcp-Param headers against the tool's schema, a lookup that lists nothing).
    """
    cwd = cwd or Path.cwd()
    if ledger is not None:  # opened by the caller (the tests' in-memory client): served as with --root
        choice = RootChoice(ledger.paths.root, "--root")
        handle = LedgerHandle(lambda _root: ledger, choice.root)
    else:
        choice = from_working_directory(cwd) if settings.root is None else named_root(settings.root)
        handle = LedgerHandle(
            lambda root: open_ledger(settings.model_copy(update={"root": root}), cwd), choice.root, choice.reason, hold=hook_hold
        )
    explicit = choice.source == "--root"
    roots = ClientRoots(handle, choice.source, follow=follow_roots and not explicit)
    tools = LedgerTools(handle, roots, settings.sampling, settings.sampling_timeout_seconds)

    guard = ScopeGuard()  # each call within its caller's scope; destructive ones audited
    greeted = anyio.Event()

    async def start_when_greeted() -> None:
        """The background start-up (index, model, code scan, tokenizer) spends about a second importing under the
        interpreter's lock; begun once the client says it is initialized, it does not hold up the handshake."""
        with anyio.move_on_after(GREETING_SECONDS):
            await greeted.wait()
        await anyio.to_thread.run_sync(handle.start)  # it waits for the handle's lock, which an opening call may hold

    async def on_initialized(ctx: ServerRequestContext, params: NotificationParams) -> None:
        greeted.set()
        await roots.on_initialized(ctx, params)

    async def greeted_by_request(ctx: ServerRequestContext, call_next: CallNext) -> HandlerResult:
        """On the stateless revision no `notifications/initialized` ever comes (Claude Code 2.1.332 speaks it): the
        tool list answered is the greeting (the client discovers, then lists prompts, resources and tools, answers a
        start-up begun earlier would hold up), and a hook the server answers next need not wait a second more."""
        try:
            return await call_next(ctx)
        finally:
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.method in ("tools/list", "tools/call"):
                greeted.set()

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[LedgerHandle]:
        try:
            with alongside(handle.lease) if alongside is not None else nullcontext():
                async with roots.running(), anyio.create_task_group() as starting:
                    starting.start_soon(start_when_greeted)
                    try:
                        yield handle
                    finally:  # a server closed before its start-up began never starts it
                        starting.cancel_scope.cancel()
        finally:
            await anyio.to_thread.run_sync(guard.close)
            await anyio.to_thread.run_sync(handle.close)

    def pack() -> str:
        return instructions(tools, handle, roots)

    app = LedgerServer(
        "project-ledger",
        title="Project Ledger",
        description="A persistent, per-project memory for coding agents: decisions, notes, code symbols and project context, "
        "recalled within a token budget.",
        instructions=pack(),
        instructions_now=pack,
        version=version(),
        lifespan=lifespan,
        limits=ledger.limits if ledger is not None else limits(settings),
        register_tools=None if tools_at_start else lambda: register_tools(app, tools, settings.code_index),
    )
    if tools_at_start:
        register_tools(app, tools, settings.code_index)
    sdk.on_notification(app, "notifications/initialized", NotificationParams, on_initialized)
    sdk.on_notification(app, "notifications/roots/list_changed", NotificationParams, roots.on_roots_changed)
    app.middleware.append(greeted_by_request)
    app.middleware.append(StartPackChannel(handle, settings.hook_start_tokens))  # one start pack per Claude Code session
    app.middleware.append(roots)  # before the guard: a stateless client's calls must not wait for roots
    app.middleware.append(guard)
    register_surface(app, tools)
    return app


def hook_hold(root: Path) -> float:
    """`HOOK_HOLD_SECONDS` when Claude Code sessions in `root` run the ledger's prompt hook, else 0."""
    return HOOK_HOLD_SECONDS if "UserPromptSubmit" in ledger_hook_events(root, Path.home()) else 0.0


def named_root(root: Path) -> RootChoice:
    """`--root` or LEDGER_ROOT: taken as given, if it is a directory (a typo must not create a ledger somewhere)."""
    root = root.expanduser().resolve()
    return RootChoice(root, "--root") if root.is_dir() else RootChoice(None, "--root", f"--root {root} is not an existing directory")


def instructions(tools: LedgerTools, handle: LedgerHandle, roots: ClientRoots) -> str:
    """The session-start pack, or what is wrong and what to do about it."""
    if handle.error is None:
        return tools.ledger.session_start.text()
    if handle.root is None and roots.follow:
        text = (
            f"project-ledger has {handle.error} It will serve your workspace's project if your client shares its roots "
            "(MCP roots); if it does not, start the server with --root <project directory>. Nothing is stored until then; "
            "once a project is served, the session_start prompt and the context tool give its context."
        )
    elif handle.root is None:
        text = f"project-ledger has {handle.error} Start the server with --root <project directory>; nothing is stored until then."
    else:
        text = f"project-ledger cannot open this project's data: {handle.error} Every tool says so until it is fixed."
    log.error("%s", text)
    return text


def register_tools(app: MCPServer, tools: LedgerTools, code_index: bool) -> None:
    """The tools, with titles and behaviour hints for clients' approval prompts."""
    read_only = ToolAnnotations(read_only_hint=True)
    app.add_tool(tools.remember, title="Remember", annotations=ToolAnnotations(destructive_hint=False))
    app.add_tool(tools.recall, title="Recall memories", annotations=read_only)
    app.add_tool(tools.context, title="Context pack", annotations=read_only)
    app.add_tool(tools.history, title="Memory history", annotations=read_only)
    app.add_tool(tools.pin, title="Pin a memory", annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    app.add_tool(tools.unpin, title="Unpin a memory", annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=False))
    app.add_tool(tools.forget, title="Forget a memory", annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
    app.add_tool(tools.summarize_session, title="Summarize a session", annotations=ToolAnnotations(destructive_hint=False))
    app.add_tool(tools.status, title="Ledger status", annotations=read_only)
    if code_index:
        app.add_tool(tools.find_symbol, title="Find a symbol's definition", annotations=read_only)
        app.add_tool(tools.search_code, title="Search code", annotations=read_only)
        app.add_tool(tools.find_references, title="Find references", annotations=read_only)
        app.add_tool(tools.repo_map, title="Repository map", annotations=read_only)


def register_surface(app: MCPServer, tools: LedgerTools) -> None:
    """The resources and the prompt."""
    app.resource(
        "ledger://project-context",
        name="project-context",
        title="Project context",
        description="project_context.md as it is now",
        mime_type="text/markdown",
    )(tools.project_context)
    app.resource("ledger://pinned", name="pinned", title="Pinned memories", description="Pinned memories", mime_type="text/markdown")(
        tools.pinned_memories
    )
    app.prompt("session_start", title="Session start")(tools.session_start)
