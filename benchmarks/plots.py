"""The README's benchmark figures, drawn from the raw results the benchmarks save.

A benchmark run with `--write` keeps its numbers in `benchmarks/results/NAME.json` (`common.save_results`) and draws
its figure into `docs/bench/` from that file alone, so `--plot-only` can redraw a figure (a style change,
a label) without the minutes a run takes, and the committed JSON says exactly what a plot shows.

matplotlib is the optional `bench` extra (`pip install -e '.[bench]'`): only this module imports it,
and the benchmarks import this module only when they write or plot. It draws on a `Figure` with the
Agg canvas, never through pyplot's global state, in matplotlib's colour-blind-safe
`tableau-colorblind10` palette, with markers and line styles so no series is told apart by colour alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from matplotlib import style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator, StrMethodFormatter

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
FIGURES = ROOT / "docs" / "bench"
LATENCY_VS_SIZE = FIGURES / "latency-vs-size.png"
RECALL_AT_K = FIGURES / "recall-at-k.png"
GIST_COMPRESSION = FIGURES / "gist-compression.png"
DPI = 110
RC = {"font.size": 10, "axes.titlesize": 11, "axes.grid": True, "grid.alpha": 0.35, "axes.spines.top": False, "axes.spines.right": False}


def image_link(alt: str, figure: Path) -> str:
    """Markdown for a figure, relative to the README at the repository root."""
    return f"![{alt}]({figure.relative_to(ROOT).as_posix()})"


@contextmanager
def figure(path: Path, title: str, caption: str, panels: int, width: float = 5.4) -> Iterator[list[Axes]]:
    """A row of `panels` axes, `width` inches each, in the house style; saved as a PNG at `path` when the block ends."""
    with style.context(["tableau-colorblind10", RC]):
        fig = Figure(figsize=(width * panels, 4.6), layout="constrained")
        FigureCanvasAgg(fig)
        axes = list(fig.subplots(1, panels, squeeze=False)[0])
        fig.suptitle(title, fontweight="bold")
        fig.supxlabel(caption, fontsize=8, color="0.35")
        yield axes
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI, metadata={"Software": None})  # no version stamp: a redraw of the same data is the same file


def log_sizes(ax: Axes, sizes: list[int]) -> None:
    """A log x axis of ledger sizes, ticked at the sizes measured (1k, 10k, ...)."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{size / 1000:g}k" if size >= 1000 else str(size) for size in sizes])
    ax.set_xlim(sizes[0] / 1.6, sizes[-1] * 1.6)
    ax.set_xlabel("memories in the ledger (log scale)")


def latency_vs_size(results: dict[str, Any]) -> Path:
    """`recall` (in-process and over stdio) and `remember` latency against ledger size; index rebuild time beside it."""
    rows = results["sizes"]
    sizes = [row["size"] for row in rows]
    load = results["load_average"]
    caption = (
        f"{results['machine']}, measured {results['measured']}; 1-minute load average {load['start'][0]:.1f} at start, "
        f"{load['end'][0]:.1f} at end (shared machine)"
    )
    series = [  # label, where measured, key prefix of its p50 and p95, marker
        ("recall over stdio, end to end", "stdio", "", "o"),
        ("recall in-process, full scan, no query embedding", "in_process", "", "s"),
        ("remember over stdio", "stdio", "remember_", "^"),
    ]
    colours = ["C0", "C1", "C3"]  # blue, orange, dark grey: the palette's most distinct three
    with figure(LATENCY_VS_SIZE, "Latency against ledger size", caption, panels=2) as (latency, rebuild):
        for (label, where, prefix, marker), colour in zip(series, colours, strict=True):
            latency.plot(sizes, [row[where][f"{prefix}p50"] * 1000 for row in rows], marker=marker, color=colour, label=f"{label}, p50")
            latency.plot(
                sizes, [row[where][f"{prefix}p95"] * 1000 for row in rows], marker=marker, linestyle="--",
                color=colour, markerfacecolor="white", label=f"{label}, p95",
            )  # fmt: skip
        log_sizes(latency, sizes)
        latency.set_ylim(bottom=0)
        latency.set_ylabel("latency (ms)")
        latency.set_title("Per call: p50 (solid) and p95 (dashed)")
        latency.legend(fontsize=8, loc="upper left")

        seconds = [row["in_process"]["rebuild"] for row in rows]
        rebuild.plot(sizes, seconds, marker="D", color="C5")
        for size, value in zip(sizes, seconds, strict=True):
            rebuild.annotate(f"{value:.1f} s", (size, value), textcoords="offset points", xytext=(-6, 6), ha="right", fontsize=8.5)
        log_sizes(rebuild, sizes)
        rebuild.set_yscale("log")
        rebuild.yaxis.set_major_formatter(StrMethodFormatter("{x:g} s"))
        rebuild.set_ylim(min(seconds) / 2, max(seconds) * 3)
        rebuild.set_ylabel("time (log scale)")
        rebuild.set_title("Index rebuild from the journal (stored vectors)")
    return LATENCY_VS_SIZE


