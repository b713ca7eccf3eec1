"""What the table's files look like at a snapshot, read with pypaimon's public scan (not
tablelog's internals, which change under the benchmark): sorted runs per (partition,
bucket), the read amplification a merge read pays, and the live data's rows and bytes.
And :func:`settle`: wait until the background compaction has nothing left to do;
:func:`catch_up`: do now what it would have done during a window with compaction off."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

#: Paimon's default ``num-sorted-run.compaction-trigger`` (the benchmark's tables keep it).
COMPACTION_TRIGGER = 5


def _files_by_pair(warehouse: str, table: str, catalog_options: Mapping[str, str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    from pypaimon import CatalogFactory

    paimon = CatalogFactory.create({"warehouse": warehouse, **catalog_options}).get_table(table)
    pairs: dict[tuple[Any, ...], dict[str, Any]] = {}
    for split in paimon.new_read_builder().new_scan().plan().splits():
        files = pairs.setdefault((tuple(split.partition.values), int(split.bucket)), {})
        for meta in split.files:
            files[meta.file_name] = meta
    return pairs


def sorted_runs(files: Mapping[str, Any]) -> int:
    """A pair's sorted runs: each level-0 file is one, each other level present one."""
    levels = [int(meta.level) for meta in files.values()]
    return sum(1 for level in levels if level == 0) + len({level for level in levels if level > 0})


def table_files(warehouse: str, table: str, catalog_options: Mapping[str, str]) -> dict[str, Any]:
    """Sorted runs per pair (max, median, each), data files, their rows (every version of
    a key a file holds) and bytes, at the latest snapshot."""
    pairs = _files_by_pair(warehouse, table, catalog_options)
    runs = {f"{'/'.join(map(str, partition))}:{bucket}": sorted_runs(files)
            for (partition, bucket), files in sorted(pairs.items())}
    metas = [meta for files in pairs.values() for meta in files.values()]
    return {
        "sorted_runs_max": max(runs.values(), default=0),
        "sorted_runs_median": statistics.median(runs.values()) if runs else 0,
        "sorted_runs": runs,
        "data_files": len(metas),
        "file_rows": sum(int(meta.row_count) for meta in metas),
        "data_bytes": sum(int(meta.file_size) for meta in metas),
    }


def partition_file_rows(warehouse: str, table: str, catalog_options: Mapping[str, str], partition: int) -> int:
    """The rows of one table partition's data files: what a full compaction of it reads."""
    pairs = _files_by_pair(warehouse, table, catalog_options)
    return sum(int(meta.row_count) for (values, _), files in pairs.items() if values == (partition,)
               for meta in files.values())


def background_work(tablelog_table: Any) -> int:
    """The pairs the background compaction would still compact at the latest snapshot:
    those for which Paimon's universal compaction picks runs, as the writers'
    maintainer picks them (:func:`tablelog.commit.compaction.plan_compaction`,
    ``automatic``). A pair may rest at the trigger: the pick needs more runs than that,
    or a size ratio or amplification, so the sorted runs alone cannot say."""
    from tablelog.commit.compaction import plan_compaction
    from tablelog.table import internals

    return len(plan_compaction(internals(tablelog_table), automatic=True).tasks)


def settle(tablelog_table: Any, warehouse: str, table: str, catalog_options: Mapping[str, str],
           timeout_s: float = 900.0, quiet_s: float = 60.0) -> dict[str, Any]:
    """Wait until the background compaction is done: nothing left for it to pick, or no
    new snapshot for ``quiet_s``, or ``timeout_s``. Returns how long it waited and why it
    stopped."""
    began = time.monotonic()
    last_id, last_change = None, began
    while True:
        latest = next(iter(tablelog_table.snapshots(newest_first=True)), None)
        latest_id = None if latest is None else latest.id
        if latest_id != last_id:
            last_id, last_change = latest_id, time.monotonic()
        pending = background_work(tablelog_table)
        now = time.monotonic()
        reason = ("nothing to compact" if pending == 0
                  else "quiet" if now - last_change >= quiet_s
                  else "timeout" if now - began >= timeout_s else None)
        if reason:
            runs = table_files(warehouse, table, catalog_options)["sorted_runs_max"]
            return {"waited_s": round(now - began, 2), "reason": reason, "pairs_pending": pending,
                    "sorted_runs_max": runs}
        time.sleep(1.0)


def catch_up(tablelog_table: Any, most: int = 10) -> dict[str, Any]:
    """Compact as the writers' maintainer would, in this process, until it would pick
    nothing (at most ``most`` compactions): after a window with compaction off, the table
    is then where a sink compacting in the background all along would have left it, and
    the next background window does not pay for the runs the window before it piled up
    (its first compaction would be a large one, running through the whole window).
    Seconds and compactions."""
    from tablelog.commit.compaction import compact
    from tablelog.table import internals

    began = time.monotonic()
    compactions = 0
    while compactions < most and background_work(tablelog_table):
        compact(internals(tablelog_table), automatic=True)
        compactions += 1
    return {"seconds": round(time.monotonic() - began, 2), "compactions": compactions}
