"""`project-ledger`: the MCP server and a command line over the same data.

The CLI works on the journal and index that a running server uses; SQLite and
per-process index slots make that safe. Data goes to stdout, logs to stderr;
`serve` writes nothing to stdout but the protocol.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import click

from project_ledger.cli.early_options import LOG_FORMAT
from project_ledger.cli.main import exit_now
from project_ledger.cli.progress import CountingWriter, counted_lines, progress_bars
from project_ledger.cli.support import (
    NO_AUTH_HELP,
    LedgerGroup,
    ledger_errors,
    opened,
    opened_services,
    project_options,
    serve_project_options,
)
from project_ledger.cli.terminal import JsonSafeWriter, say, say_json, visible
from project_ledger.config import Settings, comma_list
from project_ledger.text.wording import plural

if TYPE_CHECKING:
    from pydantic import BaseModel

Served = TypeVar("Served", bound="BaseModel")

EXAMPLES = """
\b
Examples:
  project-ledger init                       # data directory, first code index, a drafted project_context.md
  project-ledger config claude-code --write # or cursor, vscode, claude-desktop
  project-ledger config claude-code --hooks --write  # record the conversation, inject relevant memories
  project-ledger serve                      # stdio MCP server for this repository
  project-ledger remember "Use Postgres 16" --kind decision --tag db
  project-ledger recall "which database?" -k 3
  project-ledger status --json
  project-ledger summarize my-session         # the session's gist, citing its sources
  project-ledger index --watch              # index the source tree, then follow edits
  project-ledger symbols UserService.update_profile
  project-ledger export backup.jsonl        # every memory, tombstones included; `import` reads it back
  project-ledger doctor --fix               # check the journal, index, model and watcher; repair what is safe
  project-ledger salvage rescued.jsonl      # a damaged journal: every memory that can still be read, as an export
  project-ledger uninstall                  # take every client entry and hook of this project out (--data: the memories too)
