"""Eventual reads: every record of this table as soon as the log has it.

At least once; records of other tables on the topic, told by the tag in their writer
token, are left out. Add :class:`tablelog.normalize.Normalizer` for a correct
changelog. Idle, the reader waits on all its partitions in one call to the log
(``wait_for_records``), not in a loop of fetches.
After the full scan of a hybrid read (``scan.mode = latest-full``), the records of
writes committed after the scan but produced before the log part began are returned
once, so that the read has no gap. Positions the log no longer holds are read from the
table files (:mod:`tablelog.reading.lost_range`). Snapshots other writers committed are
read from the table files (:mod:`tablelog.reading.foreign`).
"""

from __future__ import annotations

import contextlib
import operator
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from tablelog.commit.log_commit import RELAY_TOKEN_TAG, LogCommitRecord, is_foreign
from tablelog.errors import LogDataLostError, PositionOutOfRangeError, TablelogError
from tablelog.identity import TAG_SEPARATOR
from tablelog.logs.client import IDLE_LOOK_S
from tablelog.positions import ReaderPosition
from tablelog.reading.batch import Batch
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.reading.foreign import ForeignSnapshotsSeen
from tablelog.reading.log_eras import LogEras
from tablelog.reading.lost_range import committed_changes_lost_from_log, snapshot_changes_from_table
from tablelog.records import FetchResult, LogRecord, ProducedRange, SeekSpec

if TYPE_CHECKING:
    from tablelog.store import SnapshotInfo

_TOKEN = operator.itemgetter(3)  # LogRecord.token
#: How often an eventual reader (not a hybrid one) looks for snapshots of other writers:
#: on a local warehouse, and on an object store (where each look is a request).
_SNAPSHOT_LOOK_S, _SNAPSHOT_LOOK_OBJECT_STORE_S = 0.1, 0.5
#: ... and whether snapshots expired before it looked at them (a read of hints and snapshots).
_EXPIRY_CHECK_S = 1.0


