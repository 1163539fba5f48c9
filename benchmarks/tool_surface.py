"""What the tool list costs a client's context: tokens per tool, as a model reads them.

    python benchmarks/tool_surface.py            # prints the table
    python benchmarks/tool_surface.py --write    # also updates the README

Each tool is counted as the JSON of what a host puts in front of the model:
its name, description and input schema (`json.dumps` with default separators),
with tiktoken's cl100k_base (the project's `TokenCounter`). Output schemas
are counted apart: hosts validate results with them and some show them too.
The server is the one `project-ledger serve` builds, with default settings,
on an empty throwaway project, listed through the SDK's in-memory client.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import anyio
from mcp import Client
from mcp_types import Tool

import common
from project_ledger.config import Settings
from project_ledger.mcp.app import create_server
from project_ledger.text.tokens import TokenCounter

TARGET = 2000  # tokens for every tool's name, description and input schema together (issue 19)


async def listed_tools(root: Path) -> list[Tool]:
    settings = Settings(root=root, watch=False)
    async with Client(create_server(settings, root), mode="legacy") as client:
        return (await client.list_tools()).tools


def model_facing(tool: Tool) -> str:
    return json.dumps({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema})


def table(tools: list[Tool], tokens: TokenCounter) -> str:
    rows = [
        (
            tool.name,
            tokens.count(model_facing(tool)),
            len(tool.input_schema.get("properties", {})),
            tokens.count(json.dumps(tool.output_schema or {})),
        )
        for tool in tools
    ]
    lines = [
        "| tool | name, description, input schema | parameters | output schema |",
        "|---|---|---|---|",
        *(f"| `{name}` | {model:,} | {params} | {output:,} |" for name, model, params, output in rows),
        f"| **{len(rows)} tools** | **{sum(r[1] for r in rows):,}** (target ≤ {TARGET:,}) | {sum(r[2] for r in rows)} | "
        f"**{sum(r[3] for r in rows):,}** |",
    ]
    lines += ["", "Tokens of tiktoken's cl100k_base."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="Replace the README's tool_surface section.")
    args = parser.parse_args()
    loads = [common.load()]
    with tempfile.TemporaryDirectory(prefix="ledger-tools-") as folder:
        tools = anyio.run(listed_tools, Path(folder))
    body = table(tools, TokenCounter())
    common.publish("tool_surface", body, args.write, command="python benchmarks/tool_surface.py", loads=[*loads, common.load()])


if __name__ == "__main__":
    main()
