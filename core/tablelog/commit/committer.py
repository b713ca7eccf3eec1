"""The idempotent commit: receipts of write attempts become one table snapshot that
records, atomically with their data files, where their records are in the log.

Commits are idempotent per (writer id, commit identifier): a replay finds the
snapshot already committed (:func:`tablelog.commit.history.find_commit`) and
commits nothing twice. After the snapshot, the log system's ``commit`` hook runs
(:mod:`tablelog.commit.hook`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tablelog.commit.history import find_commit, last_end_positions
from tablelog.commit.hook import rerun_commit_hook, run_commit_hook
from tablelog.commit.record import CommitResult, LogCommitRecord, WriteReceipt
from tablelog.errors import CommitError
from tablelog.log_pool import release
from tablelog.records import CommittedLog

if TYPE_CHECKING:
    from tablelog.log_pool import LogPool
    from tablelog.registry import LogClient
    from tablelog.store import SnapshotInfo
    from tablelog.table_view import TableView


def commit(
    table: TableView, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
    log_pool: LogPool | None = None,
) -> CommitResult:
    """Commit ``receipts`` as one snapshot, once per (writer_id, commit_identifier)
    (see :meth:`tablelog.table.Table.commit`)."""
    # The check and the commit hold the table's commit lock: two committers of
    # the same identifier (a replay racing the original) cannot both commit.
    with table.store.commit_lock():
        return _commit_once(table, writer_id, commit_identifier, receipts, log_pool)


def _commit_once(
    table: TableView, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
    log_pool: LogPool | None,
) -> CommitResult:
    rows = sum(r.rows for r in receipts)
    ranges = tuple(rng for r in receipts for rng in r.ranges)
    records = sum(r.count for r in ranges)
    existing = find_commit(table.store, writer_id, commit_identifier)
    if existing is not None:
        hook_error = rerun_commit_hook(table, existing, log_pool)
        return CommitResult(existing.id, committed=False, rows=rows, records=records, hook_error=hook_error)
    messages = [m for r in receipts for m in r.paimon_messages]
    if not messages and not ranges:
        return CommitResult(None, committed=True, rows=0, records=0)
    log: LogClient | None = None
    if table.options.log_enabled:
        log = log_pool.checkout(table) if log_pool is not None else table.open_log()
    try:
        record = LogCommitRecord(
            writer=writer_id,
            commit_identifier=commit_identifier,
            system=table.options.log_system,
            topic=table.topic if log is not None else "",
            ranges=ranges,
            end_positions=_end_positions(table, log),
        )
        snapshot = _commit_snapshot(table, writer_id, commit_identifier, messages, record)
    except BaseException:
        release(log, log_pool, reusable=False)
        raise
    hook_error = None
    if log is not None:  # the snapshot is durable: from here on the commit has happened
        committed = CommittedLog(snapshot.id, writer_id, commit_identifier, ranges, record.end_positions)
        hook_error = run_commit_hook(table, log, log_pool, committed)
    return CommitResult(snapshot.id, committed=True, rows=rows, records=records, hook_error=hook_error)


def _commit_snapshot(
    table: TableView, writer_id: str, commit_identifier: int, messages: list[Any], record: LogCommitRecord
) -> SnapshotInfo:
    try:
        table.store.commit(
            messages, commit_user=writer_id, commit_identifier=commit_identifier,
            properties=record.to_properties(),
        )
    except Exception as err:
        raise CommitError(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} failed: {err}"
        ) from err
    snapshot = find_commit(table.store, writer_id, commit_identifier)
    if snapshot is None:
        raise CommitError(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} "
            "produced no snapshot"
        )
    return snapshot


def _end_positions(table: TableView, log: LogClient | None) -> dict[int, int]:
    """The log's end per partition now, after every committed record: where an
    eventual hybrid read of this snapshot continues. Records of other writers'
    attempts may lie before it; readers catch those up when they commit."""
    previous = last_end_positions(table.store)
    if log is None:
        return previous
    ends = log.end_positions(list(range(table.log_partitions)))
    return {p: max(previous.get(p, 0), ends.get(p, 0)) for p in sorted({*previous, *ends})}
