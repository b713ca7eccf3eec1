"""Shared helpers: test data, tables, timing and statistics."""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

import tablelog
from tablelog.commit import WriteReceipt
from tablelog.logs.pool import LogPool
from tablelog.table import Table
from tablelog.writing.routing import partition_order
from tablelog.writing.write_task import WriteTask

#: Rows per Arrow batch handed to the writer (what a Spark task hands over per Arrow batch).
ARROW_BATCH = 10_000

SCHEMA = pa.schema([("id", pa.int64()), ("seq", pa.int64()), ("payload", pa.string())])


def envelope_overhead() -> int:
    """Bytes of a Debezium-json value around its payload string (ids of 7 digits)."""
    return 90


def cache_bytecode() -> str | None:
    """Let this process and the processes it starts (Spark's JVM, its Python planner and
    workers) write compiled bytecode, as a pip-installed environment has it. With
    ``PYTHONDONTWRITEBYTECODE`` set and an installer that does not compile (uv), every
    fresh Python process compiles pyspark, pyarrow and the rest from source, and a
    query's start-up measures that rather than the library. Returns a note to print when
    the variable was set."""
    import sys

    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return None
    sys.dont_write_bytecode = False
    return "PYTHONDONTWRITEBYTECODE was set: unset for this run, so that processes reuse compiled bytecode"


def make_rows(n: int, record_bytes: int, start: int = 1_000_000) -> pa.Table:
    """``n`` rows whose Debezium-json value is about ``record_bytes`` long."""
    payload_len = max(1, record_bytes - envelope_overhead())
    base = ("x" * payload_len)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "seq": pa.array(range(n), pa.int64()),
            "payload": pa.array([base] * n, pa.string()),
        },
        schema=SCHEMA,
    )


def batches(rows: pa.Table, size: int = ARROW_BATCH) -> list[pa.Table]:
    return [rows.slice(i, size) for i in range(0, rows.num_rows, size)]


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def create_table(warehouse: str, partitions: int, options: dict[str, Any]) -> Table:
    return tablelog.create_table(
        warehouse, f"bench.{unique('t')}", SCHEMA, primary_key=["id"], bucket=partitions,
        options=options,
    )


class NoPaimon:
    """Stands in for the data file lane of a WriteTask (:class:`tablelog.writing.files_lane.FilesLane`):
    the log path alone is measured."""

    def write(self, data: pa.Table, kinds: Any, spans: Any = None) -> None:
        pass

    def prepare(self) -> None:
        pass

    def prepared(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


def write_log_path(table: Table, parts: Sequence[pa.Table]) -> tuple[float, WriteReceipt]:
    """The writer's log path: WriteTask.write (validate, encode, route, produce) for every
    Arrow batch, then finish() (flush: every record acknowledged). Paimon stubbed out.

    Warm, as in a Spark worker or a Writer after its first commit: the log connection
    comes from a pool that a first task (100 rows, not timed) opened. A new idempotent
    Kafka producer's start-up (0.05 s, or 0.5 s when librdkafka's producer-id request
    races its bootstrap connection) is not per-record work; the raw producers are
    warmed up the same way."""
    pool = LogPool()
    task = warm_log_task(table, parts, pool)
    began = time.perf_counter()
    for part in parts:
        task.write(part)
    receipt = task.finish()
    elapsed = time.perf_counter() - began
    pool.close()
    return elapsed, receipt


def warm_log_task(table: Table, parts: Sequence[pa.Table], pool: LogPool) -> WriteTask:
    """A write task with Paimon stubbed out whose log connection ``pool`` already
    opened for a first, finished task of 100 rows (rows of every partition: each
    producer started)."""
    warm_up = table.write_task(unique("w"), 1, log_pool=pool)
    warm_up._paimon_write = NoPaimon()
    warm_up.write(parts[0].slice(0, 100))
    warm_up.finish()
    task = table.write_task(unique("w"), 1, log_pool=pool)
    task._paimon_write = NoPaimon()
    return task


def write_full(table: Table, parts: Sequence[pa.Table], commit: bool = True) -> tuple[float, WriteReceipt]:
    """The whole writer: Paimon data files and the log, until finish(); then commit (untimed)."""
    writer_id = unique("w")
    task = table.write_task(writer_id, 1)
    began = time.perf_counter()
    for part in parts:
        task.write(part)
    receipt = task.finish()
    elapsed = time.perf_counter() - began
    if commit:
        table.commit(writer_id, 1, [receipt])
    return elapsed, receipt


def encoded_records(table: Table, rows: pa.Table) -> dict[int, tuple[list[bytes | None], list[bytes]]]:
    """The exact keys and values tablelog writes, per partition: what the raw clients send."""
    from tablelog.table import internals
    from tablelog.writing import inputs

    view = internals(table)
    arrow, kinds = inputs.prepare(rows, view.codec.schema, view.primary_key)
    order, groups = partition_order(view.files, arrow, view.log_partitions)  # what the writer routes by
    if order is not None:
        arrow = arrow.take(order)
        kinds = [kinds[i] for i in order.tolist()]
    encoded = view.codec.encode_partitions(arrow, kinds, groups, int(time.time() * 1000),
                                           view.options.log_max_record_bytes, lambda row: row)
    return {partition: (list(keys), list(values)) for partition, keys, values in encoded}


def read_transactional(table: Table, total: int, consistency: str = "transactional", arrow: bool = False) -> float:
    """Seconds to read ``total`` changes from the earliest snapshot with ``poll`` (or,
    with ``arrow``, ``poll_arrow``: the changes as Arrow tables). The reader opts in to
    ``log.reader.pause-gc``, as a reader tuned for throughput does (``python -m
    bench.reader_costs`` measures the default against it)."""
    reader = table.reader(consistency=consistency, scan_mode="earliest", options={"log.reader.pause-gc": "true"})
    poll = reader.poll_arrow if arrow else reader.poll
    seen = 0
    began = time.perf_counter()
    deadline = time.monotonic() + 120
    while seen < total:
        seen += len(poll(max_records=10_000, timeout_s=1.0))
        if time.monotonic() > deadline:
            raise RuntimeError(f"reader got {seen} of {total}")
    elapsed = time.perf_counter() - began
    reader.close()
    assert seen == total, (seen, total)
    return elapsed


def stats(values: Sequence[float]) -> dict[str, Any]:
    """Median, min, max of the runs that completed (a failed run is NaN, kept in ``runs``)."""
    vals = [v for v in values if v == v]
    if not vals:
        nan = float("nan")
        return {"median": nan, "min": nan, "max": nan, "runs": list(values)}
    return {
        "median": statistics.median(vals),
        "min": min(vals),
        "max": max(vals),
        "runs": list(values),
    }


def rss_mb(pid: int | None = None) -> float:
    import psutil

    return psutil.Process(pid or os.getpid()).memory_info().rss / 2**20


def interleave(round_: int, runs: list[tuple[str, Callable[[], Any]]]) -> list[tuple[str, Any]]:
    """Run A, B, C... rotating the order every round (brokers slow down as they fill)."""
    shift = round_ % len(runs)
    return [(name, fn()) for name, fn in runs[shift:] + runs[:shift]]
