"""A table that lives for months, compressed into minutes:
``python -m bench.long_run [COMMITS] [ROWS] [--out FILE]`` (defaults 600 and 20).

A primary-key table (bucket 2, the built-in file log) gets its 5,000 keys in a first
commit; then one writer commits COMMITS times a batch of ROWS upserts of random keys, so
that the table's rows stay 5,000 and only its files, snapshots and log grow. Two
variants, one after the other:

* ``bounded``: what keeps a table bounded — snapshot expiry, compaction, the file log's
  retention — with ``snapshot.num-retained.max`` 50 and ``snapshot.time-retained``
  ``1 s`` standing in for an hour of a once-a-minute job, and 256 KiB log segments
  standing in for 64 MiB ones;
* ``unbounded``: expiry and compaction turned off (what every table did before #16:
  every snapshot, every small file and every log record kept).

Every tenth of the run it records: the bytes on disk of the warehouse and of the log,
the snapshot and data files on disk, the median commit latency (write to commit,
automatic expiry and compaction included: they run in the committing process) of the
commits since the last point, and the median of three full table reads. Prints a table
per variant and the JSON (``--out`` writes it to a file as well).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.table import Table

KEYS = 5_000
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])

VARIANTS: dict[str, dict[str, str]] = {
    "bounded": {
        "snapshot.num-retained.min": "10",
        "snapshot.num-retained.max": "50",
        "snapshot.time-retained": "1 s",
        "filesystem.segment-bytes": str(256 * 1024),
    },
    "unbounded": {
        "snapshot.num-retained.min": str(2**31 - 1),
        "num-sorted-run.compaction-trigger": str(2**31 - 1),
        "filesystem.segment-bytes": str(256 * 1024),
    },
}


def disk(path: Path, suffix: str = "") -> tuple[int, int]:
    """(bytes, files) under ``path`` whose names end with ``suffix``."""
    sizes = [f.stat().st_size for f in path.rglob(f"*{suffix}") if f.is_file()]
    return sum(sizes), len(sizes)


def read_ms(table: Table) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        assert table.rows().num_rows == KEYS
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def point(table: Table, warehouse: Path, log: Path, commit: int, latencies: list[float]) -> dict[str, Any]:
    table_dir = warehouse / "db.db" / "t"
    return {
        "commit": commit,
        "warehouse_bytes": disk(warehouse)[0],
        "log_bytes": disk(log)[0],
        "snapshots": disk(table_dir / "snapshot", "")[1] - 2,  # without the EARLIEST and LATEST hints
        "data_files": disk(table_dir, ".parquet")[1] + disk(table_dir, ".orc")[1],
        "commit_ms": 1000 * statistics.median(latencies) if latencies else None,
        "read_ms": read_ms(table),
    }


def run(variant: str, commits: int, rows: int, work: Path, say: Any) -> list[dict[str, Any]]:
    warehouse, log = work / variant / "warehouse", work / variant / "log"
    table = tablelog.create_table(str(warehouse), "db.t", SCHEMA, primary_key=["id"], bucket=2, options={
        "log.system": "filesystem", "filesystem.path": str(log), **VARIANTS[variant]})
    rng = random.Random(7)
    every = max(commits // 10, 1)
    points: list[dict[str, Any]] = []
    latencies: list[float] = []
    with table.writer("long-run") as writer:
        writer.write(pa.table({"id": list(range(KEYS)), "v": ["first"] * KEYS, "x": [0.0] * KEYS}, schema=SCHEMA))
        writer.commit()
        for commit in range(1, commits + 1):
            ids = rng.sample(range(KEYS), rows)
            batch = pa.table({"id": ids, "v": [f"c{commit}-" + "x" * 40] * rows, "x": [float(commit)] * rows},
                             schema=SCHEMA)
            started = time.perf_counter()
            writer.write(batch)
            writer.commit()
            latencies.append(time.perf_counter() - started)
            if commit % every == 0:
                points.append(point(table, warehouse, log, commit, latencies))
                latencies = []
                say(f"  {variant} " + ", ".join(f"{k} {v:,.0f}" for k, v in points[-1].items()))
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="?", type=int, default=600)
    parser.add_argument("rows", nargs="?", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    result: dict[str, Any] = {"command": f"python -m bench.long_run {args.commits} {args.rows}",
                              "commits": args.commits, "rows_per_commit": args.rows, "keys": KEYS,
                              "cpus": os.cpu_count(), "variants": {}}
    with tempfile.TemporaryDirectory(prefix="bench-long-run-") as tmp:
        for variant in VARIANTS:
            result["variants"][variant] = {"options": VARIANTS[variant],
                                           "points": run(variant, args.commits, args.rows, Path(tmp), say)}
    for variant, data in result["variants"].items():
        print(f"\n{variant}: {args.commits} commits of {args.rows} upserts over {KEYS} keys")
        print(f"{'commit':>7}{'warehouse MB':>14}{'log MB':>8}{'snapshots':>11}{'data files':>12}"
              f"{'commit ms':>11}{'read ms':>9}")
        for p in data["points"]:
            print(f"{p['commit']:>7}{p['warehouse_bytes'] / 1e6:>14.1f}{p['log_bytes'] / 1e6:>8.1f}"
                  f"{p['snapshots']:>11}{p['data_files']:>12}{p['commit_ms']:>11.1f}{p['read_ms']:>9.1f}")
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
