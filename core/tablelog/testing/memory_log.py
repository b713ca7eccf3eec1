"""A log system in this process's memory, with consecutive integer positions per
partition (as Kafka offsets are): for tests and benchmarks of the core's reading and
writing without a broker.

Register it like a third-party plugin::

    log = MemoryLog()
    discovery.register_log_system("memory", log.plugin())

Its topics live in ``log.topics`` (topic -> partitions -> records); a test may replace a
record, or set it to ``None`` to make it lost, or remove a partition's oldest records as
Kafka's retention and ``DeleteRecords`` do (:meth:`MemoryLog.delete_records`). It counts the fetch calls a reader makes
(``log.calls``) and records each prefetch (``log.prefetched``).
"""

from __future__ import annotations

from collections import Counter
from itertools import islice
from types import SimpleNamespace
from typing import Any

from tablelog.plugin import (
    FetchResult,
    LogConfig,
    LogRecord,
    PositionOutOfRangeError,
    ProduceBatch,
    ProducedRange,
    SeekKind,
    SeekSpec,
    ValuesResult,
    hookimpl,
)


class MemoryLog:
    """Consecutive integer positions; counts the fetch calls a reader makes."""

    def __init__(self) -> None:
        self.topics: dict[str, list[list[LogRecord | None]]] = {}
        self.calls: Counter[str] = Counter()
        self.prefetched: list[dict[int, int]] = []
        #: (topic, partition) -> the first position the log still holds.
        self.starts: dict[tuple[str, int], int] = {}

    def delete_records(self, topic: str, partition: int, before: int) -> None:
        """Remove the records before position ``before`` (Kafka's ``DeleteRecords``): a
        fetch there fails as out of range, and the earliest position moves to ``before``."""
        log = self.topics[topic][partition]
        for position in range(min(before, len(log))):
            log[position] = None
        self.starts[(topic, partition)] = max(before, self.starts.get((topic, partition), 0))

    def _check_held(self, connection: Any, partition: int, position: int) -> None:
        start = self.starts.get((connection.config.topic, partition), 0)
        if position < start:
            raise PositionOutOfRangeError(
                f"position {position} was deleted (the log starts at {start})",
                topic=connection.config.topic, partition=partition,
            )

    def plugin(self) -> SimpleNamespace:
        """The hook implementations, for :func:`tablelog.logs.discovery.register_log_system`."""
        names = ("open_log", "close_log", "ensure_topic", "produce", "flush", "end_positions", "seek",
                 "fetch", "fetch_values", "prefetch", "commit")
        return SimpleNamespace(**{name: getattr(self, name) for name in names})

    @hookimpl
    def open_log(self, config: LogConfig) -> Any:
        return SimpleNamespace(config=config, pending=[])

    @hookimpl
    def close_log(self, connection: Any) -> None:
        pass

    @hookimpl
    def commit(self, connection: Any, committed: Any) -> None:
        pass

    @hookimpl
    def ensure_topic(self, connection: Any) -> int:
        config = connection.config
        return len(self.topics.setdefault(config.topic, [[] for _ in range(config.partitions)]))

    @hookimpl
    def produce(self, connection: Any, batch: ProduceBatch) -> None:
        log = self.topics[connection.config.topic][batch.partition]
        first = len(log)
        for i, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True)):
            log.append(LogRecord(len(log), key, value, batch.token, batch.first_seq + i, batch.timestamp_ms))
        connection.pending.append(ProducedRange(batch.token, batch.partition, first, len(log) - 1, len(batch.values)))

    @hookimpl
    def flush(self, connection: Any, timeout_s: float) -> list[ProducedRange]:
        merged: dict[tuple[str, int], ProducedRange] = {}
        for r in connection.pending:
            old = merged.get((r.token, r.partition))
            merged[(r.token, r.partition)] = r if old is None else ProducedRange(
                r.token, r.partition, old.first, r.last, old.count + r.count)
        connection.pending.clear()
        return list(merged.values())

    @hookimpl
    def end_positions(self, connection: Any, partitions: list[int]) -> dict[int, int]:
        return {p: len(self.topics[connection.config.topic][p]) for p in partitions}

    @hookimpl
    def seek(self, connection: Any, partition: int, spec: SeekSpec) -> int:
        end = len(self.topics[connection.config.topic][partition])
        start = self.starts.get((connection.config.topic, partition), 0)
        return {SeekKind.EARLIEST: start, SeekKind.LATEST: end}.get(spec.kind, min(spec.value, end))

    def _records(self, connection: Any, partition: int, position: int, max_records: int) -> list[LogRecord]:
        log = self.topics[connection.config.topic][partition]
        records = log[position : position + max_records]
        if None in records:  # lost records are left out, as a log that no longer has them does
            return list(islice((r for r in islice(log, position, None) if r is not None), max_records))
        return records  # type: ignore[return-value]  # None ruled out

    @hookimpl
    def fetch(self, connection: Any, partition: int, position: int, max_records: int,
              timeout_s: float) -> FetchResult:
        self.calls["fetch"] += 1
        self._check_held(connection, partition, position)
        records = self._records(connection, partition, position, max_records)
        return FetchResult(records, records[-1].position + 1 if records else position)

    @hookimpl
    def fetch_values(self, connection: Any, partition: int, position: int, max_records: int,
                     timeout_s: float) -> ValuesResult:
        self.calls["fetch_values"] += 1
        self._check_held(connection, partition, position)
        records = self._records(connection, partition, position, max_records)
        return ValuesResult([r.value for r in records], [r.position for r in records],
                            records[-1].position + 1 if records else position)

    @hookimpl
    def prefetch(self, connection: Any, positions: dict[int, int]) -> None:
        self.prefetched.append(dict(positions))
