"""Expiry of many snapshots: a table of its own (primary key, 2 buckets) grown by tiny
commits of a ``Writer`` (10 rows each; its background compaction adds ``COMPACT``
snapshots and leaves rewritten files for expiry to delete) until it has ``snapshots``
snapshots, then one ``tablelog expire`` in a child process that keeps only the latest.

On an object store the table is grown on local disk and its files uploaded (a table's
files name no warehouse: the same table, there): ten thousand commits to SeaweedFS on
this machine take about half an hour, which measures the commits, not the expiry."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import tablelog
from bench.scale.data import SCHEMA, RowSource
from bench.scale.jobs import expire

ROWS_PER_COMMIT = 10
TABLE = "bench.expiry"


def measure(warehouse: str, options: Mapping[str, str], snapshots: int, log: Callable[[str], None],
            requests: Any = None, *, stage: Path | None = None, upload: Callable[[Path], int] | None = None,
            ) -> dict[str, Any]:
    """Grow, then expire; ``requests``: the S3 request counter (None: not counted);
    ``upload`` (an object store's): the table is grown in ``stage``, then uploaded."""
    staged = upload is not None and stage is not None
    grow_in = str(stage) if staged else warehouse
    table = tablelog.create_table(grow_in, TABLE, SCHEMA, primary_key=["id"], bucket=2,
                                  options={"log.system": "none", **({} if staged else options)})
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
    uploaded = None
    if staged:
        assert upload is not None and stage is not None
        began = time.perf_counter()
        uploaded = {"files": upload(stage), "seconds": time.perf_counter() - began}
        log(f"    expiry table: {uploaded['files']:,} files uploaded ({uploaded['seconds']:.0f} s)")
    before = requests.counts() if requests else None
    result = expire(warehouse, TABLE, options)
    if requests and before is not None:
        after = requests.counts()
        result["s3_requests"] = {f"{op} {area}": n for (op, area), n in sorted((after - before).items())}
    # the latest snapshot at the expiry: a background compaction may have followed the last commit
    result.update({"snapshots": result["latest"], "commits": commits, "grow_seconds": grow_s,
                   "grown_on": "local disk, uploaded" if staged else "the warehouse", "uploaded": uploaded})
    return result
