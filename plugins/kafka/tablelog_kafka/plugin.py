"""The kafka log system (entry point ``kafka = "tablelog_kafka.plugin:KafkaConnection"``).

Bucket b is partition b; a record's position is its Kafka offset. Every record
carries the headers ``tablelog.token`` (utf-8 writer token) and ``tablelog.seq``
(ASCII decimal sequence number), its key and the batch's timestamp.

:class:`KafkaConnection` is the plugin and each hook is one of its methods, taking the
connection (the instance) as ``connection`` (:mod:`tablelog.hookspecs` says why).
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
from .admin import AdminSide
from .config import KafkaSettings
from .offsets import OffsetsSide
from .producer import ProduceSide
from .reader import FetchSide


class KafkaConnection:
    """One table's kafka log: settings plus lazily created clients, so opening does no I/O.

    Its repr shows the topic and the client options with secrets redacted.
    """

    def __init__(self, config: LogConfig, settings: KafkaSettings):
        self.config = config
        self.settings = settings
        self.admin = AdminSide(settings)
        self.producer = ProduceSide(settings)
        self.offsets = OffsetsSide(settings)
        self.reader = FetchSide(
            settings,
            start_position=self.offsets.start_position,
            end_position=lambda p: self.offsets.end_positions([p])[p],
        )
        self.closed = False

    @property
    def topic(self) -> str:
        return self.settings.topic

    def __repr__(self) -> str:
        return (
            f"KafkaConnection(table={self.config.table!r}, topic={self.topic!r}, "
            f"options={self.settings.shown_options()!r}{', closed' if self.closed else ''})"
        )

    __str__ = __repr__

    def _check_open(self) -> None:
        if self.closed:
            raise LogSystemError("the kafka log connection is closed", topic=self.topic)

    # ------------------------------------------------------------------ hooks

    @staticmethod
    @hookimpl
    def option_specs() -> list[OptionSpec]:
        return _config.option_specs()

    @classmethod
    @hookimpl
    def open_log(cls, config: LogConfig) -> KafkaConnection:
        # Validates the options; every client is created lazily (no I/O here).
        return cls(config, _config.parse_settings(config))

    @hookimpl
    def close_log(connection) -> None:
        if connection.closed:
            return
        connection.closed = True
        connection.producer.close()
        connection.reader.close()
        connection.offsets.close()
        connection.admin.close()

    @hookimpl
    def ensure_topic(connection) -> int:
        connection._check_open()
        # Only writers ensure the topic, and they look it up through their own producer, twice:
        # that settles the producer's broker connections before its first record, so its
        # idempotent producer id does not wait out librdkafka's fixed retry timer in the first
        # flush (docs/performance-history.md, "Why the writer and the plugins do what they do").
        producer = connection.producer.reach()
        count = connection.admin.ensure_topic(
            connection.config.partitions, connection.config.auto_register, metadata_client=producer
        )
        connection.admin.partition_count(metadata_client=producer)
        return count

    @hookimpl
    def produce(connection, batch: ProduceBatch) -> None:
        connection._check_open()
        connection.producer.produce(batch)

    @hookimpl
    def flush(connection, timeout_s: float) -> list[ProducedRange]:
        connection._check_open()
        return connection.producer.flush(timeout_s)

    @hookimpl
    def end_positions(connection, partitions: list[int]) -> dict[int, int]:
        connection._check_open()
        return connection.offsets.end_positions(partitions)

    @hookimpl
    def seek(connection, partition: int, spec: SeekSpec) -> int:
        connection._check_open()
        offsets = connection.offsets
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
        connection, partition: int, position: int, max_records: int, timeout_s: float
    ) -> FetchResult:
        connection._check_open()
        return connection.reader.fetch(partition, position, max_records, timeout_s)

    @hookimpl
    def prefetch(connection, positions: dict[int, int]) -> None:
        connection._check_open()
        connection.reader.prefetch(positions)

    @hookimpl
    def wait_for_records(connection, positions: dict[int, int], timeout_s: float) -> list[int]:
        connection._check_open()
        return connection.reader.wait_for_records(positions, timeout_s)

    @hookimpl
    def fetch_values(
        connection, partition: int, position: int, max_records: int, timeout_s: float
    ) -> ValuesResult:
        connection._check_open()
        return connection.reader.fetch_values(partition, position, max_records, timeout_s)

    @hookimpl
    def commit(connection, committed: CommittedLog) -> None:
        # Nothing to do, and so trivially idempotent: visibility is decided by the table
        # snapshot that records the committed tokens and their offset ranges, not by the
        # log. Kafka needs no marker (no broker transactions, no consumer-group offsets);
        # retention is the topic's own configuration.
        return None
