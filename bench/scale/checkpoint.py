"""What ``python -m bench.scale`` measures at one checkpoint (a table size), one
measurement after the other, on one backend."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from bench.scale import jobs
from bench.scale.data import PARTITIONS
from bench.scale.runs import catch_up, partition_file_rows, settle, table_files
from bench.scale.schedule import BACKGROUND, OFF, keys_in_partition
from bench.scale.sink import Sink, mode_summary, window_figures


@attrs.frozen
class Backend:
    """One warehouse of the benchmark's table: where, the options the sink and the jobs
    connect with (``sink_options`` through the S3 request counter, if any), the pypaimon
    catalog options the file listings use, and the counter
    (:class:`~bench.scale.s3_counter.S3RequestCounter`; None: not counted)."""

    name: str
    warehouse: str
    #: Where the expiry measurement's table goes (a warehouse of its own).
    expiry_warehouse: str
    table: str
    options: Mapping[str, str]
    sink_options: Mapping[str, str]
    catalog_options: Mapping[str, str]
    requests: Any = None
    #: Copies a local warehouse's files to :attr:`expiry_warehouse` (None: the backend is
    #: local): an object store's expiry table is grown on local disk, then uploaded.
    upload_expiry: Callable[[Path], int] | None = None


def wait_quiet(backend: Backend, table: Any) -> dict[str, Any]:
    return settle(table, backend.warehouse, backend.table, backend.catalog_options)


def _latest_id(table: Any) -> int:
    latest = next(iter(table.snapshots(newest_first=True)), None)
    return 0 if latest is None else latest.id


def _compactions_since(table: Any, snapshot_id: int) -> int:
    count = 0
    for snapshot in table.snapshots(newest_first=True):
        if snapshot.id <= snapshot_id:
            break
        count += snapshot.commit_kind == "COMPACT"
    return count


def _request_figures(counts: Counter[tuple[str, str]], batches: int) -> dict[str, Any]:
    """S3 requests per micro-batch: all, those of the table's data files (the tasks'
    writes, a compaction's reads and writes), the rest (the commit's snapshot, manifests,
    schema, hints: the metadata), and each (operation, area)."""
    total = sum(counts.values())
    data = sum(n for (_, area), n in counts.items() if area == "data")
    return {"micro_batches": batches, "all": total / batches, "data_files": data / batches,
            "metadata": (total - data) / batches,
            "by_kind": {f"{op} {area}": n / batches for (op, area), n in sorted(counts.items())}}


def window_requests(counter: Any, progress: list[dict[str, Any]], window_counts: Counter[tuple[str, str]]) -> dict[str, Any]:
    """A window's S3 requests: ``in_batches``, those that arrived while a measured
    micro-batch ran (its tasks' writes and its commit), per micro-batch; ``window``,
    every request of the window's query (its start, and a background compaction between
    micro-batches too) per micro-batch."""
    in_batches: Counter[tuple[str, str]] = Counter()
    for p in progress[1:]:
        in_batches += counter.between(p["start"], p["start"] + p["ms"].get("triggerExecution", 0) / 1000)
    return {"in_batches": _request_figures(in_batches, max(1, len(progress) - 1)),
            "window": _request_figures(window_counts, len(progress)),
            "counts_in_batches": {f"{op} {area}": n for (op, area), n in in_batches.items()},
            "counts_window": {f"{op} {area}": n for (op, area), n in window_counts.items()},
            "measured_batches": len(progress) - 1, "micro_batches": len(progress)}


def sink_windows(sink: Sink, backend: Backend, table: Any, order: list[str], batches_per_window: int,
                 batch_rows: int, update_fraction: float, log: Callable[[str], None]) -> dict[str, Any]:
    """The windows of micro-batches, compaction off and in the background alternately, at
    about the same table size (a window with compaction off waits for the background
    compaction before it to end; one in the background starts where a sink compacting in
    the background all along would be: :func:`~bench.scale.runs.catch_up`)."""
    new = round(batch_rows * (1 - update_fraction))
    windows = []
    for mode in order:
        waited = wait_quiet(backend, table) if mode == OFF else None
        caught_up = catch_up(table) if mode == BACKGROUND else None
        before_id = _latest_id(table)
        before_requests = backend.requests.counts() if backend.requests else None
        keys = sink.rows.keys
        progress = sink.run([(new, batch_rows - new)] * batches_per_window, write_only=mode == OFF)
        window = window_figures(mode, progress, keys)
        window["compactions"] = _compactions_since(table, before_id)
        window["settled_before"] = waited
        window["caught_up_before"] = caught_up
        if backend.requests and before_requests is not None:
            window["s3_requests"] = window_requests(backend.requests, progress, backend.requests.counts() - before_requests)
        log(f"    window {mode}: {window['rows_per_s'] or 0:,.0f} rows/s, micro-batches "
            f"{min(window['durations_ms'], default=0)}-{max(window['durations_ms'], default=0)} ms, "
            f"{window['compactions']} compaction(s)")
        windows.append(window)
    out: dict[str, Any] = {"windows": windows, OFF: mode_summary(windows, OFF), BACKGROUND: mode_summary(windows, BACKGROUND)}
    off_p99, background_p99 = out[OFF]["p99_ms"], out[BACKGROUND]["p99_ms"]
    out["p99_background_over_off"] = background_p99 / off_p99 if off_p99 else None
    if backend.requests:
        out["s3_requests"] = {mode: _mode_requests([w for w in windows if w["mode"] == mode]) for mode in (OFF, BACKGROUND)}
    return out


def _mode_requests(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's S3 requests per micro-batch over its windows (as :func:`window_requests`)."""
    out = {}
    for part, batches in (("in_batches", "measured_batches"), ("window", "micro_batches")):
        totals: Counter[tuple[str, str]] = Counter()
        for w in windows:
            totals.update({tuple(key.split(" ", 1)): n for key, n in w["s3_requests"][f"counts_{part}"].items()})
        out[part] = _request_figures(totals, max(1, sum(w["s3_requests"][batches] for w in windows)))
    return out


