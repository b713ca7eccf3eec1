"""The kafka log system's hook implementations (entry point ``kafka``).

Bucket b is partition b; a record's position is its Kafka offset. Every record
carries the headers ``tablelog.token`` (utf-8 writer token) and ``tablelog.seq``
(ASCII decimal sequence number), its key and the batch's timestamp.
"""

from __future__ import annotations

from tablelog.plugin import (
    CommittedLog,
    FetchResult,
    LogConfig,
    LogSystemError,
    OptionSpec,
    PositionOutOfRangeError,
    ProduceBatch,
    ProducedRange,
    SeekKind,
    SeekSpec,
    ValuesResult,
    hookimpl,
)

from . import config as _config
from .connection import KafkaConnection


def _open(connection: KafkaConnection) -> KafkaConnection:
    if connection.closed:
        raise LogSystemError("the kafka log connection is closed", topic=connection.topic)
    return connection


@hookimpl
def option_specs() -> list[OptionSpec]:
    return _config.option_specs()


@hookimpl
def open_log(config: LogConfig) -> KafkaConnection:
    # Validates the options; every client is created lazily (no I/O here).
    return KafkaConnection(config, _config.parse_settings(config))


@hookimpl
def close_log(connection: KafkaConnection) -> None:
    connection.close()


@hookimpl
def ensure_topic(connection: KafkaConnection) -> int:
    conn = _open(connection)
    # Only writers ensure the topic, and they look it up through their own producer, twice:
    # that settles the producer's broker connections before its first record, so its
    # idempotent producer id does not wait out librdkafka's fixed retry timer in the first
    # flush (docs/performance-history.md, "Why the writer and the plugins do what they do").
    producer = conn.producer.reach()
    count = conn.admin.ensure_topic(conn.config.partitions, conn.config.auto_register, metadata_client=producer)
    conn.admin.partition_count(metadata_client=producer)
    return count


@hookimpl
def produce(connection: KafkaConnection, batch: ProduceBatch) -> None:
    _open(connection).producer.produce(batch)


@hookimpl
def flush(connection: KafkaConnection, timeout_s: float) -> list[ProducedRange]:
    return _open(connection).producer.flush(timeout_s)


@hookimpl
def end_positions(connection: KafkaConnection, partitions: list[int]) -> dict[int, int]:
    return _open(connection).offsets.end_positions(partitions)


@hookimpl
def seek(connection: KafkaConnection, partition: int, spec: SeekSpec) -> int:
    offsets = _open(connection).offsets
    if spec.kind is SeekKind.EARLIEST:
        return offsets.start_position(partition)
    if spec.kind is SeekKind.LATEST:
        return offsets.end_positions([partition])[partition]
    if spec.kind is SeekKind.TIMESTAMP:
        return offsets.timestamp_position(partition, spec.value)
    position = spec.value
    low = offsets.start_position(partition)
    end = offsets.end_positions([partition])[partition]
    if not low <= position <= end:
        raise PositionOutOfRangeError(
            f"position {position} is not in the log, which holds positions {low}..{end} (end exclusive)",
            topic=connection.topic, partition=partition,
        )
    return position


@hookimpl
def fetch(
    connection: KafkaConnection, partition: int, position: int, max_records: int, timeout_s: float
) -> FetchResult:
    return _open(connection).reader.fetch(partition, position, max_records, timeout_s)


@hookimpl
def prefetch(connection: KafkaConnection, positions: dict[int, int]) -> None:
    _open(connection).reader.prefetch(positions)


@hookimpl
def wait_for_records(connection: KafkaConnection, positions: dict[int, int], timeout_s: float) -> list[int]:
    return _open(connection).reader.wait_for_records(positions, timeout_s)


@hookimpl
def fetch_values(
    connection: KafkaConnection, partition: int, position: int, max_records: int, timeout_s: float
) -> ValuesResult:
    return _open(connection).reader.fetch_values(partition, position, max_records, timeout_s)


@hookimpl
def commit(connection: KafkaConnection, committed: CommittedLog) -> None:
    # Nothing to do, and so trivially idempotent: visibility is decided by the table
    # snapshot that records the committed tokens and their offset ranges, not by the
    # log. Kafka needs no marker (no broker transactions, no consumer-group offsets);
    # retention is the topic's own configuration.
    return None
