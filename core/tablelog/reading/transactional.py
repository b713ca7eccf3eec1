"""Transactional reads: the changes each snapshot committed, in commit order, each once.

For each snapshot the reader fetches, per partition, the span covering the ranges of
the writer tokens that snapshot commits, and returns exactly the records of those
tokens inside their ranges, each once (duplicates a retrying client wrote are dropped
by sequence number). Records of failed, speculative or replayed attempts belong to no
committed token and are never returned. A committed range the log cannot produce is
read from the table files (:mod:`tablelog.reading.table_changes`), never skipped.
A snapshot another writer committed (no log-commit record) is read from the table files
(:mod:`tablelog.reading.foreign`), in its place among the others; a relay's commit of
such snapshots' changes into the log is skipped (they were read at those snapshots).

How a partition's committed records are fetched and counted:
:mod:`tablelog.reading.committed`.
"""

from __future__ import annotations

import sys
import time

import pyarrow as pa

from tablelog.commit.log_commit import LogCommitRecord, is_foreign
from tablelog.errors import LogChangedError, LogDataLostError, TablelogError
from tablelog.formats.projection import reads_projection
from tablelog.positions import ReaderPosition
from tablelog.reading.batch import Batch
from tablelog.reading.committed import CommittedRecords, dense
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.reading.foreign import ForeignSnapshotRead
from tablelog.reading.log_eras import LogEras
from tablelog.reading.table_changes import changes_from_table
from tablelog.records import ProducedRange

#: An idle reader looks for the next snapshot (one existence check of its file) this often
#: at first; the longer it has been idle, the less often, up to the second figure (local
#: warehouse) or the third (object store, where each look is a request). A snapshot
#: found resets it.
_IDLE_LOOK_S, _IDLE_LOOK_MAX_S, _IDLE_LOOK_MAX_OBJECT_STORE_S = 0.01, 0.1, 0.5
#: While idle, whether snapshots expired under the reader is checked this often (several
#: reads of hints and snapshots: not at every look).
_EXPIRY_CHECK_S = 1.0

#: Changes a fetch may ask for when a poll past its budget finishes a begun partition.
_FINISHING_CHUNK = 10_000

def _begun(ranges: list[ProducedRange], position: int) -> bool:
    """Whether a reader at ``position`` has taken some of the partition's records
    (``ranges`` sorted by first position)."""
    return position > ranges[0].first


