"""Secret redaction (`src/project_ledger/text/redaction.py`): fake secrets caught, false positives on real code and prose, and speed.

    python benchmarks/redaction.py            # prints the tables, then every corpus hit
    python benchmarks/redaction.py --write    # also updates the README

1. Fake secrets: every item of `tests/fixtures/secrets.json` (randomly generated
   secrets of the right shape inside realistic snippets). An item is caught when
   its secret is gone from the output and the output names its type. The
   fixture's `clean` list holds tricky non-secrets (digests, UUIDs, placeholders,
   `password = get_password()`); any change to one of them is a false positive.
2. Recall on a generated set: `tests/generated_secrets.py` with its fixed seed
   draws random secrets of 21 shapes (AWS secret keys, hex and base64 keys,
   chosen and generated passwords, `whsec_`, Stripe, Slack, Twilio, Azure,
   Google, JWTs, ...) and writes each in 25 phrasings, plus private keys in 3;
   a secret is caught when no 8 characters of it are left. Its lookalikes
   (commits, digests, UUIDs, key ids, public keys, base64 of words, next to a
   secret's name) must come back unchanged.
3. False positives per memory on three corpora that hold no secret: this
   project's benchmark conversation (each turn and recorded memory), LoCoMo dev
   (`../shared/data/locomo-dev.json`, each turn with its image caption; evaluation
   data, read in place), and code: every UTF-8 text file in the dev venv's
   site-packages (mcp, pydantic, qdrant_client, numpy, cryptography, PyJWT,
   huggingface_hub, rich, click, hypothesis, ... everything installed) cut into
   memories of 40 lines, plus this repo's `src/` and README. Every redaction
   there is a false positive unless the text deliberately shows a fake secret;
   every hit is printed after the tables, with its file and line, for a reader to
   judge. Left out: the entries of `EXCLUDED`, with the reason.
4. Speed: `redact()` per corpus file of at least 1 KB, as microseconds per KB
   (median over files), and per 500-byte memory (median over 500-byte slices of
   the conversation turns, each the best of 5 calls).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import common
from project_ledger.text.redaction import TYPES, redact

sys.path.insert(0, str(common.REPO))
from tests.generated_secrets import SEED, by, generate, leaked, lookalikes  # noqa: E402

REPO = common.REPO
FIXTURE = REPO / "tests" / "fixtures" / "secrets.json"
CONVERSATION = common.DATA / "project_conversation.json"
MEMORY_LINES = 40  # a code file is cut into memories of this many lines
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
# Top-level site-packages entries left out of the corpus (a name prefix, so dist-info folders go too), and why.
EXCLUDED = {
    "detect_secrets": "detect-secrets, when installed: a secret scanner, made of secret patterns and sample keys",
    "__editable__": "this project's own install hook",
}
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt", ".json", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".html", ".js", ".css", ".csv"}
SNIPPET = 60  # characters shown either side of a hit
MARKER = re.compile(r"\[REDACTED:(\w+)\]")


@dataclass(frozen=True)
class Document:
    group: str  # what kind of text: library code, this repo, prose
    name: str
    text: str


@dataclass(frozen=True)
class Hit:
    document: Document
    line: int
    kind: str
    context: str


def library_documents() -> Iterator[Document]:
    for path in sorted(SITE_PACKAGES.rglob("*")):
        relative = path.relative_to(SITE_PACKAGES).as_posix()
        if path.suffix not in TEXT_SUFFIXES or "__pycache__" in path.parts or relative.startswith(tuple(EXCLUDED)) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        yield Document("library code", relative, text)


def repo_documents() -> Iterator[Document]:
    for path in sorted((REPO / "src").rglob("*.py")):
        yield Document("this repo's code", path.relative_to(REPO).as_posix(), path.read_text(encoding="utf-8"))
    yield Document("prose", "README.md", (REPO / "README.md").read_text(encoding="utf-8"))
    for session in json.loads(CONVERSATION.read_text())["sessions"]:
        for turn in session["turns"]:
            yield Document("prose", f"{CONVERSATION.name}#{turn['id']}", turn["text"])


def conversation_memories() -> list[str]:
    data = json.loads(CONVERSATION.read_text())
    return [turn["text"] for session in data["sessions"] for turn in session["turns"]] + [m["text"] for m in data["memories"]]


def locomo_memories(path: Path) -> list[str]:
    """Each LoCoMo turn as it would be stored: its text, and the caption of an image it shares."""
    memories = []
    for conversation in json.loads(path.read_text()):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                memories += [t["text"] + (f" (shares {t['blip_caption']})" if t.get("blip_caption") else "") for t in session]
    return memories


def code_memories(documents: list[Document]) -> list[str]:
    memories = []
    for document in documents:
        if document.group != "prose":
            lines = document.text.splitlines(keepends=True)
            memories += ["".join(lines[i : i + MEMORY_LINES]) for i in range(0, len(lines), MEMORY_LINES)]
    return memories


def changed(memories: list[str]) -> tuple[int, Counter[str]]:
    kinds: Counter[str] = Counter()
    n = 0
    for memory in memories:
        found = redact(memory).found
        n += bool(found)
        kinds.update(found)
    return n, kinds


def generated_rows() -> tuple[list[str], list[str], int, int, int, int]:
    """Caught per shape and per phrasing, the totals, and how many lookalikes were changed."""
    cases = generate(SEED)
    caught = {id(case): not leaked(case.secret, redact(case.text).text) for case in cases}

    def row(name: str, group: list) -> str:
        return f"`{name}` {sum(caught[id(c)] for c in group)}/{len(group)}"

    shapes = [row(name, group) for name, group in by(cases, "shape")]
    phrasings = [row(name, group) for name, group in by(cases, "phrasing")]
    others = lookalikes(SEED)
    return shapes, phrasings, sum(caught.values()), len(cases), sum(redact(c.text).text != c.text for c in others), len(others)


def hits_in(document: Document) -> list[Hit]:
    """Each secret `redact` replaced in the document, found by matching the output's pieces between markers against the input."""
    result = redact(document.text)
    if not result.count:
        return []
    kept = MARKER.split(result.text)  # the text between markers, and each marker's type
    pieces, kinds = kept[::2], kept[1::2]
    pattern = "(.+?)".join(re.escape(piece) for piece in pieces)
    match = re.fullmatch(pattern, document.text, re.S)
    assert match, f"{document.name}: the output does not line up with the input"
    hits = []
    for index, kind in enumerate(kinds, start=1):
        begin, end = match.span(index)
        if MARKER.fullmatch(document.text[begin:end]):  # a marker the text already held
            continue
        line = document.text.count("\n", 0, begin) + 1
        context = document.text[max(0, begin - SNIPPET) : end + SNIPPET]
        hits.append(Hit(document, line, kind, " ".join(context.split())))
    return hits


