"""Appending to a partition (under its exclusive lock) and reporting, at each flush, the
range each token's records landed in."""

from __future__ import annotations

import contextlib
import os

from tablelog.plugin import (
    PositionOutOfRangeError,
    ProduceBatch,
    ProducedRange,
    ProduceError,
    hookimpl,
)

from . import frames
from .files import flock, pwrite_all
from .partitions import PartitionFiles


class PartitionAppends(PartitionFiles):
    """The hooks ``produce`` and ``flush`` of a connection."""

    @hookimpl
    def produce(connection, batch: ProduceBatch) -> None:
        partition = batch.partition
        lock = connection._lock(partition)  # TopicError for a partition the topic does not have
        data, offsets = frames.encode_batch(batch)
        if not offsets:
            return
        with flock(lock, exclusive=True):
            start, size, segment = connection._find_end(partition)
            if not segment.writable:
                raise ProduceError("the partition file is read-only", topic=connection.topic, partition=partition)
            fd = connection._open(partition, segment)
            try:
                if size > start:
                    os.ftruncate(fd, start - segment.base)  # cut the torn tail a dead writer left behind
                if start - segment.base >= connection.segment_bytes:
                    segment = connection._roll(partition, start)
                    fd = connection._open(partition, segment)
                pwrite_all(fd, data, start - segment.base)
            except OSError as err:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start - segment.base)  # leave no half batch for readers to wait on
                raise ProduceError(
                    f"cannot append {len(offsets)} records: {err}",
                    topic=connection.topic,
                    partition=partition,
                ) from None
            connection._ends[partition] = start + len(data)
        connection._dirty[partition, segment.base] = segment
        key = (batch.token, partition)
        pending = connection._pending.get(key)
        end = start + len(data)
        if pending is None:
            connection._pending[key] = [start + offsets[0], start + offsets[-1], len(offsets), True, end]
        else:
            # Still contiguous when this batch starts where the token's previous one ended:
            # nobody appended in between (appends hold the partition's lock).
            pending[3] = pending[3] and start == pending[4]
            pending[1], pending[4] = start + offsets[-1], end
            pending[2] += len(offsets)

    @hookimpl
    def flush(connection) -> list[ProducedRange]:
        """fsync what was appended since the last flush (the data was written
        synchronously by produce, so there is nothing to wait for but the disk).
        ``timeout_s`` cannot interrupt an fsync and is not used."""
        connection._check_open()
        for (partition, _base), segment in sorted(connection._dirty.items(), key=lambda item: item[0]):
            try:
                fd = connection._open(partition, segment)
                os.fsync(fd)
                if os.fstat(fd).st_nlink == 0:  # unlinked while open: its data is going nowhere
                    raise PositionOutOfRangeError("deleted", topic=connection.topic, partition=partition)
            except PositionOutOfRangeError:
                raise ProduceError(
                    f"records appended to {segment.path} are gone before they were made durable: "
                    "log retention deleted the segment (the write stayed unflushed while the snapshots "
                    "before it expired); write them again",
                    topic=connection.topic,
                    partition=partition,
                ) from None
            except OSError as err:
                raise ProduceError(
                    f"cannot make records durable (fsync): {err}",
                    topic=connection.topic,
                    partition=partition,
                ) from None
        ranges = [
            ProducedRange(token, partition, first, last, count, contiguous)
            for (token, partition), (first, last, count, contiguous, _end) in connection._pending.items()
        ]
        connection._pending.clear()
        connection._dirty.clear()
        return ranges
