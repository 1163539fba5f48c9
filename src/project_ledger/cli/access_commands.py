"""Who may reach a served ledger: the HTTP servers' token, `tokens` (create, list, revoke) and `audit`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from project_ledger.cli.support import check_found_root, ledger_errors, project_options
from project_ledger.cli.terminal import say, say_json
from project_ledger.config import Settings
from project_ledger.maintenance.access_service import LOCAL, SCOPES, AccessService


@dataclasses.dataclass(frozen=True)
class OwnerToken:
    """The owner's token of an HTTP server (None with --no-auth), and whether it may be printed: the data
    directory's own token is shown, as Jupyter shows its own; one set by its owner stays out of logs."""

    value: str | None
    printable: bool


def configured_token(settings: Settings, host: str, no_auth: bool) -> str | None:
    """The owner's token its owner set (LEDGER_AUTH_TOKEN or its file), None if none; refused if it is too weak or
    missing where one is required, or contradicts --no-auth. Reads and writes nothing else."""
    from project_ledger.mcp.http import check_token

    try:
        token = settings.http_token()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if no_auth and token is not None:
        raise click.ClickException("--no-auth and LEDGER_AUTH_TOKEN contradict each other; drop one")
    check_token(host, token, no_auth)
    return token


def server_access(settings: Settings, host: str, no_auth: bool) -> tuple[AccessService, OwnerToken]:
    """The access service an HTTP server checks callers with, and the owner's token.

    The token is LEDGER_AUTH_TOKEN (or its file) when set, else the data directory's `http_token`, made on
    first use: a loopback server needs one too, since every account on the machine can reach 127.0.0.1.
    """
    from project_ledger.factory import local_token, open_access

    token = configured_token(settings, host, no_auth)
    if no_auth:
        say("--no-auth: no token is asked for; any account on this machine can read, change and erase memories", err=True)
    elif token is None:
        token, made = local_token(settings, Path.cwd())
        say(f"{'made a new' if made else 'using the'} token kept in the data directory's http_token (mode 600)", err=True)
        return open_access(settings, Path.cwd(), token), OwnerToken(token, printable=True)
    return open_access(settings, Path.cwd(), token), OwnerToken(token, printable=False)


@contextmanager
def opened_access(settings: Settings) -> Iterator[AccessService]:
    """This project's tokens and audit trail, for one command."""
    from project_ledger.factory import open_access

    check_found_root(settings)
    access = open_access(settings, Path.cwd())
    try:
        yield access
    finally:
        access.close()


def audit_local(settings: Settings, tool: str, ids: list[str]) -> None:
    """Record a destructive or administrative command run from this machine's shell."""
    with opened_access(settings) as access:
        access.record(LOCAL, tool, ids)


@click.group(name="tokens")
def tokens() -> None:
    """Scoped tokens for the HTTP transport: read (recall, context, history, status, code tools), write (also
    remember, pin, unpin, summarize_session) and admin (everything, forget included). Only a hash is stored.

    \b
    Examples:
      project-ledger tokens create ci-bot --scope read
      project-ledger tokens list
      project-ledger tokens revoke ci-bot
    """


@tokens.command("create")
@click.argument("name")
@click.option("--scope", type=click.Choice(SCOPES), default="read", show_default=True, help="What the token may do.")
@project_options
@ledger_errors
def create_token(settings: Settings, name: str, scope: str) -> None:
    """Make a token called NAME; its secret is printed once, on stdout, and cannot be shown again. The names
    local, owner and anonymous (in any case) are the audit trail's for callers without a token of their own."""
    with opened_access(settings) as access:
        token, secret = access.create(name, scope)
    say(secret)
    say(f"token {token.name} ({token.id}, scope {token.scope}); clients send it as: Authorization: Bearer <secret>", err=True)


@tokens.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as JSON.")
@project_options
@ledger_errors
def list_tokens(settings: Settings, as_json: bool) -> None:
    """Every token made here, revoked ones included (never their secrets)."""
    with opened_access(settings) as access:
        listed = access.tokens()
    if as_json:
        say_json(json.dumps([dataclasses.asdict(token) for token in listed], indent=2))
        return
    for token in listed:
        state = f"revoked {token.revoked_at}" if token.revoked_at else "live"
        say(f"{token.id}  {token.name:<20} {token.scope:<6} created {token.created_at}  {state}")
    if not listed:
        say("No tokens; `project-ledger tokens create NAME --scope read` makes one.", err=True)


@tokens.command("revoke")
@click.argument("name_or_id")
@project_options
@ledger_errors
def revoke_token(settings: Settings, name_or_id: str) -> None:
    """Revoke the token NAME_OR_ID: running servers refuse it from the next request on."""
    with opened_access(settings) as access:
        token = access.revoke(name_or_id)
    say(f"revoked {token.name} ({token.id})")


@click.command(name="audit")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 100_000), help="The latest this many entries.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
@project_options
@ledger_errors
def audit(settings: Settings, limit: int, as_json: bool) -> None:
    """Who forgot, pinned, unpinned, imported, migrated, reindexed or changed tokens, and when: a token's name and
    id (or local, owner, anonymous), the tool and the ids, never any text. Oldest first.

    \b
    Examples:
      project-ledger audit
      project-ledger audit --json --limit 20
    """
    with opened_access(settings) as access:
        entries = access.audit(limit)
    if as_json:
        say_json(json.dumps([dataclasses.asdict(entry) for entry in entries], indent=2))
        return
    for entry in entries:
        say(f"{entry.at}  {entry.actor:<20} {entry.tool:<14} {' '.join(entry.ids)}")
    if not entries:
        say("The audit trail is empty.", err=True)
