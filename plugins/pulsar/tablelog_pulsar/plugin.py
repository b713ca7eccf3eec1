"""The ``pulsar`` log system: tablelog's LogSystem hooks on Apache Pulsar (pulsar-client).

Entry point ``pulsar`` in the group ``tablelog.log_systems``. Options
(``pulsar.*``) are in :mod:`tablelog_pulsar.config`; table bucket b goes to the
topic ``<topic>-partition-b`` (:mod:`tablelog_pulsar.topics` says why);
positions encode message ids (:mod:`tablelog_pulsar.positions`); reading and
seeking are in :mod:`tablelog_pulsar.reader`, producing in
:mod:`tablelog_pulsar.writer`.
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
    ValuesResult,
    hookimpl,
)
from tablelog_pulsar import config as _config
from tablelog_pulsar import topics
from tablelog_pulsar.connection import PulsarConnection


@hookimpl
def option_specs() -> list[OptionSpec]:
    return _config.option_specs()


@hookimpl
def open_log(config: LogConfig) -> PulsarConnection:
    # Validates every option (OptionError naming the `pulsar.` key) before any I/O;
    # the client connects on first use.
    return PulsarConnection(_config.parse_config(config))


@hookimpl
def close_log(connection: PulsarConnection) -> None:
    connection.close()


@hookimpl
def ensure_topic(connection: PulsarConnection) -> int:
    return topics.ensure(
        connection.config,
        connection.client(),
        create=connection.writer.producer,
        timeout_ms=connection.reader.operation_timeout_ms,
    )


@hookimpl
def produce(connection: PulsarConnection, batch: ProduceBatch) -> None:
    connection.writer.produce(batch)


@hookimpl
def flush(connection: PulsarConnection, timeout_s: float) -> list[ProducedRange]:
    return connection.writer.flush(timeout_s)


@hookimpl
def end_positions(connection: PulsarConnection, partitions: list[int]) -> dict[int, int]:
    return {partition: connection.reader.end_position(partition) for partition in partitions}


@hookimpl
def seek(connection: PulsarConnection, partition: int, spec: SeekSpec) -> int:
    return connection.reader.seek(partition, spec)


@hookimpl
def fetch(
    connection: PulsarConnection, partition: int, position: int, max_records: int, timeout_s: float
) -> FetchResult:
    return connection.reader.fetch(partition, position, max_records, timeout_s)


@hookimpl
def wait_for_records(connection: PulsarConnection, positions: dict[int, int], timeout_s: float) -> list[int]:
    return connection.reader.wait_for_records(positions, timeout_s)


@hookimpl
def fetch_values(
    connection: PulsarConnection, partition: int, position: int, max_records: int, timeout_s: float
) -> ValuesResult:
    return connection.reader.fetch_values(partition, position, max_records, timeout_s)


@hookimpl
def commit(connection: PulsarConnection, committed: CommittedLog) -> None:
    # Nothing to do, and therefore idempotent: the table snapshot already records the
    # committed tokens and ranges and decides what readers see. Pulsar needs no marker
    # (no broker transactions, no subscription to advance: readers are non-durable).
    return None
