"""What ``python -m bench.scale`` measures at one checkpoint (a table size), one
measurement after the other, on one backend."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from bench.scale import jobs
from bench.scale.data import PARTITIONS
from bench.scale.runs import partition_file_rows, settle, table_files
from bench.scale.schedule import BACKGROUND, OFF, keys_in_partition
from bench.scale.sink import Sink, mode_summary, window_figures


@attrs.frozen
class Backend:
    """One warehouse of the benchmark's table: where, the options the sink and the jobs
    connect with (``sink_options`` through the S3 request counter, if any), and the
    pypaimon catalog options the file listings use."""

    name: str
    warehouse: str
    #: Where the expiry measurement's table goes (a warehouse of its own).
    expiry_warehouse: str
    table: str
    options: Mapping[str, str]
    sink_options: Mapping[str, str]
    catalog_options: Mapping[str, str]
    requests: Callable[[], Counter[tuple[str, str]]] | None = None


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


def _per_batch(counts: Counter[tuple[str, str]], batches: int) -> dict[str, Any]:
    """S3 requests per micro-batch: all, those of the table's data files (the tasks'
    writes, a compaction's reads and writes), the rest (the commit: snapshot, manifests,
    schema, hints), and each (operation, area)."""
    total = sum(counts.values())
    data = sum(n for (_, area), n in counts.items() if area == "data")
    return {"micro_batches": batches, "all": total / batches, "data_files": data / batches,
            "metadata": (total - data) / batches,
            "by_kind": {f"{op} {area}": n / batches for (op, area), n in sorted(counts.items())}}


def sink_windows(sink: Sink, backend: Backend, table: Any, order: list[str], batches_per_window: int,
                 batch_rows: int, update_fraction: float, log: Callable[[str], None]) -> dict[str, Any]:
    """The windows of micro-batches, compaction off and in the background alternately, at
    about the same table size (a window with compaction off waits for the background
    compaction before it to end)."""
    new = round(batch_rows * (1 - update_fraction))
    windows = []
    for mode in order:
        waited = wait_quiet(backend, table) if mode == OFF else None
        before_id = _latest_id(table)
        before_requests = backend.requests() if backend.requests else None
        keys = sink.rows.keys
        progress = sink.run([(new, batch_rows - new)] * batches_per_window, write_only=mode == OFF)
        window = window_figures(mode, progress, keys)
        window["compactions"] = _compactions_since(table, before_id)
        window["settled_before"] = waited
        if backend.requests and before_requests is not None:
            window["s3_requests"] = _per_batch(backend.requests() - before_requests, len(progress))
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
    batches = sum(w["s3_requests"]["micro_batches"] for w in windows)
    totals: Counter[str] = Counter()
    for w in windows:
        for key, per in w["s3_requests"]["by_kind"].items():
            totals[key] += per * w["s3_requests"]["micro_batches"]
    all_ = sum(totals.values())
    data = sum(n for key, n in totals.items() if key.endswith(" data"))
    return {"micro_batches": batches, "all": all_ / batches, "data_files": data / batches,
            "metadata": (all_ - data) / batches, "by_kind": {k: n / batches for k, n in sorted(totals.items())}}


def scan(backend: Backend, keys: int) -> dict[str, Any]:
    got = jobs.spark_job({"job": "scan", "warehouse": backend.warehouse, "table": backend.table,
                          "options": dict(backend.options), "master": "local[2]"})
    got.update({"rows": keys, "rows_per_s": keys / got["seconds"]})
    return got


def compact(backend: Backend, keys: int, partition: int) -> dict[str, Any]:
    """A full compaction of table partition ``p = partition`` by ``tablelog compact``."""
    read = partition_file_rows(backend.warehouse, backend.table, backend.catalog_options, partition)
    got = jobs.compact_partition(backend.warehouse, backend.table, backend.options, partition)
    rows = keys_in_partition(keys, partition, PARTITIONS)
    got.update({"partition": partition, "rows": rows, "file_rows_read": read,
                "rows_per_s": rows / got["seconds"], "file_rows_per_s": read / got["seconds"]})
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
