"""A repository outline that fits a token budget: the most referenced definitions, ranked by PageRank.

Files are nodes; each use of a name defined elsewhere is an edge from the
using file to the defining file, weighted as Aider's repo map weighs them
(names the caller focused on and long, specific identifiers count more;
private names and names defined in many files count less; repeated uses count
by their square root). PageRank, personalised toward the focus, ranks the
files, and each file's rank flows along its edges onto the definitions it
uses. The outline then keeps as many of the best definitions as fit. The
weights are in `search/tuning.py`.

Pure: no parsing and no I/O, so it is tested on plain tuples.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from project_ledger.search.tuning import REPO_MAP

_SPECIFIC = re.compile(r"[a-z][A-Z]|_[a-zA-Z]")
_DUNDER = re.compile(r"^__\w+__$")
MAX_SIGNATURE_CHARS = 100  # of a definition's line in the map; find_symbol gives the whole signature


@dataclass(frozen=True)
class MapDefinition:
    path: str
    name: str
    kind: str
    line: int
    signature: str
    parent: str = ""


@dataclass(frozen=True)
class MapUse:
    path: str  # the file using the name
    name: str
    count: int


@dataclass(frozen=True)
class RepoMap:
    text: str
    tokens: int
    definitions: int  # shown
    files: int  # shown
    total_definitions: int


def _weight(name: str, defining_files: int, focus_names: AbstractSet[str]) -> float:
    weight = 1.0
    if name in focus_names:
        weight *= REPO_MAP.focus_name
    if len(name) >= REPO_MAP.specific_min_chars and _SPECIFIC.search(name):
        weight *= REPO_MAP.specific_name
    if name.startswith("_"):
        weight *= REPO_MAP.private_name
    if defining_files > REPO_MAP.common_files:
        weight *= REPO_MAP.common_name
    return weight


def pagerank(edges: dict[str, dict[str, float]], nodes: Iterable[str], personal: dict[str, float]) -> dict[str, float]:
    """Weighted PageRank by power iteration; dangling files and the teleport follow `personal` (uniform if empty)."""
    nodes = list(nodes)
    if not nodes:
        return {}
    total = sum(personal.values())
    base = {n: personal.get(n, 0.0) / total for n in nodes} if total > 0 else {n: 1.0 / len(nodes) for n in nodes}
    rank = dict(base)
    out_weight = {n: sum(targets.values()) for n, targets in edges.items()}
    damping = REPO_MAP.damping
    for _ in range(REPO_MAP.iterations):
        dangling = sum(rank[n] for n in nodes if not out_weight.get(n))
        nxt = {n: (1 - damping) * base[n] + damping * dangling * base[n] for n in nodes}
        for source, targets in edges.items():
            share = damping * rank[source] / out_weight[source]
            for target, weight in targets.items():
                nxt[target] += share * weight
        rank = nxt
    return rank


def rank_definitions(
    definitions: list[MapDefinition], uses: list[MapUse], focus_files: AbstractSet[str], focus_names: AbstractSet[str]
) -> list[tuple[float, MapDefinition]]:
    """Every definition with a score, best first; unreferenced ones follow, by their file's rank."""
    defined_in: dict[str, set[str]] = defaultdict(set)
    for d in definitions:
        if not _DUNDER.match(d.name):  # protocol methods (__init__, __str__) are not places anyone navigates to
            defined_in[d.name].add(d.path)
    edges: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    flows: dict[str, list[tuple[str, str, float]]] = defaultdict(list)  # user file -> (defining file, name, weight)
    for use in uses:
        targets = defined_in.get(use.name)
        if not targets:
            continue
        weight = _weight(use.name, len(targets), focus_names) * math.sqrt(use.count)
        for target in targets:
            if target != use.path:
                edges[use.path][target] += weight
                flows[use.path].append((target, use.name, weight))
    files = {d.path for d in definitions} | {u.path for u in uses}
    in_focus = {f for f in files if f in focus_files or any(f.startswith(p.rstrip("/") + "/") for p in focus_files)}
    personal = dict.fromkeys(in_focus, 1.0)
    for name in focus_names:
        for path in defined_in.get(name, ()):
            personal[path] = personal.get(path, 0.0) + 1.0
    rank = pagerank(edges, files, personal)
    name_score: dict[tuple[str, str], float] = defaultdict(float)
    for source, items in flows.items():
        total = sum(weight for _, _, weight in items)
        for target, name, weight in items:
            name_score[(target, name)] += rank[source] * weight / total
    used = _with_members(definitions, name_score)
    scored = []
    for d in definitions:
        score = used.get((d.path, _qualname(d)), 0.0)
        if d.name in focus_names:
            score += REPO_MAP.focus_name_bonus
        elif d.path in in_focus:
            score += REPO_MAP.focus_nested_bonus if d.parent else REPO_MAP.focus_file_bonus  # its outline, top-level first
        scored.append((score, rank.get(d.path, 0.0), d))
    scored.sort(key=lambda item: (-item[0], -item[1], item[2].path, item[2].line))
    return [(score, d) for score, _, d in scored]


