"""Expiry of many snapshots: a table of its own (primary key, 2 buckets) grown by tiny
commits of a ``Writer`` (10 rows each; its background compaction adds ``COMPACT``
snapshots and leaves rewritten files for expiry to delete) until it has ``snapshots``
snapshots, then one ``tablelog expire`` in a child process that keeps only the latest."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import tablelog
from bench.scale.data import SCHEMA, RowSource
from bench.scale.jobs import expire

ROWS_PER_COMMIT = 10
TABLE = "bench.expiry"


def measure(warehouse: str, options: Mapping[str, str], snapshots: int, log: Callable[[str], None],
            requests: Any = None) -> dict[str, Any]:
    """Grow, then expire; ``requests``: the S3 request counter (None: not counted)."""
    table = tablelog.create_table(warehouse, TABLE, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "none", **options})
    rows = RowSource(seed=10)
    began = time.perf_counter()
    commits = 0
    latest = 0
    with table.writer() as writer:
        while latest < snapshots:
            writer.write(rows.batch(ROWS_PER_COMMIT, 2))
            latest = writer.commit().snapshot_id or latest
            commits += 1
            if commits % 1000 == 0:
                log(f"    expiry table: {latest:,} snapshots ({time.perf_counter() - began:.0f} s)")
    grow_s = time.perf_counter() - began
    before = requests.counts() if requests else None
    result = expire(warehouse, TABLE, options)
    if requests and before is not None:
        after = requests.counts()
        result["s3_requests"] = {f"{op} {area}": n for (op, area), n in sorted((after - before).items())}
    # the latest snapshot at the expiry: a background compaction may have followed the last commit
    result.update({"snapshots": result["latest"], "commits": commits, "grow_seconds": grow_s})
    return result
