"""Writing: :class:`Writer` writes and commits round after round in one process, each
round a :class:`~tablelog.writing.write_task.WriteTask` committed at once; a committer's
repair of a merged-changelog commit produces with write tasks of its own
(:func:`repair_changes`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tablelog.commit import committer, history, maintenance
from tablelog.commit.log_commit import CommitResult, WriteReceipt
from tablelog.logs.pool import LogPool
from tablelog.records import RowKind
from tablelog.writing.files_lane import MOST_LANES
from tablelog.writing.merged_repair import REPAIR_WRITER, repair
from tablelog.writing.write_task import WriteTask

if TYPE_CHECKING:
    from tablelog.table_view import TableView

__all__ = ["Writer", "repair_changes"]


def repair_changes(
    table: TableView, receipts: Sequence[WriteReceipt], latest: int | None, log_pool: LogPool | None,
) -> list[WriteReceipt]:
    """The committer's repair of a merged-changelog commit (:mod:`tablelog.writing.merged_repair`),
    producing with write tasks of its own."""
    return repair(table, receipts, latest, log_pool,
                  new_task=lambda name: WriteTask(table, REPAIR_WRITER, 0, name, log_pool=log_pool))


class Writer:
    """A single-process writer: write, then commit, repeatedly.

    Commit identifiers grow by one per commit, resuming after the last one this
    ``writer_id`` committed, so a writer restarted with the same id after a crash
    never commits a round twice.
    """

    def __init__(
        self, table: TableView, writer_id: str | None = None,
        *, after_commit: Callable[[CommitResult], None] | None = None,
    ) -> None:
        """``after_commit``: called with every commit's result (the facade's maintenance)."""
        self.table = table
        self._after_commit = after_commit
        self.writer_id = writer_id or uuid.uuid4().hex
        # A fresh id has committed nothing: skip reading the table's snapshots.
        last = history.last_commit_identifier(table.files, writer_id) if writer_id else None
        self.commit_identifier = (last or 0) + 1
        self._task: WriteTask | None = None
        # One log connection for every write and commit round, not a new one per round:
        # opening costs a topic check and, on Kafka, a new idempotent producer's start.
        self._log_pool = LogPool(max_idle=2)  # the table topic's, and its projection stream's
        self._maintenance = maintenance.WriterHold(table)  # expiry, compaction, backpressure

    @property
    def task(self) -> WriteTask:
        if self._task is None:
            self._task = WriteTask(self.table, self.writer_id, self.commit_identifier, log_pool=self._log_pool,
                                   lanes=MOST_LANES)
        return self._task

    def write(self, data: Any, kind: RowKind | str | None = None) -> int:
        if self._task is None:
            self._maintenance.before_round()
        return self.task.write(data, kind)

    def commit(self) -> CommitResult:
        """Publish everything written since the last commit in one snapshot."""
        task, self._task = self.task, None
        receipt = task.finish()
        result = committer.commit(
            self.table, self.writer_id, self.commit_identifier, [receipt], self._log_pool, repair=repair_changes)
        self.commit_identifier += 1
        self._maintenance.hold()
        if self._after_commit is not None:
            self._after_commit(result)
        return result

    def close(self) -> None:
        try:
            self._maintenance.release()  # a compaction in progress stops at its next step
            if self._task is not None:
                self._task.abort()
                self._task = None
        finally:
            self._log_pool.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
