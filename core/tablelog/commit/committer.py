"""The idempotent commit: receipts of write attempts become one table snapshot that
records, atomically with their data files, where their records are in the log.

Commits are idempotent per (writer id, commit identifier): a replay finds the
snapshot already committed (:func:`tablelog.commit.history.find_commit`) and
commits nothing twice. After the snapshot, the log system's ``commit`` hook runs
(:mod:`tablelog.commit.hook`); then the table's maintainer is told of the snapshot
(:mod:`tablelog.commit.maintenance`): snapshot expiry and compaction run in its
background, and the commit returns without waiting for them.

"Check, then commit" must not interleave with another committer's. In a local
warehouse both hold the table's commit lock (a file lock). On an object store there is
no shared lock: the committer checks up to the latest snapshot L, then creates
snapshot L+1 only if it does not exist yet (a conditional put). A committer that loses
that race reads the snapshots again, checks its identifier again (the winner may have
been a replay of the same commit) and tries the next id, after a short randomized wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tablelog.commit import maintenance
from tablelog.commit.history import (
    find_commit,
    find_commit_or_expired,
    is_commit_of,
    last_end_positions,
)
from tablelog.commit.hook import rerun_commit_hook, run_commit_hook
from tablelog.commit.leases import log_deletes_before, release_leases
from tablelog.commit.log_commit import (
    CommitResult,
    LogCommitRecord,
    LogProjection,
    WriteReceipt,
    shown_log,
)
from tablelog.commit.merged_conflicts import has_conflict, merged_receipts
from tablelog.commit.retention import truncate_log_after_commit
from tablelog.errors import CommitError, CommitOutcomeUnknown, LogChangedError
from tablelog.logs.pool import release
from tablelog.records import CommittedLog, ProducedRange, SeekSpec

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.logs.pool import LogPool
    from tablelog.store import SnapshotInfo
    from tablelog.table_view import TableView


#: Computes a merged-changelog commit's changes again when its attempts' no longer hold:
#: ``(table, receipts, latest snapshot, log pool) -> receipts``
#: (:func:`tablelog.writing.merged_repair.repair`; the writing layer, above this one, passes it).
Repair = Callable[["TableView", Sequence[WriteReceipt], "int | None", "LogPool | None"], list[WriteReceipt]]


def commit(
    table: TableView, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
    log_pool: LogPool | None = None, relayed: Sequence[int] = (), repair: Repair | None = None,
) -> CommitResult:
    """Commit ``receipts`` as one snapshot, once per (writer_id, commit_identifier)
    (see :meth:`tablelog.table.Table.commit`). ``relayed``: the foreign snapshots whose
    changes the receipts carry (a relay's commit, :mod:`tablelog.relay`): the snapshot is
    committed even with no records, to record that they were relayed. ``repair``: needed
    for receipts of a merged-changelog table (:mod:`tablelog.commit.merged_conflicts`)."""
    started_ms = time.time_ns() // 1_000_000
    if merged_receipts(receipts) and repair is None:
        raise CommitError(
            f"table {table.identifier!r}: receipts of a merged-changelog table need the committer's "
            "repair of their changes (commit them with Table.commit or Writer.commit)"
        )
    args = (table, writer_id, commit_identifier, receipts, log_pool, started_ms, relayed, repair)
    if table.files.on_object_store:
        result = _commit_racing(*args)
    else:
        # The check and the commit hold the table's commit lock: two committers of
        # the same identifier (a replay racing the original) cannot both commit.
        with table.files.commit_lock():
            result = _commit_once(*args)
    if result.committed and result.snapshot_id is not None:
        # After the lock, and in the background unless the options say otherwise: expiry and
        # compaction never hold up this commit or other committers, and never fail it.
        written = table.files.written_pairs([m for r in receipts for m in r.paimon_messages])
        errors = maintenance.after_commit(table, result.snapshot_id, written)
        if errors is not None:
            result = attrs.evolve(result, maintenance_error=errors)
    return result


#: How often a committer on an object store tries again after losing the race for a
#: snapshot id, and its longest wait in between.
MAX_COMMIT_ATTEMPTS = 40
MAX_BACKOFF_S = 1.0


class _LostRace(Exception):
    """Another committer created the snapshot id this commit tried: read the snapshots
    again and decide there."""


def _commit_racing(
    table: TableView, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
    log_pool: LogPool | None, started_ms: int, relayed: Sequence[int], repair: Repair | None,
) -> CommitResult:
    unknown: CommitOutcomeUnknown | None = None  # the last attempt's snapshot put had no answer
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        landed: list[int] = []
        try:
            # The latest id is read before the identifier is checked, so every snapshot up
            # to it has been checked when snapshot latest + 1 is created.
            latest = table.files.latest_snapshot()
            next_id = (latest.id if latest is not None else 0) + 1
            return _commit_once(table, writer_id, commit_identifier, receipts, log_pool, started_ms, relayed, repair,
                                next_id, latest, landed)
        except CommitOutcomeUnknown as err:
            unknown = err  # the next attempt reads the table again and finds out
        except _LostRace:
            unknown = None
        except Exception as err:
            if unknown is not None:
                # Retrying is always safe, and whether the put landed is still not known.
                raise CommitOutcomeUnknown(
                    f"{unknown}; reading the table again to find out failed too: {err}. The commit may or may not "
                    "be in the table: retry it with the same writer id and commit identifier, which commits it "
                    "once either way") from err
            if isinstance(err, OSError) and not landed:
                # The store failed a read or a write before the snapshot was sent: nothing
                # of this commit is in the table, and the caller may simply retry it.
                raise CommitError(
                    f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} could not "
                    f"reach the object store before its snapshot was sent ({type(err).__name__}: {err}); nothing "
                    "was committed: retry the commit") from err
            raise
        time.sleep(random.uniform(0, min(MAX_BACKOFF_S, 0.02 * 2**attempt)))
    if unknown is not None:
        raise CommitOutcomeUnknown(
            f"{unknown} ({MAX_COMMIT_ATTEMPTS} attempts). The commit may or may not be in the table: retry it with "
            "the same writer id and commit identifier, which commits it once either way")
    raise CommitError(
        f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} lost the race "
        f"for a snapshot id {MAX_COMMIT_ATTEMPTS} times (other committers kept committing first); "
        "nothing was committed, retry the commit"
    )


def _commit_once(
    table: TableView, writer_id: str, commit_identifier: int, receipts: Sequence[WriteReceipt],
    log_pool: LogPool | None, started_ms: int, relayed: Sequence[int], repair: Repair | None,
    snapshot_id: int | None = None, latest: SnapshotInfo | None = None, landed: list[int] | None = None,
) -> CommitResult:
    """Check the identifier, then commit; ``snapshot_id``: on an object store, the one
    id this attempt may create (:class:`_LostRace` when another committer has it), and
    ``latest`` the snapshot before it; ``landed`` is given the snapshot's id once it is
    in the table (what fails after that failed after the commit)."""
    rows = sum(r.rows for r in receipts)
    ranges = tuple(rng for r in receipts for rng in r.ranges)
    records = sum(r.count for r in ranges)
    if snapshot_id is None:
        # Read once for the commit's look-ups: under the commit lock no other tablelog
        # commit lands before this one (another engine's commits record no log commit).
        latest = table.files.latest_snapshot()
    # A table without snapshots holds no commit (nor end positions): nothing to walk.
    existing, expired = (None, False) if latest is None else find_commit_or_expired(
        table.files, writer_id, commit_identifier, latest=latest)
    # A replay: these receipts' records are never committed, their leases hold nothing.
    if (existing is not None or expired) and ranges and log_deletes_before(table):
        release_leases(table, receipts)
    if existing is not None:
        hook_error = rerun_commit_hook(table, existing, log_pool)
        return CommitResult(existing.id, committed=_made_by_this_call(existing, started_ms, ranges), rows=rows,
                            records=records, hook_error=hook_error)
    if expired:
        # A replay of a commit whose snapshot has expired: committing it again would repeat it.
        return CommitResult(None, committed=False, rows=rows, records=records)
    messages = [m for r in receipts for m in r.paimon_messages]
    if not messages and not ranges and not relayed:
        return CommitResult(None, committed=True, rows=0, records=0)
    # Checked with the commit lock held: an alter of the log commits its snapshot under it too.
    table.check_log_unchanged("writer")
    _check_same_log(table, receipts)
    written = list(receipts)  # the attempts whose leases the commit ends
    recomputed: list[WriteReceipt] = []  # the committer's own changes, if it computed them
    if repair is not None and merged_receipts(receipts):
        base = latest.id if latest is not None else None
        if has_conflict(table.files, receipts, base):
            receipts = repair(table, receipts, base, log_pool)
            recomputed = [receipts[-1]]
            written += recomputed
            ranges = tuple(rng for r in receipts for rng in r.ranges)
            records = sum(r.count for r in ranges)
    log: LogClient | None = None
    if table.options.log_enabled:
        log = log_pool.checkout(table) if log_pool is not None else table.open_log()
    try:
        if log is not None:
            _check_not_deleted(table, log, ranges)
        record = LogCommitRecord(
            writer=writer_id,
            commit_identifier=commit_identifier,
            system=table.options.log_system,
            topic=table.topic if log is not None else "",
            ranges=ranges,
            end_positions=_end_positions(table, log, latest),
            commit_started_ms=started_ms,
            projection=_projection(table, receipts) if log is not None else None,
            relayed_snapshots=tuple(relayed),
        )
        snapshot = _commit_snapshot(table, writer_id, commit_identifier, messages, record, snapshot_id, latest)
        if landed is not None:
            landed.append(snapshot.id)
    except BaseException:
        release(log, log_pool, reusable=False)
        if recomputed and log_deletes_before(table):
            release_leases(table, recomputed)  # a retry computes the changes again
        raise
    hook_error = None
    if log is not None:  # the snapshot is durable: from here on the commit has happened
        if log.deletes_before:
            release_leases(table, written)  # the snapshot holds their records from now on
        # Still under the commit lock (local warehouse): a commit's check of its records
        # (_check_not_deleted) and a deletion never interleave.
        truncate_log_after_commit(table, log, log_pool)
        committed = CommittedLog(snapshot.id, writer_id, commit_identifier, ranges, record.end_positions)
        hook_error = run_commit_hook(table, log, log_pool, committed)
    return CommitResult(snapshot.id, committed=True, rows=rows, records=records, hook_error=hook_error)


def _made_by_this_call(snapshot: SnapshotInfo, started_ms: int, ranges: Sequence[ProducedRange]) -> bool:
    """Whether ``snapshot``, found holding this commit's identifier, is this call's own: an
    earlier attempt of the call whose answer was lost (the same start time and the same
    log records), not a replay's."""
    record = LogCommitRecord.from_properties(snapshot.properties)
    return record is not None and record.commit_started_ms == started_ms and tuple(record.ranges) == tuple(ranges)


def _projection(table: TableView, receipts: Sequence[WriteReceipt]) -> LogProjection | None:
    """The projection stream's part of the commit; None when the table has no projection
    stream, or when a receipt's projection records do not cover its table-topic records'
    partitions (a receipt of a writer that wrote none): readers then read the snapshot
    from the table topic, which always has every row."""
    if not table.projection:
        return None
    for receipt in receipts:
        if {(r.token, r.partition) for r in receipt.ranges} != {(r.token, r.partition) for r in receipt.projection_ranges}:
            return None
    return LogProjection(
        topic=table.projection_log_config().topic, columns=table.projection,
        ranges=tuple(rng for r in receipts for rng in r.projection_ranges),
    )


def _commit_snapshot(
    table: TableView, writer_id: str, commit_identifier: int, messages: list[Any], record: LogCommitRecord,
    snapshot_id: int | None, latest: SnapshotInfo | None,
) -> SnapshotInfo:
    try:
        if snapshot_id is None:
            table.files.commit(
                messages, commit_user=writer_id, commit_identifier=commit_identifier,
                properties=record.to_properties(),
            )
        elif not table.files.try_commit(
            messages, commit_user=writer_id, commit_identifier=commit_identifier,
            properties=record.to_properties(), snapshot_id=snapshot_id,
        ):
            raise _LostRace()
    except _LostRace:
        raise
    except CommitOutcomeUnknown as err:
        raise CommitOutcomeUnknown(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r}: {err}") from err
    except Exception as err:
        raise CommitError(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} failed: {err}"
        ) from err
    # The snapshot after the latest, unless another engine committed in between: then looked for.
    try:
        expected = table.files.snapshot(snapshot_id if snapshot_id is not None else (latest.id if latest else 0) + 1)
        if expected is not None and is_commit_of(expected, writer_id, commit_identifier):
            return expected
        snapshot = find_commit(table.files, writer_id, commit_identifier)
    except Exception as err:
        # Created, but not read back: the log's part of the commit has not run. A retry of
        # the same identifier finds the snapshot and finishes it.
        raise CommitOutcomeUnknown(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r}: its snapshot was "
            f"written and could not be read back ({err}); retry the commit with the same writer id and "
            "identifier to finish it") from err
    if snapshot is None:
        raise CommitError(
            f"table {table.identifier!r}: commit {commit_identifier} of writer {writer_id!r} "
            "produced no snapshot"
        )
    return snapshot


