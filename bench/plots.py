"""PNG plots and the summary of a benchmark run (matplotlib, the `bench` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SYSTEMS = ("kafka", "pulsar")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def make_all(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = []
    if any(results.get(s) for s in SYSTEMS):
        made += [ratios(results, out / "ratios.png"), partitions(results, out / "partitions.png"),
                 record_size(results, out / "record_size.png")]
    if results.get("latency"):
        made.append(latency(results["latency"], out / "latency.png"))
    if results.get("memory"):
        made.append(memory(results["memory"], out / "memory.png"))
    return made


def _main_point(results: dict[str, Any], system: str) -> dict[str, Any] | None:
    for point in results.get(system) or []:
        if point["partitions"] == 4 and point["record_bytes"] == 100:
            return point
    return None


def ratios(results: dict[str, Any], path: Path) -> Path:
    plt = _plt()
    keys = ["writer / raw+headers", "writer / raw", "writer+paimon / raw+headers",
            "transactional-arrow / raw", "transactional / raw", "transactional / raw+headers",
            "transactional / raw+json", "eventual / raw"]
    fig, ax = plt.subplots(figsize=(9, 5))
    labels, medians, lo, hi, colors = [], [], [], [], []
    for system, color in zip(SYSTEMS, ("tab:blue", "tab:orange"), strict=True):
        point = _main_point(results, system)
        if point is None:
            continue
        for key in keys:
            r = point["ratios"].get(key)
            if r is None:
                continue  # a point measured by an older version of the benchmarks (--merge)
            labels.append(f"{system}: {key}")
            medians.append(r["median"])
            lo.append(r["median"] - r["min"])
            hi.append(r["max"] - r["median"])
            colors.append(color)
    y = list(range(len(labels)))[::-1]
    ax.barh(y, medians, xerr=[lo, hi], color=colors, alpha=0.8, capsize=3)
    ax.axvline(0.9, color="red", linestyle="--", label="target 0.9x")
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("tablelog / raw client, same run (median of rounds; bars: min-max)")
    ax.set_title("Throughput ratios, 4 partitions, 100-byte records")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _sweep(results: dict[str, Any], path: Path, x_key: str, fixed: dict[str, int], xlabel: str,
           mb: bool) -> Path:
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), squeeze=False)
    for col, system in enumerate(SYSTEMS):
        points = [p for p in results.get(system) or [] if all(p[k] == v for k, v in fixed.items())]
        points.sort(key=lambda p: p[x_key])
        for row, (side, names) in enumerate((("produce", ("raw", "raw+headers", "tablelog", "tablelog+paimon")),
                                             ("fetch", ("raw", "raw+headers", "raw+json", "transactional",
                                                       "transactional-arrow", "eventual")))):
            ax = axes[row][col]
            if not points:
                ax.set_visible(False)
                continue
            xs = [p[x_key] for p in points]
            for name in names:
                if any(name not in p[side] for p in points):
                    continue  # a variant older results (--merge) do not have
                scale = [(p["record_bytes"] / 2**20 if mb else 1.0) for p in points]
                med = [p[side][name]["median"] * s for p, s in zip(points, scale, strict=True)]
                lo = [(p[side][name]["median"] - p[side][name]["min"]) * s for p, s in zip(points, scale, strict=True)]
                hi = [(p[side][name]["max"] - p[side][name]["median"]) * s for p, s in zip(points, scale, strict=True)]
                style = "-" if name.startswith(("tablelog", "transactional", "eventual")) else "--"
                ax.errorbar(xs, med, yerr=[lo, hi], label=name, linestyle=style, marker="o", capsize=2)
            ax.set_xscale("log", base=10 if x_key == "record_bytes" else 2)
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.set_xlabel(xlabel)
            ax.set_ylabel("MB/s (values)" if mb else "records/s")
            ax.set_title(f"{system} {side}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def partitions(results: dict[str, Any], path: Path) -> Path:
    return _sweep(results, path, "partitions", {"record_bytes": 100}, "partitions (100-byte records)", mb=False)


def record_size(results: dict[str, Any], path: Path) -> Path:
    return _sweep(results, path, "record_bytes", {"partitions": 4}, "record size, bytes (4 partitions)", mb=True)


def latency(lat: dict[str, Any], path: Path) -> Path:
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    names = [n for n in ("kafka raw", "kafka", "pulsar", "filesystem") if n in lat]
    x = range(len(names))
    for offset, q in ((-0.2, "p50"), (0.2, "p99")):
        a1.bar([i + offset for i in x], [lat[n]["eventual_ms"][q] for n in names], width=0.4, label=q)
    a1.axhline(50, color="red", linestyle="--", label="target p99 50 ms")
    a1.set_xticks(list(x), [n if n == "kafka raw" else f"tablelog\n{n}" for n in names])
    a1.set_ylabel("ms")
    a1.set_title("eventual: write -> visible to a reader process")
    a1.legend()
    names2 = [n for n in ("kafka", "pulsar", "filesystem") if n in lat]
    x2 = range(len(names2))
    for offset, q in ((-0.2, "p50"), (0.2, "max")):
        a2.bar([i + offset for i in x2], [lat[n]["transactional_after_snapshot_ms"][q] for n in names2],
               width=0.4, label=q)
    a2.axhline(1000, color="red", linestyle="--", label="target 1 s")
    a2.set_xticks(list(x2), names2)
    a2.set_ylabel("ms")
    a2.set_title("transactional: snapshot commit -> visible")
    a2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def memory(mem: dict[str, Any], path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = [s[0] / 1e6 for s in mem["samples"]]
    ys = [s[1] for s in mem["samples"]]
    ax.plot(xs, ys)
    ax.set_xlabel("records read (millions)")
    ax.set_ylabel("reader RSS (MB)")
    ax.set_ylim(0, max(ys) * 1.3)
    ax.set_title(f"transactional reader, {mem['records']:,} records, {mem['log']} log: "
                 f"growth {mem['rss_growth_mb']:.1f} MB")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def targets_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| what | target | median | min | max | met |", "|---|---|---|---|---|---|"]
    for r in rows:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "**no**")
        lines.append(f"| {r['what']} | {r['target']} | {r['median']:.2f} | {r['min']:.2f} | {r['max']:.2f} | {met} |")
    return "\n".join(lines)


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """What docs/performance.md shows: targets, per-point medians, latency, memory, spark."""
    def point(p: dict[str, Any]) -> dict[str, Any]:
        return {
            "partitions": p["partitions"], "record_bytes": p["record_bytes"], "records": p["records"],
            "rounds": p["rounds"],
            "produce_median": {k: round(v["median"]) for k, v in p["produce"].items()},
            "fetch_median": {k: round(v["median"]) for k, v in p["fetch"].items()},
            "ratios": {k: {m: round(v[m], 3) for m in ("median", "min", "max")} for k, v in p["ratios"].items()},
        }

    out: dict[str, Any] = {"meta": results["meta"], "targets": results.get("targets", [])}
    for system in SYSTEMS:
        if results.get(system):
            out[system] = [point(p) for p in results[system]]
    if "latency" in results:
        out["latency"] = results["latency"]
    if "memory" in results:
        out["memory"] = {k: v for k, v in results["memory"].items() if k != "samples"}
    if "spark" in results:
        out["spark"] = results["spark"]
    return out


def _rate_band(rows: int, median: float, runs: list[float] | None) -> tuple[float, float]:
    """Error bar below and above ``median`` rows/s from the runs' seconds (none: no bar)."""
    if not runs:
        return 0.0, 0.0
    rates = [rows / s for s in runs]
    return median - min(rates), max(rates) - median


