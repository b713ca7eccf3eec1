"""The committed records of one snapshot's partition, fetched a chunk at a time, and
the per-write counts and sequence numbers a transactional reader keeps while it reads a
snapshot (:mod:`tablelog.reading.transactional` walks the snapshots).

Two ways to read a partition's ranges: *dense* ranges (see :func:`dense`) are fetched
as values only, which ``poll_arrow`` may decode all at once into Arrow; elsewhere
(*sparse*) every record's token, position and sequence number decide.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Sequence

from tablelog.reading.batch import Batch
from tablelog.reading.context import ReadContext
from tablelog.records import FetchResult, LogRecord, ProducedRange, ValuesResult


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


class CommittedRecords:
    """One transactional reader's chunk reads of committed records, with what it counted
    of each write in each partition of the snapshot it reads."""

    def __init__(self, context: ReadContext) -> None:
        self._context = context
        #: The last sequence number taken, by (writer token, partition).
        self.last_seq: dict[tuple[str, int], int] = {}
        #: Records taken, by (writer token, partition).
        self.counts: dict[tuple[str, int], int] = defaultdict(int)
        self._checked_partitions: set[int] = set()

    def next_snapshot(self) -> None:
        """Forget the counts: the reader goes on to the next snapshot."""
        self.last_seq.clear()
        self.counts.clear()

    def stream_changed(self) -> None:
        """The next snapshot is read from the other stream (:mod:`tablelog.formats.projection`):
        check each partition's first record there again."""
        self._checked_partitions.clear()

    def log_changed(self, partition: int) -> None:
        """The partition's records were found lost: check its first record again."""
        self._checked_partitions.discard(partition)

    def read_chunk(
        self, snapshot_id: int, partition: int, ranges: list[ProducedRange], is_dense: bool, pos: int, hi: int,
        max_records: int, out: Batch,
    ) -> int:
        """Append the committed changes of one fetch at ``pos`` (at most ``max_records``
        records, up to ``hi``) to ``out``; returns where to go on. ``is_dense``:
        :func:`dense` of ``ranges`` (the caller's, once per partition)."""
        if not is_dense:
            return self._read_sparse_chunk(snapshot_id, partition, ranges, pos, hi, max_records, out)
        if partition not in self._checked_partitions:
            return self._read_first_record_checked(snapshot_id, partition, ranges, pos, hi, out)
        return self._read_dense_chunk(snapshot_id, partition, ranges, pos, hi, max_records, out)

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
            self.counts[(owner.token, partition)] += 1
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
                self.counts[(r.token, partition)] += b - a
        return result.next_position

    def _take_values(
        self, values: list[bytes | None], positions: Sequence[int], partition: int, snapshot_id: int, out: Batch
    ) -> None:
        """Committed values of a dense range decoded: for ``poll_arrow`` all at once into
        Arrow where the log format can (and one by one whenever a value does not decode)."""
        out.take_records(self._context, values, positions, partition, snapshot_id, at_once=True)

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
        last_seq = self.last_seq
        counts = self.counts
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
                    self.counts[(rec.token, partition)] -= 1  # type: ignore[index]

    def check_counts(self, partition: int, ranges: list[ProducedRange]) -> None:
        for r in ranges:
            found = self.counts.get((r.token, partition), 0)
            if found != r.count:
                raise self._context.lost(
                    partition, r.first, r.last,
                    f"only {found} of the {r.count} records of write {r.token} were found",
                )
