"""Partition expiry with Paimon's options (``partition.expiration-time``, its ``values-time``
strategy: a partition's time comes from its values, :mod:`tablelog.partition_time`).

A partition whose time is older than ``partition.expiration-time`` is dropped in a
snapshot of its own, committed by the writer ``tablelog-partition-expiry`` through the
ordinary commit (one snapshot per partition):

- the table files: Paimon's overwrite of the partition with no files (an ``OVERWRITE``
  snapshot), as Paimon's own partition expiry commits it: every Paimon reader stops
  seeing the partition;
- the log: a ``-D`` record of every row the partition held, in the snapshot's
  log-commit record like any write's. Readers (transactional and eventual, hybrid,
  ``tail``, Spark) see the drop as those deletes; ``verify`` replays them and finds
  the table consistent.

The rows are read at the latest snapshot; the drop is refused (and tried again at the
next check) when another commit wrote to the partition since, so the log never retracts
fewer rows than the table drops. It runs after a commit, at most once per
``partition.expiration-check-interval`` in a process (as Paimon checks per writer), and
from :meth:`tablelog.Table.expire_partitions` / ``tablelog expire --partitions``.
"""

from __future__ import annotations

import datetime
import logging
import time
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit import committer, history
from tablelog.definition import check_partition_expiry
from tablelog.errors import OptionError
from tablelog.partition_time import partition_time
from tablelog.store import PartitionDrop
from tablelog.writing.write_task import WriteTask

if TYPE_CHECKING:
    from tablelog.table_view import TableView

log = logging.getLogger("tablelog.partition_expiry")

#: The writer id of partition drops (its commit identifiers count them).
EXPIRY_WRITER = "tablelog-partition-expiry"


@attrs.frozen
class PartitionExpiryResult:
    """What one run dropped (or, with ``dry_run``, would drop)."""

    #: Each dropped partition (values by partition column) with its rows and its snapshot.
    dropped: tuple[tuple[dict[str, Any], int, int | None], ...] = ()
    dry_run: bool = False


def expired_partitions(table: TableView, now_millis: int) -> list[dict[str, Any]]:
    """The partitions of the latest snapshot whose time is older than the expiration time."""
    options, store = table.options, table.files
    lifetime = options.partition_expiration_time
    latest = store.latest_snapshot()
    if lifetime is None or latest is None or not store.partition_keys:
        return []
    cutoff = datetime.datetime.fromtimestamp(now_millis / 1000) - lifetime
    expired = []
    for partition in store.partitions(latest.id):
        when = partition_time(partition, store.partition_keys, options.partition_timestamp_pattern,
                              options.partition_timestamp_formatter)
        if when is None:
            log.warning("table %r: partition %s has no time tablelog can read (partition.timestamp-pattern, "
                        "partition.timestamp-formatter); it does not expire", table.identifier, partition)
        elif when < cutoff:
            expired.append(partition)
    return expired


def expire_partitions(table: TableView, *, dry_run: bool = False, now_millis: int | None = None) -> PartitionExpiryResult:
    """Drop every expired partition (see the module docstring)."""
    if table.options.partition_expiration_time is None:
        raise OptionError(
            f"table {table.identifier!r} sets no partition.expiration-time: no partition expires"
        )
    check_partition_expiry(table.options)  # given when the table was opened, not created
    now = int(time.time() * 1000) if now_millis is None else now_millis
    expired = expired_partitions(table, now)
    if dry_run:
        return PartitionExpiryResult(tuple((p, 0, None) for p in expired), dry_run=True)
    return PartitionExpiryResult(tuple(_drop(table, partition) for partition in expired))


def _drop(table: TableView, partition: dict[str, Any]) -> tuple[dict[str, Any], int, int | None]:
    store = table.files
    latest = store.latest_snapshot()
    assert latest is not None  # the partition was found in it
    rows = store.read_rows(latest.id, None, table.schema_id, partitions=[partition])
    commit_identifier = (history.last_commit_identifier(store, EXPIRY_WRITER) or 0) + 1
    task = WriteTask(table, EXPIRY_WRITER, commit_identifier, task="expiry")
    try:
        task.drop_partition(PartitionDrop(tuple(partition.items()), latest.id), rows)
        receipt = task.finish()
    except BaseException:
        task.abort()
        raise
    result = committer.commit(table, EXPIRY_WRITER, commit_identifier, [receipt])
    log.info("table %r: partition %s expired: %d row(s) dropped in snapshot %s", table.identifier, partition,
             rows.num_rows, result.snapshot_id)
    return partition, rows.num_rows, result.snapshot_id if result.committed else None


#: When this process last looked for expired partitions, by table directory.
_LAST_CHECK: dict[str, float] = {}


def expire_partitions_after_commit(table: TableView, *, by_writer: bool = True) -> PartitionExpiryResult | None:
    """Partition expiry after a successful commit, at most once per check interval in this
    process; never raises (the commit has happened): an error is logged, a later check
    tries again. ``by_writer``: after a writer's commit, skipped with ``write-only`` (as
    Paimon's writers skip it); False: a dedicated job's (``tablelog compact --follow``)."""
    options = table.options
    if options.partition_expiration_time is None or (by_writer and options.write_only):
        return None
    now = time.monotonic()
    last = _LAST_CHECK.get(table.files.path)
    if last is not None and now - last < options.partition_expiration_check_interval.total_seconds():
        return None
    _LAST_CHECK[table.files.path] = now  # first: a failing run is not retried at every commit
    try:
        return expire_partitions(table)
    except Exception as err:  # any failure: the commit stands, a later check retries
        log.warning(
            "table %r: partition expiry after the commit failed (%s: %s); the commit is done, and the "
            "next check (or `tablelog expire --partitions`) tries again", table.identifier, type(err).__name__, err,
        )
        return None
