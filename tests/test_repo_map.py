"""The repo map's ranking, on plain records: no parsing involved."""

from __future__ import annotations

from project_ledger.code.repo_map import MapDefinition, MapUse, build_repo_map, rank_definitions


def definition(path: str, name: str, line: int = 1, parent: str = "") -> MapDefinition:
    return MapDefinition(path, name, "function", line, f"def {name}()", parent)


DEFINITIONS = [
    definition("core/store.py", "save_record"),
    definition("core/store.py", "load_record", 10),
    definition("util/text.py", "slugify"),
    definition("app/cli.py", "main"),
    definition("app/web.py", "handle_request"),
]
USES = [
    MapUse("app/cli.py", "save_record", 4),
    MapUse("app/web.py", "save_record", 2),
    MapUse("app/web.py", "load_record", 1),
    MapUse("app/cli.py", "slugify", 1),
]


def test_the_most_used_definitions_rank_first() -> None:
    ranked = [d.name for _, d in rank_definitions(DEFINITIONS, USES, set(), set())]
    assert ranked[0] == "save_record"
    assert ranked.index("load_record") < ranked.index("main")


def test_focus_on_a_name_or_file_pulls_it_up() -> None:
    by_name = [d.name for _, d in rank_definitions(DEFINITIONS, USES, set(), {"slugify"})]
    assert by_name[0] == "slugify"
    by_file = [d.path for _, d in rank_definitions(DEFINITIONS, USES, {"util/text.py"}, set())]
    assert by_file.index("util/text.py") < by_file.index("app/web.py")


def test_the_map_is_the_largest_ranked_prefix_that_fits() -> None:
    def count(text: str) -> int:
        return len(text.split())

    full = build_repo_map(DEFINITIONS, USES, 10_000, count)
    assert full.definitions == full.total_definitions == 5
    small = build_repo_map(DEFINITIONS, USES, 8, count)
    assert count(small.text) <= 8 < count(full.text)
    assert small.text.startswith("core/store.py:\n  1: def save_record()")
    assert build_repo_map(DEFINITIONS, USES, 1, count).definitions == 0


def test_nested_definitions_sit_under_their_parent_or_name_it() -> None:
    nested = [definition("m.py", "Store", 1), definition("m.py", "save", 3, parent="Store"), definition("n.py", "load", 5, parent="Cache")]
    text = build_repo_map(nested, [], 10_000, len).text
    assert "  3:   def save()" in text
    assert "  5: Cache: def load()" in text
