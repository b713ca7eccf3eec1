"""``python -m bench.scale``: tablelog's curves against table size (issue 30, item 3).

Grows one partitioned primary-key table (4 table partitions x 4 buckets, fixed: a bucket
grows with the table; ~100-byte rows) through the Spark sink (``local[2]``) on local disk
and on S3 (SeaweedFS), each micro-batch mostly new keys and some updates of old ones, to
``--rows``; at each checkpoint it measures, against the table's size:

- ``runs``: sorted runs per (partition, bucket) (read amplification), data files, bytes;
- ``sink``: rows/s and micro-batch p50/p99 (Spark's progress reports) in windows that
  alternate compaction off (``write-only = true``) and in the background;
- ``scan``: a batch read of the whole table to ``noop``: rows/s, tasks, peak task RSS;
- ``compact``: ``tablelog compact --partition p=0`` in a child process: rows/s, peak RSS;
- ``spark-compact``: ``tablelog.spark.compact`` of another partition per ``--spark-cores``
  (``local[1]``, ``local[2]``): rows/s, peak task RSS;

and once per backend ``expiry``: one ``tablelog expire`` of a table of
``--expiry-snapshots`` snapshots. On S3 a counting proxy gives the requests per
micro-batch. Writes ``bench/results/scale-<time>.json``, PNG plots beside it, a summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.scale import schedule

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs" / "performance"
MEASUREMENTS = ("runs", "sink", "scan", "compact", "spark-compact", "expiry")
BACKENDS = ("local", "s3")
TABLE = "bench.scale"


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S ") + message, file=sys.stderr, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="50M", help="the table's final size in keys (default 50M)")
    parser.add_argument("--checkpoints", default="5M,10M,20M,35M,50M",
                        help="table sizes to measure at, comma-separated (the last is --rows)")
    parser.add_argument("--backends", default="local,s3", help="local, s3 or both (one after the other)")
    parser.add_argument("--measure", default=",".join(MEASUREMENTS),
                        help=f"what to measure, comma-separated, of {','.join(MEASUREMENTS)}")
    parser.add_argument("--growth-batch-rows", default="500k", help="rows of a micro-batch while growing")
    parser.add_argument("--batch-rows", default=None,
                        help="rows of a micro-batch in the measured windows (default: 50k, less when the "
                        "checkpoints are close: the windows add at most half the smallest step)")
    parser.add_argument("--window-batches", type=int, default=6,
                        help="micro-batches a window (the first of each is not measured: it plans the query)")
    parser.add_argument("--windows", type=int, default=6, help="windows a checkpoint, off and background alternately")
    parser.add_argument("--update-fraction", type=float, default=0.2, help="share of a micro-batch updating old keys")
    parser.add_argument("--spark-cores", default="1,2", help="local[N] sessions of the Spark compaction")
    parser.add_argument("--expiry-snapshots", type=int, default=10_000, help="snapshots of the expiry table")
    parser.add_argument("--workdir", default=None, help="where warehouses and inputs go (default: a new /tmp folder)")
    parser.add_argument("--min-free-gb", type=float, default=3.0, help="stop growing when less disk is free")
    parser.add_argument("--docs", action="store_true", help="copy the plots to docs/performance/")
    parser.add_argument("--sink-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the sink's writes (repeatable), e.g. compaction.background.duty-cycle=0.5")
    args = parser.parse_args(argv)
    try:
        args.rows = schedule.parse_rows(args.rows)
        args.checkpoints = schedule.parse_checkpoints(args.checkpoints, args.rows)
        args.growth_batch_rows = schedule.parse_rows(args.growth_batch_rows)
        args.order = schedule.window_order(args.windows)
        args.batch_rows = (schedule.parse_rows(args.batch_rows) if args.batch_rows else
                           schedule.window_batch_rows(args.checkpoints, args.windows * args.window_batches))
        args.spark_cores = [int(c) for c in args.spark_cores.split(",") if c.strip()]
    except ValueError as err:
        parser.error(str(err))
    if any("=" not in given for given in args.sink_option):
        parser.error(f"--sink-option: KEY=VALUE, not {[g for g in args.sink_option if '=' not in g]}")
    args.sink_options = dict(given.split("=", 1) for given in args.sink_option)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    args.measure = {m.strip() for m in args.measure.split(",") if m.strip()}
    for name, given, known in (("--backends", set(args.backends), BACKENDS), ("--measure", args.measure, MEASUREMENTS)):
        if not given or given - set(known):
            parser.error(f"{name}: {sorted(given - set(known)) or 'nothing'} not among {', '.join(known)}")
    if args.window_batches < 2:
        parser.error("--window-batches: at least 2 (the first micro-batch of a window is not measured)")
    if len(args.spark_cores) > 3:
        parser.error("--spark-cores: at most 3 sessions (each compacts a table partition of its own: 1, 2, 3)")
    return args


@contextlib.contextmanager
def backend(name: str, work: Path, *, keep: bool = False) -> Iterator[Any]:
    """The backend's warehouse: a local folder, or SeaweedFS behind a request counter;
    deleted once measured unless ``keep`` (``--workdir``: to look at the tables after)."""
    from bench.scale.checkpoint import Backend

    root = work / name
    root.mkdir(parents=True)
    try:
        if name == "local":
            yield Backend(name, str(root / "wh"), str(root / "expiry-wh"), TABLE, {}, {}, {})
            return
        from bench.scale.s3_counter import S3RequestCounter
        from tablelog.testing.s3_server import seaweedfs

        with seaweedfs(root / "seaweedfs") as server, S3RequestCounter(server.endpoint) as counter:
            def connect(endpoint: str) -> dict[str, str]:
                return {"s3.endpoint": endpoint, "s3.access-key": server.access_key, "s3.secret-key": server.secret_key}

            yield Backend(name, server.url("wh"), server.url("expiry"), TABLE, connect(server.endpoint),
                          connect(counter.endpoint), server.catalog_options(), counter,
                          upload_expiry=lambda local: upload(server, local, "expiry"))
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def upload(server: Any, local: Path, prefix: str) -> int:
    """Every file under ``local`` put under ``prefix`` of the server's bucket, many at once;
    how many."""
    from concurrent.futures import ThreadPoolExecutor

    client = server.client(max_pool_connections=32, retries={"max_attempts": 5})
    paths = [p for p in local.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda p: client.upload_file(str(p), server.bucket, f"{prefix}/{p.relative_to(local).as_posix()}"),
                      paths))
    return len(paths)


def run_backend(name: str, spark: Any, args: argparse.Namespace, work: Path, out: dict[str, Any],
                save: Any) -> None:
    import tablelog
    from bench.scale import checkpoint as measure
    from bench.scale import expiry
    from bench.scale.data import BUCKETS, PARTITIONS, SCHEMA, RowSource
    from bench.scale.sink import Sink

    with backend(name, work, keep=bool(args.workdir)) as where:
        log(f"{name}: warehouse {where.warehouse}")
        table = tablelog.create_table(where.warehouse, TABLE, SCHEMA, primary_key=["p", "id"], partition_keys=["p"],
                                      bucket=BUCKETS, options={"log.system": "none", **where.options})
        rows = RowSource()
        sink = Sink(spark, work / name / "spark", where.warehouse, TABLE, {**where.sink_options, **args.sink_options},
                    rows)
        result: dict[str, Any] = {"checkpoints": [], "partitions": PARTITIONS, "buckets": BUCKETS}
        out[name] = result
        for target in args.checkpoints:
            free_gb = shutil.disk_usage(work).free / 2**30
            if free_gb < args.min_free_gb:
                result["stopped"] = f"{free_gb:.1f} GB free before growing to {target:,} keys (--min-free-gb {args.min_free_gb})"
                log(f"{name}: stopped: {result['stopped']}")
                break
            log(f"{name}: growing from {rows.keys:,} to {target:,} keys")
            point: dict[str, Any] = {"checkpoint": target}
            point["growth"] = sink.grow(schedule.growth_batches(rows.keys, target, args.growth_batch_rows,
                                                                args.update_fraction), log)
            point["keys"] = rows.keys
            if "runs" in args.measure:
                point["settled"] = measure.wait_quiet(where, table)
                point["files"] = measure.files(where)
                log(f"  sorted runs per pair: max {point['files']['sorted_runs_max']}, "
                    f"median {point['files']['sorted_runs_median']}; {point['files']['data_bytes'] / 2**20:,.0f} MB")
            if "sink" in args.measure:
                log(f"  sink windows at {rows.keys:,} keys: {' '.join(args.order)}")
                point["sink"] = measure.sink_windows(sink, where, table, args.order, args.window_batches,
                                                     args.batch_rows, args.update_fraction, log)
            keys = point["keys_measured"] = rows.keys  # the scan and compactions see the windows' rows too
            if args.measure & {"scan", "compact", "spark-compact"}:
                point["settled_after_sink"] = measure.wait_quiet(where, table)
            if "scan" in args.measure:
                point["scan"] = measure.scan(where, keys)
                log(f"  full scan: {point['scan']['rows_per_s']:,.0f} rows/s, {point['scan']['tasks']} tasks, "
                    f"peak task RSS {point['scan']['peak_task_rss_mb'] or 0:,.0f} MB")
            if "compact" in args.measure:
                point["compact"] = measure.compact(where, keys, 0)
                log(f"  compaction (process): {point['compact']['rows_per_s']:,.0f} rows/s, "
                    f"peak RSS {point['compact']['peak_rss_mb']:,.0f} MB")
                # beside it, the same on one thread (partition 3: the Spark jobs take 1 and 2)
                point["compact_one_thread"] = measure.compact(where, keys, PARTITIONS - 1, threads=1)
                log(f"  compaction (process, --threads 1): {point['compact_one_thread']['rows_per_s']:,.0f} rows/s, "
                    f"peak RSS {point['compact_one_thread']['peak_rss_mb']:,.0f} MB")
            if "spark-compact" in args.measure:
                point["spark_compact"] = {}
                for i, cores in enumerate(args.spark_cores):
                    got = measure.spark_compact(where, keys, 1 + i, cores)
                    point["spark_compact"][str(cores)] = got
                    log(f"  compaction (Spark, local[{cores}]): {got['rows_per_s']:,.0f} rows/s, "
                        f"peak task RSS {got['peak_task_rss_mb'] or 0:,.0f} MB")
            result["checkpoints"].append(point)
            save()
        # The sink's background compaction done before the backend's warehouse goes.
        result["settled_at_end"] = measure.wait_quiet(where, table)
        if "expiry" in args.measure and args.expiry_snapshots > 0:
            log(f"{name}: expiry of {args.expiry_snapshots:,} snapshots")
            result["expiry"] = expiry.measure(where.expiry_warehouse, where.sink_options, args.expiry_snapshots,
                                              log, where.requests, stage=work / name / "expiry-stage",
                                              upload=where.upload_expiry)
            log(f"  expire: {result['expiry']['seconds']:.1f} s, {result['expiry']['expired_snapshots']:,} snapshots, "
                f"{result['expiry']['data_files']:,} data files, {result['expiry']['manifest_files']:,} manifests")
            save()


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    from bench.__main__ import git_commit, versions
    from bench.common import cache_bytecode
    from bench.scale import plots, summary
    from tablelog.spark.session import local_session

    if note := cache_bytecode():
        log(note)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results: dict[str, Any] = {"meta": {
        "command": "python -m bench.scale " + " ".join(argv), "started": stamp, "git": git_commit(),
        "versions": versions(), "rows": args.rows, "checkpoints": args.checkpoints, "order": args.order,
        "batch_rows": args.batch_rows, "window_batches": args.window_batches,
        "growth_batch_rows": args.growth_batch_rows, "update_fraction": args.update_fraction,
        "measure": sorted(args.measure), "spark_cores": args.spark_cores,
        "expiry_snapshots": args.expiry_snapshots}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    partial = RESULTS / f"scale-{stamp}.partial.json"

    def save() -> None:
        partial.write_text(json.dumps(results, indent=1, default=str))

    began = time.monotonic()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-scale-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    spark = local_session("local[2]", app_name="bench-scale",
                          conf={"spark.sql.streaming.numRecentProgressUpdates": "1000"})
    try:
        results["backends"] = {}
        for name in args.backends:
            run_backend(name, spark, args, work, results["backends"], save)
    finally:
        spark.stop()
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    results["meta"]["seconds"] = time.monotonic() - began
    results["targets"] = summary.targets(results)
    path = RESULTS / f"scale-{stamp}.json"
    path.write_text(json.dumps(results, indent=1, default=str))
    partial.unlink(missing_ok=True)
    made = plots.make_all(results, RESULTS / "plots" / f"scale-{stamp}")
    print(summary.text(results))
    print(f"\nresults: {path}; plots: {', '.join(str(p) for p in made) or 'none (no matplotlib)'}")
    if args.docs:
        DOCS.mkdir(parents=True, exist_ok=True)
        for made_path in made:
            shutil.copy(made_path, DOCS / made_path.name)
        print(f"copied the plots to {DOCS}")


if __name__ == "__main__":
    main(sys.argv[1:])