class TransactionalRead:
    """Walks a table's snapshots in commit order and returns what each committed."""

    def __init__(
        self, context: ReadContext, until_snapshot: int | None, counted_from_start: bool,
        split_partitions: bool = False,
    ) -> None:
        """``until_snapshot``: stop after this snapshot (a bounded read). ``counted_from_start``:
        whether the reader starts at the beginning of a snapshot (a saved position may be
        inside one), so that its records can be counted against the committed counts.
        ``split_partitions``: a poll may stop inside any snapshot's partition (see
        :meth:`_may_stop_inside`)."""
        self._context = context
        self._until_snapshot = until_snapshot
        self._split_partitions = split_partitions
        self._records = CommittedRecords(context)
        self._foreign = ForeignSnapshotRead(context)
        self._counted_from_start = counted_from_start
        self._eras = LogEras(context.table)
        self._idle_since: float | None = None  # when the reader last found no next snapshot
        self._expiry_checked = 0.0

    def poll(self, position: ReaderPosition, budget: int, timeout_s: float) -> list[Change]:
        return self._poll(position, budget, timeout_s, Batch(arrow=False)).in_schema(self._context).to_changes()

    def poll_arrow(self, position: ReaderPosition, budget: int, timeout_s: float) -> pa.Table:
        return self._poll(position, budget, timeout_s, Batch(arrow=True)).in_schema(self._context).to_arrow(
            self._context)

    def _poll(self, position: ReaderPosition, budget: int, timeout_s: float, out: Batch) -> Batch:
        store = self._context.table.files
        deadline = time.monotonic() + timeout_s
        while len(out) < budget:
            if self._until_snapshot is not None and position.snapshot >= self._until_snapshot:
                break
            snapshot = store.snapshot(position.snapshot + 1)
            if snapshot is None:
                now = time.monotonic()
                if now - self._expiry_checked >= _EXPIRY_CHECK_S:
                    self._check_not_expired(position.snapshot + 1)
                    self._expiry_checked = now
                if out or now >= deadline:
                    break
                time.sleep(min(self._idle_look_s(now), max(0.0, deadline - now)))
                continue
            self._idle_since = None
            try:
                record = self._eras.record_of(snapshot, position)
            except LogChangedError:
                if out:
                    break  # what this poll took first is returned; the next poll raises
                raise
            # None: not in the reader's log (another writer's, or before its log was attached)
            before_attach = record is None and LogCommitRecord.from_properties(snapshot.properties) is not None
            if record is None and (before_attach or is_foreign(snapshot.properties, snapshot.commit_kind)):
                # Its changes are in the table files only.
                if self._context.upgrade(snapshot.schema_id):
                    out.in_schema(self._context)
                if not self._foreign.read(position, snapshot, out, budget):
                    break
                self._advance(position, snapshot.id)
                continue
            if record is None or not record.ranges or record.relayed_snapshots:
                # A relay's ranges carry foreign snapshots' changes, read from the files at those snapshots.
                self._advance(position, snapshot.id)
                continue
            # A snapshot committed under a newer schema: its changes and all after them in it.
            if self._context.upgrade(snapshot.schema_id):
                out.in_schema(self._context)
            if self._choose_stream(position, record):
                # Read whole, past the budget: a position is then never inside a snapshot read
                # from the projection stream, and is valid for either stream. (A read that
                # fails puts the position back where the poll began: ChangelogReader.)
                self._read_snapshot(position, snapshot.id, record.in_projection(), out, sys.maxsize)
            elif not self._read_snapshot(position, snapshot.id, record, out, budget):
                break
            self._advance(position, snapshot.id)
        return out

    def restart(self, position: ReaderPosition) -> None:
        """The position was put back (a poll failed): forget what was counted of the
        snapshot being read; it is counted from its start only if the position is there."""
        self._records.next_snapshot()
        self._counted_from_start = not position.offsets

    def _choose_stream(self, position: ReaderPosition, record: LogCommitRecord) -> bool:
        """Whether the snapshot is read from the projection stream (see
        :mod:`tablelog.formats.projection`): it recorded one that holds every column the reader
        returns, and the reader starts it at its beginning. A position inside a snapshot
        is always one of the table topic: a projected snapshot is read whole in one poll."""
        projecting = (
            not position.offsets and not self._split_partitions and record.projection is not None
            and reads_projection(self._context.columns, record.projection.columns)
        )
        if projecting != self._context.projecting:
            self._records.stream_changed()
        self._context.projecting = projecting
        return projecting

    def _idle_look_s(self, now: float) -> float:
        """How long to wait before looking for the next snapshot again: a tenth of how
        long the reader has been idle, within the bounds above."""
        if self._idle_since is None:
            self._idle_since = now
        cap = _IDLE_LOOK_MAX_OBJECT_STORE_S if self._context.table.files.on_object_store else _IDLE_LOOK_MAX_S
        return min(cap, max(_IDLE_LOOK_S, (now - self._idle_since) / 10))

    def _check_not_expired(self, snapshot_id: int) -> None:
        table = self._context.table
        earliest = table.files.earliest_snapshot_id()
        if earliest is not None and earliest > snapshot_id:
            raise TablelogError(
                f"table {table.identifier!r}: snapshot {snapshot_id} expired before this reader "
                f"read it (earliest kept: {earliest}); changes committed there cannot be returned. "
                "Restart the reader with scan.mode=latest-full, and give readers a consumer-id so that "
                "expiry keeps the snapshots they still need"
            )

    def _advance(self, position: ReaderPosition, snapshot_id: int) -> None:
        position.snapshot = snapshot_id
        position.offsets = {}
        self._records.next_snapshot()
        self._counted_from_start = True

    def _read_snapshot(
        self, position: ReaderPosition, snapshot_id: int, record: LogCommitRecord, out: Batch, budget: int
    ) -> bool:
        """Append the snapshot's committed changes to ``out``; False if the budget ran out first."""
        by_partition = {  # each partition's ranges sorted by first position
            partition: ranges for partition, ranges in sorted(record.ranges_by_partition().items())
            if self._context.reads(partition)
        }
        # The partitions are read one after the other; a client that fetches ahead
        # starts on all of them now (no wait at each partition switch).
        self._context.committed_log.prefetch({
            p: start for p, ranges in by_partition.items()
            if (start := position.offsets.get(p, ranges[0].first)) <= max(r.last for r in ranges)
        })
        for partition, ranges in by_partition.items():
            # If this partition's records are lost, what this poll took of them is dropped,
            # and the table files give what earlier polls did not return.
            resume_at, mark = position.offsets.get(partition), out.mark()
            returned: int | None = 0
            if resume_at is not None and _begun(ranges, resume_at):  # in an earlier poll
                returned = self._returned_before(partition, ranges, resume_at)
            try:
                if not self._read_partition(position, snapshot_id, partition, ranges, out, budget):
                    return False
                if self._counted_from_start:
                    self._records.check_counts(partition, ranges)
            except LogDataLostError as lost:
                self._records.log_changed(partition)
                if not self._context.changes_from_table:
                    raise
                out.truncate(mark)
                self._read_from_table(position, snapshot_id, partition, ranges, out, lost, returned)
        return True

    def _may_stop_inside(self, ranges: list[ProducedRange]) -> bool:
        """Whether a poll may stop inside this snapshot's partition when its budget runs out.

        Only where the table files could give exactly the rest, should the log lose it
        (:func:`~tablelog.reading.table_changes.not_yet_returned`): an append table's
        partition holding one write's records, each record a row. Elsewhere (a
        primary-key table, several writes, an ``arrow`` log) a begun partition is
        finished in the same poll, past ``max_records``: a reader's position is then
        never inside it, and the table gives each change once whatever the log loses.
        The cost is memory: one poll may hold a whole snapshot's partition."""
        context = self._context
        return self._split_partitions or (
            not context.table.primary_key and len(ranges) == 1 and not context.codec.rows_per_record_vary
        )

    def _returned_before(self, partition: int, ranges: list[ProducedRange], resume_at: int) -> int | None:
        """How many of the partition's committed records earlier polls returned, the
        reader being at ``resume_at``; None when that is not known exactly. In a dense
        range every position below ``resume_at`` is one; elsewhere only this reader's
        counts know, when it read the snapshot from its start, and a single write's
        records are those of sequence numbers 0 .. n-1 exactly when n were counted
        (a record missing from the log below ``resume_at`` shows as a difference)."""
        if dense(ranges):
            by_position = sum(max(0, min(resume_at, r.last + 1) - r.first) for r in ranges)
            if not self._counted_from_start:
                return by_position
        elif not self._counted_from_start or len(ranges) != 1:
            return None
        else:
            by_position = self._records.last_seq.get((ranges[0].token, partition), -1) + 1
        counted = sum(self._records.counts.get((r.token, partition), 0) for r in ranges)
        return counted if counted == by_position else None

    def _read_from_table(
        self, position: ReaderPosition, snapshot_id: int, partition: int, ranges: list[ProducedRange],
        out: Batch, lost: LogDataLostError, returned: int | None,
    ) -> None:
        changes = changes_from_table(self._context, snapshot_id, partition, ranges, lost, returned)
        if out.arrow:
            out.add(self._context.to_arrow(changes), self._context.schema_id)
        else:
            out.changes(self._context.schema_id).extend(changes)
        position.offsets[partition] = max(r.last for r in ranges) + 1

    def _read_partition(
        self, position: ReaderPosition, snapshot_id: int, partition: int, ranges: list[ProducedRange],
        out: Batch, budget: int,
    ) -> bool:
        """Append one partition's committed changes to ``out``, a chunk at a time; False if
        the budget ran out first."""
        building_batch = self._context.building_batch
        is_dense = dense(ranges)
        hi = max(r.last for r in ranges)
        pos = position.offsets.get(partition, ranges[0].first)
        may_stop_inside = self._may_stop_inside(ranges)
        while pos <= hi:
            over_budget = len(out) >= budget
            if over_budget and (may_stop_inside or not _begun(ranges, pos)):
                position.offsets[partition] = pos
                return False
            # Finishing a begun partition past the budget: in chunks of a default poll's size.
            chunk_budget = len(out) + max(budget, _FINISHING_CHUNK) if over_budget else budget
            size = out.fetch_size(chunk_budget, pos, hi, self._context.records_for)
            with building_batch():
                pos = self._records.read_chunk(snapshot_id, partition, ranges, is_dense, pos, hi, size, out)
            position.offsets[partition] = pos
        return True
