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

The parts, one job each: :mod:`.location` (options to the topic's directory),
:mod:`.topic` (``topic.json``), :mod:`.partitions` (open files and their valid ends),
:mod:`.appends` (produce and flush), :mod:`.reads` (seek and fetch), :mod:`.files`
(locks and positioned I/O), :mod:`.frames` (the record format).
"""

from __future__ import annotations

from tablelog.plugin import TopicError

from .appends import PartitionAppends
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

    def _create_topic(self, partitions: int) -> int:
        self._partitions = create_topic(self.directory, self.topic, partitions)
        return self._partitions
