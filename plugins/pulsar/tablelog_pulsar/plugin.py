"""The ``pulsar`` log system: tablelog's LogSystem hooks on Apache Pulsar (pulsar-client).

Entry point ``pulsar = "tablelog_pulsar.plugin:PulsarConnection"`` in the group
``tablelog.log_systems``. Options (``pulsar.*``) are in :mod:`tablelog_pulsar.config`;
table bucket b goes to the topic ``<topic>-partition-b`` (:mod:`tablelog_pulsar.topics`
says why); positions encode message ids (:mod:`tablelog_pulsar.positions`); reading and
seeking are in :mod:`tablelog_pulsar.reader`, producing in :mod:`tablelog_pulsar.writer`.

The entry point names :class:`PulsarConnection`, whose methods are the hooks; an
instance is what ``open_log`` returns and the other hooks receive as ``connection``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pulsar

from tablelog.plugin import (
    CommittedLog,
    FetchResult,
    LogConfig,
    LogSystemError,
    OptionSpec,
    ProduceBatch,
    ProducedRange,
    SeekSpec,
    ValuesResult,
    hookimpl,
)
from tablelog_pulsar import config as _config
from tablelog_pulsar import topics
from tablelog_pulsar.config import PulsarConfig
from tablelog_pulsar.connection import check_reachable, client_logger
from tablelog_pulsar.failures import PulsarException, describe
from tablelog_pulsar.reader import Reader
from tablelog_pulsar.writer import Writer


class PulsarConnection:
    """One open Pulsar log: the validated config, a lazily created client, a writer and
    a reader. Used by one thread at a time."""

    def __init__(self, config: PulsarConfig):
        self.config = config
        self._client: Any = None
        self.closed = False
        self.writer = Writer(config, self.client)
        self.reader = Reader(config, self.client)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"PulsarConnection({self.config!r}, {state})"

    def client(self) -> Any:
        """The pulsar.Client, created on first use (it connects lazily too)."""
        if self.closed:
            raise LogSystemError("pulsar: the connection is closed", topic=self.config.topic)
        if self._client is None:
            check_reachable(self.config)
            try:
                self._client = pulsar.Client(
                    self.config.service_url,
                    authentication=self.config.authentication(),
                    logger=client_logger(),
                    **self.config.client_kwargs,
                )
            except PulsarException as err:
                # Never echo the options: they hold the credentials.
                raise LogSystemError(
                    f"pulsar: cannot create a client for {self.config.service_url}: {describe(err)}",
                    topic=self.config.topic,
                ) from None
        return self._client

    # ------------------------------------------------------------------ hooks

    @staticmethod
    @hookimpl
    def option_specs() -> list[OptionSpec]:
        return _config.option_specs()

    @classmethod
    @hookimpl
    def open_log(cls, config: LogConfig) -> PulsarConnection:
        # Validates every option (OptionError naming the `pulsar.` key) before any I/O;
        # the client connects on first use.
        return cls(_config.parse_config(config))

    @hookimpl
    def close_log(connection) -> None:
        if connection.closed:
            return
        connection.closed = True
        connection.reader.close()
        connection.writer.close()
        client, connection._client = connection._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    @hookimpl
    def ensure_topic(connection) -> int:
        return topics.ensure(
            connection.config,
            connection.client(),
            create=connection.writer.producer,
            timeout_ms=connection.reader.operation_timeout_ms,
        )

    @hookimpl
    def produce(connection, batch: ProduceBatch) -> None:
        connection.writer.produce(batch)

    @hookimpl
    def flush(connection, timeout_s: float) -> list[ProducedRange]:
        return connection.writer.flush(timeout_s)

    @hookimpl
    def end_positions(connection, partitions: list[int]) -> dict[int, int]:
        return {partition: connection.reader.end_position(partition) for partition in partitions}

    @hookimpl
    def seek(connection, partition: int, spec: SeekSpec) -> int:
        return connection.reader.seek(partition, spec)

    @hookimpl
    def fetch(
        connection, partition: int, position: int, max_records: int, timeout_s: float
    ) -> FetchResult:
        return connection.reader.fetch(partition, position, max_records, timeout_s)

    @hookimpl
    def wait_for_records(connection, positions: dict[int, int], timeout_s: float) -> list[int]:
        return connection.reader.wait_for_records(positions, timeout_s)

    @hookimpl
    def fetch_values(
        connection, partition: int, position: int, max_records: int, timeout_s: float
    ) -> ValuesResult:
        return connection.reader.fetch_values(partition, position, max_records, timeout_s)

    @hookimpl
    def commit(connection, committed: CommittedLog) -> None:
        # Nothing to do, and therefore idempotent: the table snapshot already records the
        # committed tokens and ranges and decides what readers see. Pulsar needs no marker
        # (no broker transactions, no subscription to advance: readers are non-durable).
        return None