def scan(backend: Backend, keys: int) -> dict[str, Any]:
    got = jobs.spark_job({"job": "scan", "warehouse": backend.warehouse, "table": backend.table,
                          "options": dict(backend.options), "master": "local[2]"})
    got.update({"rows": keys, "rows_per_s": keys / got["seconds"]})
    return got


def compact(backend: Backend, keys: int, partition: int, threads: int | None = None) -> dict[str, Any]:
    """A full compaction of table partition ``p = partition`` by ``tablelog compact``
    (``threads``: its ``--threads``; None: its default)."""
    read = partition_file_rows(backend.warehouse, backend.table, backend.catalog_options, partition)
    got = jobs.compact_partition(backend.warehouse, backend.table, backend.options, partition, threads)
    rows = keys_in_partition(keys, partition, PARTITIONS)
    got.update({"partition": partition, "threads": threads, "rows": rows, "file_rows_read": read,
                "rows_per_s": rows / got["seconds"], "file_rows_per_s": read / got["seconds"]})
    # the compaction's own time (its summary's "in N s"): the process's less its start-up
    took = re.search(r" in ([0-9.]+) s", got["summary"])
    got["compaction_seconds"] = float(took.group(1)) if took else None
    got["compaction_rows_per_s"] = rows / got["compaction_seconds"] if got["compaction_seconds"] else None
    return got


def spark_compact(backend: Backend, keys: int, partition: int, cores: int) -> dict[str, Any]:
    """``tablelog.spark.compact`` of table partition ``p = partition`` on ``local[cores]``."""
    read = partition_file_rows(backend.warehouse, backend.table, backend.catalog_options, partition)
    got = jobs.spark_job({"job": "compact", "warehouse": backend.warehouse, "table": backend.table,
                          "options": dict(backend.options), "master": f"local[{cores}]", "partition": partition})
    rows = keys_in_partition(keys, partition, PARTITIONS)
    got.update({"partition": partition, "cores": cores, "rows": rows, "file_rows_read": read,
                "rows_per_s": rows / got["seconds"], "file_rows_per_s": read / got["seconds"]})
    return got


def files(backend: Backend) -> dict[str, Any]:
    return table_files(backend.warehouse, backend.table, backend.catalog_options)
