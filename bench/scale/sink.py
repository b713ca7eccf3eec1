"""The table grown through the Spark sink, and the windows of micro-batches measured with
compaction in the background against compaction off.

Each query reads new parquet files as a stream (``FILES_PER_BATCH`` files a micro-batch,
one Spark task each), writes them with ``writeStream.format("tablelog")`` to the existing
table and ends when the files are read (``trigger(availableNow=True)``). Every query
names ``write-only`` itself, ``true`` (compaction off: nothing compacts) or ``false``
(the committing process's maintainer compacts after commits): the option is a runtime
one, and a table created by a sink query would keep the first query's value.
"""

from __future__ import annotations

import datetime
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.common import unique
from bench.scale.data import SCHEMA_DDL, RowSource, write_batch_files
from bench.scale.schedule import OFF, percentile

#: Parquet files a micro-batch (one Spark task each, on ``local[2]``'s two cores).
FILES_PER_BATCH = 2
#: The micro-batches a growth query writes at most (its input files are made first).
GROWTH_BATCHES_PER_QUERY = 20


class Sink:
    """Queries of one Spark session into one table; ``options``: its connection options."""

    def __init__(self, spark: Any, work: Path, warehouse: str, table: str, options: Mapping[str, str],
                 rows: RowSource) -> None:
        self.spark, self.work, self.warehouse, self.table = spark, work, warehouse, table
        self.options = dict(options)
        self.rows = rows

    def run(self, batches: list[tuple[int, int]], write_only: bool) -> list[dict[str, Any]]:
        """One query of ``batches`` ((new keys, updates) each); returns its progress
        reports: batch id, input rows, durations (ms) and start (``time.time()`` seconds) of
        the micro-batches that read rows."""
        inputs = self.work / unique("in")
        inputs.mkdir(parents=True)
        number = 0
        for new, updates in batches:
            number = write_batch_files(self.rows.batch(new, updates), inputs, number, FILES_PER_BATCH)
        checkpoint = self.work / unique("ckpt")
        writer = (self.spark.readStream.schema(SCHEMA_DDL).option("maxFilesPerTrigger", FILES_PER_BATCH)
                  .parquet(str(inputs)).writeStream.format("tablelog")
                  .option("warehouse", self.warehouse).option("table", self.table)
                  .option("checkpointLocation", str(checkpoint))
                  .option("write-only", "true" if write_only else "false"))
        for key, value in self.options.items():
            writer = writer.option(key, value)
        try:
            query = writer.trigger(availableNow=True).start()
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"the sink query failed: {query.exception()}")
            progress = [{"batch": p.batchId, "rows": p.numInputRows, "ms": dict(p.durationMs),
                         "start": _epoch(p.timestamp)} for p in query.recentProgress if p.numInputRows]
        finally:
            shutil.rmtree(inputs, ignore_errors=True)
            shutil.rmtree(checkpoint, ignore_errors=True)
        if len(progress) != len(batches):
            raise RuntimeError(f"the sink query ran {len(progress)} micro-batches with rows, not {len(batches)}: "
                               "raise spark.sql.streaming.numRecentProgressUpdates or check the input files")
        return progress

    def grow(self, batches: list[tuple[int, int]], log: Callable[[str], None]) -> dict[str, Any]:
        """Write ``batches`` with compaction in the background, in queries of at most
        :data:`GROWTH_BATCHES_PER_QUERY`; rows and seconds."""
        began = time.perf_counter()
        rows = 0
        for start in range(0, len(batches), GROWTH_BATCHES_PER_QUERY):
            progress = self.run(batches[start:start + GROWTH_BATCHES_PER_QUERY], write_only=False)
            rows += sum(p["rows"] for p in progress)
            log(f"    grown to {self.rows.keys:,} keys ({rows:,} rows written, {time.perf_counter() - began:.0f} s)")
        return {"rows_written": rows, "seconds": time.perf_counter() - began, "micro_batches": len(batches)}


def _epoch(timestamp: str) -> float:
    """A progress report's ``timestamp`` (ISO 8601, UTC) as ``time.time()`` seconds."""
    return datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def window_figures(mode: str, progress: list[dict[str, Any]], keys_at_start: int) -> dict[str, Any]:
    """A window's figures from its micro-batches, the first left out (a query's first
    micro-batch also plans the query)."""
    measured = progress[1:]
    durations = [p["ms"].get("triggerExecution", 0) for p in measured]
    rows = sum(p["rows"] for p in measured)
    return {
        "mode": mode, "keys_at_start": keys_at_start, "micro_batches": len(measured),
        "durations_ms": durations, "rows": rows,
        "rows_per_s": rows / (sum(durations) / 1000) if durations and sum(durations) else None,
        "first_batch_ms": progress[0]["ms"].get("triggerExecution") if progress else None,
        "add_batch_ms": [p["ms"].get("addBatch", 0) for p in measured],
    }


def mode_summary(windows: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """One mode's micro-batches over all its windows at a checkpoint."""
    mine = [w for w in windows if w["mode"] == mode]
    durations = [d for w in mine for d in w["durations_ms"]]
    rows = sum(w["rows"] for w in mine)
    return {
        "micro_batches": len(durations),
        "rows_per_s": rows / (sum(durations) / 1000) if durations and sum(durations) else None,
        "p50_ms": percentile(durations, 50), "p99_ms": percentile(durations, 99),
        "max_ms": max(durations, default=None),
        "compactions": sum(w.get("compactions", 0) for w in mine),
        "write_only": mode == OFF,
    }
