"""The file log's connection: one directory per topic, one append-only file per partition.

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
frames with one ``pwrite`` and releases the lock. (A log written before segments has
only the first segment and no lock file: it reads as before; its writers must all be
of this version, as they lock the lock file.) Positions are byte offsets, so
they are assigned by where the frames land, under the lock.

Readers take no lock on the hot path: they read up to the file size they saw and
stop before an incomplete frame. They take ``flock(LOCK_SH)`` only when something
looks wrong (a tail that does not end on a frame, a failed checksum), to tell a
write in progress from a torn tail or real corruption.

The parts, one job each: :mod:`.location` (options to the topic's directory),
:mod:`.topic` (``topic.json``), :mod:`.segments` (a partition's files),
:mod:`.partitions` (open files and their valid ends),
:mod:`.appends` (produce and flush), :mod:`.reads` (seek and fetch), :mod:`.files`
(locks and positioned I/O), :mod:`.frames` (the record format).
"""

from __future__ import annotations

import os

from tablelog.plugin import LogUnavailableError, TopicError

from .appends import PartitionAppends
from .files import flock
from .reads import PartitionReads
from .topic import create_topic


class FileLog(PartitionAppends, PartitionReads):
    """One open connection (the ``Connection`` the hooks receive)."""

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

    def delete_before(self, partition: int, position: int) -> int:
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
