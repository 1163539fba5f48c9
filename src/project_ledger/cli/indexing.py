"""How the CLI shows code indexing: a progress bar on stderr, then a summary."""

from __future__ import annotations

import json

from project_ledger.cli.progress import progress_bars
from project_ledger.code.indexer import ScanSummary
from project_ledger.maintenance.service import MaintenanceService


def index_with_progress(maintenance: MaintenanceService, *, embed: bool, as_json: bool) -> str:
    """Scan the source tree (and with `embed`, compute the symbols' vectors) with progress bars; the summary."""
    with progress_bars() as report:
        summary = maintenance.scan_code(report)
        vectors = maintenance.embed_symbols(report) if embed else 0
    counts = maintenance.code_counts()
    if as_json:
        return json.dumps(
            {
                "files": summary.files,
                "parsed": summary.parsed,
                "unchanged": summary.unchanged,
                "removed": summary.removed,
                "seconds": round(summary.seconds, 3),
                "symbols": counts.symbols,
                "references": counts.references,
                "languages": counts.languages,
                "skipped": summary.skipped.counts,
                "embedded": vectors,
            },
            indent=2,
        )
    return render_summary(
        summary, symbols=counts.symbols, references=counts.references, languages=counts.languages, embedded=vectors
    )


def render_summary(summary: ScanSummary, *, symbols: int, references: int, languages: dict[str, int], embedded: int) -> str:
    rate = summary.parsed / summary.seconds if summary.seconds > 0 else 0.0
    lines = [
        (
            f"indexed {summary.files} files in {summary.seconds:.1f}s: {summary.parsed} parsed ({rate:,.0f}/s), "
            f"{summary.unchanged} unchanged, {summary.removed} removed"
        ),
        f"symbols: {symbols:,} definitions, {references:,} references",
        "languages: " + (", ".join(f"{name} {n}" for name, n in sorted(languages.items(), key=lambda kv: -kv[1])) or "none"),
    ]
    if embedded:
        lines.append(f"embedded: {embedded:,} symbol texts")
    if summary.skipped.counts:
        lines.append("skipped:")
        for reason, count in sorted(summary.skipped.counts.items(), key=lambda kv: -kv[1]):
            examples = ", ".join(summary.skipped.examples.get(reason, []))
            lines.append(f"  {count} {reason} (e.g. {examples})")
    return "\n".join(lines)
