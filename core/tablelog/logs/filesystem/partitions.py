"""The partition files of one connection: each partition's segments (see
:mod:`.segments`) and its lock file, opened on first use (and again after a fork), the
valid end found, a torn tail told from corruption."""

from __future__ import annotations

import bisect
import contextlib
import os
from typing import Any

from tablelog.plugin import (
    CorruptRecordError,
    LogConfig,
    LogSystemError,
    LogUnavailableError,
    PositionOutOfRangeError,
    TopicError,
    hookimpl,
)

from . import frames
from .files import flock, fsync_directory, not_writable, reader
from .location import segment_bytes, topic_directory
from .segments import Segment, list_bases, lock_file_name, segment_file_name
from .topic import partition_file_name, read_partition_count

#: Bytes read per pread when walking frame headers.
WALK_CHUNK = 1 << 20


class PartitionFiles:
    """A connection's open partition files and what it knows of their valid ends; the
    connection's state, which appending and reading share (see :class:`.log.FileLog`)."""

    def __init__(self, config: LogConfig):
        self.config = config
        self.topic = config.topic
        self.directory = topic_directory(config)
        self.segment_bytes = segment_bytes(config)
        self.closed = False
        self._pid = os.getpid()
        self._partitions: int | None = None  # from topic.json, read lazily
        # partition -> its segments known to this connection, ascending by base
        self._segments: dict[int, list[Segment]] = {}
        self._locks: dict[int, int] = {}
        # partition -> a frame boundary known to be the valid end when last seen.
        # Walks start here, so a long-lived connection never re-reads old data.
        self._ends: dict[int, int] = {}
        # (token, partition) -> [first, last, count, contiguous, end of its last batch]
        # since the last flush; appending fills it, and a fork must clear it.
        self._pending: dict[tuple[str, int], list[Any]] = {}
        self._dirty: dict[tuple[int, int], Segment] = {}  # (partition, base): appended to, not fsynced
        self._frame_estimate = 256  # average frame bytes, sizes fetch reads

    def __repr__(self) -> str:
        return f"FileLog(topic={self.topic!r}, directory={str(self.directory)!r})"

    def _read_partition_count(self) -> int | None:
        count = read_partition_count(self.directory, self.topic)
        if count is not None:
            self._partitions = count
        return count

    def _check_partition(self, partition: int) -> None:
        self._check_open()
        if os.getpid() != self._pid:
            self._after_fork()
        count = self._partitions
        if count is None or partition >= count:
            count = self._read_partition_count()  # it may have been created since
        if count is None:
            raise TopicError(f"topic does not exist in {self.directory}", topic=self.topic)
        if not 0 <= partition < count:
            raise TopicError(
                f"partition {partition} does not exist; the topic has {count}",
                topic=self.topic,
                partition=partition,
            )

    # ----------------------------------------------------------------- segments

    def _known_segments(self, partition: int) -> list[Segment]:
        self._check_partition(partition)
        segments = self._segments.get(partition)
        if not segments:
            segments = self._list_segments(partition)
        return segments

    def _list_segments(self, partition: int) -> list[Segment]:
        """The partition's segments as the directory lists them now (the open ones kept)."""
        try:
            bases = list_bases(self.directory, partition)
        except OSError as err:
            raise LogUnavailableError(
                f"cannot list {self.directory}: {err}", topic=self.topic, partition=partition
            ) from None
        if not bases:
            raise TopicError(
                f"partition file {self.directory / partition_file_name(partition)} is missing",
                topic=self.topic,
                partition=partition,
            )
        known = {s.base: s for s in self._segments.get(partition, [])}
        for base, segment in known.items():
            if base not in bases:
                segment.close()  # deleted by retention
        segments = [known.get(b) or Segment(b, self.directory / segment_file_name(partition, b)) for b in bases]
        self._segments[partition] = segments
        return segments

    def _open(self, partition: int, segment: Segment) -> int:
        try:
            return segment.open()
        except FileNotFoundError:
            raise self._deleted(partition, segment.base) from None
        except OSError as err:
            raise LogUnavailableError(
                f"cannot open {segment.path}: {err}", topic=self.topic, partition=partition
            ) from None

    def _next_segment(self, partition: int, segment: Segment) -> Segment | None:
        """The segment after ``segment``, if a writer has started it (found by its name:
        its base is where ``segment`` ends)."""
        segments = self._known_segments(partition)
        index = segments.index(segment)
        if index + 1 < len(segments):
            return segments[index + 1]
        size = os.fstat(self._open(partition, segment)).st_size
        if size == 0:
            return None
        following = Segment(segment.base + size, self.directory / segment_file_name(partition, segment.base + size))
        if not following.path.exists():
            return None
        segments.append(following)
        return following

    def _last_segment(self, partition: int) -> Segment:
        segment = self._known_segments(partition)[-1]
        while (following := self._next_segment(partition, segment)) is not None:
            segment = following
        return segment

    def _segment_at(self, partition: int, position: int) -> Segment:
        """The segment holding ``position`` (or ending at it, for the last one);
        PositionOutOfRangeError when retention deleted it."""
        segments = self._known_segments(partition)
        if position < segments[0].base:
            segments = self._list_segments(partition)
            if position < segments[0].base:
                raise self._deleted(partition, segments[0].base, position)
        index = bisect.bisect_right([s.base for s in segments], position) - 1
        segment = segments[index]
        # Readers moving on release the segments behind them: retention may delete those files.
        for earlier in segments[:index]:
            earlier.close()
        return segment

    def _deleted(self, partition: int, earliest: int, position: int | None = None) -> PositionOutOfRangeError:
        what = "this position" if position is None else f"position {position}"
        return PositionOutOfRangeError(
            f"{what} is before the earliest record the log still holds ({earliest}): "
            "retention deleted the segment that held it",
            topic=self.topic,
            partition=partition,
        )

    def _lock(self, partition: int) -> int:
        """The partition's lock file: appends take it exclusively, readers shared when
        something looks wrong (segments come and go; the lock file stays)."""
        self._check_partition(partition)
        fd = self._locks.get(partition)
        if fd is not None:
            return fd
        path = self.directory / lock_file_name(partition)
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as err:  # a read-only copy or mount of the log: nobody appends to it
                if not not_writable(err):
                    raise
                fd = os.open(self.directory, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as err:
            raise LogUnavailableError(f"cannot open {path}: {err}", topic=self.topic, partition=partition) from None
        self._locks[partition] = fd
        return fd

    def _roll(self, partition: int, base: int) -> Segment:
        """Start the segment at ``base`` (the last one's valid end); under the lock."""
        segment = Segment(base, self.directory / segment_file_name(partition, base))
        try:
            os.close(os.open(segment.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
            fsync_directory(self.directory)
        except OSError as err:
            raise LogUnavailableError(
                f"cannot create {segment.path}: {err}", topic=self.topic, partition=partition
            ) from None
        self._segments[partition].append(segment)
        return segment

    # ----------------------------------------------------------------- ends

    def end_position(self, partition: int) -> int:
        segment = self._last_segment(partition)
        local = os.fstat(self._open(partition, segment)).st_size
        size = segment.base + local
        known = self._ends.get(partition, 0)
        if size == known:
            return size
        if size > known and frames.tail_is_complete(reader(self._open(partition, segment)), local):
            self._ends[partition] = size
            return size
        # A writer is appending right now, or one died mid-frame: wait for writers
        # to be out of the way, then look properly.
        with flock(self._lock(partition), exclusive=False):
            return self._find_end(partition)[0]

    def _find_end(self, partition: int) -> tuple[int, int, Segment]:
        """The valid end, the size and the last segment; call with writers excluded
        (the partition's lock held)."""
        segment = self._last_segment(partition)
        fd = self._open(partition, segment)
        local = os.fstat(fd).st_size
        size = segment.base + local
        known = self._ends.get(partition, 0)
        if known > size or known < segment.base:
            known = segment.base  # the file was replaced under us, or an older segment's end
        read = reader(fd)
        end = size
        if size != known and not frames.tail_is_complete(read, local):
            # A torn tail: walk from the last boundary we know to the first incomplete frame.
            end = known
            try:
                for head in frames.iter_frame_heads(read, known - segment.base, local, WALK_CHUNK):
                    end = segment.base + head.position + head.length
            except frames.FrameError as err:
                raise self._corrupt(partition, segment.base + err.offset, err.reason) from None
        self._ends[partition] = end
        return end, size, segment

    def _corrupt(self, partition: int, position: int, reason: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"corrupt record at position {position} in {self.directory} (partition {partition}): "
            f"{reason}; it is not returned as data (fetch from a later position to skip it)",
            topic=self.topic,
            partition=partition,
        )

    # ----------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.closed:
            raise LogSystemError("the filesystem log connection is closed", topic=self.topic)

    @hookimpl
    def close_log(connection) -> None:
        if connection.closed:
            return
        connection.closed = True
        connection._close_files()

    def _close_files(self) -> None:
        segments, self._segments = self._segments, {}
        for known in segments.values():
            for segment in known:
                segment.close()
        locks, self._locks = self._locks, {}
        for fd in locks.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    def _after_fork(self) -> None:
        """A forked child must not share open file descriptions with its parent:
        flock locks belong to those, so sharing them would let both append at once.
        The parent's unflushed ranges are the parent's to report."""
        self._close_files()
        self._pending.clear()
        self._dirty.clear()
        self._pid = os.getpid()
