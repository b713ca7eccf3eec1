"""A dedicated maintenance job: ``tablelog compact DB.NAME --follow``.

For tables whose writers leave maintenance alone (``write-only``, Paimon's option: they
neither compact nor expire), or whose writers are short-lived, one process follows the
table, as Paimon's dedicated compaction job does. Each round:

1. reads the snapshots committed since the last round and, from their delta manifests,
   the (partition, bucket) pairs they added files to (Java's and Flink's writers' too);
   the first round takes every pair;
2. compacts those pairs, ``threads`` at once (the runs Paimon's universal compaction
   picks past ``num-sorted-run.compaction-trigger``; ``full``: every run of each) in one
   ``COMPACT`` snapshot, a pair that lost a race to another compaction dropped alone
   (:mod:`tablelog.commit.compaction_commit`);
3. expires snapshots and partitions as the table's options say;
4. sleeps ``interval``.

``stop`` (the CLI sets it on SIGTERM or SIGINT) is checked between steps and between
pairs: a compaction stopped before its commit deletes its new files and commits nothing;
a commit in progress finishes. A round that fails is logged and the next one tries the
same snapshots again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tablelog import partition_expiry
from tablelog.commit.compaction import DEFAULT_THREADS, Pair, compact
from tablelog.errors import OptionError
from tablelog.expiry import expire_if_due

if TYPE_CHECKING:
    from tablelog.table_view import TableView

log = logging.getLogger("tablelog.compaction_job")


def changed_pairs(table: TableView, after: int, upto: int) -> set[Pair] | None:
    """The pairs the snapshots ``after < id <= upto`` added files to, compactions'
    aside (they leave fewer runs, not more); None when one of them has expired (then
    every pair may have changed)."""
    operations = table.files.compactions()
    pairs: set[Pair] = set()
    for snapshot_id in range(after + 1, upto + 1):
        changed = operations.snapshot_pairs(snapshot_id)
        if changed is None:
            return None
        if changed.commit_kind != "COMPACT":
            pairs |= changed.added
    return pairs


def follow(
    table: TableView, stop: threading.Event, *, interval_s: float = 10.0, full: bool = False,
    buckets: Collection[int] | None = None, partitions: Sequence[Mapping[str, Any]] | None = None,
    report: Callable[[str], None] = print, threads: int = DEFAULT_THREADS,
) -> None:
    """Run rounds (see the module docstring) until ``stop`` is set; ``report`` gets a
    line for each thing a round did; ``threads``: pairs rewritten at once."""
    seen: int | None = None  # the snapshot up to which the pairs were taken
    while not stop.is_set():
        try:
            seen = _round(table, stop, seen, full, buckets, partitions, report, threads)
        except OptionError:
            raise  # a bucket or partition column the table does not have: every round would fail
        except Exception as err:  # noqa: BLE001 -- the job goes on; the next round tries again
            log.warning("table %r: a compaction round failed (the next one tries again): %s: %s",
                        table.identifier, type(err).__name__, err)
            report(f"table {table.identifier}: round failed: {type(err).__name__}: {err}")
        stop.wait(interval_s)


def _round(
    table: TableView, stop: threading.Event, seen: int | None, full: bool, buckets: Collection[int] | None,
    partitions: Sequence[Mapping[str, Any]] | None, report: Callable[[str], None], threads: int,
) -> int | None:
    table.refresh_schema()
    latest = table.files.latest_snapshot()
    if latest is None or latest.id == seen:
        return seen
    pairs = None if seen is None else changed_pairs(table, seen, latest.id)
    if pairs is None or pairs:
        result = compact(table, buckets, partitions=partitions, pairs=pairs, automatic=not full,
                         cancelled=stop.is_set, threads=threads)
        if result.snapshot_id is not None or result.dropped:
            report(result.summary())
    if stop.is_set():
        return seen  # what was not compacted is taken again by the next run of the job
    expired = expire_if_due(table, latest.id)
    if expired is not None and expired.expired.snapshots:
        report(f"table {table.identifier}: expired snapshots {expired.expired.snapshots[0]}.."
               f"{expired.expired.snapshots[-1]}")
    if not stop.is_set():
        dropped = partition_expiry.expire_partitions_after_commit(table, by_writer=False)
        for partition, rows, snapshot_id in dropped.dropped if dropped is not None else ():
            report(f"table {table.identifier}: partition {partition} expired ({rows} rows) in snapshot {snapshot_id}")
    return latest.id
