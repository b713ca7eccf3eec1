"""The PNG curves of a ``python -m bench.scale`` run (matplotlib, the ``bench`` extra),
each against the table's size in millions of rows, one line per backend (and mode)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.scale.summary import COMPACTION_RATE, RUNS_BOUND

_STYLE = {"local": "-", "s3": "--"}


def make_all(results: dict[str, Any], out: Path) -> list[Path]:
    """The plots the run has figures for (none without matplotlib)."""
    try:
        from bench.plots import _plt
        plt = _plt()
    except ImportError:
        return []
    out.mkdir(parents=True, exist_ok=True)
    backends = results.get("backends", {})
    made = []
    for name, draw in (("scale_sink.png", _sink), ("scale_compaction.png", _compaction), ("scale_scan.png", _scan),
                       ("scale_runs.png", _runs), ("scale_s3_requests.png", _s3)):
        fig = draw(plt, backends)
        if fig is None:
            continue
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(out / name)
    return made


def _series(points: list[dict[str, Any]], get: Callable[[dict[str, Any]], Any],
            x: str = "keys") -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for point in points:
        try:
            value = get(point)
        except (KeyError, TypeError):
            continue
        if value is not None:
            xs.append(point.get(x, point["keys"]) / 1e6)
            ys.append(value)
    return xs, ys


def _line(ax: Any, backends: dict[str, Any], get: Callable[[dict[str, Any]], Any], label: str, *,
          x: str = "keys", **kw: Any) -> bool:
    """One line per backend; ``x``: the point's table size the figure was taken at
    (``keys``: before the sink's windows; ``keys_measured``: after them)."""
    drawn = False
    for name, backend in backends.items():
        xs, ys = _series(backend.get("checkpoints", []), get, x)
        if xs:
            ax.plot(xs, ys, _STYLE.get(name, "-"), marker="o", label=f"{name}: {label}", **kw)
            drawn = True
    return drawn


def _axes(ax: Any, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("table size (million rows)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def _sink(plt: Any, backends: dict[str, Any]) -> Any:
    fig, (rate, latency) = plt.subplots(1, 2, figsize=(12, 4.5))
    drawn = False
    for mode, color in (("off", "tab:blue"), ("background", "tab:orange")):
        drawn |= _line(rate, backends, lambda p, m=mode: p["sink"][m]["rows_per_s"], f"compaction {mode}", color=color)
        for q in ("p50_ms", "p99_ms"):
            _line(latency, backends, lambda p, m=mode, q=q: p["sink"][m][q], f"{mode} {q[:3]}", color=color,
                  alpha=1.0 if q == "p99_ms" else 0.5)
    if not drawn:
        plt.close(fig)
        return None
    _axes(rate, "Spark sink rows/s (micro-batches' triggerExecution)", "rows/s")
    _axes(latency, "micro-batch duration, compaction off vs in the background", "ms")
    return fig


def _compaction(plt: Any, backends: dict[str, Any]) -> Any:
    fig, (rate, memory) = plt.subplots(1, 2, figsize=(12, 4.5))
    drawn = _line(rate, backends, lambda p: p["compact"]["rows_per_s"], "one process", x="keys_measured", color="tab:green")
    _line(memory, backends, lambda p: p["compact"]["peak_rss_mb"], "one process (peak RSS)", x="keys_measured", color="tab:green")
    drawn |= _line(rate, backends, lambda p: p["compact_one_thread"]["rows_per_s"], "one process, --threads 1",
                   x="keys_measured", color="tab:olive")
    _line(memory, backends, lambda p: p["compact_one_thread"]["peak_rss_mb"], "one process, --threads 1 (peak RSS)",
          x="keys_measured", color="tab:olive")
    cores = sorted({c for b in backends.values() for p in b.get("checkpoints", []) for c in p.get("spark_compact", {})})
    for c, color in zip(cores, ("tab:purple", "tab:red", "tab:brown"), strict=False):
        drawn |= _line(rate, backends, lambda p, c=c: p["spark_compact"][c]["rows_per_s"], f"Spark local[{c}]", x="keys_measured", color=color)
        _line(memory, backends, lambda p, c=c: p["spark_compact"][c]["peak_task_rss_mb"], f"Spark local[{c}] (task)", x="keys_measured",
              color=color)
    if not drawn:
        plt.close(fig)
        return None
    rate.axhline(COMPACTION_RATE, color="red", linestyle=":", label=f"target {COMPACTION_RATE:,} rows/s")
    _axes(rate, "full compaction of one table partition (rows/s of its rows)", "rows/s")
    _axes(memory, "peak RSS of the compacting process / Spark task", "MB")
    return fig


def _scan(plt: Any, backends: dict[str, Any]) -> Any:
    fig, (rate, memory) = plt.subplots(1, 2, figsize=(12, 4.5))
    if not _line(rate, backends, lambda p: p["scan"]["rows_per_s"], "full scan to noop", x="keys_measured", color="tab:blue"):
        plt.close(fig)
        return None
    _line(memory, backends, lambda p: p["scan"]["peak_task_rss_mb"], "peak task RSS", x="keys_measured", color="tab:blue")
    _axes(rate, "Spark batch read of the whole table, local[2]", "rows/s")
    _axes(memory, "peak RSS of a Spark task's Python worker", "MB")
    return fig


def _runs(plt: Any, backends: dict[str, Any]) -> Any:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if not _line(ax, backends, lambda p: p["files"]["sorted_runs_max"], "max", color="tab:red"):
        plt.close(fig)
        return None
    _line(ax, backends, lambda p: p["files"]["sorted_runs_median"], "median", color="tab:blue")
    ax.axhline(RUNS_BOUND, color="grey", linestyle=":", label=f"stop trigger ({RUNS_BOUND})")
    _axes(ax, "read amplification: sorted runs per (partition, bucket)", "sorted runs")
    return fig


def _s3(plt: Any, backends: dict[str, Any]) -> Any:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = False
    for mode, span, color in (("off", "in_batches", "tab:blue"), ("background", "window", "tab:orange")):
        for part, style in (("all", "-"), ("metadata", ":")):
            xs, ys = _series(backends.get("s3", {}).get("checkpoints", []),
                             lambda p, m=mode, s=span, part=part: p["sink"]["s3_requests"][m][s][part])
            if xs:
                ax.plot(xs, ys, style, marker="o", color=color, label=f"compaction {mode}: {part}")
                drawn = True
    if not drawn:
        plt.close(fig)
        return None
    _axes(ax, "S3 requests per micro-batch (off: while it runs; background: the whole window)\n"
          "metadata: all but data files (off: the commit)", "requests")
    return fig
