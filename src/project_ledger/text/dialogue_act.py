"""What a turn does in the conversation: states something, asks, acknowledges, or logs a tool call.

A real session's turns are mostly not answers. The user asks for a decision back ("Remind me, what is our retry
policy?"), says "ok" or "Same as before.", and the agent's tool calls are stored as log lines (`[tool] Bash:
pytest -q`). Such a turn shares the words of what it asks about, so BM25 and meaning alike rank it next to, or
above, the turn or memory that answers. Each act is a signal recall's ranking weighs (`memory/ranking.SIGNALS`):
only a statement answers. A statement that ends by asking is a signal too (`ends_asking`): "That road trip sounds
great! Where did you go?" holds the words of what is answered next, by someone else. Pure and linear: a few string
checks per sentence, no model.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

Act = Literal["statement", "question", "acknowledgement", "log", "plumbing"]

TOOL_PREFIX = "[tool] "  # how a tool call is stored (`memory.transcript.tool_line`)
# Calls that only move the client's own machinery: loading deferred tools, the agent's scratch list, polling a
# shell, and the ledger's own tools (what they stored is in the ledger already; what they found is an echo).
PLUMBING_TOOLS = frozenset(
    {"ToolSearch", "TodoWrite", "BashOutput", "KillShell", "KillBash", "ExitPlanMode", "ListMcpResourcesTool", "ReadMcpResourceTool"}
)
MAX_ACK_WORDS = 8
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_CLOSING = re.compile(r"[^.!?\n]*([.!?]*)")  # the rest of a sentence after a position in it, and its closing marks
_WORD = re.compile(r"[a-z']+")
# Words that make up an acknowledgement: "ok", "thanks!", "sounds good", "Same as before.", "yes, go ahead".
_ACK_WORDS = frozenset(
    [
        "ok", "okay", "k", "thanks", "thank", "you", "thx", "ty", "great", "good", "perfect", "nice", "cool", "fine",
        "sure", "yes", "yep", "yeah", "yup", "no", "nope", "alright", "right", "sounds", "looks", "lgtm", "got", "it",
        "go", "ahead", "do", "that", "please", "same", "as", "before", "again", "agreed", "done", "awesome", "excellent",
        "exactly", "correct", "true", "understood", "noted", "makes", "sense", "works", "for", "me", "let's", "proceed",
        "continue", "carry", "on", "the", "one",
    ]
)
# The agent's report that it stored something says no more than an "ok" ("Recorded as a definition.", "Saved that to
# the ledger."): what it stored is in the ledger already, and the report would come back before it.
_REPORT_WORDS = frozenset(
    [
        "recorded", "stored", "saved", "remembered", "written", "wrote", "down", "pinned", "i", "i've", "have", "has",
        "been", "it", "that", "this", "as", "a", "an", "to", "in", "into", "the", "ledger", "memory", "decision",
        "definition", "constraint", "rule", "note",
    ]
)
_CONTENTLESS = _ACK_WORDS | _REPORT_WORDS
# A sentence that asks for something back even without a question mark: "Remind me what we chose for retries."
# Only requests: "When the queue is full, we drop events." starts like a question and states a rule, and "Use
# Postgres 16" states a decision; "Pick something sensible." asks for one.
_ASKING = re.compile(
    r"^(?:(?:can|could|would) you |please )?(?:remind me|tell me|recall|look up|find out|do you remember|pick|choose|suggest"
    r"|propose|recommend)\b"
)


def tool_name(line: str) -> str:
    """The tool of a stored tool line: `[tool] Bash: pytest -q` -> `Bash`."""
    return line[len(TOOL_PREFIX) :].split(":", 1)[0].strip()


def is_plumbing(name: str) -> bool:
    """Whether a tool call is the client's machinery or the ledger's own, and not worth a line of the record."""
    if name in PLUMBING_TOOLS:
        return True
    parts = name.split("__")
    return len(parts) >= 3 and parts[0] == "mcp" and "ledger" in parts[1].lower()


@functools.lru_cache(maxsize=4096)  # ranked again and again: the same candidates come back for every question of a topic
def dialogue_act(text: str) -> Act:
    """The act of a stored turn (or memory): `log` when every line is a tool call (`plumbing` when every one is
    plumbing), `acknowledgement` for a short text of only agreeing words (or of reporting that something was
    stored), `question` when every sentence asks, else `statement`."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and all(line.startswith(TOOL_PREFIX) for line in lines):
        return "plumbing" if all(is_plumbing(tool_name(line)) for line in lines) else "log"
    words = _WORD.findall(text.lower())
    if words and len(words) <= MAX_ACK_WORDS and all(word.strip("'") in _CONTENTLESS for word in words):
        return "acknowledgement"
    sentences = [s.strip() for s in _SENTENCE.findall(" ".join(lines)) if any(c.isalnum() for c in s)]
    if sentences and all(s.endswith("?") or _ASKING.match(s.lower().lstrip("\"'(`")) for s in sentences):
        return "question"
    return "statement"


@functools.lru_cache(maxsize=4096)
def ends_asking(text: str) -> bool:
    """Whether the last sentence (with a letter or digit) asks: the speaker hands the floor over, and what it asks
    about is answered next. Read back from the last letter or digit, so only the text's tail is scanned."""
    last = next((i for i in range(len(text) - 1, -1, -1) if text[i].isalnum()), None)
    if last is None:
        return False
    found = _CLOSING.match(text, last + 1)
    return found is not None and "?" in found.group(1)