def recall_at_k(results: dict[str, Any]) -> Path:
    """R@k for k = 1..10 of every method `retrieval.py` compares, on its conversation and on the held-out corpus."""
    ks = results["ks"]
    caption = f"share of a question's evidence in the top k; measured {results['measured']}. Dashed: baselines; solid: the ledger's ranking"
    # Baselines in greys and light blue, dashed; the ledger's rankings in the palette's strong colours, solid.
    colours = {True: ["C3", "C2", "C4"], False: ["C0", "C5", "C1"]}
    markers = "osv^DP"
    with figure(RECALL_AT_K, "Recall@k: the ledger's ranking against its baselines", caption, panels=2) as axes:
        for ax, corpus in zip(axes, results["corpora"], strict=True):
            palette = {baseline: iter(names) for baseline, names in colours.items()}
            for method, marker in zip(corpus["methods"], markers, strict=True):
                ax.plot(
                    ks, method["recall_at_k"], marker=marker, markersize=4.5, color=next(palette[method["baseline"]]),
                    linestyle="--" if method["baseline"] else "-", label=method["name"],
                )  # fmt: skip
            ax.set_xticks(ks)
            ax.set_xlabel("k (results read)")
            ax.set_ylabel("R@k")
            ax.set_ylim(top=1.0)
            ax.set_title(corpus["title"])
        axes[-1].legend(fontsize=8, loc="lower right")
    return RECALL_AT_K


def gist_compression(results: dict[str, Any]) -> Path:
    """Per session: raw turn tokens against the tokens of its extractive gist, with the compression ratio."""
    sessions = results["sessions"]
    names = [s["session"] for s in sessions]
    places = range(len(sessions))
    caption = f"summarize_session, max_tokens {results['max_tokens']}; measured {results['measured']}"
    with figure(GIST_COMPRESSION, "Session gists: raw turns against gist", caption, panels=1, width=8.5) as (ax,):
        ax.bar([p - 0.2 for p in places], [s["raw_tokens"] for s in sessions], width=0.4, label="raw turns", color="C0")
        bars = ax.bar([p + 0.2 for p in places], [s["gist_tokens"] for s in sessions], width=0.4, label="gist", color="C1", hatch="//")
        for bar, s in zip(bars, sessions, strict=True):
            ax.annotate(
                f"{s['raw_tokens'] / s['gist_tokens']:.1f}×", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7.5,
            )  # fmt: skip
        ax.axhline(results["max_tokens"], color="0.3", linestyle=":", linewidth=1, label=f"gist budget ({results['max_tokens']} tokens)")
        ax.set_xticks(list(places), names)
        ax.set_xlabel("session")
        ax.set_ylabel("tokens")
        ax.grid(axis="x", visible=False)
        ax.legend(fontsize=8, loc="upper right")
    return GIST_COMPRESSION