def arrow_log(results: list[dict[str, Any]], out: Path) -> list[Path]:
    """``bench.arrow_log``'s sweeps: rows/s against ``log.max-record-bytes`` (writer and
    reader) and against the columns the reader asks for, one line per log system."""
    out.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    made = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for side, ax in zip(("write", "read"), axes, strict=True):
        for r in results:
            sizes = sorted(r["batch_bytes"], key=int)
            med = [r["batch_bytes"][b][side] for b in sizes]
            bands = [_rate_band(r["rows"], m, r.get("batch_bytes_runs_s", {}).get(b, {}).get(side))
                     for b, m in zip(sizes, med, strict=True)]
            ax.errorbar([int(b) for b in sizes], [m / 1e6 for m in med], marker="o", capsize=2,
                        yerr=[[lo / 1e6 for lo, _ in bands], [hi / 1e6 for _, hi in bands]], label=r["system"])
        ax.set_xscale("log")
        ticks = sorted({int(b) for r in results for b in r["batch_bytes"]})
        ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("log.max-record-bytes")
        ax.set_ylabel("million rows/s")
        ax.set_ylim(bottom=0)
        ax.set_title("arrow writer (log path, Paimon stubbed out)" if side == "write"
                     else "arrow transactional reader, poll_arrow()")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"log.format=arrow, {results[0]['rows']:,} rows of 100 B, 4 partitions (median of rounds)")
    fig.tight_layout()
    made.append(out / "arrow_batch_size.png")
    fig.savefig(made[-1], dpi=110)
    plt.close(fig)
    with_columns = [r for r in results if r.get("columns_requested")]
    if with_columns:
        fig, ax = plt.subplots(figsize=(7, 4))
        for r in with_columns:
            counts = sorted(r["columns_requested"], key=int)
            med = [r["columns_requested"][k] for k in counts]
            bands = [_rate_band(r["rows"], m, r.get("columns_requested_runs_s", {}).get(k))
                     for k, m in zip(counts, med, strict=True)]
            ax.errorbar([int(k) for k in counts], [m / 1e6 for m in med], marker="o", capsize=2,
                        yerr=[[lo / 1e6 for lo, _ in bands], [hi / 1e6 for _, hi in bands]], label=r["system"])
            ax.set_xticks([int(k) for k in counts])
        ax.set_xlabel("columns requested (of 20; the key always among them)")
        ax.set_ylabel("million rows/s")
        ax.set_ylim(bottom=0)
        ax.set_title("arrow transactional reader, table.reader(columns=...)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        made.append(out / "arrow_columns.png")
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)
    return made
