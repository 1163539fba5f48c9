"""Which grammar and which tags queries parse each language.

A language's query is the upstream `queries/tags.scm` shipped in its grammar
wheel (when there is one), followed by this project's own
`queries/<name>-tags.scm` files (one per language, plus shared ones such as
`ecma` for JavaScript and TypeScript). Both use tree-sitter's tags convention
(`@definition.<kind>`, `@reference.<kind>`, `@name`, `@doc`) plus two captures
of ours, `@scope` (a container that is not a symbol itself, such as a Rust
`impl` block) and `@parent` (an explicit owner, such as a Go method's
receiver type). Where both files capture the same node, ours wins: its
patterns come later, and the extractor keeps the last pattern per node.
"""

from __future__ import annotations

import importlib
import importlib.resources
import threading
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...]
    module: str  # the grammar wheel's import name
    function: str = "language"  # its function returning the grammar
    upstream: tuple[str, ...] = ()  # grammar modules whose queries/tags.scm come first, in order
    separator: str = "."  # joins a qualified name: Class.method, Type::fn
    queries: tuple[str, ...] = ()  # our query files, in order; default: the language's own

    @property
    def own_queries(self) -> tuple[str, ...]:
        return self.queries or (self.name,)


LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", (".py", ".pyi"), "tree_sitter_python", upstream=("tree_sitter_python",)),
    LanguageSpec(
        "javascript",
        (".js", ".jsx", ".mjs", ".cjs"),
        "tree_sitter_javascript",
        upstream=("tree_sitter_javascript",),
        queries=("ecma", "javascript", "jsx"),
    ),
    LanguageSpec(
        "typescript",
        (".ts", ".mts", ".cts"),
        "tree_sitter_typescript",
        "language_typescript",
        upstream=("tree_sitter_javascript", "tree_sitter_typescript"),
        queries=("ecma", "typescript"),
    ),
    LanguageSpec(
        "tsx",
        (".tsx",),
        "tree_sitter_typescript",
        "language_tsx",
        upstream=("tree_sitter_javascript", "tree_sitter_typescript"),
        queries=("ecma", "typescript", "jsx"),
    ),
    LanguageSpec("go", (".go",), "tree_sitter_go", upstream=("tree_sitter_go",)),
    LanguageSpec("rust", (".rs",), "tree_sitter_rust", upstream=("tree_sitter_rust",), separator="::"),
    LanguageSpec("java", (".java",), "tree_sitter_java", upstream=("tree_sitter_java",)),
    LanguageSpec("c", (".c", ".h"), "tree_sitter_c", upstream=("tree_sitter_c",)),
    LanguageSpec(
        "cpp", (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++"), "tree_sitter_cpp", upstream=("tree_sitter_cpp",), separator="::"
    ),
    LanguageSpec("csharp", (".cs",), "tree_sitter_c_sharp"),
    # Ruby's upstream tags.scm relies on `#is-not? local`, which py-tree-sitter lacks: every local would become a call.
    LanguageSpec("ruby", (".rb", ".rake", ".gemspec"), "tree_sitter_ruby", separator="::"),
    LanguageSpec("php", (".php",), "tree_sitter_php", "language_php", upstream=("tree_sitter_php",), separator="::"),
    LanguageSpec("kotlin", (".kt", ".kts"), "tree_sitter_kotlin"),
    LanguageSpec("swift", (".swift",), "tree_sitter_swift", upstream=("tree_sitter_swift",)),
    LanguageSpec("scala", (".scala", ".sc"), "tree_sitter_scala", upstream=("tree_sitter_scala",)),
    LanguageSpec("bash", (".sh", ".bash"), "tree_sitter_bash"),
    LanguageSpec("lua", (".lua",), "tree_sitter_lua", upstream=("tree_sitter_lua",)),
)

BY_NAME = {spec.name: spec for spec in LANGUAGES}
BY_EXTENSION = {ext: spec for spec in LANGUAGES for ext in spec.extensions}


def language_for(path: str | PurePath) -> LanguageSpec | None:
    """The language of a file by its suffix (as `PurePath.suffix` reads it, without building a path: the walk asks per file)."""
    name = path.name if isinstance(path, PurePath) else path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return BY_EXTENSION.get(name[dot:].lower()) if 0 < dot < len(name) - 1 else None


def _upstream_tags(module: str) -> str:
    resource = importlib.resources.files(module) / "queries" / "tags.scm"
    return resource.read_text(encoding="utf-8") if resource.is_file() else ""


def own_tags(name: str) -> str:
    resource = importlib.resources.files("project_ledger.code") / "queries" / f"{name}-tags.scm"
    return resource.read_text(encoding="utf-8") if resource.is_file() else ""


class Grammar:
    """A loaded language: its tree-sitter `Language`, the combined tags query, and a parser per thread."""

    def __init__(self, spec: LanguageSpec) -> None:
        import tree_sitter

        self.spec = spec
        module = importlib.import_module(spec.module)
        self.language = tree_sitter.Language(getattr(module, spec.function)())
        source = "\n".join([*(_upstream_tags(m) for m in spec.upstream), *(own_tags(name) for name in spec.own_queries)])
        self.query = tree_sitter.Query(self.language, source)
        self._local = threading.local()

    @property
    def parser(self) -> Any:
        parser = getattr(self._local, "parser", None)
        if parser is None:
            import tree_sitter

            parser = self._local.parser = tree_sitter.Parser(self.language)
        return parser


class Grammars:
    """Grammars load on first use: importing all of them costs time a small project never needs."""

    def __init__(self) -> None:
        self._loaded: dict[str, Grammar] = {}
        self._lock = threading.Lock()

    def get(self, spec: LanguageSpec) -> Grammar:
        with self._lock:
            grammar = self._loaded.get(spec.name)
            if grammar is None:
                grammar = self._loaded[spec.name] = Grammar(spec)
            return grammar