def _check_same_log(table: TableView, receipts: Sequence[WriteReceipt]) -> None:
    """Refuse receipts of write attempts that wrote to another log than the table's now (a
    distributed writer's tasks opened the table before an alter of its log, its committer after)."""
    for receipt in receipts:
        if receipt.log is not None and (receipt.log[0], receipt.log[1]) != table.log_name:
            raise LogChangedError(
                f"table {table.identifier!r}: write task {receipt.task} wrote to {shown_log((receipt.log[0], receipt.log[1]))}, "
                f"but the table's log is now {shown_log(table.log_name)} (changed by an alter); nothing was "
                "committed. Write the data again"
            )


def _check_not_deleted(table: TableView, log: LogClient, ranges: Sequence[ProducedRange]) -> None:
    """Refuse to commit records that log retention deleted before the commit (a write
    attempt that stayed uncommitted while the snapshots before it expired): readers would
    find them lost. Only logs whose retention tablelog drives (``delete_before``)."""
    if not log.deletes_before or not ranges:
        return
    earliest = {p: log.seek(p, SeekSpec.earliest()) for p in sorted({r.partition for r in ranges})}
    gone = [r for r in ranges if r.first < earliest[r.partition]]
    if gone:
        first = gone[0]
        raise CommitError(
            f"table {table.identifier!r}: {sum(r.count for r in gone)} record(s) of this commit are no longer "
            f"in the log (partition {first.partition} from position {first.first}; the log now starts at "
            f"{earliest[first.partition]}): retention deleted them while the write stayed uncommitted. "
            "Nothing was committed; write the data again"
        )


def _end_positions(table: TableView, log: LogClient | None, latest: SnapshotInfo | None) -> dict[int, int]:
    """The log's end per partition now, after every committed record: where an
    eventual hybrid read of this snapshot continues. Records of other writers'
    attempts may lie before it; readers catch those up when they commit. ``latest``:
    the latest snapshot, read by the caller."""
    previous = {} if latest is None else last_end_positions(
        table.files, table.options.log_system, table.topic, latest=latest)
    if log is None:
        return previous
    ends = log.end_positions(list(range(table.log_partitions)))
    return {p: max(previous.get(p, 0), ends.get(p, 0)) for p in sorted({*previous, *ends})}