"""


TTY_NOTICE = (
    "project-ledger serve is an MCP server: it reads JSON-RPC on stdin, and an MCP client starts it. "
    "To add it to a client: project-ledger config claude-code --write (or cursor, vscode, claude-desktop). Ctrl-C stops it."
)


# The commands kept in other modules, imported only when run (or listed by --help).
ELSEWHERE = {
    "init": "project_ledger.cli.setup:init",
    "config": "project_ledger.cli.setup:config_command",
    "history": "project_ledger.cli.memories:history",
    "pin": "project_ledger.cli.memories:pin",
    "unpin": "project_ledger.cli.memories:unpin",
    "forget": "project_ledger.cli.memories:forget",
    "migrate": "project_ledger.cli.migrate:migrate",
    "inspect": "project_ledger.cli.inspect:inspect_command",
    "tokens": "project_ledger.cli.access_commands:tokens",
    "audit": "project_ledger.cli.access_commands:audit",
    "hook": "project_ledger.cli.hooks:hook_group",
    "import-transcripts": "project_ledger.cli.transcripts:import_transcripts",
    "salvage": "project_ledger.cli.salvage:salvage_command",
    "uninstall": "project_ledger.cli.uninstall:uninstall",
}


@click.group(cls=LedgerGroup, lazy=ELSEWHERE, epilog=EXAMPLES)
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-vv for debug).")
@click.option("--debug", is_flag=True, help="Show the full traceback of an unexpected error (and debug logging).")
@click.version_option(package_name="project-ledger")
@click.pass_context
def main(ctx: click.Context, verbose: int, debug: bool) -> None:
    """A persistent, per-project memory for coding agents, served over MCP."""
    ctx.obj = {"debug": debug}
    level = [logging.WARNING, logging.INFO, logging.DEBUG][2 if debug else min(verbose, 2)]
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)


@main.command()
@click.option(
    "--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True, help="http: streamable HTTP at /mcp."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface for --transport http; off loopback a token is required.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port for --transport http; 0 picks a free one.")
@click.option("--no-auth", is_flag=True, help=NO_AUTH_HELP)
@click.option("--shared-server", is_flag=True, hidden=True, help="The server stdio proxies share (started by them).")
@serve_project_options
@ledger_errors
def serve(settings: Settings, transport: str, host: str, port: int, no_auth: bool, shared_server: bool) -> None:
    """Run the MCP server. Clients start the stdio one themselves; the HTTP one serves a team.

    \b
    Examples:
      claude mcp add ledger -- project-ledger serve --root "$PWD"
      project-ledger serve --transport http     # token in .ledger/http_token; `config --url` writes the header
      LEDGER_AUTH_TOKEN=$(openssl rand -hex 32) project-ledger serve --transport http --host 0.0.0.0 --port 8765
    """
    import anyio

    from project_ledger.cli.serve_answers import answering_hooks
    from project_ledger.mcp.app import create_server

    if shared_server:  # started by a proxy (cli/mcp_proxy.py), which passes --root and --data-dir
        from project_ledger.config import resolve_paths
        from project_ledger.local_socket import settings_fingerprint
        from project_ledger.mcp.shared import serve_shared

        app = create_server(settings, Path.cwd(), follow_roots=False, alongside=answering_hooks)
        data_dir = resolve_paths(settings, Path.cwd()).data_dir
        anyio.run(serve_shared, app, data_dir, settings_fingerprint(os.environ), settings.shared_idle_seconds)
        return
    if transport == "stdio":
        from project_ledger.mcp.stdio import serve_stdio

        if sys.stdin.isatty():  # started by hand: without this line it looks hung, and typing gets JSON-RPC errors
            say(TTY_NOTICE, err=True)

        anyio.run(serve_stdio, create_server(settings, Path.cwd(), alongside=answering_hooks))
        exit_now()
        return
    from project_ledger.cli.access_commands import configured_token, server_access
    from project_ledger.cli.listening import listen
    from project_ledger.mcp.http import RateLimit, serve_http

    configured_token(settings, host, no_auth)  # a refused configuration is said first
    listener = listen(host, port)  # then a busy port, as the one line printed, before any token is made or shown
    port = listener.getsockname()[1]
    access, owner = server_access(settings, host, no_auth)
    app = create_server(settings, Path.cwd(), follow_roots=False, alongside=answering_hooks, tools_at_start=True)
    say(f"serving {app.name} for {(settings.root or Path.cwd()).resolve()} at http://{host}:{port}/mcp", err=True)
    if owner.printable:
        say(f"clients send the header  Authorization: Bearer {owner.value}", err=True)
    hosts, origins = comma_list(settings.http_allowed_hosts), comma_list(settings.http_allowed_origins)
    try:
        anyio.run(functools.partial(
            serve_http, app, host=host, port=port, access=access, extra_hosts=hosts, extra_origins=origins, no_auth=no_auth,
            limit=RateLimit(settings.http_rate_limit, settings.http_rate_window_seconds), listener=listener,
        ))  # fmt: skip
    finally:
        access.close()
        listener.close()


class _RememberArguments(TypedDict):
    """What `remember` asks of a running server, or of the ledger when none answers: the same call either way."""

    text: str
    kind: str
    tags: list[str]
    session: str | None
    pinned: bool
    supersedes: str | None


class _RecallArguments(TypedDict):
    """What `recall` asks of a running server, or of the ledger when none answers."""

    query: str
    k: int
    kinds: list[str] | None
    tags: list[str] | None
    since: str | None
    until: str | None
    min_relevance: float | None


def _served_result(answer: dict[str, Any] | None, model: type[Served]) -> Served | None:
    """What the project's running `serve` answered, read as `model`; None when no server answered. A refusal is the
    ledger's own one-line error."""
    if answer is None:
        return None
    if "failed" in answer:
        raise click.ClickException(visible(answer["failed"]))
    return model.model_validate(answer["result"])


