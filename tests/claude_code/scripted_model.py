"""A scripted stand-in for the Anthropic Messages API, so that the real Claude Code CLI runs whole sessions offline.

Written from the API's public reference:
- `POST /v1/messages` answers a `message` object (`id`, `type`, `role`, `model`, `content` blocks, `stop_reason`,
  `usage`), or, when the request sets `"stream": true`, the same message as server-sent events: `message_start`,
  then per block `content_block_start`, `content_block_delta` (`text_delta` or `input_json_delta`) and
  `content_block_stop`, then `message_delta` (the stop reason and output tokens) and `message_stop`;
- `POST /v1/messages/count_tokens` answers `{"input_tokens": n}`;
- the list endpoints (`GET /v1/models`, ...) answer an empty page.

The model's turns come from a script, a list of `{"text": ...}` or `{"tool": name, "input": {...}}`, handed out in
order to the requests of the conversation: those that offer tools. The CLI's side requests (a session title, a
quota check; they offer none) get a short text and leave the script alone, and so does a request to summarize the
conversation for a compaction, which gets a summary. Once the script is used up, each request gets "Done.". A turn
may carry `"input_tokens"`: the usage it reports, which is how a test makes the CLI believe its context is full.
Every request is kept, with its path and body, so that a test can assert what the model was handed.

    python tests/claude_code/scripted_model.py --script turns.json --log requests.jsonl   # prints its port
"""

from __future__ import annotations

import argparse
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DONE = {"text": "Done."}
SIDE_ANSWER = "Ledger session"  # a title or a one-line answer for the CLI's own requests
# What the CLI asks a compaction's summary to look like: an analysis, then the summary (2.1.332).
SUMMARY = "<analysis>A short scripted session.</analysis>\n<summary>The user and the assistant worked on the project; nothing is pending.</summary>"
COMPACT_CUE = "detailed summary of the conversation"  # how the CLI words that request


class ScriptedModel:
    """The stand-in's state: the script, and every request received. Thread-safe: the CLI sends requests in parallel."""

    def __init__(self, log: Path | None = None) -> None:
        self._turns: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._log = log
        self._server: ThreadingHTTPServer | None = None

    # -- the script and what was asked -------------------------------------------------

    def script(self, turns: list[dict[str, Any]]) -> None:
        """The next turns of the conversation, replacing any left over."""
        with self._lock:
            self._turns = [dict(turn) for turn in turns]

    def conversation(self) -> list[dict[str, Any]]:
        """The bodies of the conversation's requests (those that offered tools), in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0] == "/v1/messages" and r["body"].get("tools")]

    def compactions(self) -> list[dict[str, Any]]:
        """The bodies of the requests that asked for a summary to compact the conversation."""
        with self._lock:
            return [r["body"] for r in self.requests if r.get("compaction")]

    def _record(self, path: str, body: dict[str, Any], compaction: bool) -> None:
        entry = {"path": path, "body": body, "compaction": compaction}
        with self._lock:
            self.requests.append(entry)
            if self._log is not None:
                with self._log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(entry) + "\n")

    def _answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The turn that answers `body`, and whether it was a compaction's summary request."""
        if asks_for_summary(body):
            return {"text": SUMMARY}, True
        if not body.get("tools"):
            return {"text": SIDE_ANSWER}, False
        with self._lock:
            turn = self._turns.pop(0) if self._turns else DONE
        offered = {tool.get("name") for tool in body["tools"] if isinstance(tool, dict)}
        if "tool" in turn and turn["tool"] not in offered:  # said in the conversation, so a test sees why it stalled
            return {"text": f"(scripted: the tool {turn['tool']} was not offered; offered: {sorted(map(str, offered))})"}, False
        return turn, False

    # -- the HTTP server ---------------------------------------------------------------

    def start(self) -> str:
        """Listen on a free local port; returns the base URL to hand the CLI (ANTHROPIC_BASE_URL)."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="scripted-model", daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def asks_for_summary(body: dict[str, Any]) -> bool:
    """Whether the request's last user message asks for the conversation's summary (the CLI's compaction)."""
    messages = body.get("messages") or []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if last.get("role") != "user":
        return False
    text = " ".join(texts(last.get("content"))).lower()
    return COMPACT_CUE in text


def texts(content: Any) -> Iterator[str]:
    """The text of a message's content: a string, or its text blocks (tool results' text included)."""
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            yield block["text"]
        elif block.get("type") == "tool_result":
            yield from texts(block.get("content"))


def blocks(turn: dict[str, Any]) -> list[dict[str, Any]]:
    if "tool" in turn:
        return [
            {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": turn["tool"], "input": turn.get("input", {})}
        ]
    return [{"type": "text", "text": turn["text"]}]


def usage(turn: dict[str, Any], body: dict[str, Any]) -> dict[str, int]:
    estimate = len(json.dumps(body)) // 4  # about what a tokenizer makes of JSON-heavy text
    return {
        "input_tokens": int(turn.get("input_tokens", estimate)),
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The server-sent events that stream `message`."""
    content, final_usage = message["content"], message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**final_usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(content):
        empty: dict[str, Any]
        if block["type"] == "text":
            empty, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": final_usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the request log is the record

        def send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.send_json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            path = self.path
            if path.split("?")[0].endswith("/count_tokens"):
                model._record(path, body, False)
                return self.send_json(200, {"input_tokens": len(json.dumps(body)) // 4})
            if path.split("?")[0] != "/v1/messages":
                model._record(path, body, False)
                return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no {path} here"}})
            turn, compaction = model._answer(body)
            model._record(path, body, compaction)
            message = {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude-sonnet-4-5"),
                "content": blocks(turn),
                "stop_reason": "tool_use" if "tool" in turn else "end_turn",
                "stop_sequence": None,
                "usage": usage(turn, body),
            }
            if not body.get("stream"):
                return self.send_json(200, message)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for name, data in events(message):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--script", type=Path, required=True, help="a JSON list of the model's turns")
    parser.add_argument("--log", type=Path, required=True, help="each request appended as one JSON line")
    args = parser.parse_args()
    model = ScriptedModel(args.log)
    model.script(json.loads(args.script.read_text()))
    url = model.start()
    print(url.rsplit(":", 1)[1], flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
