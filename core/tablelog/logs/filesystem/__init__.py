"""The built-in ``filesystem`` log system: an embedded, append-only file log.

It needs no server, so it is the default for trying tablelog out and for tests,
and it is safe with several writer processes appending to one partition at once.

* Storage: ``<filesystem.path>/<topic>/`` or, without that option,
  ``<warehouse>/.tablelog/log/<topic>/``; each partition in segment files of about
  ``filesystem.segment-bytes`` (see :mod:`.log` for the layout and locking,
  :mod:`.segments` for segments, :mod:`.frames` for the format).
* Retention: ``delete_before`` deletes whole segments before the positions the core
  says are still needed; until then everything is kept.
* Positions: the byte offset of a record's frame in its partition file; the end
  position is the length of the valid data. Positions are not dense.
* Durability: ``produce`` appends synchronously under an exclusive ``flock``;
  ``flush`` fsyncs. A torn tail left by a dead writer is never returned and is cut
  off by the next appender; a corrupt record raises
  :class:`~tablelog.errors.CorruptRecordError` naming its position.
"""

from __future__ import annotations

from tablelog.plugin import (
    CommittedLog,
    FetchResult,
    LogConfig,
    OptionSpec,
    ProduceBatch,
    ProducedRange,
    SeekSpec,
    hookimpl,
)

from .log import FileLog

__all__ = [
    "FileLog",
    "close_log",
    "commit",
    "delete_before",
    "end_positions",
    "ensure_topic",
    "fetch",
    "flush",
    "open_log",
    "option_specs",
    "produce",
    "seek",
    "wait_for_records",
]


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


@hookimpl
def open_log(config: LogConfig) -> FileLog:
    # Only validates options; files are opened on first use.
    return FileLog(config)


@hookimpl
def close_log(connection: FileLog) -> None:
    connection.close()


@hookimpl
def ensure_topic(connection: FileLog) -> int:
    return connection.ensure_topic()


@hookimpl
def produce(connection: FileLog, batch: ProduceBatch) -> None:
    connection.produce(batch)


@hookimpl
def flush(connection: FileLog, timeout_s: float) -> list[ProducedRange]:
    return connection.flush()


@hookimpl
def end_positions(connection: FileLog, partitions: list[int]) -> dict[int, int]:
    return {partition: connection.end_position(partition) for partition in partitions}


@hookimpl
def seek(connection: FileLog, partition: int, spec: SeekSpec) -> int:
    return connection.seek(partition, spec)


@hookimpl
def fetch(
    connection: FileLog, partition: int, position: int, max_records: int, timeout_s: float
) -> FetchResult:
    return connection.fetch(partition, position, max_records, timeout_s)


@hookimpl
def wait_for_records(connection: FileLog, positions: dict[int, int], timeout_s: float) -> list[int]:
    return connection.wait_for_records(positions, timeout_s)


@hookimpl
def delete_before(connection: FileLog, positions: dict[int, int]) -> dict[int, int]:
    return {partition: connection.delete_before(partition, position) for partition, position in positions.items()}


@hookimpl
def commit(connection: FileLog, committed: CommittedLog) -> None:
    """A no-op, which is trivially idempotent.

    Visibility is decided by the table snapshot, and the file log has nothing to
    keep in step with it: no consumer groups, no broker-side transaction (retention
    is ``delete_before``, which the core calls with what the snapshots and live writers
    still need).
    A marker file would cost an fsync per commit and nobody would read it.
    """
