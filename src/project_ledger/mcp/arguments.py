"""Tool arguments a model got wrong, said the way the CLI and the inspector say it.

The SDK checks arguments against each tool's signature and answers a mismatch
with pydantic's report (`1 validation error for recallArguments ... For further
information visit https://errors.pydantic.dev/...`), which is written for a
Python programmer. `LedgerServer` turns it into one sentence per argument that
names the value and what to send instead, with the bounds the tool's schema
advertises. Upper bounds that are settings (`LEDGER_MAX_K`,
`LEDGER_MAX_RESULT_TOKENS`) come from the ledger's `Limits`: the schema, the
error and the service's own check all read them there.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import Tool
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from project_ledger.memory.validation import Limits

# (tool, argument) -> the `Limits` field that is its upper bound, and the variable that sets it.
SETTING_BOUNDS: dict[tuple[str, str], tuple[str, str]] = {
    ("recall", "k"): ("max_k", "LEDGER_MAX_K"),
    ("recall", "token_budget"): ("max_result_tokens", "LEDGER_MAX_RESULT_TOKENS"),
    ("context", "token_budget"): ("max_result_tokens", "LEDGER_MAX_RESULT_TOKENS"),
    ("repo_map", "token_budget"): ("max_result_tokens", "LEDGER_MAX_RESULT_TOKENS"),
}
_RANGE = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}
_TYPES = {
    "int": "a whole number",
    "float": "a number",
    "string": "text",
    "bool": "true or false",
    "list": "a list",
    "dict": "an object",
}
MAX_SHOWN = 60  # characters of a rejected value repeated in the error
MAX_UNKNOWN_SHOWN = 5  # unknown argument names repeated in the error
# Tools whose result is a report read as a whole (and rendered as text): their output schema describes the top
# level only, the nested records as plain objects. `status` alone cost 1,020 tokens with every record spelled out.
REPORTS = frozenset({"status"})


class LedgerServer(MCPServer):
    """`MCPServer` whose argument errors say what to send, and whose schemas carry the configured bounds."""

    def __init__(
        self,
        *args: Any,
        limits: Limits,
        instructions_now: Callable[[], str],
        register_tools: Callable[[], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        # The session-start pack as it is now: a server that outlives many sessions (`mcp/shared.py`) gives each its
        # own, not the one computed when it started.
        self.instructions_now = instructions_now
        self._listed: tuple[list[Tool], list[Tool]] | None = None  # (the SDK's list, ours made from it)
        # Registering a tool builds its schemas from its signature (some 30 ms for all of them), which nothing before
        # the `initialize` answer needs: `register_tools` runs at the first listing or call instead.
        self._register_tools = register_tools

    def _tools_registered(self) -> None:
        """Register the tools now if that was left for their first use. Synchronous, so the first caller on the event
        loop completes it before any other request sees the tools."""
        if self._register_tools is not None:
            register, self._register_tools = self._register_tools, None
            register()

    async def list_tools(self) -> list[Tool]:
        """The registered tools, bounded and leaned once; again only if the registered list changes."""
        self._tools_registered()
        registered = await super().list_tools()
        if self._listed is None or self._listed[0] != registered:
            self._listed = (registered, [lean(with_bounds(tool, self.limits)) for tool in registered])
        return self._listed[1]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self._tools_registered()
        schema = next((tool.input_schema for tool in await self.list_tools() if tool.name == name), None)
        if schema is not None and (refusal := unknown_arguments(name, arguments, schema)):
            raise ToolError(f"Error executing tool {name}: {refusal}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
            raise ToolError(f"Error executing tool {name}: {describe(cause, name, schemas.get(name, {}))}") from cause


def unknown_arguments(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """Why a call names arguments `tool` does not take, with the ones it does and the nearest spelling; None if it
    names none. The SDK's argument models ignore extra keys, so `remember(tag=...)` would store no tags and say
    nothing. The schemas do not say `additionalProperties: false`: 6 tokens a tool in every listing, for what this
    error tells the one model that needs it."""
    accepted = list(schema.get("properties", {}))
    unknown = [key for key in arguments if key not in accepted]
    if not unknown:
        return None
    shown, more = unknown[:MAX_UNKNOWN_SHOWN], len(unknown) - MAX_UNKNOWN_SHOWN
    by_form = {_form(name): name for name in accepted}
    guesses = []
    for key in shown:
        if len(key) <= MAX_SHOWN and (close := difflib.get_close_matches(_form(key), list(by_form), n=1, cutoff=0.6)):
            guesses.append(f"{by_form[close[0]]} for {key!r}" if len(unknown) > 1 else by_form[close[0]])
    names = ", ".join(_shown(key) for key in shown) + (f" and {more} more" if more > 0 else "")
    takes = f"{tool} takes {', '.join(accepted)}" if accepted else f"{tool} takes no arguments"
    guess = f"; did you mean {' and '.join(guesses)}?" if guesses else "; leave it out" if len(unknown) == 1 else "; leave them out"
    return f"unknown argument{'s' * (len(unknown) > 1)} {names}: {takes}{guess}"


def _form(name: str) -> str:
    """An argument's name as compared for a suggestion: `Token-Budget` is `token_budget`."""
    return name.lower().replace("-", "_")