def fixture_rows(fixture: dict) -> tuple[list[str], int, int]:
    caught, total = Counter[str](), Counter[str]()
    for item in fixture["secrets"]:
        result = redact(item["text"])
        total[item["type"]] += 1
        caught[item["type"]] += item["secret"] not in result.text and item["type"] in result.found
    rows = [f"| `{kind}` | {caught[kind]} / {total[kind]} |" for kind in TYPES]
    false_positives = sum(redact(text).text != text for text in fixture["clean"])
    return rows, false_positives, len(fixture["clean"])


def microseconds(text: str) -> float:
    began = time.perf_counter_ns()
    redact(text)
    return (time.perf_counter_ns() - began) / 1000


def speed(documents: list[Document]) -> tuple[float, float]:
    """Median µs per KB over documents of 1 KB or more, and median µs per 500-byte slice of the conversation."""
    sizes = {document.name: len(document.text.encode()) / 1024 for document in documents}
    per_kb = [microseconds(d.text) / sizes[d.name] for d in documents if sizes[d.name] >= 1]
    turns = "\n".join(d.text for d in documents if d.name.startswith(CONVERSATION.name))
    memories = [turns[i : i + 500] for i in range(0, len(turns) - 500, 500)]
    per_memory = [min(microseconds(memory) for _ in range(5)) for memory in memories]
    return statistics.median(per_kb), statistics.median(per_memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the tables into README.md")
    parser.add_argument("--locomo", type=Path, default=common.LOCOMO_DEV, help="LoCoMo dev (evaluation data, never committed)")
    args = parser.parse_args()
    loads = [common.load()]
    started = time.perf_counter()
    rows, clean_fp, clean_total = fixture_rows(json.loads(FIXTURE.read_text()))
    shapes, phrasings, caught, generated, lookalikes_changed, lookalikes_total = generated_rows()

    documents = [*library_documents(), *repo_documents()]
    hits = [hit for document in documents for hit in hits_in(document)]
    groups = ("library code", "this repo's code", "prose")
    size = {g: sum(len(d.text.encode()) for d in documents if d.group == g) / 1e6 for g in groups}
    files = Counter(d.group for d in documents)
    by_group = {g: Counter(h.kind for h in hits if h.document.group == g) for g in groups}
    corpora = {
        "this project's conversation (turns and memories)": conversation_memories(),
        f"LoCoMo dev ({args.locomo.name}, turns)": locomo_memories(args.locomo),
        f"code (site-packages and `src/`, {MEMORY_LINES}-line memories)": code_memories(documents),
    }
    rates = {name: changed(memories) for name, memories in corpora.items()}
    per_kb, per_memory = speed(documents)
    packages = len({d.name.split("/")[0] for d in documents if d.group == "library code" and "/" in d.name and ".dist-info" not in d.name})
    turns = sum(d.name.startswith(CONVERSATION.name) for d in documents)
    seconds = time.perf_counter() - started

    def found(counts: Counter[str]) -> str:
        return ", ".join(f"{n} {kind}" for kind, n in counts.most_common()) or "none"

    text = "\n".join(
        [
            f"Fake secrets caught ({FIXTURE.relative_to(REPO)}: random secrets of the right shape in realistic snippets):",
            "",
            "| type | caught |",
            "|---|---|",
            *rows,
            "",
            f"Tricky non-secrets in the same file (digests, UUIDs, placeholders, `password = get_password()`, ...): "
            f"{clean_fp} of {clean_total} changed.",
            "",
            f"Generated secrets (`tests/generated_secrets.py`, seed {SEED}): **{caught} of {generated} caught "
            f"({caught / generated:.3f})**, {lookalikes_changed} of {lookalikes_total} lookalikes changed.",
            "",
            "- by shape: " + ", ".join(shapes),
            "- by phrasing: " + ", ".join(phrasings),
            "",
            "False positives per memory, on text that holds no secret:",
            "",
            "| corpus | memories | changed | rate | redactions |",
            "|---|---|---|---|---|",
            *(
                f"| {name} | {len(corpora[name]):,} | {n} | {n / len(corpora[name]):.3%} | {found(kinds)} |"
                for name, (n, kinds) in rates.items()
            ),
            "",
            "The same code and prose as whole files:",
            "",
            "| corpus | files | MB | redactions |",
            "|---|---|---|---|",
            *(f"| {g} | {files[g]:,} | {size[g]:.1f} | {found(by_group[g])} |" for g in groups),
            "",
            f"Library code: every text file in the dev venv's site-packages ({packages} top-level packages: mcp, pydantic, "
            "qdrant_client, numpy, cryptography, PyJWT, huggingface_hub, rich, ...) except "
            + "; ".join(f"`{name}` ({why})" for name, why in EXCLUDED.items())
            + f". Prose: the README and the {turns} turns of the benchmark conversation. Every hit is printed, with its file "
            "and line, below the tables by `python benchmarks/redaction.py`.",
            "",
            f"Speed: {per_kb:.0f} µs per KB (median over corpus files of 1 KB or more), "
            f"{per_memory:.0f} µs for a 500-byte memory (median).",
            "",
            f"{seconds:.0f} s.",
        ]
    )
    common.publish("redaction", text, args.write, command="python benchmarks/redaction.py", loads=[*loads, common.load()])
    print(f"\nEvery corpus hit ({len(hits)}):")
    for hit in hits:
        print(f"  [{hit.kind}] {hit.document.name}:{hit.line}: {hit.context}")


if __name__ == "__main__":
    main()
