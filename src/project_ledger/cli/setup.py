"""`init` and `config`: from a fresh checkout to an agent that has the ledger, in two commands."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import click

from project_ledger.cli.client_config import (
    CLIENTS,
    Client,
    ConfigFileError,
    hook_command,
    http_entry,
    merge,
    merge_hooks,
    served_root,
    server_command,
    server_entry,
    snippet,
)
from project_ledger.cli.client_removal import is_ledger_server, remove_hooks, remove_servers, serves
from project_ledger.cli.indexing import index_with_progress
from project_ledger.cli.project_scan import draft_context, scan_project
from project_ledger.cli.support import ledger_errors, opened_services, project_options
from project_ledger.cli.terminal import say, say_json
from project_ledger.config import DATA_DIR_NAME, Settings, find_project_root
from project_ledger.hooks.clients import HOOK_CLIENTS, ClientHooks
from project_ledger.hooks.log import HOOK_LOG
from project_ledger.project_root import unsuitable

_NOT_SLUG = re.compile(r"[^a-z0-9]+")  # what a folder name loses in a server entry's name


def project_root(settings: Settings) -> Path:
    """`--root`, else the working directory's git top-level or the directory itself; never the home directory or
    `/` unless named."""
    if settings.root is not None:
        return settings.root.expanduser().resolve()
    root = find_project_root(Path.cwd())
    if reason := unsuitable(root):
        raise click.ClickException(f"{reason}; run this inside a project, or name it with --root")
    return root


@click.command()
@click.option("--no-index", is_flag=True, help="Skip the first code index (a server builds it in the background).")
@project_options
@ledger_errors
def init(settings: Settings, no_index: bool) -> None:
    """Set the ledger up in this project: its data directory, a first index of the source code, and a drafted
    project_context.md (languages, package managers, test command, layout) for you to finish. An existing
    project_context.md is never changed.

    \b
    Examples:
      project-ledger init
      project-ledger init --root ~/src/app --no-index
    """
    settings = settings.model_copy(update={"root": project_root(settings)})
    with opened_services(settings) as services:
        maintenance = services.maintenance
        say(f"data directory: {maintenance.paths.data_dir}")
        languages: dict[str, int] = {}
        if maintenance.has_code:
            if not no_index:
                say(index_with_progress(maintenance, embed=False, as_json=False))
            languages = maintenance.code_counts().languages
        root, context_file = maintenance.paths.root, maintenance.paths.project_context
    if context_file.exists():
        say(f"kept the existing {context_file}")
    else:
        facts = scan_project(root, languages)
        context_file.write_text(draft_context(root, facts), encoding="utf-8")
        detected = [", ".join(facts.languages) or "no languages", ", ".join(facts.package_managers) or "no package manager"]
        detected.append(f"tests: {facts.test_command}" if facts.test_command else "no test command")
        say(f"wrote {context_file} ({'; '.join(detected)}): finish its sections by hand")
    say(
        "\nNext:\n"
        "  1. Finish project_context.md: every session starts with it.\n"
        "  2. Connect your agent:  project-ledger config claude-code --write   (or cursor, vscode, claude-desktop)\n"
        "  3. Claude Code: let the ledger record the conversation and hand the agent relevant memories by itself:\n"
        "     project-ledger config claude-code --hooks --write   (then `project-ledger import-transcripts` for past sessions)\n"
        "  4. See what it will get: project-ledger context"
    )


@click.command("config")
@click.argument("client", type=click.Choice(sorted({*CLIENTS, *HOOK_CLIENTS})))
@click.option("--write", is_flag=True, help="Merge the entry into the client's file (other servers are kept) instead of printing it.")
@click.option("--name", default="ledger", show_default=True, help="The server's name in the client.")
@click.option("--uvx", "use_uvx", is_flag=True, help="Start the server with uvx instead of this installation's interpreter.")
@click.option("--url", help="Connect to a server running at this URL (serve --transport http) instead of starting one.")
@click.option(
    "--token-env", default="LEDGER_TOKEN", show_default=True, help="With --url: the environment variable the client reads the token from."
)
@click.option(
    "--hooks",
    is_flag=True,
    help=f"{', '.join(HOOK_CLIENTS)}: the hooks that record the conversation (and inject memories), instead of the server.",
)
@click.option("--shared", is_flag=True, help="With --hooks: .claude/settings.json (shared with the team) instead of .claude/settings.local.json.")
@click.option("--remove", is_flag=True, help="Take the entry named --name (or, with --hooks, the hooks) out of the client's file instead.")
@project_options
def config_command(
    settings: Settings, client: str, write: bool, name: str, use_uvx: bool, url: str | None, token_env: str, hooks: bool, shared: bool,
    remove: bool,
) -> None:
    """Print, or with --write merge, the configuration that starts this project's server in CLIENT; with --remove,
    take it out again.

    The command and --root are absolute paths, so the entry works whatever PATH and working directory the client
    starts servers with; --root defaults to the working directory's project. Files: claude-desktop: its
    claude_desktop_config.json (one for every project: give each its own --name); claude-code: .mcp.json; cursor:
    .cursor/mcp.json; vscode: .vscode/mcp.json (the last three at the project root). `project-ledger uninstall`
    takes out every entry and hook of this project at once.

    \b
    Examples:
      project-ledger config claude-code --write
      project-ledger config claude-desktop --root ~/src/app --write
      project-ledger config vscode --uvx
      project-ledger config claude-code --url http://127.0.0.1:8765/mcp --write   # then export LEDGER_TOKEN=...
      project-ledger config claude-code --hooks --write
    """
    root = project_root(settings)
    if hooks or shared:
        client_hooks = HOOK_CLIENTS.get(client)
        if client_hooks is None or not hooks or (shared and not client_hooks.shared_file):
            sharing = " or ".join(name for name, each in HOOK_CLIENTS.items() if each.shared_file)
            raise click.ClickException(f"--hooks is for {', '.join(HOOK_CLIENTS)} only, and --shared goes with {sharing} --hooks")
        if remove:
            path = client_hooks.config_file(root, shared)
            try:
                removed = remove_hooks(path, client_hooks, root)
            except ConfigFileError as exc:
                raise click.ClickException(f"{exc}; take the hooks out by hand") from None
            say(f"removed the ledger's hooks from {path}" if removed else f"no hooks of the ledger in {path}")
            return
        configure_hooks(client_hooks, root, settings.data_dir, write=write, shared=shared)
        return
    if client not in CLIENTS:
        raise click.ClickException(
            f"{client} reads its MCP servers from a file of its own that `config` does not write: add the server there by "
            f"hand, or leave the server to another client; `config {client} --hooks` sets up its hooks"
        )
    target = CLIENTS[client]
    if remove:
        remove_entry(target, root, name)
        return
    if url is not None:
        try:
            entry = http_entry(target, url, token_env)
        except ConfigFileError as exc:
            raise click.ClickException(str(exc)) from None
        say(
            f"the client sends the token from ${token_env}: set it where the client starts (a loopback server's own token "
            "is in the data directory's http_token; `project-ledger tokens create NAME --scope read` makes a narrower one)",
            err=True,
        )
    else:
        entry = server_entry(target, _server_argv(settings, root, use_uvx))
    path = target.config_path(root)
    if not write:
        say_json(snippet(target, name, entry))
        say(f"(merge into {path}, or rerun with --write)", err=True)
        return
    try:
        if target.project_file is None and (other := served_root(path, target, name)) not in (None, str(root)):
            raise ConfigFileError(
                f"{path} already has a server {name!r}, for {other}; one file serves every project, so give this one its "
                f"own name (--name {name}-{_NOT_SLUG.sub('-', root.name.lower()).strip('-') or 'project'})"
            )
        outcome = merge(path, client=target, name=name, entry=entry)
    except ConfigFileError as exc:
        raise click.ClickException(f"{exc}; add the entry by hand (run without --write to print it)") from None
    say(f"{outcome} server {name!r} in {path}, serving {root}")
    if outcome == "unchanged":
        return
    if target.project_file and url is None:
        say("it holds this machine's absolute paths: keep it out of version control if others share the repository", err=True)
    say(f"restart {client} (or reload its MCP servers) to start the ledger", err=True)


def _server_argv(settings: Settings, root: Path, use_uvx: bool) -> list[str]:
    """The command that starts this project's server: this interpreter, or uvx, with absolute paths."""
    uvx = None
    if use_uvx and (uvx := shutil.which("uvx")) is None:
        raise click.ClickException("uvx is not on PATH; install uv (https://docs.astral.sh/uv/) or leave out --uvx")
    argv = server_command(root, uvx)
    if settings.data_dir is not None:
        argv += ["--data-dir", str(settings.data_dir.expanduser().resolve())]
    return argv


