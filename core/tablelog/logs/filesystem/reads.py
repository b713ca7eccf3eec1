"""Reading a partition without a lock on the hot path: seeking to a position, time or end,
and fetching the whole frames up to the file size seen."""

from __future__ import annotations

import os
import time

from tablelog.plugin import (
    FetchResult,
    LogRecord,
    PositionOutOfRangeError,
    SeekKind,
    SeekSpec,
    hookimpl,
)

from . import frames
from .files import flock, reader
from .partitions import WALK_CHUNK, PartitionFiles
from .segments import Segment, segment_file_name

#: Bounds of one fetch read; the size in between follows max_records x average frame.
MIN_READ, MAX_READ = 64 << 10, 4 << 20
#: How often a waiting fetch looks at the file size: keeps produce-to-fetch latency
#: at a few milliseconds for the price of one fstat per interval.
POLL_INTERVAL_S = 0.002


class PartitionReads(PartitionFiles):
    """The hooks ``end_positions``, ``seek``, ``fetch`` and ``wait_for_records`` of a connection."""

    @hookimpl
    def end_positions(connection, partitions: list[int]) -> dict[int, int]:
        return {partition: connection.end_position(partition) for partition in partitions}

    @hookimpl
    def seek(connection, partition: int, spec: SeekSpec) -> int:
        if spec.kind is SeekKind.EARLIEST:
            # Where the oldest segment retention left starts (0 until it deletes one).
            connection._check_partition(partition)
            return connection._list_segments(partition)[0].base
        end = connection.end_position(partition)
        if spec.kind is SeekKind.LATEST:
            return end
        if spec.kind is SeekKind.TIMESTAMP:
            # Writers stamp their own batches, so timestamps are not monotonic in
            # the file: a linear walk over the headers finds the first one at or after.
            for segment in list(connection._list_segments(partition)):
                try:
                    fd = connection._open(partition, segment)
                except PositionOutOfRangeError:
                    continue  # deleted meanwhile: its records are older than the next one's
                stop = min(end - segment.base, os.fstat(fd).st_size)
                try:
                    for head in frames.iter_frame_heads(reader(fd), 0, stop, WALK_CHUNK):
                        if head.timestamp_ms >= spec.value:
                            return segment.base + head.position
                except frames.FrameError as err:
                    raise connection._corrupt(partition, segment.base + err.offset, err.reason) from None
            return end
        position = spec.value
        if position == end:
            return position
        if 0 <= position < end:
            segment = connection._segment_at(partition, position)
            length = frames.frame_length_at(reader(connection._open(partition, segment)), position - segment.base)
            if length is not None and position + length <= end:
                return position
        raise PositionOutOfRangeError(
            f"position {position} is not a record position of this log (valid: record "
            f"positions in [{connection.seek(partition, SeekSpec.earliest())}, {end}], {end} being the end)",
            topic=connection.topic,
            partition=partition,
        )

    @hookimpl
    def fetch(
        connection, partition: int, position: int, max_records: int, timeout_s: float
    ) -> FetchResult:
        if position < 0:
            connection._check_partition(partition)
            raise PositionOutOfRangeError(
                f"position {position} is negative", topic=connection.topic, partition=partition
            )
        segment = connection._segment_at(partition, position)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        seen = -1
        while max_records > 0:
            size = segment.base + os.fstat(connection._open(partition, segment)).st_size
            if position > size:
                raise PositionOutOfRangeError(
                    f"position {position} is past the end of the log ({size}): the log was "
                    "replaced or the position did not come from it",
                    topic=connection.topic,
                    partition=partition,
                )
            if size != seen:  # only re-read when something was appended
                seen = size
                if size > position:
                    records, next_position = connection._read_records(
                        partition, segment, position, size, max_records, may_retry=True
                    )
                    if records:
                        return FetchResult(records, next_position)
            if size == position and (following := connection._next_segment(partition, segment)) is not None:
                segment, seen = following, -1  # the writer rolled on: read on in the next segment
                connection._segment_at(partition, position)  # and let go of the one behind
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(POLL_INTERVAL_S, remaining))
        return FetchResult([], position)

    @hookimpl
    def wait_for_records(connection, positions: dict[int, int], timeout_s: float) -> list[int]:
        """The partitions whose end is not their position: a record is there, or the
        position is not this log's (the fetch reports it). One loop over all of them,
        every ``POLL_INTERVAL_S``, until one is or ``timeout_s`` passed."""
        for partition in positions:
            connection._check_partition(partition)  # TopicError for a partition the topic does not have
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            ready = [p for p, position in sorted(positions.items()) if connection._end_moved(p, position)]
            remaining = deadline - time.monotonic()
            if ready or remaining <= 0:
                return ready
            time.sleep(min(POLL_INTERVAL_S, remaining))

    def _end_moved(self, partition: int, position: int) -> bool:
        """Whether the partition's end is no longer ``position``. While it is, this costs an
        ``fstat`` of the last segment and a ``stat`` of the name a next one would have (a
        writer rolls to it when the segment is full; the reader may not know that size)."""
        segment = (self._segments.get(partition) or self._known_segments(partition))[-1]
        local = os.fstat(self._open(partition, segment)).st_size
        if segment.base + local == position and not (
            local and os.path.exists(os.path.join(self.directory, segment_file_name(partition, position)))
        ):
            return False
        return self.end_position(partition) != position

    def _read_records(
        self,
        partition: int,
        segment: Segment,
        position: int,
        size: int,
        max_records: int,
        *,
        may_retry: bool,
    ) -> tuple[list[LogRecord], int]:
        """Parse whole frames in ``[position, size)`` of ``segment``: one big pread per round."""
        fd = self._open(partition, segment)
        records: list[LogRecord] = []
        at = position
        need = 0
        while len(records) < max_records and at < size:
            wanted = (max_records - len(records)) * self._frame_estimate
            length = min(max(MIN_READ, min(wanted, MAX_READ), need), size - at)
            buf = os.pread(fd, length, at - segment.base)
            got, used, need, error = frames.parse_records(buf, at, size, max_records - len(records))
            records += got
            at += used
            if error is not None:
                if records:
                    break  # hand out the good records; the next fetch starts at the bad one
                if may_retry:
                    # It may be a torn tail being repaired under our feet: look
                    # again with writers excluded before calling it corrupt.
                    with flock(self._lock(partition), exclusive=False):
                        return self._read_records(
                            partition, segment, at, segment.base + os.fstat(fd).st_size, max_records,
                            may_retry=False,
                        )
                raise self._corrupt(partition, at, error.reason)
            if need == 0:
                break  # max_records reached, or an incomplete frame at the end
        if records:
            self._frame_estimate = max(frames.MIN_FRAME, (at - position) // len(records))
        return records, at