class EventualRead:
    """Reads every partition from its log position on."""

    def __init__(
        self, context: ReadContext, until: Mapping[int, int] | None = None, until_snapshot: int | None = None,
    ) -> None:
        self._context = context
        #: Exclusive end position per partition of a bounded read (a Spark micro-batch).
        self._until = dict(until or {})
        #: The last snapshot whose other writers' changes a bounded read returns (None: with
        #: ``until``, none of them).
        self._until_snapshot = until_snapshot
        self._own_prefix = context.table.token_prefix
        self._relay_prefix = context.table.token_prefix + RELAY_TOKEN_TAG
        #: Records of relay commits left out: their changes come from the table files.
        self.relayed_skipped = 0
        #: Records of other tables that share this table's topic, left out.
        self.other_tables_skipped = 0
        self._foreign = ForeignSnapshotsSeen(context)
        self._next_look = 0.0  # when to look for new snapshots next
        self._expiry_checked = 0.0  # when the reader last checked that no snapshot expired unread
        #: Where the log's read stops until another writer's snapshot is returned (see :meth:`_new_snapshots`).
        self._barrier: dict[int, int] = {}
        self._eras = LogEras(context.table)

    def restart(self, position: ReaderPosition) -> None:
        """The position was put back (a poll failed): what was known of the snapshots
        after it is found again from there."""
        self._foreign = ForeignSnapshotsSeen(self._context)
        self._barrier = {}

    def poll_arrow(self, position: ReaderPosition, budget: int, timeout_s: float) -> pa.Table:
        """:meth:`poll` as Arrow: ``arrow`` records' batches as they are, no Python row."""
        return self._poll(position, budget, timeout_s, Batch(arrow=True)).in_schema(self._context).to_arrow(
            self._context)

    def poll(self, position: ReaderPosition, budget: int, timeout_s: float) -> list[Change]:
        return self._poll(position, budget, timeout_s, Batch(arrow=False)).in_schema(self._context).to_changes()

    def _poll(self, position: ReaderPosition, budget: int, timeout_s: float, out: Batch) -> Batch:
        self._new_snapshots(position, out)
        self._read_log(position, budget, timeout_s, out)
        if self._barrier and self._foreign.ready(position):
            self._new_snapshots(position, out, look_now=True)
        if not out:  # idle: has the table's log changed since the reader opened it?
            self._eras.check_eventual(position)
        return out

    def _read_log(self, position: ReaderPosition, budget: int, timeout_s: float, out: Batch) -> Batch:
        context = self._context
        deadline = time.monotonic() + timeout_s
        partitions = [
            p for p in sorted(position.offsets) or range(context.table.log_partitions)
            if context.reads(p) and not self._at_end(position, p)
        ]
        if not partitions:
            if not out and not self._barrier:
                time.sleep(max(0.0, timeout_s))
            return out
        if len(partitions) == 1:
            # The log's own waiting fetch is a wait on all (one) partitions: a look at what
            # is there, then a wait for the rest of the time.
            self._fetch(position, partitions[0], budget - len(out), 0.0, out)
            if not out and (remaining := deadline - time.monotonic()) > 0:
                self._fetch(position, partitions[0], budget, remaining, out)
            return out
        log = context.log
        # One wait on every partition (a fetch may be a round trip or a database
        # transaction: never a fetch per partition while idle), then a fetch of each
        # partition that has records. The first wait returns at once when some have.
        while True:
            waiting = {p: position.offsets.get(p, 0) for p in partitions}
            ready = log.wait_for_records(waiting, 0.0 if out else max(0.0, deadline - time.monotonic()))
            for partition in ready:
                if len(out) >= budget:
                    return out
                self._fetch(position, partition, budget - len(out), 0.0, out)
            if out or (remaining := deadline - time.monotonic()) <= 0:
                return out
            if ready and all(position.offsets.get(p, 0) == waiting[p] for p in ready):
                # The log said records were there, and the fetches found none (a client
                # that has not received them yet, a gap the end position counts): look
                # again a little later, not at once.
                time.sleep(min(IDLE_LOOK_S, remaining))

    def _fetch(
        self, position: ReaderPosition, partition: int, max_records: int, timeout_s: float, out: Batch
    ) -> None:
        context = self._context
        pos = position.offsets.get(partition, 0)
        # A paused collector is paused for the whole process: not while a fetch waits.
        with context.building_batch() if timeout_s <= 0 else contextlib.nullcontext():
            try:
                result = context.log.fetch(partition, pos, context.records_for(max_records), timeout_s)
            except PositionOutOfRangeError as err:
                self._read_lost_from_table(position, partition, pos, err, out)
                return
        records, next_position = result.records, result.next_position
        end = self._end(partition)
        if end is not None and records and records[-1].position >= end:
            records = [r for r in records if r.position < end]  # whole records: arrow ones too
            next_position = end
        with context.building_batch():
            self._take_all(records, partition, out)
        position.offsets[partition] = next_position

    def _end(self, partition: int) -> int | None:
        """Where the read of ``partition`` stops for now: the end of a bounded read, or the
        barrier of another writer's snapshot not returned yet (None: nowhere)."""
        ends = [e for e in (self._until.get(partition), self._barrier.get(partition)) if e is not None]
        return min(ends) if ends else None

    def _at_end(self, position: ReaderPosition, partition: int) -> bool:
        end = self._end(partition)
        return end is not None and position.offsets.get(partition, 0) >= end

    def _read_lost_from_table(
        self, position: ReaderPosition, partition: int, pos: int, err: PositionOutOfRangeError, out: Batch,
    ) -> None:
        """The log no longer holds ``pos``: the changes committed up to its earliest retained
        position come from the table files (:mod:`tablelog.reading.lost_range`), and the
        reader goes on in the log from there."""
        context = self._context
        context.check_topic_exists(err)  # a missing topic is not lost records
        earliest = context.log.seek(partition, SeekSpec.earliest())
        lost = context.lost(partition, pos, max(pos, earliest - 1), f"the log no longer holds them ({err})")
        if not context.changes_from_table or earliest <= pos:
            raise lost from err  # nothing deleted before the log's start: not a gap the table fills
        committed_changes_lost_from_log(context, partition, pos, earliest, lost, out)
        position.offsets[partition] = earliest

    def _take_all(self, records: list[LogRecord], partition: int, out: Batch) -> None:
        """Every record of this table, decoded: records without a writer token, or with
        one that carries no table tag, are foreign; records whose token carries another
        table's tag are left out (they share the topic). The tokens are looked at once per distinct token, not per
        record: a fetch usually holds a few writes' records."""
        own, relay = self._own_prefix, self._relay_prefix
        tokens = set(map(_TOKEN, records))
        if None in tokens or any(not t.startswith(own) or t.startswith(relay) for t in tokens if t is not None):
            records = self._own_records(records, partition)
        if records:
            out.take_records(self._context, [r.value for r in records], [r.position for r in records], partition, None)

    def _own_records(self, records: list[LogRecord], partition: int) -> list[LogRecord]:
        own = self._own_prefix
        foreign = self._context.decoder.foreign
        kept = []
        for rec in records:
            token = rec.token
            if token is None:
                foreign(partition, rec.position, "it carries no tablelog writer token")
            elif TAG_SEPARATOR not in token:
                foreign(partition, rec.position, f"its writer token {token!r} carries no table tag")
            elif not token.startswith(own):
                self.other_tables_skipped += 1
            elif token.startswith(self._relay_prefix):
                # A relay's copy of another writer's snapshot: this reader takes those changes
                # from the table files in their place (reading.foreign); the copy, published
                # later, would come after changes committed since and undo them.
                self.relayed_skipped += 1
            else:
                kept.append(rec)
        return kept

    def _new_snapshots(self, position: ReaderPosition, out: Batch, look_now: bool = False) -> None:
        """The snapshots committed since the reader last looked: another writer's changes
        (:class:`~tablelog.reading.foreign.ForeignSnapshotsSeen`), and in a hybrid read
        the records of writes committed after the full scan but produced before the log
        part began (a concurrent writer's: returned once, so that the read has no gap;
        :meth:`_late_writes`). Without a hybrid read's horizon the snapshots are looked
        for now and then, not at every poll; a bounded read looks up to ``until_snapshot``.

        Another writer's snapshot is a *barrier*: the log is read up to where it ended at
        the log commit before it, then its changes are returned, then the log is read on;
        so that changes come in commit order (except a write's records read before its
        commit, as every eventual read returns them)."""
        now = time.monotonic()
        bounded = bool(self._until) or self._until_snapshot is not None
        if self._until and self._until_snapshot is None:
            return  # a bounded read of log positions only
        if not position.horizon and not bounded and now < self._next_look and not look_now:
            return
        store = self._context.table.files
        self._next_look = now + (_SNAPSHOT_LOOK_OBJECT_STORE_S if store.on_object_store else _SNAPSHOT_LOOK_S)
        while (
            self._until_snapshot is None or position.snapshot < self._until_snapshot
        ) and (snapshot := store.snapshot(position.snapshot + 1)) is not None:
            record = LogCommitRecord.from_properties(snapshot.properties)
            before_attach = False
            if record is not None and not record.is_of(*self._context.table.log_name):
                if not self._eras.is_history(snapshot.id):
                    return  # the table's log changed after the reader's: log_eras.check_eventual says so
                record, before_attach = None, True
            if record is None and (before_attach or is_foreign(snapshot.properties, snapshot.commit_kind)):
                if not self._foreign.ready(position):
                    self._barrier = self._foreign.ends_before()
                    return  # the log's records committed before it are not all read yet
                self._barrier = {}
                self._foreign.read(snapshot, out)
            elif position.horizon:
                self._late_writes(position, snapshot, record, out)
            self._foreign.passed(record)
            position.snapshot = snapshot.id
        if not position.horizon and not bounded:
            if now - self._expiry_checked < _EXPIRY_CHECK_S:
                return
            self._expiry_checked = now
        earliest = store.earliest_snapshot_id(latest_known=position.snapshot > 0)
        if earliest is not None and earliest > position.snapshot + 1:
            if position.horizon:
                self._expired_under_hybrid_read(position, earliest)
            self._foreign.expired(position.snapshot + 1, earliest)
            position.snapshot = earliest - 1

    def _late_writes(
        self, position: ReaderPosition, snapshot: SnapshotInfo, record: LogCommitRecord | None, out: Batch,
    ) -> None:
        """One snapshot's records produced before the hybrid read's log part began."""
        from_table: set[int] = set()  # partitions whose late records the log lost
        for r in record.ranges if record is not None else ():
            horizon = position.horizon.get(r.partition, 0)
            if r.first < horizon and r.partition not in from_table:
                try:
                    self._token_records(r, min(r.last, horizon - 1), out)
                except LogDataLostError as lost:
                    # The snapshot's changes of the partition from the table files (at
                    # least once: what it has past the horizon the log part returns too).
                    if not self._context.changes_from_table:
                        raise
                    assert record is not None
                    ranges = record.ranges_by_partition()[r.partition]
                    snapshot_changes_from_table(self._context, snapshot, r.partition, ranges, lost, out)
                    from_table.add(r.partition)

    def _expired_under_hybrid_read(self, position: ReaderPosition, earliest: int) -> None:
        table = self._context.table
        raise TablelogError(
            f"table {table.identifier!r}: snapshots {position.snapshot + 1}..{earliest - 1} expired before "
            "this hybrid reader looked in them for writes committed after its full scan whose records lie "
            "before where its log part began; what they committed there can no longer be told apart "
            "from failed attempts. Restart the reader with scan.mode=latest-full, and keep snapshots "
            "longer than a reader pauses (snapshot.time-retained, snapshot.num-retained.min)"
        )

    def _token_records(self, committed: ProducedRange, last: int, out: Batch) -> None:
        """Append the decoded records of one committed write up to position ``last``."""
        context = self._context
        pos = committed.first
        while pos <= last:
            result = context.fetch_committed(committed.partition, pos, last, 10_000, values=False)
            assert isinstance(result, FetchResult)
            mine = [rec for rec in result.records if rec.position <= last and rec.token == committed.token]
            if mine:
                out.take_records(context, [rec.value for rec in mine], [rec.position for rec in mine],
                                 committed.partition, None)
            if result.records and result.records[-1].position > last:
                return
            pos = result.next_position
