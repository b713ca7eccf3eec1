"""Transactional reads: the changes each snapshot committed, in commit order, each once.

For each snapshot the reader fetches, per partition, the span covering the ranges of
the writer tokens that snapshot commits, and returns exactly the records of those
tokens inside their ranges, each once (duplicates a retrying client wrote are dropped
by sequence number). Records of failed, speculative or replayed attempts belong to no
committed token and are never returned. A committed range the log cannot produce is
read from the table files (:mod:`tablelog.reading.table_changes`), never skipped.

Two ways to read a partition's ranges: *dense* ranges (see :func:`dense`) are fetched
as values only, and ``poll_arrow`` decodes them all at once into Arrow; elsewhere
(*sparse*) every record's token, position and sequence number decide.
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Sequence

import pyarrow as pa

from tablelog.commit.record import LogCommitRecord
from tablelog.errors import LogDataLostError, TablelogError
from tablelog.positions import ReaderPosition
from tablelog.reading.batch import Batch
from tablelog.reading.context import ReadContext
from tablelog.reading.decode import Change
from tablelog.reading.table_changes import changes_from_table
from tablelog.records import FetchResult, LogRecord, ProducedRange, ValuesResult

_POLL_SLEEP_S = 0.01

#: Changes a fetch may ask for when a poll past its budget finishes a begun partition.
_FINISHING_CHUNK = 10_000

#: Values up to this size on average decode faster all at once by Arrow's JSON reader
#: than one by one; longer ones not (its string parsing is slower). See
#: docs/performance.md, "Why the reader does what it does".
_AT_ONCE_MAX_AVERAGE_BYTES = 512


def dense(ranges: list[ProducedRange]) -> bool:
    """Whether every record inside these ranges (sorted by first) is a committed one:
    no two overlap, and each is ``contiguous`` (the log system says so) or its count
    equals its length. Counts are of distinct acknowledged records at distinct
    positions, so a count equal to the length leaves no position for anything else
    (a failed attempt's record, a retry's duplicate): logs with consecutive integer
    positions (Kafka offsets) need no word from the plugin."""
    previous_last = -1
    for r in ranges:
        if not (r.contiguous or r.last - r.first + 1 == r.count) or r.first <= previous_last:
            return False
        previous_last = r.last
    return True


def _decodes_faster_at_once(values: list[bytes | None]) -> bool:
    if None in values:
        return False  # not ours: decoded one by one, which reports it
    return sum(map(len, values)) <= _AT_ONCE_MAX_AVERAGE_BYTES * len(values)  # type: ignore[arg-type]


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
        self._last_seq: dict[tuple[str, int], int] = {}
        self._counts: dict[tuple[str, int], int] = defaultdict(int)
        self._counted_from_start = counted_from_start
        self._checked_partitions: set[int] = set()

    def poll(self, position: ReaderPosition, budget: int, timeout_s: float) -> list[Change]:
        return self._poll(position, budget, timeout_s, Batch(arrow=False)).in_schema(self._context).to_changes()

    def poll_arrow(self, position: ReaderPosition, budget: int, timeout_s: float) -> pa.Table:
        return self._poll(position, budget, timeout_s, Batch(arrow=True)).in_schema(self._context).to_arrow(
            self._context)

    def _poll(self, position: ReaderPosition, budget: int, timeout_s: float, out: Batch) -> Batch:
        store = self._context.table.store
        deadline = time.monotonic() + timeout_s
        while len(out) < budget:
            if self._until_snapshot is not None and position.snapshot >= self._until_snapshot:
                break
            snapshot = store.snapshot(position.snapshot + 1)
            if snapshot is None:
                self._check_not_expired(position.snapshot + 1)
                if out or time.monotonic() >= deadline:
                    break
                time.sleep(_POLL_SLEEP_S)
                continue
            record = LogCommitRecord.from_properties(snapshot.properties)
            if record is None or not record.ranges:
                self._advance(position, snapshot.id)
                continue
            self._check_same_log(record)
            # A snapshot committed under a newer schema: its changes and all after them in it.
            if self._context.upgrade(snapshot.schema_id):
                out.in_schema(self._context)
            if not self._read_snapshot(position, snapshot.id, record, out, budget):
                break
            self._advance(position, snapshot.id)
        return out

    def _check_not_expired(self, snapshot_id: int) -> None:
        table = self._context.table
        earliest = table.store.earliest_snapshot_id()
        if earliest is not None and earliest > snapshot_id:
            raise TablelogError(
                f"table {table.identifier!r}: snapshot {snapshot_id} expired before this reader "
                f"read it (earliest kept: {earliest}); changes committed there cannot be returned. "
                "Restart the reader with scan.mode=latest-full, and give readers a consumer-id so that "
                "expiry keeps the snapshots they still need"
            )

    def _check_same_log(self, record: LogCommitRecord) -> None:
        table = self._context.table
        if record.system != table.options.log_system or record.topic != table.topic:
            raise TablelogError(
                f"table {table.identifier!r}: a snapshot committed records to log "
                f"{record.system!r} topic {record.topic!r}, but this reader reads "
                f"{table.options.log_system!r} topic {table.topic!r}"
            )

    def _advance(self, position: ReaderPosition, snapshot_id: int) -> None:
        position.snapshot = snapshot_id
        position.offsets = {}
        self._last_seq.clear()
        self._counts.clear()
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
        self._context.log.prefetch({
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
                    self._check_counts(partition, ranges)
            except LogDataLostError as lost:
                self._checked_partitions.discard(partition)  # the log changed: check it again
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
            not context.table.primary_key and len(ranges) == 1 and not context.codec.batched
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
            by_position = self._last_seq.get((ranges[0].token, partition), -1) + 1
        counted = sum(self._counts.get((r.token, partition), 0) for r in ranges)
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
        read_chunk = self._read_dense_chunk if dense(ranges) else self._read_sparse_chunk
        building_batch = self._context.building_batch
        hi = max(r.last for r in ranges)
        pos = position.offsets.get(partition, ranges[0].first)
        may_stop_inside = self._may_stop_inside(ranges)
        while pos <= hi:
            over_budget = len(out) >= budget
            if over_budget and (may_stop_inside or not _begun(ranges, pos)):
                position.offsets[partition] = pos
                return False
            with building_batch():
                if read_chunk == self._read_dense_chunk and partition not in self._checked_partitions:
                    pos = self._read_first_record_checked(snapshot_id, partition, ranges, pos, hi, out)
                else:
                    # Finishing a begun partition past the budget: in chunks of a default poll's size.
                    chunk_budget = len(out) + max(budget, _FINISHING_CHUNK) if over_budget else budget
                    size = out.fetch_size(chunk_budget, pos, hi, self._context.records_for)
                    pos = read_chunk(snapshot_id, partition, ranges, pos, hi, size, out)
            position.offsets[partition] = pos
        return True

    def _read_first_record_checked(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], pos: int, hi: int, out: Batch,
    ) -> int:
        """A dense read trusts positions: every record in a dense range is taken as the
        range's. A log replaced since (a topic recreated, a broker restarted on memory
        storage) reuses positions for other writes' records, so the first dense read of
        each partition reads its first record whole and checks its writer token, and so
        does the next one after records were found lost there: a reader resumed after such
        a loss finds it here and reads the table instead, until it reaches records of the
        new log. The record is then taken like any other, so that the dense reads go on
        from the next position (a log client reading on needs no seek back)."""
        result = self._context.fetch_committed(partition, pos, hi, 1, values=False)
        assert isinstance(result, FetchResult)
        first = result.records[0]
        owner = next((r for r in ranges if r.first <= first.position <= r.last), None)
        if owner is not None and first.token is not None and first.token != owner.token:
            raise self._context.lost(
                partition, pos, hi,
                f"the log holds another write's record at position {first.position} (writer token "
                f"{first.token}, not {owner.token}): it was replaced since, and its positions reused",
            )
        self._checked_partitions.add(partition)
        if owner is not None:
            self._take_values([first.value], [first.position], partition, snapshot_id, out)
            self._counts[(owner.token, partition)] += 1
        return result.next_position

    def _read_dense_chunk(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], pos: int, hi: int,
        max_records: int, out: Batch,
    ) -> int:
        """One fetch of values, each inside a dense range a committed change; returns where to go on."""
        result = self._context.fetch_committed(partition, pos, hi, max_records, values=True)
        assert isinstance(result, ValuesResult)
        for r in ranges:
            # The chunk's records inside this range (records between ranges are other
            # writes'); positions only grow, so two bisections find them.
            a = bisect.bisect_left(result.positions, r.first)
            b = bisect.bisect_right(result.positions, r.last)
            if b > a:
                self._take_values(result.values[a:b], result.positions[a:b], partition, snapshot_id, out)
                self._counts[(r.token, partition)] += b - a
        return result.next_position

    def _take_values(
        self, values: list[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int, out: Batch
    ) -> None:
        """Committed values decoded: all at once into Arrow for ``poll_arrow``, else one
        by one into changes (and one by one whenever a value does not decode)."""
        context = self._context
        if out.arrow and not context.codec.batched and _decodes_faster_at_once(values):
            try:
                out.add(context.codec.values_to_arrow(values), context.schema_id)
                return
            except ValueError:
                pass  # decoded one by one below, which reports the value that is not ours
        if out.arrow and not context.codec.batched:
            changes: list[Change] = []
            context.decoder.decode_all(values, positions, partition, snapshot_id, changes)
            out.add(context.to_arrow(changes), context.schema_id)
        else:
            out.take_records(context, values, positions, partition, snapshot_id)

    def _read_sparse_chunk(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], pos: int, hi: int,
        max_records: int, out: Batch,
    ) -> int:
        """One fetch of records, the committed ones kept; returns where to go on."""
        result = self._context.fetch_committed(partition, pos, hi, max_records, values=False)
        assert isinstance(result, FetchResult)
        taken = self._take_committed(result.records, partition, hi, ranges, snapshot_id, out)
        return hi + 1 if taken else result.next_position

    def _take_committed(
        self, records: list[LogRecord], partition: int, hi: int, ranges: list[ProducedRange], snapshot_id: int,
        out: Batch,
    ) -> bool:
        """Append the committed changes among ``records`` up to position ``hi``: a record
        counts when its token is committed in this snapshot, its position lies in that
        token's range, and its sequence number is new (one tight loop: it runs for every
        record a sparse read returns). True when a record past ``hi`` was reached."""
        bounds = {r.token: (r.first, r.last) for r in ranges}
        last_seq = self._last_seq
        counts = self._counts
        values: list[bytes | None] = []
        positions: list[int] = []
        add_value, add_position = values.append, positions.append
        reached_hi = False
        for rec in records:
            position, _key, value, token, seq, _ts = rec
            if position > hi:
                reached_hi = True
                break
            if token is None:
                # Reported in log order: the committed records before it are decoded first.
                self._decode_committed(values, positions, records, partition, snapshot_id, out)
                values.clear()
                positions.clear()
                self._context.decoder.foreign(partition, position, "it carries no tablelog writer token")
                continue
            bound = bounds.get(token)
            if bound is None or not bound[0] <= position <= bound[1]:
                continue  # another attempt's record: failed, replayed, or another snapshot's
            key = (token, partition)
            if seq is None:
                seq = -1
            if seq <= last_seq.get(key, -1):
                continue  # a duplicate a retrying client wrote
            last_seq[key] = seq
            counts[key] += 1
            add_value(value)
            add_position(position)
        self._decode_committed(values, positions, records, partition, snapshot_id, out)
        return reached_hi

    def _decode_committed(
        self, values: list[bytes | None], positions: list[int], records: list[LogRecord], partition: int,
        snapshot_id: int, out: Batch,
    ) -> None:
        """Decode committed records; a skipped foreign one is not counted as found."""
        if not values:
            return
        left_out = out.take_records(self._context, values, positions, partition, snapshot_id)
        if left_out:
            skipped = set(left_out)
            for rec in records:
                if rec.position in skipped:
                    self._counts[(rec.token, partition)] -= 1  # type: ignore[index]

    def _check_counts(self, partition: int, ranges: list[ProducedRange]) -> None:
        for r in ranges:
            found = self._counts.get((r.token, partition), 0)
            if found != r.count:
                raise self._context.lost(
                    partition, r.first, r.last,
                    f"only {found} of the {r.count} records of write {r.token} were found",
                )
