"""The demo pipeline on Spark: a streaming write of inserts, updates and deletes into a
tablelog table (one task attempt dies after producing and is retried: the write goes
through :mod:`tablelog.spark.faults`' source), a streaming read of its changelog printed
live, then verify.

Input is deterministic (the same generator as the pure-Python demo): one JSON file per
writer task and micro-batch, read with ``maxFilesPerTrigger``.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tablelog.commit import log_commits
from tablelog.demo_pipeline import SCHEMA, DemoResult, next_changes
from tablelog.normalize import Normalizer
from tablelog.table import internals
from tablelog.tables import create_table
from tablelog.verify import verify

INPUT_SCHEMA = "order_id long, customer string, amount double, status string, _kind string"
FILES_PER_BATCH = 2
#: Loggers that would print the injected task failure as a Java stack trace.
_QUIET = {
    "org.apache.spark.util.Utils": "off",
    "org.apache.spark.executor.Executor": "off",
    "org.apache.spark.scheduler.TaskSetManager": "off",
    "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask": "off",
}


def write_inputs(directory: str, batches: int, rows: int, seed: int) -> list[int]:
    """The demo's changes as JSON files (two per micro-batch); returns the changes per batch."""
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    live: dict[int, dict[str, Any]] = {}
    sizes = []
    start = time.time() - 10_000
    for b in range(batches):
        changes = next_changes(rng, b, rows, live)
        sizes.append(len(changes))
        for f in range(FILES_PER_BATCH):
            path = os.path.join(directory, f"batch{b:04d}-task{f}.json")
            with open(path, "w") as out:
                for kind, row in changes:
                    if row["order_id"] % FILES_PER_BATCH == f:
                        out.write(json.dumps({**row, "_kind": kind}) + "\n")
            os.utime(path, (start + b * 10 + f, start + b * 10 + f))  # the file source's order
    return sizes


def run_spark_demo(
    warehouse: str | None = None,
    options: dict[str, str] | None = None,
    batches: int = 5,
    rows: int = 200,
    say: Callable[[str], None] = print,
    seed: int = 7,
    master: str = "local[2,2]",
) -> DemoResult:
    from pyspark.sql.streaming import StreamingQueryListener

    from tablelog.spark import faults
    from tablelog.spark.session import local_session

    identifier = f"demo.orders_{int(time.time() * 1000)}"
    options = options or {"log.system": "filesystem"}
    # An empty or unsupported warehouse is an error (create_table says why), not a temporary one.
    table = create_table(tempfile.mkdtemp(prefix="tablelog-demo-") if warehouse is None else warehouse,
                         identifier, SCHEMA, primary_key=["order_id"], bucket=2, options=options)
    warehouse = table.warehouse.path
    work = tempfile.mkdtemp(prefix="tablelog-demo-spark-")
    result = DemoResult(warehouse, identifier)
    say(f"table {identifier} in {warehouse}: log.system={table.options.log_system}, "
        f"topic {table.topic!r}, {table.log_partitions} partitions")
    sizes = write_inputs(os.path.join(work, "input"), batches, rows, seed)
    say(f"input: {sum(sizes)} changes (+I, -U/+U, -D) in {batches} micro-batches of {FILES_PER_BATCH} tasks")
    say(f"starting Spark ({master}) ...")
    started = time.monotonic()
    spark = local_session(master, "tablelog-demo", log_level="ERROR", logger_levels=_QUIET)
    faults.register(spark)  # the write's source: tablelog's, with one task attempt made to fail
    say(f"Spark is up ({time.monotonic() - started:.1f}s)")
    lock = threading.Lock()
    seen: Counter[str] = Counter()
    shown = [0]

    def print_changes(df: Any, batch_id: int) -> None:
        changes = df.collect()
        with lock:
            seen.update(c["_kind"] for c in changes)
            total = sum(seen.values())
        if changes:
            kinds = " ".join(f"{k} {n}" for k, n in sorted(Counter(c["_kind"] for c in changes).items()))
            say(f"  read  micro-batch {batch_id}: {len(changes)} changes ({kinds}); {total} in all")
        for change in changes[: max(0, 6 - shown[0])]:
            shown[0] += 1
            row = {k: v for k, v in change.asDict().items() if k != "_kind"}
            say(f"        {change['_kind']} {row}")

    writer_id: list[str] = []

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryProgress(self, event: Any) -> None:  # noqa: N802
            progress = event.progress
            if writer_id and str(progress.id) == writer_id[0] and progress.numInputRows:
                latest = internals(table).files.latest_snapshot()
                say(f"  write micro-batch {progress.batchId}: {progress.numInputRows} changes committed "
                    f"as snapshot {latest.id if latest else '-'}")

        def onQueryIdle(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
            pass

    listener = Progress()
    spark.streams.addListener(listener)
    try:
        reading = (spark.readStream.format("tablelog").option("warehouse", warehouse)
                   .option("table", identifier).options(**options).load()
                   .writeStream.foreachBatch(print_changes)
                   .option("checkpointLocation", os.path.join(work, "ck-read"))
                   .trigger(processingTime="500 milliseconds").start())
        say("streaming read started (transactional, scan.mode=latest-full)")
        writing = (spark.readStream.schema(INPUT_SCHEMA).option("maxFilesPerTrigger", FILES_PER_BATCH)
                   .json(os.path.join(work, "input"))
                   .writeStream.format(faults.FORMAT).option("warehouse", warehouse).option("table", identifier)
                   .options(**options).option(faults.FAIL_AFTER_FINISH, "1:0")
                   .option("checkpointLocation", os.path.join(work, "ck-write"))
                   .trigger(availableNow=True).start())
        writer_id.append(str(writing.id))
        say(f"streaming write started (query {writing.id}); in micro-batch 1, attempt 0 of task 0 "
            "dies after producing and Spark retries it")
        writing.awaitTermination()
        if writing.exception() is not None:
            raise RuntimeError(f"the streaming write failed: {writing.exception()}")
        result.committed_changes = sum(r.count for _, record in log_commits(internals(table).files) for r in record.ranges)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(seen.values()) < result.committed_changes:
            time.sleep(0.2)
        reading.stop()
    finally:
        spark.streams.removeListener(listener)
        spark.stop()
    result.changes_read = sum(seen.values())
    say(f"streaming read: {result.changes_read} changes read, {result.committed_changes} committed")

    with table.reader(consistency="eventual", scan_mode="earliest") as eventual:
        raw = eventual.read_all(idle_timeout_s=0.5)
    result.uncommitted_records = len(raw) - result.committed_changes
    normalizer = Normalizer(table.primary_key)
    normalizer.apply(raw)
    table_rows = {r["order_id"]: r for r in table.rows().to_pylist()}
    result.normalized_matches_table = {r["order_id"]: dict(r) for r in normalizer.rows()} == table_rows
    say(f"eventual reader: {len(raw)} records ({result.uncommitted_records} from the failed attempt); "
        f"normalized to {len(normalizer.state)} rows, "
        f"{'equal to' if result.normalized_matches_table else 'DIFFERENT from'} the table's {len(table_rows)} rows")
    result.report = verify(table)
    say(result.report.summary())
    return result