@main.command()
@click.argument("text")
@click.option(
    "--kind", default="note", show_default=True, help="note, decision, definition, constraint, todo, error, turn or summary."
)
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for several.")
@click.option("--session", help="Session id to file it under.")
@click.option("--pin", "pinned", is_flag=True, help="Pin it: shown at every session start.")
@click.option("--supersedes", help="Id of the memory this one replaces.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@project_options
@ledger_errors
def remember(
    settings: Settings, text: str, kind: str, tags: tuple[str, ...], session: str | None, pinned: bool, supersedes: str | None, as_json: bool
) -> None:
    """Store TEXT as a memory. A running server indexes it within a second.

    \b
    Example:
      project-ledger remember "Retries back off 250ms doubling to 8s" --kind decision --tag http
    """
    from project_ledger.cli.fast_path import remember_from_server
    from project_ledger.config import resolve_paths
    from project_ledger.models import RememberResult

    arguments: _RememberArguments = {
        "text": text, "kind": kind, "tags": list(tags), "session": session, "pinned": pinned, "supersedes": supersedes
    }
    result = _served_result(remember_from_server(resolve_paths(settings, Path.cwd()).data_dir, dict(arguments)), RememberResult)
    if result is None:  # no server answered (its index is open already, when one does)
        with opened_services(settings) as services:
            services.maintenance.try_open_index()  # for the near-duplicate check; the note says if it was skipped
            result = services.ledger.remember(**arguments)
    if as_json:
        say_json(result.model_dump_json(indent=2))
    else:
        say(result.id if result.created else f"{result.id} (already stored)")
        if result.redacted:
            secrets = ", ".join(f"{n} {kind}" for kind, n in result.redacted_types.items())
            say(f"redacted before storing: {secrets}", err=True)
        if result.note:
            say(result.note, err=True)


@main.command()
@click.argument("query")
@click.option("-k", default=8, show_default=True, help="How many results (1-100).")
@click.option("--kind", "kinds", multiple=True, help="Only these kinds; repeat for several.")
@click.option("--tag", "tags", multiple=True, help="Only memories with one of these tags.")
@click.option("--since", help="Created at or after: ISO date or an age like 2d, 12h, 1w.")
@click.option("--until", help="Created at or before: ISO date (the whole day) or an age.")
@click.option("--min-relevance", type=float, help="Relevance floor, 0-1 (0 shows the nearest anyway).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@project_options
@ledger_errors
def recall(
    settings: Settings,
    query: str,
    k: int,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    min_relevance: float | None,
    as_json: bool,
) -> None:
    """Search memories for QUERY, best first.

    \b
    Example:
      project-ledger recall "how do retries back off?" -k 3
    """
    from project_ledger.cli.fast_path import recall_from_server
    from project_ledger.config import resolve_paths
    from project_ledger.memory.recall import render_results
    from project_ledger.models import RecallResult

    arguments: _RecallArguments = {
        "query": query, "k": k, "kinds": list(kinds) or None, "tags": list(tags) or None, "since": since, "until": until,
        "min_relevance": min_relevance,
    }  # fmt: skip
    result = _served_result(recall_from_server(resolve_paths(settings, Path.cwd()).data_dir, dict(arguments)), RecallResult)
    if result is None:  # no server answered (its model is loaded already, when one does)
        with opened(settings, index=True, model=True) as ledger:
            result = ledger.recall(**arguments)
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    if result.note:
        say(f"({result.mode}; {result.note})", err=True)
    say(render_results(result.results) if result.results else "No relevant memory.")


@main.command()
@click.argument("session")
@click.option("--max-tokens", default=600, show_default=True, help="Size of the gist in tokens (tiktoken cl100k), 100-8000.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@project_options
@ledger_errors
def summarize(settings: Settings, session: str, max_tokens: int, as_json: bool) -> None:
    """Write or roll forward SESSION's gist: decisions, definitions, constraints, open questions and todos, each
    line citing its sources. The CLI has no client model, so the gist is extractive.

    \b
    Example:
      project-ledger summarize 2026-11-30-billing --max-tokens 800
    """
    with opened(settings) as ledger:  # the journal is enough: servers index the gist at their next catch-up
        result = ledger.summarize_session(
            session, max_tokens=max_tokens, why_not="the command line has no client model to sample"
        )
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    say(result.text)
    state = "unchanged" if not result.created else f"supersedes {result.supersedes}" if result.supersedes else "new"
    say(f"(gist {result.id}: {result.tokens} tokens, {result.bullets} lines, {result.left_out} left out; {state})", err=True)


@main.command()
@click.argument("query", required=False)
@click.option(
    "--budget", default=4000, show_default=True, help="Token budget (tiktoken cl100k), 100 to LEDGER_MAX_RESULT_TOKENS (25000 unless set)."
)
@click.option("--session", help="Close the pack with this session's latest turns.")
@click.option("--json", "as_json", is_flag=True, help="Print the pack and its breakdown as JSON.")
@project_options
@ledger_errors
def context(settings: Settings, query: str | None, budget: int, session: str | None, as_json: bool) -> None:
    """Print the context pack an agent gets for QUERY (without one: the session-start pack).

    \b
    Examples:
      project-ledger context "add a retry to the invoice export" --budget 2000
      project-ledger context --json
    """
    with opened(settings, index=query is not None, model=query is not None, code_search=query is not None) as ledger:
        result = ledger.context(query, token_budget=budget, session=session)
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    say(result.text)
    breakdown = ", ".join(f"{name} {tokens}" for name, tokens in result.sections.items())
    say(f"({result.tokens} of {budget} tokens: {breakdown})", err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@project_options
@ledger_errors
def status(settings: Settings, as_json: bool) -> None:
    """Paths, counts, index lag and model state.

    \b
    Example:
      project-ledger status --json
    """
    with opened_services(settings) as services:
        # The slot's state file tells its revision and size; opening it would also catch it up and flush it to disk,
        # which costs more than the rest of the command. Without that file (older version, Qdrant server), open it.
        if not services.maintenance.read_index_state():
            services.maintenance.open_index()
        result = services.ledger.status()
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    say(f"project-ledger {result.version}")
    say(f"root:      {result.root}")
    say(f"data dir:  {result.data_dir}")
    cut = " (cut to fit the instructions cap)" if result.session_start_cut else ""
    say(f"context:   {result.project_context or 'missing (see project_context.md.example)'}{cut}")
    if result.project_context_placeholders:
        placeholders = result.project_context_placeholders
        say(f"           still has {placeholders} template placeholders (left out of the pack): edit it")
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(result.counts.items())) or "none"
    say(f"memories:  {counts}; pinned {result.pinned}, superseded {result.superseded}, forgotten {result.forgotten}")
    for stale in result.stale:
        say(f"stale:     {stale.id}: {'; '.join(stale.changed)}")
    index = result.index
    state = index.state.replace("-", " ") + (" by this command" if index.state == "not-opened" else "")
    say(f"index:     {index.backend} at {index.location}, {state}, lag {index.lag}, missing vectors {index.missing_embeddings}")
    if index.state == "not-opened" and index.lag:
        say(f"           {plural(index.lag, 'journal change')} not in this index slot yet: the next command that searches applies them")
    if index.compaction:
        say(f"           compaction {index.compaction}")
    for event in index.events:
        say(f"           {event}")
    detail = f" ({result.embedding.detail})" if result.embedding.detail else ""
    if result.embedding.state == "not-loaded":  # each process loads its own; a server's is in its status tool
        detail = " by this command (each process loads its own model; a running server's status tool shows its own)"
    say(f"embedding: {result.embedding.model}: {result.embedding.state.replace('-', ' ')}{detail}")
    if (code := result.code) is not None:
        languages = ", ".join(f"{name} {n}" for name, n in sorted(code.languages.items(), key=lambda kv: -kv[1])) or "none"
        say(f"code:      {code.files} files ({languages}), {code.symbols} symbols, {code.references} references")
        if code.pending_vectors:
            say(
                f"           {code.pending_vectors} symbols without vectors (search_code ranks them on exact words): a running "
                "server computes them in the background, or run `project-ledger index --embed`"
            )


@main.command()
@project_options
@ledger_errors
def reindex(settings: Settings) -> None:
    """Rebuild the search index from the journal (running servers rebuild theirs too), embedding first any
    memory that has no vector yet.

    \b
    Example:
      project-ledger reindex
    """
    from project_ledger.cli.access_commands import audit_local

    started = time.perf_counter()
    with opened_services(settings, index=True) as services, progress_bars() as report:
        services.maintenance.embed_memories(report)  # loads the model only when a memory has no vector
        report("rebuilding the index", 0, None)
        points = services.maintenance.rebuild_index()
    audit_local(settings, "reindex", [])
    say(f"index rebuilt: {plural(points, 'memory', 'memories')} in {time.perf_counter() - started:.1f}s")


@main.command()
@click.option("--fix", is_flag=True, help="Repair what can be repaired without losing anything.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@project_options
@ledger_errors
def doctor(settings: Settings, fix: bool, as_json: bool) -> None:
    """Check the data directory, journal, model, index, vectors, code index and file watcher.

    Exits with 1 while a problem remains. With --fix it tightens the data
    directory's permissions, rebuilds a damaged or out-of-step index, computes
    missing vectors and re-indexes changed source files, and says what it did.
    A damaged journal is reported, never rewritten.

    \b
    Examples:
      project-ledger doctor
      project-ledger doctor --fix
    """
    from project_ledger.config import resolve_paths
    from project_ledger.errors import JournalDamaged
    from project_ledger.maintenance.doctor import damaged_journal, examine

    try:
        with opened_services(settings) as services:
            findings = examine(services.maintenance, fix)
    except JournalDamaged as exc:  # too damaged to open: nothing else can be checked, and salvage is what to do
        findings = [damaged_journal(resolve_paths(settings, Path.cwd()), exc)]
    if as_json:
        say_json(json.dumps([dataclasses.asdict(finding) for finding in findings], indent=2))
    else:
        for finding in findings:
            say(f"{finding.state:<8} {finding.check:<11} {finding.detail}")
    if any(finding.state == "problem" for finding in findings):
        sys.exit(1)


@main.command("export")
@click.argument("destination", default="-", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@project_options
@ledger_errors
def export_command(settings: Settings, destination: Path) -> None:
    """Write every memory, forgotten ones as tombstones, as JSON lines (default: to stdout).

    The backup, and the way to move a ledger to another machine or backend.
    A file is written under a temporary name and renamed when complete, and
    only its owner can read it (mode 600). An export that meets a damaged page
    of the journal fails and writes nothing: `project-ledger salvage` writes
    what can still be read.

    \b
    Examples:
      project-ledger export ledger-backup.jsonl
      project-ledger export | gzip > ledger-backup.jsonl.gz
    """
    from project_ledger.cli.export_file import write_privately

    with opened_services(settings) as services, progress_bars() as report:
        ledger, counts = services.ledger, services.maintenance.counts()
        lines = 1 + sum(counts.by_kind.values()) + counts.superseded + counts.forgotten  # the header, then every memory
        if str(destination) == "-":
            shown = JsonSafeWriter(sys.stdout)  # a terminal, perhaps: no raw DEL, C1 or bidi control reaches it
            header = ledger.browsing.export(CountingWriter(shown, step="exporting memories", total=lines, report=report))
        else:
            header = write_privately(
                destination, lambda out: ledger.browsing.export(CountingWriter(out, step="exporting memories", total=lines, report=report))
            )
    say(f"exported {header.memories} memories and {header.tombstones} tombstones to {destination}", err=True)


@main.command("import")
@click.argument("source", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@project_options
@ledger_errors
def import_command(settings: Settings, source: Path, as_json: bool) -> None:
    """Add the memories of an export, keeping their ids, dates, pins and links.

    The whole file is checked first; a damaged one imports nothing. Ids
    already in this ledger are left as they are, except that a forgotten
    memory in the export forgets the live one here: an erase is never undone
    by an older backup. Vectors and the index catch up in a running server,
    or when the next one starts.

    \b
    Examples:
      project-ledger import ledger-backup.jsonl
      gunzip -c ledger-backup.jsonl.gz | project-ledger import -
    """
    from project_ledger.cli.access_commands import audit_local

    try:
        size = None if str(source) == "-" else source.stat().st_size
        with click.open_file(str(source), encoding="utf-8") as lines, opened(settings) as ledger, progress_bars() as report:
            restored = ledger.import_export(counted_lines(lines, step="reading the export", total_bytes=size, report=report))
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"could not read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    audit_local(settings, "import", [])
    if as_json:
        say_json(json.dumps(dataclasses.asdict(restored)))
        return
    say(
        f"imported {restored.added} memories ({restored.tombstones} of them tombstones); {restored.kept} were already here; "
        f"{restored.forgotten} live ones forgotten by tombstones in the export"
    )


@main.command()
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--watch", is_flag=True, help="Keep running and re-index files as they change (Ctrl-C stops).")
@click.option("--embed", is_flag=True, help="Also compute the symbols' dense vectors now (a server does it in the background).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@project_options
@ledger_errors
def index(settings: Settings, path: Path | None, watch: bool, embed: bool, as_json: bool) -> None:
    """Index the source tree's symbols and references (PATH: the project root; default: the current one).

    Only files changed since the last run are parsed again.

    \b
    Examples:
      project-ledger index
      project-ledger index ~/src/app --watch
    """
    from project_ledger.cli.indexing import index_with_progress

    if path is not None:
        settings = settings.model_copy(update={"root": path})
    with opened_services(settings) as services:
        (say_json if as_json else say)(index_with_progress(services.maintenance, embed=embed, as_json=as_json))
        if watch:
            services.ledger.require_code().watch_until_interrupted(lambda line: say(line, err=True))


@main.command()
@click.argument("name")
@click.option("--kind", help="function, method, class, struct, interface, enum, trait, type, constant, module or macro.")
@click.option("--language", help="python, javascript, typescript, tsx, go, rust, java, c, cpp, csharp, ruby, php, ...")
@click.option("--path", "under", help="Only under this file or directory.")
@click.option("--limit", default=20, show_default=True, help="How many definitions (1-200).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@project_options
@ledger_errors
def symbols(settings: Settings, name: str, kind: str | None, language: str | None, under: str | None, limit: int, as_json: bool) -> None:
    """Find where NAME is defined (the find_symbol tool from the shell). Brings the index up to date first.

    \b
    Examples:
      project-ledger symbols parse_since
      project-ledger symbols LedgerService.recall --json
      project-ledger symbols Retry --kind class --language python
    """
    from project_ledger.code.service import render_symbol

    with opened_services(settings) as services:
        code = services.ledger.require_code()
        services.maintenance.scan_code()
        result = code.find_symbol(name, kind=kind, language=language, path=under, limit=limit)
    if as_json:
        say_json(result.model_dump_json(indent=2))
        return
    if not result.symbols:
        say(f"No definition of {name!r} found.", err=True)
        raise SystemExit(1)
    shown = f"{len(result.symbols)} of {result.total}" if result.truncated else str(len(result.symbols))
    say(f"({shown} by {result.matched_by}{'; --limit shows more' if result.truncated else ''})", err=True)
    say("\n".join(render_symbol(symbol) for symbol in result.symbols))
