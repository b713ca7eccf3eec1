"""The log system's ``commit`` hook, run after a table snapshot is durable.

The snapshot decides visibility, so once it is durable the commit has happened:
a hook that fails cannot undo it, and reporting the commit as failed would make
callers retry a commit that is already there. The hook's failure is logged and
reported in :attr:`tablelog.commit.log_commit.CommitResult.hook_error`; committing the same
identifier again (a replay) finds the snapshot and runs the hook again, which the
hook contract allows because the hook is idempotent.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tablelog.commit.log_commit import LogCommitRecord
from tablelog.logs.pool import release
from tablelog.records import CommittedLog
from tablelog.store import SnapshotInfo

if TYPE_CHECKING:
    from tablelog.logs.client import LogClient
    from tablelog.logs.pool import LogPool
    from tablelog.table_view import TableView

logger = logging.getLogger("tablelog.commit")


def committed_log(snapshot: SnapshotInfo) -> CommittedLog | None:
    """What ``snapshot`` committed to the log, as the hook receives it (None: no log part)."""
    record = LogCommitRecord.from_properties(snapshot.properties)
    if record is None or record.system == "none":
        return None
    return CommittedLog(snapshot.id, record.writer, record.commit_identifier, record.ranges,
                        record.end_positions)


def run_commit_hook(
    table: TableView, log: LogClient, log_pool: LogPool | None, committed: CommittedLog
) -> str | None:
    """Call the hook on ``log`` and hand the connection back (discarded when the hook
    failed: it may be broken). Returns why the hook failed, None when it succeeded."""
    succeeded = False
    try:
        log.commit(committed)
        succeeded = True
    except Exception as err:  # any failure: the snapshot is committed all the same
        error = f"{type(err).__name__}: {err}"
        logger.warning(
            "table %r: the %s log system's commit hook failed for snapshot %d (writer %r, commit "
            "identifier %d): %s. The snapshot is committed and readers see it; committing the "
            "same identifier again runs the hook again.",
            table.identifier, table.options.log_system, committed.snapshot_id, committed.writer,
            committed.commit_identifier, error,
        )
        return error
    finally:
        release(log, log_pool, reusable=succeeded)
    return None


def rerun_commit_hook(table: TableView, snapshot: SnapshotInfo, log_pool: LogPool | None) -> str | None:
    """A replayed commit found ``snapshot`` already committed: run its hook again, so
    that a hook that failed (or was cut off by a crash) gets another go."""
    committed = committed_log(snapshot)
    if committed is None or not table.options.log_enabled:
        return None
    try:
        log = log_pool.checkout(table) if log_pool is not None else table.open_log()
    except Exception as err:  # the log is unreachable: the hook did not run, say so
        error = f"{type(err).__name__}: {err}"
        logger.warning(
            "table %r: cannot open the %s log to run the commit hook of snapshot %d again: %s",
            table.identifier, table.options.log_system, snapshot.id, error,
        )
        return error
    return run_commit_hook(table, log, log_pool, committed)
