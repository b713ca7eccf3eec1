"""Every error tablelog raises on purpose; each names what went wrong and what is allowed.

Plugins raise the ``Log*`` errors from their hooks so that the core (and users)
can tell a full topic from a dead broker without knowing the client library.
"""

from __future__ import annotations


class TablelogError(Exception):
    """Base of all tablelog errors."""


class OptionError(TablelogError, ValueError):
    """A table or reader option is unknown, missing or malformed."""


class ReaderPositionError(OptionError):
    """A saved reader position (or Spark offset) does not fit the table it is given to:
    it was saved from another table or topic, or it is ahead of the table and its log."""


class PluginNotFoundError(TablelogError, LookupError):
    """No log system is installed under the requested name."""


class PluginUnavailableError(TablelogError, ImportError):
    """The log system is known but its dependencies are not installed."""


class SchemaMismatchError(TablelogError, ValueError):
    """Data handed to a writer does not fit the table's schema."""


class SchemaChangeError(TablelogError, ValueError):
    """An alter the table cannot take (narrowing a type, changing its key or buckets...);
    nothing was changed."""


class TableNotFoundError(TablelogError, LookupError):
    """The table does not exist in the warehouse."""


class TableExistsError(OptionError):
    """The table to create exists already (or another process created it first)."""


class WarehouseError(OptionError):
    """The warehouse cannot hold tables as given: an empty or unsupported location, a path
    that is a file or under one, or a directory this process may not read or write. The
    CLI exits with the usage code (2) for it: the ``--warehouse`` given is wrong."""


class CommitError(TablelogError):
    """A snapshot could not be committed; nothing of this commit is visible."""


class CommitOutcomeUnknown(CommitError):
    """The commit's snapshot was sent to the object store, its answer did not come back
    (a timeout, a cut connection), and the store could not be read again to find out
    whether it was created. The commit may or may not be visible: retry it with the same
    writer id and commit identifier, which commits it once either way (a replayed commit
    finds the original and commits nothing twice)."""


class StoreUnavailableError(TablelogError, TimeoutError):
    """The object store did not answer a write attempt's data-file writes within
    ``s3.write-timeout``: the attempt is given up (nothing of it is committed); make it
    again once the store is reachable."""


class WriteAccessError(TablelogError, PermissionError):
    """What an operation writes to the warehouse was refused: the storage is read-only to
    this process (a read-only mount or directory, S3 credentials that may only get and
    list). The message names what it writes, where, and the permission it needs."""


class LogSystemError(TablelogError):
    """Base of errors raised by log-system plugins."""

    def __init__(self, message: str, *, topic: str | None = None, partition: int | None = None):
        where = ""
        if topic is not None:
            where = f" [topic {topic!r}" + (f", partition {partition}" if partition is not None else "") + "]"
        super().__init__(message + where)
        self.topic = topic
        self.partition = partition


class ProduceError(LogSystemError):
    """Records could not be made durable in the log (delivery failed or timed out)."""


class TopicError(LogSystemError):
    """The topic is missing (and may not be created) or has too few partitions."""


class MissingTopicError(TopicError):
    """A reader's table topic does not exist at all: the options that say where the log is
    are wrong, or the log lost the topic (see :mod:`tablelog.reading.missing_topic`)."""


class LogUnavailableError(LogSystemError):
    """The log system cannot be reached within its time-out."""


class PositionOutOfRangeError(LogSystemError):
    """A fetch asked for a position the log no longer (or never) had."""


class LogDataLostError(TablelogError):
    """Records that a committed snapshot references are gone from the log."""

    def __init__(self, *, table: str, topic: str, partition: int, first: int, last: int, detail: str):
        super().__init__(
            f"log data lost for table {table!r}: topic {topic!r}, partition {partition}, "
            f"positions {first}..{last} are referenced by a committed snapshot but {detail}"
        )
        self.table, self.topic, self.partition, self.first, self.last = table, topic, partition, first, last


class LogChangedError(TablelogError):
    """The table's log was attached, moved to another log system or topic, or detached
    (``alter --set log.system=...``) after this writer or reader opened it, at snapshot
    ``snapshot``: what it holds of the old log no longer continues there. ``position``: where
    a reader resumes exactly once the table is opened again (None: nothing to resume)."""

    def __init__(self, message: str, *, snapshot: int | None = None, position: str | None = None):
        super().__init__(message)
        self.snapshot, self.position = snapshot, position


class LogMovedError(LogChangedError):
    """A reader reached the snapshot at which the table's log moved to another log system
    or topic; it has returned every change before it."""


class LogDetachedError(LogChangedError):
    """A reader reached the snapshot at which the table's log was detached
    (``log.system=none``); it has returned every change before it, and no log holds the later ones."""


class ForeignRecordError(TablelogError):
    """A record on the topic was not written by tablelog (no writer token, or undecodable)."""

    def __init__(self, *, topic: str, partition: int, position: int, reason: str):
        super().__init__(
            f"foreign record on topic {topic!r}, partition {partition}, position {position}: {reason}; "
            "set log.foreign-records=skip to skip and count such records"
        )
        self.topic, self.partition, self.position = topic, partition, position


class CorruptRecordError(LogSystemError):
    """A stored record failed its checksum or framing; it is never returned as data."""
