"""A reader's log among the logs its table had (:mod:`tablelog.log_change`).

A reader reads the log its table had when it was opened. The snapshots name the log each
committed to: the reader's own, another (the table's log was attached, moved or detached
by an alter, which commits an *attaching snapshot* naming the new one), or none (a foreign
writer's). What a reader does with a snapshot of another log:

- committed **before** its log was attached (its log comes later: a later snapshot commits to
  it, or the table has it now): history whose changes are not in the reader's log. The
  reader takes it as it takes a foreign snapshot, from the table files.
- committed **after** its log: the table's log moved away from it, or was detached. Nothing
  more comes to the reader's log; the reader has returned every change before that
  snapshot and stops with :class:`~tablelog.errors.LogMovedError` or
  :class:`~tablelog.errors.LogDetachedError`, whose ``position`` resumes exactly on the
  table opened again (with the new log's options), where there is a log to resume in.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import attrs

from tablelog.commit.history import last_end_positions, log_commits
from tablelog.commit.log_commit import LogCommitRecord, shown_log
from tablelog.errors import LogChangedError, LogDetachedError, LogMovedError
from tablelog.options import Consistency
from tablelog.positions import ReaderPosition

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo
    from tablelog.table_view import TableView

#: How often an idle eventual reader looks whether its table's log changed.
_IDLE_CHECK_S = 1.0


class LogEras:
    """Which snapshots of its table a reader reads in its log, and where its log ended."""

    def __init__(self, table: TableView) -> None:
        self._table = table
        #: Snapshots below this id that committed to another log are history (see the module).
        self._history_before = 0
        self._checked_at = 0.0
        self._looked_upto = 0  # the newest snapshot an eventual reader's look found no change up to

    def record_of(self, snapshot: SnapshotInfo, position: ReaderPosition) -> LogCommitRecord | None:
        """What ``snapshot`` committed to the reader's log: its log-commit record, or None
        when the reader takes its changes from the table files (a foreign writer's snapshot,
        or one committed before the reader's log was attached). Raises when the table's log
        changed after the reader's, ``position`` being where the reader stands before it."""
        record = LogCommitRecord.from_properties(snapshot.properties)
        if record is None or record.is_of(*self._table.log_name):
            return record
        if not self.is_history(snapshot.id):
            raise changed_error(self._table, snapshot, record, position)
        return None

    def is_history(self, snapshot_id: int) -> bool:
        """Whether snapshot ``snapshot_id``, committed to another log than the reader's, was
        committed before the reader's log was attached (else the table's log changed after it)."""
        if snapshot_id < self._history_before:
            return True
        attached = self._reader_log_after(snapshot_id)
        if attached is not None:
            self._history_before = attached
        return attached is not None

    def last_before_change(self, position: ReaderPosition, upto: int) -> int:
        """The last snapshot up to ``upto`` a transactional reader at ``position`` may read
        before one at which the table's log changed after its own (a bounded read, such as a
        Spark micro-batch, ends there); raises :meth:`record_of`'s error when that is the next."""
        for snapshot in self._table.files.snapshots(after=position.snapshot, upto=upto):
            try:
                self.record_of(snapshot, position)
            except LogChangedError:
                if snapshot.id - 1 > position.snapshot:
                    return snapshot.id - 1
                raise
        return upto

    def _reader_log_after(self, snapshot_id: int) -> int | None:
        """The first snapshot after ``snapshot_id`` that commits to the reader's log; when
        there is none yet but the table has the reader's log now (its attaching snapshot
        is being committed), the next snapshot id; None: the reader's log is not the table's."""
        log = self._table.log_name
        latest = snapshot_id
        for snapshot, record in log_commits(self._table.files, after=snapshot_id):
            if record.is_of(*log):
                return snapshot.id
            latest = snapshot.id
        return latest + 1 if self._table.current_log() == log else None

    def check_eventual(self, position: ReaderPosition) -> None:
        """An idle eventual reader's look (at most once a second) whether the table's log
        changed: once the reader has read everything committed to its log before the change,
        it stops, as :meth:`record_of` does."""
        now = time.monotonic()
        if now - self._checked_at < _IDLE_CHECK_S:
            return
        self._checked_at = now
        table = self._table
        log = table.log_name
        latest = table.files.latest_snapshot()
        change: tuple[SnapshotInfo, LogCommitRecord] | None = None
        # Only the snapshots since the last look: those up to it held no change.
        for snapshot, record in log_commits(table.files, newest_first=True, after=self._looked_upto):
            if record.is_of(*log):
                break
            change = (snapshot, record)
        if change is None:
            self._looked_upto = latest.id if latest is not None else 0
            return
        if table.current_log() == log:
            return
        snapshot, record = change
        committed = last_end_positions(table.files, *log, upto=snapshot.id - 1)
        if all(position.offsets.get(p, 0) >= end for p, end in committed.items()):
            raise changed_error(table, snapshot, record, position)


def changed_error(
    table: TableView, snapshot: SnapshotInfo, record: LogCommitRecord, position: ReaderPosition
) -> LogChangedError:
    """The error of a reader of ``table`` that reached ``snapshot``, committed to another log
    (``record``) after its own; ``position``: where it stands (every change before returned)."""
    old, new = shown_log(table.log_name), shown_log((record.system, record.topic))
    detached = record.system == "none"
    resume: ReaderPosition | None = None
    if not detached:
        topic = f"{record.system}:{record.topic}"
        if position.consistency is Consistency.TRANSACTIONAL:
            resume = attrs.evolve(position, snapshot=snapshot.id - 1, offsets={}, horizon={}, topic=topic)
        else:
            resume = ReaderPosition(Consistency.EVENTUAL, snapshot.id, offsets=dict(record.end_positions),
                                    table=table.table_id, topic=topic)
    what = (f"table {table.identifier!r}: its log was {'detached' if detached else 'moved'} at snapshot "
            f"{snapshot.id} (alter: from {old} to {new}); this reader has returned every change of its log before it")
    if detached:
        return LogDetachedError(
            f"{what}, and no log holds the later ones. Read the table's rows (scan.mode=latest-full, or "
            "table.rows()), or attach a log again and read that (docs/attaching.md)", snapshot=snapshot.id,
        )
    assert resume is not None
    return LogMovedError(
        f"{what}. To go on exactly where it stopped, open the table again (with the options of "
        f"{record.system}) and give a reader the position in this error's `position`: {resume.to_json()}",
        snapshot=snapshot.id, position=resume.to_json(),
    )
