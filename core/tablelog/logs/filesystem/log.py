"""The file log's plugin class, whose instances are its connections: one directory per
topic, one append-only file per partition.

Layout of a topic directory::

    topic.json              {"format": ..., "version": 1, "partitions": N}, written last
    topic.lock              flock'ed while the topic is created
    partition-00000.log     frames (see :mod:`.frames`) from position 0: the first segment
    partition-00000-00000000000067108864.log   the next segment, from that position
    partition-00000.lock    flock'ed by appenders (and rolling, and retention)
    ...

Several processes may append to one partition at once (Spark runs tasks in
separate processes): an appender takes ``flock(LOCK_EX)`` on the partition's lock
file, finds the valid end of its last segment, cuts off a torn tail a dead writer may
have left, starts a new segment when that one is full (:mod:`.segments`), writes its
frames with one ``pwrite`` and releases the lock. Positions are byte offsets, so
they are assigned by where the frames land, under the lock.

Readers take no lock on the hot path: they read up to the file size they saw and
stop before an incomplete frame. They take ``flock(LOCK_SH)`` only when something
looks wrong (a tail that does not end on a frame, a failed checksum), to tell a
write in progress from a torn tail or real corruption.

The parts, one job each: :mod:`.location` (options to the topic's directory),
:mod:`.topic` (``topic.json``), :mod:`.segments` (a partition's files),
:mod:`.partitions` (open files and their valid ends),
:mod:`.appends` (produce and flush), :mod:`.reads` (end positions, seek, fetch and
waiting), :mod:`.files`
(locks and positioned I/O), :mod:`.frames` (the record format).
"""

from __future__ import annotations

import os

from tablelog.plugin import (
    CommittedLog,
    LogConfig,
    LogUnavailableError,
    OptionSpec,
    TopicError,
    hookimpl,
)

from .appends import PartitionAppends
from .files import flock
from .reads import PartitionReads
from .topic import create_topic


class FileLog(PartitionAppends, PartitionReads):
    """The ``filesystem`` log system: the class is the plugin (the entry point names it),
    its instances are the connections ``open_log`` returns. Each hook is a method of it:
    pluggy passes the hook's arguments by name, so the first parameter of the methods
    that take a connection is named ``connection``, as in the hook specs (it is the
    instance, ``self``)."""

    @staticmethod
    @hookimpl
    def option_specs() -> list[OptionSpec]:
        return [
            OptionSpec(
                "filesystem.path",
                "Root directory of the file log; each topic is a directory below it. "
                "Default: `<warehouse>/.tablelog/log`.",
            ),
            OptionSpec(
                "filesystem.topic", "Topic (directory) name. Default: derived from the table name.",
                names_topic=True,
            ),
            OptionSpec(
                "filesystem.segment-bytes",
                "Size in bytes at which a partition's file is closed and a new segment file started; "
                "retention deletes whole segments no retained snapshot and no live writer needs.", default="67108864",
            ),
        ]

    @classmethod
    @hookimpl
    def open_log(cls, config: LogConfig) -> FileLog:
        # Only validates options; files are opened on first use.
        return cls(config)

    @hookimpl
    def ensure_topic(connection) -> int:
        connection._check_open()
        count = connection._read_partition_count()
        if count is None:
            if not connection.config.auto_register:
                raise TopicError(
                    f"topic does not exist in {connection.directory} and log.system.auto-register is "
                    "false; create it or enable auto-register",
                    topic=connection.topic,
                )
            count = connection._create_topic(connection.config.partitions)
        if count < connection.config.partitions:
            raise TopicError(
                f"topic has {count} partitions but the table needs {connection.config.partitions} "
                "(one per bucket); the filesystem log does not add partitions, use a new topic",
                topic=connection.topic,
            )
        return count

    @hookimpl
    def delete_before(connection, positions: dict[int, int]) -> dict[int, int]:
        return {partition: connection._delete_segments_before(partition, position)
                for partition, position in positions.items()}

    @hookimpl
    def commit(connection, committed: CommittedLog) -> None:
        """A no-op, which is trivially idempotent.

        Visibility is decided by the table snapshot, and the file log has nothing to
        keep in step with it: no consumer groups, no broker-side transaction (retention
        is ``delete_before``, which the core calls with what the snapshots and live writers
        still need).
        A marker file would cost an fsync per commit and nobody would read it.
        """

    def _delete_segments_before(self, partition: int, position: int) -> int:
        """Delete the partition's segments that end at or before ``position`` (never the
        last one); the earliest position the partition then holds."""
        with flock(self._lock(partition), exclusive=True):
            segments = self._list_segments(partition)
            while len(segments) > 1 and segments[1].base <= position:
                segment = segments.pop(0)
                segment.close()
                try:
                    os.unlink(segment.path)
                except FileNotFoundError:
                    pass  # another process deleted it first
                except OSError as err:
                    raise LogUnavailableError(
                        f"cannot delete {segment.path}: {err}", topic=self.topic, partition=partition
                    ) from None
            return segments[0].base

    def _create_topic(self, partitions: int) -> int:
        self._partitions = create_topic(self.directory, self.topic, partitions)
        return self._partitions