def remove_entry(target: Client, root: Path, name: str) -> None:
    """Take server `name` out of the client's file, if it is the ledger's (and, in Claude Desktop's, serves `root`)."""
    path = target.config_path(root)
    project = root if target.project_file else None

    def wanted(entry_name: str, entry: object) -> bool:
        if entry_name != name:
            return False
        if project is None:
            return serves(entry, root)
        return is_ledger_server(entry) or (isinstance(entry, dict) and "url" in entry)

    try:
        if remove_servers(path, target, wanted, project_root=project):
            say(f"removed server {name!r} from {path}")
            return
    except ConfigFileError as exc:
        raise click.ClickException(f"{exc}; take the entry out by hand") from None
    found = served_root(path, target, name) if path.exists() else None
    why = f"it serves {found}, not {root}" if found else "there is none, or it does not start project-ledger"
    raise click.ClickException(f"left {path} as it was: no server {name!r} of the ledger to remove ({why})")


def configure_hooks(client: ClientHooks, root: Path, data_dir: Path | None, *, write: bool, shared: bool) -> None:
    """Print, or merge into the client's hooks file in the project, the ledger's hook on each of its events."""
    command = hook_command(data_dir.expanduser().resolve() if data_dir is not None else None, client.name)
    path = client.config_file(root, shared)
    if not write:
        say_json(json.dumps(client.config_block(command), indent=2))
        say(f"(merge into {path}, or rerun with --write)", err=True)
        return
    try:
        outcome = merge_hooks(path, client, command)
    except ConfigFileError as exc:
        raise click.ClickException(f"{exc}; add the hooks by hand (run without --write to print them)") from None
    say(f"{outcome} the ledger's hooks in {path}")
    if outcome != "unchanged":
        log = (data_dir or root / DATA_DIR_NAME).expanduser() / HOOK_LOG
        say(f"they take effect in the next {client.name} session; {log} has a line per run", err=True)
