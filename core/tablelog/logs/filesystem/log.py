"""The file log's connection: one directory per topic, one append-only file per partition.

Layout of a topic directory::

    topic.json              {"format": ..., "version": 1, "partitions": N}, written last
    topic.lock              flock'ed while the topic is created
    partition-00000.log     frames (see :mod:`.frames`), appended under flock
    ...

Several processes may append to one partition at once (Spark runs tasks in
separate processes): an appender takes ``flock(LOCK_EX)`` on the partition file,
finds the valid end, cuts off a torn tail a dead writer may have left, writes its
frames with one ``pwrite`` and releases the lock. Positions are byte offsets, so
they are assigned by where the frames land, under the lock.

Readers take no lock on the hot path: they read up to the file size they saw and
stop before an incomplete frame. They take ``flock(LOCK_SH)`` only when something
looks wrong (a tail that does not end on a frame, a failed checksum), to tell a
write in progress from a torn tail or real corruption.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tablelog.plugin import (
    CorruptRecordError,
    FetchResult,
    LogConfig,
    LogRecord,
    LogSystemError,
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
    ProduceBatch,
    ProducedRange,
    ProduceError,
    SeekKind,
    SeekSpec,
    TopicError,
)

from . import frames

FORMAT_NAME = "tablelog-filesystem-log"
META_NAME = "topic.json"
LOCK_NAME = "topic.lock"
KNOWN_OPTIONS = ("path", "topic")

#: Bytes read per pread when walking frame headers.
WALK_CHUNK = 1 << 20
#: Bounds of one fetch read; the size in between follows max_records x average frame.
MIN_READ, MAX_READ = 64 << 10, 4 << 20
#: How often a waiting fetch looks at the file size: keeps produce-to-fetch latency
#: at a few milliseconds for the price of one fstat per interval.
POLL_INTERVAL_S = 0.002


def partition_file_name(partition: int) -> str:
    return f"partition-{partition:05d}.log"


def topic_directory(config: LogConfig) -> Path:
    """Where the topic lives: ``<filesystem.path>/<topic>/``, or
    ``<warehouse>/.tablelog/log/<topic>/`` when no path is set.

    ``filesystem.path`` is a root shared by topics (like a broker address), so two
    tables pointing at the same path never write into each other's files.
    Validates the options without touching the disk.
    """
    options = dict(config.options)
    for key in options:
        if key not in KNOWN_OPTIONS:
            hint = difflib.get_close_matches(key, KNOWN_OPTIONS, n=1)
            raise OptionError(
                f"unknown option 'filesystem.{key}'"
                + (f"; did you mean 'filesystem.{hint[0]}'?" if hint else "")
                + f"; the filesystem log knows: {', '.join('filesystem.' + k for k in KNOWN_OPTIONS)}"
            )
    topic = config.topic
    if not topic or topic in (".", "..") or any(c in topic for c in "/\\\0"):
        raise OptionError(
            f"invalid value {topic!r} for option 'filesystem.topic': the filesystem log uses the "
            "topic as a directory name (no '/', '\\', NUL, '.' or '..')"
        )
    path = options.get("path", "").strip()
    if path:
        root = _local_path(path, "filesystem.path")
    elif "://" in config.warehouse and not config.warehouse.startswith("file://"):
        raise OptionError(
            f"log.system=filesystem needs a shared directory for its files, and the warehouse "
            f"{config.warehouse!r} is an object store, not a directory: use log.system=kafka or "
            "log.system=pulsar, or set 'filesystem.path' to an absolute directory every writer, "
            "committer and reader shares (e.g. an NFS mount)"
        )
    elif config.warehouse:
        root = _local_path(config.warehouse, "warehouse") / ".tablelog" / "log"
    else:
        raise OptionError(
            "option 'filesystem.path' is required when the table has no local warehouse directory"
        )
    return root / topic


def _local_path(location: str, key: str) -> Path:
    """An absolute local directory. A relative path would be resolved against each
    process's working directory, so a Spark executor or a second client would read and
    write another log than the writer's."""
    if location.startswith("file://"):
        location = location[len("file://") :]
        if not location.startswith("/"):
            host = location.split("/", 1)[0]
            raise OptionError(
                f"invalid value 'file://{location}' for option {key!r}: a file URL names a "
                f"local directory (file:///dir), not one on host {host!r}"
            )
    elif "://" in location:
        raise OptionError(
            f"invalid value {location!r} for option {key!r}: the filesystem log needs a local "
            "directory; set 'filesystem.path' to one"
        )
    path = Path(location).expanduser()
    if not path.is_absolute():
        raise OptionError(
            f"invalid value {location!r} for option {key!r}: a relative path means another "
            "directory in every process that opens the log; give an absolute path or a file:// URL"
        )
    return path


@contextlib.contextmanager
def _flock(fd: int, exclusive: bool) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _reader(fd: int) -> frames.Reader:
    return lambda offset, size: os.pread(fd, size, offset)


