"""A table committed to for a long time, with and without compaction:
``python -m bench.long_run [COMMITS] [ROWS]`` (600, 20).

A primary-key table (bucket 2, ``log.system=filesystem``) gets all its 5,000 keys in a
first commit; then one ``Writer`` commits ``COMMITS`` times a batch of ``ROWS`` upserts of
random keys, so the table's rows stay 5,000 and only its files change. Variants, on fresh
tables in one temporary warehouse: ``compaction`` (Paimon's default trigger, 5 sorted
runs) and ``none`` (a trigger no bucket reaches: the table as it was before compaction).

Printed per variant: the median commit latency over the first and the last 10 % of the
commits (automatic compactions included: they run in the committing process), the time
of a full table read after the first and the last 10 %, and at the end the data files
and manifests a read opens.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.table import Table

KEYS = 5000
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])


def read_time(table: Table, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        table.rows()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(warehouse: str, name: str, trigger: int, commits: int, rows: int) -> dict[str, Any]:
    table = tablelog.create_table(
        warehouse, f"db.{name}", SCHEMA, primary_key=["id"], bucket=2,
        options={"log.system": "filesystem", "num-sorted-run.compaction-trigger": str(trigger)},
    )
    rng = random.Random(7)
    window = max(commits // 10, 1)
    latencies: list[float] = []
    reads: dict[str, float] = {}
    with table.writer() as writer:
        writer.write([{"id": k, "v": "first-" + "x" * 40, "x": 0.0} for k in range(KEYS)])
        writer.commit()
        for i in range(commits):
            batch = [{"id": rng.randrange(KEYS), "v": f"c{i}-" + "x" * 40, "x": float(i)} for _ in range(rows)]
            started = time.perf_counter()
            writer.write(batch)
            writer.commit()
            latencies.append(time.perf_counter() - started)
            if i + 1 == window:
                reads["first"] = read_time(table)
    reads["last"] = read_time(table)
    latest = table.store.latest_snapshot()
    assert latest is not None
    files = sum(len(b.files) for b in table.store.compactions().bucket_files(latest.id))
    from pypaimon.manifest.manifest_list_manager import (
        ManifestListManager,  # the bench may look inside
    )

    manifests = len(ManifestListManager(table.store.paimon).read_all(table.store.paimon.snapshot_manager()
                                                                      .get_latest_snapshot()))
    kinds = [s.commit_kind for s in table.snapshots()]
    return {
        "variant": name,
        "commit_ms_first": 1000 * statistics.median(latencies[:window]),
        "commit_ms_last": 1000 * statistics.median(latencies[-window:]),
        "read_ms_first": 1000 * reads["first"],
        "read_ms_last": 1000 * reads["last"],
        "data_files": files,
        "manifests": manifests,
        "compactions": kinds.count("COMPACT"),
    }


def main(argv: list[str]) -> None:
    commits = int(argv[0]) if argv else 600
    rows = int(argv[1]) if len(argv) > 1 else 20
    with tempfile.TemporaryDirectory(prefix="long-run-") as warehouse:
        results = [run(warehouse, "compaction", 5, commits, rows), run(warehouse, "none", 10**9, commits, rows)]
    print(json.dumps(results, indent=2))
    print(f"\n{commits} commits of {rows} rows, bucket 2")
    print(f"{'variant':<12}{'commit ms first':>17}{'last':>8}{'read ms first':>15}{'last':>8}"
          f"{'files':>7}{'manifests':>11}{'compactions':>13}")
    for r in results:
        print(f"{r['variant']:<12}{r['commit_ms_first']:>17.1f}{r['commit_ms_last']:>8.1f}"
              f"{r['read_ms_first']:>15.1f}{r['read_ms_last']:>8.1f}{r['data_files']:>7}{r['manifests']:>11}"
              f"{r['compactions']:>13}")


if __name__ == "__main__":
    main(sys.argv[1:])
