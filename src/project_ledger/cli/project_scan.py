"""What `init` can tell about a project from its files: package managers, the test command, the top-level
layout, what its manifests say (`cli/manifests.py`), and from that a first `project_context.md` for the developer to
finish.

Only manifest and lock files at the root are read; nothing is executed.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from project_ledger.cli.manifests import Manifest, read_manifests
from project_ledger.code.source_files import SKIPPED_DIRS
from project_ledger.memory.project_context import DRAFT_PROMPTS

# A lock or manifest file at the root, and the package manager it means; the first match per ecosystem wins.
PACKAGE_MANAGERS: tuple[tuple[str, str, str], ...] = (
    ("python", "uv.lock", "uv"),
    ("python", "poetry.lock", "poetry"),
    ("python", "pdm.lock", "pdm"),
    ("python", "Pipfile.lock", "pipenv"),
    ("python", "pyproject.toml", "pip"),
    ("python", "requirements.txt", "pip"),
    ("javascript", "pnpm-lock.yaml", "pnpm"),
    ("javascript", "yarn.lock", "yarn"),
    ("javascript", "bun.lockb", "bun"),
    ("javascript", "bun.lock", "bun"),
    ("javascript", "package.json", "npm"),
    ("rust", "Cargo.toml", "cargo"),
    ("go", "go.mod", "go modules"),
    ("java", "pom.xml", "maven"),
    ("java", "build.gradle", "gradle"),
    ("java", "build.gradle.kts", "gradle"),
    ("ruby", "Gemfile", "bundler"),
    ("php", "composer.json", "composer"),
)


# How each Python package manager runs a tool installed in the project's environment.
PYTHON_RUNNERS = {"uv": "uv run ", "poetry": "poetry run ", "pdm": "pdm run ", "pipenv": "pipenv run "}


@dataclass
class ProjectFacts:
    languages: dict[str, int] = field(default_factory=dict)
    package_managers: list[str] = field(default_factory=list)
    test_command: str | None = None
    layout: list[str] = field(default_factory=list)
    manifest: Manifest = field(default_factory=Manifest)


def scan_project(root: Path, languages: dict[str, int]) -> ProjectFacts:
    """The facts about `root`; `languages` (files per language) comes from the code index."""
    ecosystems: dict[str, str] = {}
    for ecosystem, marker, manager in PACKAGE_MANAGERS:
        if ecosystem not in ecosystems and (root / marker).is_file():
            ecosystems[ecosystem] = manager
    return ProjectFacts(
        languages=dict(sorted(languages.items(), key=lambda kv: -kv[1])),
        package_managers=list(ecosystems.values()),
        test_command=test_command(root, ecosystems),
        layout=top_level(root),
        manifest=read_manifests(root, PYTHON_RUNNERS.get(ecosystems.get("python", ""), "")),
    )


def test_command(root: Path, ecosystems: dict[str, str]) -> str | None:
    """The command that runs the project's tests, when a manifest says or a convention makes it plain."""
    scripts = _package_scripts(root / "package.json")
    if "test" in scripts and "no test specified" not in scripts["test"]:
        return f"{ecosystems.get('javascript', 'npm')} test"
    if "python" in ecosystems and _uses_pytest(root):
        return f"{PYTHON_RUNNERS.get(ecosystems['python'], '')}pytest"
    return {
        "cargo": "cargo test",
        "go modules": "go test ./...",
        "maven": "mvn test",
        "gradle": "./gradlew test" if (root / "gradlew").exists() else "gradle test",
        "bundler": "bundle exec rspec" if (root / "spec").is_dir() else "bundle exec rake test",
        "composer": "vendor/bin/phpunit",
    }.get(next((m for m in ecosystems.values() if m not in ("pip", "npm")), ""))


def _package_scripts(path: Path) -> dict[str, str]:
    try:
        scripts = json.loads(path.read_text(encoding="utf-8")).get("scripts", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in scripts.items() if isinstance(v, str)} if isinstance(scripts, dict) else {}


def _uses_pytest(root: Path) -> bool:
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file() or (root / "tests" / "conftest.py").is_file():
        return True
    try:
        pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pyproject = {}
    if "pytest" in pyproject.get("tool", {}):
        return True
    return (root / "tests").is_dir() or (root / "test").is_dir()


def top_level(root: Path) -> list[str]:
    """The root's visible directories, tool and vendored ones left out, as `name/`."""
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [f"{p.name}/" for p in entries if p.is_dir() and not p.name.startswith(".") and p.name not in SKIPPED_DIRS]


def draft_context(root: Path, facts: ProjectFacts) -> str:
    """A first `project_context.md`: what was detected, filled in; what only people know, left as prompts."""
    languages = ", ".join(f"{name} ({n} file{'s' * (n != 1)})" for name, n in facts.languages.items()) or "none detected"
    managers = ", ".join(facts.package_managers) or "none detected"
    tests = f"`{facts.test_command}`" if facts.test_command else "`...` (none detected)"
    layout = "\n".join(f"- `{entry}`: ..." for entry in facts.layout[:25]) or "- ..."
    manifest = facts.manifest
    about = f"{manifest.description}\n\n" if manifest.description else ""
    versions = "".join(f"\n- {version}" for version in manifest.versions)
    run = f"`{manifest.run}`" if manifest.run else "`...`"
    checks = ", ".join(f"`{command}`" for command in manifest.checks) or "`...`"
    conventions = "".join(f"- {rule.capitalize() if rule[:1].islower() else rule}\n" for rule in manifest.conventions)
    return f"""# {manifest.name or root.name}

<!--
Drafted by `project-ledger init` from the files at the root; finish it by hand and keep it short.
Every agent session starts with this file and your pinned memories (2,000 tokens by default).
Write what an agent cannot work out quickly from the code; delete what does not apply.
-->

## What this project is
{about}{DRAFT_PROMPTS["What this project is"]}

## Stack
- Languages: {languages}
- Package managers: {managers}{versions}

## Commands
- Tests: {tests}
- Run locally: {run}
- Lint, format and type-check: {checks}

## Layout
{layout}

## Conventions
{conventions}{DRAFT_PROMPTS["Conventions"]}

## Decisions that hold
{DRAFT_PROMPTS["Decisions that hold"]}

## Constraints
{DRAFT_PROMPTS["Constraints"]}
"""