class FileLog:
    """One open connection (the ``Connection`` the hooks receive)."""

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
        # (token, partition) -> [first, last, count] since the last flush.
        # (token, partition) -> [first, last, count, contiguous, end of its last batch]
        self._pending: dict[tuple[str, int], list[Any]] = {}
        self._dirty: set[int] = set()
        self._frame_estimate = 256  # average frame bytes, sizes fetch reads

    def __repr__(self) -> str:
        return f"FileLog(topic={self.topic!r}, directory={str(self.directory)!r})"

    def _where_hint(self) -> str:
        return (
            "; the filesystem log keeps its files in <filesystem.path>/<topic>, by default "
            "<warehouse>/.tablelog/log/<topic>: the warehouse (or filesystem.path) must be a "
            "directory this process can create and write"
        )

    # ----------------------------------------------------------------- topic

    def ensure_topic(self) -> int:
        self._check_open()
        count = self._read_partition_count()
        if count is None:
            if not self.config.auto_register:
                raise TopicError(
                    f"topic does not exist in {self.directory} and log.system.auto-register is "
                    "false; create it or enable auto-register",
                    topic=self.topic,
                )
            count = self._create_topic(self.config.partitions)
        if count < self.config.partitions:
            raise TopicError(
                f"topic has {count} partitions but the table needs {self.config.partitions} "
                "(one per bucket); the filesystem log does not add partitions, use a new topic",
                topic=self.topic,
            )
        return count

    def _read_partition_count(self) -> int | None:
        meta_path = self.directory / META_NAME
        try:
            meta = json.loads(meta_path.read_bytes())
        except FileNotFoundError:
            return None
        except OSError as err:  # the storage itself fails (not a directory, no access): an outage
            raise LogUnavailableError(
                f"cannot read {meta_path}: {err}{self._where_hint()}", topic=self.topic
            ) from None
        except ValueError as err:
            raise TopicError(f"cannot read {meta_path}: {err}", topic=self.topic) from None
        count = meta.get("partitions") if isinstance(meta, dict) else None
        if not isinstance(count, int) or count < 1 or meta.get("format") != FORMAT_NAME:
            raise TopicError(f"{meta_path} is not a filesystem log topic file", topic=self.topic)
        self._partitions = count
        return count

    def _create_topic(self, partitions: int) -> int:
        """Create the partition files, then publish ``topic.json`` by an atomic rename:
        a topic either exists whole or not at all, even if this process dies here."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock_fd = os.open(
                self.directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        except OSError as err:
            raise LogUnavailableError(
                f"cannot create {self.directory}: {err}{self._where_hint()}", topic=self.topic
            ) from None
        try:
            with _flock(lock_fd, exclusive=True):
                existing = self._read_partition_count()
                if existing is not None:  # another process won the race
                    return existing
                for partition in range(partitions):
                    fd = os.open(
                        self.directory / partition_file_name(partition),
                        os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                        0o644,
                    )
                    os.close(fd)
                meta = {"format": FORMAT_NAME, "version": frames.VERSION, "partitions": partitions}
                temporary = self.directory / f".{META_NAME}.{os.getpid()}.tmp"
                temporary.write_bytes(json.dumps(meta).encode())
                with open(temporary, "rb") as handle:
                    os.fsync(handle.fileno())
                os.replace(temporary, self.directory / META_NAME)
                _fsync_directory(self.directory)
        except OSError as err:
            raise LogUnavailableError(
                f"cannot create topic in {self.directory}: {err}{self._where_hint()}", topic=self.topic
            ) from None
        finally:
            os.close(lock_fd)
        self._partitions = partitions
        return partitions

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
        if size > known and frames.tail_is_complete(_reader(fd), size):
            self._ends[partition] = size
            return size
        # A writer is appending right now, or one died mid-frame: wait for writers
        # to be out of the way, then look properly.
        with _flock(fd, exclusive=False):
            return self._find_end(partition, fd)[0]

    def _find_end(self, partition: int, fd: int) -> tuple[int, int]:
        """The valid end and the file size; call with writers excluded (any flock held)."""
        size = os.fstat(fd).st_size
        known = self._ends.get(partition, 0)
        if known > size:
            known = 0  # the file was replaced under us: trust nothing cached
        read = _reader(fd)
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

    # ----------------------------------------------------------------- produce

    def produce(self, batch: ProduceBatch) -> None:
        partition = batch.partition
        fd = self._fd(partition)  # TopicError for a partition the topic does not have
        if not self._writable.get(partition, False):
            raise ProduceError(
                "the partition file is read-only", topic=self.topic, partition=partition
            )
        data, offsets = frames.encode_batch(batch)
        if not offsets:
            return
        with _flock(fd, exclusive=True):
            start, size = self._find_end(partition, fd)
            try:
                if size > start:
                    os.ftruncate(fd, start)  # cut the torn tail a dead writer left behind
                _pwrite_all(fd, data, start)
            except OSError as err:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)  # leave no half batch for readers to wait on
                raise ProduceError(
                    f"cannot append {len(offsets)} records: {err}",
                    topic=self.topic,
                    partition=partition,
                ) from None
            self._ends[partition] = start + len(data)
        self._dirty.add(partition)
        key = (batch.token, partition)
        pending = self._pending.get(key)
        end = start + len(data)
        if pending is None:
            self._pending[key] = [start + offsets[0], start + offsets[-1], len(offsets), True, end]
        else:
            # Still contiguous when this batch starts where the token's previous one ended:
            # nobody appended in between (appends hold the partition's lock).
            pending[3] = pending[3] and start == pending[4]
            pending[1], pending[4] = start + offsets[-1], end
            pending[2] += len(offsets)

    def flush(self) -> list[ProducedRange]:
        """fsync what was appended since the last flush (the data was written
        synchronously by produce, so there is nothing to wait for but the disk).
        ``timeout_s`` cannot interrupt an fsync and is not used."""
        self._check_open()
        for partition in sorted(self._dirty):
            try:
                os.fsync(self._fds[partition])
            except OSError as err:
                raise ProduceError(
                    f"cannot make records durable (fsync): {err}",
                    topic=self.topic,
                    partition=partition,
                ) from None
        ranges = [
            ProducedRange(token, partition, first, last, count, contiguous)
            for (token, partition), (first, last, count, contiguous, _end) in self._pending.items()
        ]
        self._pending.clear()
        self._dirty.clear()
        return ranges

    # ----------------------------------------------------------------- read

    def seek(self, partition: int, spec: SeekSpec) -> int:
        fd = self._fd(partition)
        if spec.kind is SeekKind.EARLIEST:
            return 0  # the file log keeps everything: no retention moves the start
        end = self.end_position(partition)
        if spec.kind is SeekKind.LATEST:
            return end
        if spec.kind is SeekKind.TIMESTAMP:
            # Writers stamp their own batches, so timestamps are not monotonic in
            # the file: a linear walk over the headers finds the first one at or after.
            try:
                for head in frames.iter_frame_heads(_reader(fd), 0, end, WALK_CHUNK):
                    if head.timestamp_ms >= spec.value:
                        return head.position
            except frames.FrameError as err:
                raise self._corrupt(partition, err.offset, err.reason) from None
            return end
        position = spec.value
        if position == end:
            return position
        if 0 <= position < end:
            length = frames.frame_length_at(_reader(fd), position)
            if length is not None and position + length <= end:
                return position
        raise PositionOutOfRangeError(
            f"position {position} is not a record position of this log (valid: record "
            f"positions in [0, {end}], {end} being the end)",
            topic=self.topic,
            partition=partition,
        )

    def fetch(
        self, partition: int, position: int, max_records: int, timeout_s: float
    ) -> FetchResult:
        fd = self._fd(partition)
        if position < 0:
            raise PositionOutOfRangeError(
                f"position {position} is negative", topic=self.topic, partition=partition
            )
        deadline = time.monotonic() + max(timeout_s, 0.0)
        seen = -1
        while max_records > 0:
            size = os.fstat(fd).st_size
            if position > size:
                raise PositionOutOfRangeError(
                    f"position {position} is past the end of the log ({size}): the log was "
                    "replaced or the position did not come from it",
                    topic=self.topic,
                    partition=partition,
                )
            if size != seen:  # only re-read when something was appended
                seen = size
                if size > position:
                    records, next_position = self._read_records(
                        partition, fd, position, size, max_records, may_retry=True
                    )
                    if records:
                        return FetchResult(records, next_position)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(POLL_INTERVAL_S, remaining))
        return FetchResult([], position)

    def _read_records(
        self,
        partition: int,
        fd: int,
        position: int,
        size: int,
        max_records: int,
        *,
        may_retry: bool,
    ) -> tuple[list[LogRecord], int]:
        """Parse whole frames in ``[position, size)``: one big pread per round."""
        records: list[LogRecord] = []
        at = position
        need = 0
        while len(records) < max_records and at < size:
            wanted = (max_records - len(records)) * self._frame_estimate
            length = min(max(MIN_READ, min(wanted, MAX_READ), need), size - at)
            buf = os.pread(fd, length, at)
            got, used, need, error = frames.parse_records(buf, at, size, max_records - len(records))
            records += got
            at += used
            if error is not None:
                if records:
                    break  # hand out the good records; the next fetch starts at the bad one
                if may_retry:
                    # It may be a torn tail being repaired under our feet: look
                    # again with writers excluded before calling it corrupt.
                    with _flock(fd, exclusive=False):
                        return self._read_records(
                            partition, fd, at, os.fstat(fd).st_size, max_records, may_retry=False
                        )
                raise self._corrupt(partition, at, error.reason)
            if need == 0:
                break  # max_records reached, or an incomplete frame at the end
        if records:
            self._frame_estimate = max(frames.MIN_FRAME, (at - position) // len(records))
        return records, at

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


def _pwrite_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view = view[written:]
        offset += written


def _fsync_directory(directory: Path) -> None:
    """Make a created or renamed entry durable, not only the file contents."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