def with_bounds(tool: Tool, limits: Limits) -> Tool:
    """The tool with `maximum` set, in its input schema, on each argument whose upper bound is a setting."""
    bounded = [(argument, getattr(limits, field)) for (name, argument), (field, _) in SETTING_BOUNDS.items() if name == tool.name]
    if not bounded:
        return tool
    schema = copy.deepcopy(tool.input_schema)
    for argument, maximum in bounded:
        for option in _options(schema.get("properties", {}).get(argument, {})):
            if option.get("type") == "integer":
                option["maximum"] = maximum
    return tool.model_copy(update={"input_schema": schema})


def lean(tool: Tool) -> Tool:
    """The tool as a model reads it, without what costs tokens and tells nothing (`benchmarks/tool_surface.py`):
    pydantic's titles ("Token Budget" for `token_budget`), the `anyOf [..., null]` and `default: null` of an
    optional argument (leaving it out is how not to set it; null is still accepted), empty defaults, and the
    docstring's indentation in the description. Output schemas keep the shape a host validates results with
    (types, required fields, enums) and lose their prose and defaults: the README documents each field."""
    description = " ".join((tool.description or "").split()) or None
    output = tool.output_schema
    if output is not None:
        output = _untitled(_shallow(output) if tool.name in REPORTS else output, drop=("title", "description", "default"))
    return tool.model_copy(update={"description": description, "input_schema": _lean(tool.input_schema), "output_schema": output})


def _shallow(schema: dict[str, Any]) -> dict[str, Any]:
    """The top level of an output schema, each nested record only as an object (or a list or null of them)."""

    def top(prop: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in prop:
            return {"type": "object"}
        if "$ref" in prop.get("items", {}):
            return {**prop, "items": {"type": "object"}}
        if "anyOf" in prop:
            return {**prop, "anyOf": [top(option) for option in prop["anyOf"]]}
        return prop

    return {**{k: v for k, v in schema.items() if k != "$defs"}, "properties": {k: top(v) for k, v in schema["properties"].items()}}


def _lean(schema: dict[str, Any]) -> dict[str, Any]:
    node = _untitled(schema)
    for name, prop in list(node.get("properties", {}).items()):
        options = prop.get("anyOf")
        if options and prop.get("default", ...) is None and [o for o in options if o.get("type") == "null"]:
            [kept] = [o for o in options if o.get("type") != "null"] or [{}]
            prop = {**{k: v for k, v in prop.items() if k not in ("anyOf", "default")}, **kept}
        if prop.get("default", ...) in ([], None):
            prop = {k: v for k, v in prop.items() if k != "default"}
        node["properties"][name] = prop
    return node


def _untitled(schema: Any, drop: tuple[str, ...] = ("title",)) -> Any:
    """A copy of a JSON schema without the `drop` keywords (a property that has one of their names stays)."""
    if isinstance(schema, list):
        return [_untitled(item, drop) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copied = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            copied[key] = {name: _untitled(sub, drop) for name, sub in value.items()}
        else:
            copied[key] = _untitled(value, drop)
    return copied


def describe(error: ValidationError, tool: str, schema: Mapping[str, Any]) -> str:
    """One sentence for each argument that was wrong, joined; what to send is in each."""
    sentences = list(dict.fromkeys(_sentence(detail, tool, schema) for detail in error.errors(include_url=False)))
    return "; ".join(sentences)


def _sentence(detail: ErrorDetails, tool: str, schema: Mapping[str, Any]) -> str:
    loc = [str(part) for part in detail["loc"]]
    argument = loc[0] if loc else "arguments"
    where = argument + "".join(f"[{part}]" for part in loc[1:])
    prop = schema.get("properties", {}).get(argument, {})
    kind, value = detail["type"], detail.get("input")
    shown = f"{where}={_shown(value)}"
    if kind == "missing":
        hint = prop.get("description") or f"{tool} needs it"
        return f"{where} is missing: {hint}"
    if kind in _RANGE:
        return f"{shown} is out of range: {_bounds(prop, tool, argument)}"
    if kind in ("literal_error", "enum"):
        allowed = _allowed(prop)
        return f"{shown} is not one of {', '.join(allowed)}" if allowed else f"{shown} is not allowed: {detail['msg']}"
    if kind == "extra_forbidden":
        return f"{where} is not an argument of {tool}; leave it out"
    expected = next((words for prefix, words in _TYPES.items() if kind.startswith(prefix)), None)
    if expected is not None:
        return f"{shown} is not {expected}"
    message = detail["msg"]
    return f"{shown}: {message[:1].lower()}{message[1:]}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _options(prop: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The schema itself, or each alternative of an optional argument (`anyOf: [{...}, {"type": "null"}]`)."""
    return [prop, *prop.get("anyOf", [])]  # type: ignore[list-item]


def _bounds(prop: Mapping[str, Any], tool: str, argument: str) -> str:
    low = next((o["minimum"] for o in _options(prop) if "minimum" in o), None)
    high = next((o["maximum"] for o in _options(prop) if "maximum" in o), None)
    setting = SETTING_BOUNDS.get((tool, argument))
    source = f" ({setting[1]})" if setting else ""
    if low is not None and high is not None:
        return f"give {low} to {high}{source}"
    if low is not None:
        return f"give at least {low}"
    return f"give at most {high}{source}" if high is not None else "give a value in range"


def _allowed(prop: Mapping[str, Any]) -> list[str]:
    """The values an argument, or each item of a list argument, may take."""
    for option in _options(prop):
        for schema in (option, option.get("items", {})):
            if "enum" in schema:
                return [str(value) for value in schema["enum"]]
    return []
