"""The partition files of one connection: opened on first use (and again after a fork),
their valid end found, a torn tail told from corruption."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from tablelog.plugin import (
    CorruptRecordError,
    LogConfig,
    LogSystemError,
    LogUnavailableError,
    TopicError,
)

from . import frames
from .files import flock, reader
from .location import topic_directory
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
        self.closed = False
        self._pid = os.getpid()
        self._partitions: int | None = None  # from topic.json, read lazily
        self._fds: dict[int, int] = {}
        self._writable: dict[int, bool] = {}
        # partition -> a frame boundary known to be the valid end when last seen.
        # Walks start here, so a long-lived connection never re-reads old data.
        self._ends: dict[int, int] = {}
        # (token, partition) -> [first, last, count, contiguous, end of its last batch]
        # since the last flush; appending fills it, and a fork must clear it.
        self._pending: dict[tuple[str, int], list[Any]] = {}
        self._dirty: set[int] = set()
        self._frame_estimate = 256  # average frame bytes, sizes fetch reads

    def __repr__(self) -> str:
        return f"FileLog(topic={self.topic!r}, directory={str(self.directory)!r})"

    def _read_partition_count(self) -> int | None:
        count = read_partition_count(self.directory, self.topic)
        if count is not None:
            self._partitions = count
        return count

    def _fd(self, partition: int) -> int:
        """The open partition file, opened on first use."""
        self._check_open()
        if os.getpid() != self._pid:
            self._after_fork()
        fd = self._fds.get(partition)
        if fd is not None:
            return fd
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
        path = self.directory / partition_file_name(partition)
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                self._writable[partition] = True
            except PermissionError:  # a reader on a read-only copy of the log
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                self._writable[partition] = False
        except FileNotFoundError:
            raise TopicError(
                f"partition file {path} is missing", topic=self.topic, partition=partition
            ) from None
        except OSError as err:
            raise LogUnavailableError(
                f"cannot open {path}: {err}", topic=self.topic, partition=partition
            ) from None
        self._fds[partition] = fd
        return fd

    def _after_fork(self) -> None:
        """A forked child must not share open file descriptions with its parent:
        flock locks belong to those, so sharing them would let both append at once.
        The parent's unflushed ranges are the parent's to report."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._pending.clear()
        self._dirty.clear()
        self._pid = os.getpid()

    # ----------------------------------------------------------------- ends

    def end_position(self, partition: int) -> int:
        fd = self._fd(partition)
        size = os.fstat(fd).st_size
        known = self._ends.get(partition, 0)
        if size == known:
            return size
        if size > known and frames.tail_is_complete(reader(fd), size):
            self._ends[partition] = size
            return size
        # A writer is appending right now, or one died mid-frame: wait for writers
        # to be out of the way, then look properly.
        with flock(fd, exclusive=False):
            return self._find_end(partition, fd)[0]

    def _find_end(self, partition: int, fd: int) -> tuple[int, int]:
        """The valid end and the file size; call with writers excluded (any flock held)."""
        size = os.fstat(fd).st_size
        known = self._ends.get(partition, 0)
        if known > size:
            known = 0  # the file was replaced under us: trust nothing cached
        read = reader(fd)
        end = size
        if size != known and not frames.tail_is_complete(read, size):
            # A torn tail: walk from the last boundary we know to the first incomplete frame.
            end = known
            try:
                for head in frames.iter_frame_heads(read, known, size, WALK_CHUNK):
                    end = head.position + head.length
            except frames.FrameError as err:
                raise self._corrupt(partition, err.offset, err.reason) from None
        self._ends[partition] = end
        return end, size

    def _corrupt(self, partition: int, position: int, reason: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"corrupt record at position {position} in {self.directory / partition_file_name(partition)}: "
            f"{reason}; it is not returned as data (fetch from a later position to skip it)",
            topic=self.topic,
            partition=partition,
        )

    # ----------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.closed:
            raise LogSystemError("the filesystem log connection is closed", topic=self.topic)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