def _qualname(d: MapDefinition) -> str:
    return f"{d.parent.replace('::', '.')}.{d.name}" if d.parent else d.name


def _with_members(definitions: list[MapDefinition], name_score: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """Each definition's share of the uses of its name in its file, plus its members' (deepest first): a use of
    `Client.get` is a use of `Client`'s API, so the class ranks at least as high as its best method and its line comes
    first, instead of the methods alone, each under its parent's name."""
    namesakes = Counter((d.path, d.name) for d in definitions)  # eleven `decode` methods of one file share its uses
    score = {(d.path, _qualname(d)): name_score.get((d.path, d.name), 0.0) / namesakes[(d.path, d.name)] for d in definitions}
    for d in sorted(definitions, key=lambda d: -_qualname(d).count(".")):
        if d.parent and (parent := (d.path, d.parent.replace("::", "."))) in score:
            score[parent] += score[(d.path, _qualname(d))]
    return score


def render(chosen: list[MapDefinition]) -> str:
    """Files in order of their best definition; each file's definitions in line order."""
    order: dict[str, list[MapDefinition]] = {}
    for d in chosen:
        order.setdefault(d.path, []).append(d)
    blocks = []
    for path, items in order.items():
        shown = {d.name for d in items}
        lines = [f"{path}:"]
        for d in sorted(items, key=lambda d: d.line):
            text = d.signature or f"{d.kind} {d.name}"
            if len(text) > MAX_SIGNATURE_CHARS:  # a long parameter list says little in an outline, and crowds others out
                text = text[: MAX_SIGNATURE_CHARS - 1].rstrip() + "…"
            if d.parent:  # nested: indent under its parent, or name the parent when it is not shown
                owner = d.parent.replace("::", ".").rsplit(".", 1)[-1]
                text = f"  {text}" if owner in shown else f"{d.parent}: {text}"
            lines.append(f"  {d.line}: {text}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def build_repo_map(
    definitions: list[MapDefinition],
    uses: list[MapUse],
    budget: int,
    count_tokens: Callable[[str], int],
    *,
    focus_files: AbstractSet[str] = frozenset(),
    focus_names: AbstractSet[str] = frozenset(),
) -> RepoMap:
    """The largest prefix of the ranking whose rendering fits `budget` tokens (binary search)."""
    ranked = [d for _, d in rank_definitions(definitions, uses, focus_files, focus_names)]
    low, high, best = 0, len(ranked), ("", 0, 0)
    while low <= high:
        middle = (low + high) // 2
        text = render(ranked[:middle])
        tokens = count_tokens(text)
        if tokens <= budget:
            best = (text, tokens, middle)
            low = middle + 1
        else:
            high = middle - 1
    text, tokens, shown = best
    return RepoMap(text, tokens, shown, len({d.path for d in ranked[:shown]}), len(ranked))
