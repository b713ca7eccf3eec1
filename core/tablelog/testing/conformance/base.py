"""The ground the conformance tests stand on: the fixtures that open (and close) clients
and the helpers that produce, flush and read with the waits a broker needs."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise

import pytest

from tablelog.logs.client import LogClient
from tablelog.logs.discovery import load_log_system
from tablelog.records import FetchResult, LogConfig, LogRecord, ProduceBatch, ProducedRange

ConfigFactory = Callable[..., LogConfig]
ClientOpener = Callable[[LogConfig], LogClient]


@contextlib.contextmanager
def opened_clients() -> Iterator[ClientOpener]:
    """An opener of log clients (the system each config names) that closes every client
    it opened, newest first, when the block ends: the body of a test's client fixture."""
    clients: list[LogClient] = []

    def open_(config: LogConfig) -> LogClient:
        client = load_log_system(config.system).open(config)
        clients.append(client)
        return client

    try:
        yield open_
    finally:
        for client in reversed(clients):
            client.close()


def new_token() -> str:
    return f"conformance-{uuid.uuid4().hex}"


def now_ms() -> int:
    return int(time.time() * 1000)


class ConformanceBase:
    """What every group of conformance tests shares: the tunable waits, the fixtures that
    open clients, and the helpers that produce, flush and read."""

    #: Longest wait for records that were flushed to become fetchable.
    fetch_deadline_s: float = 15.0
    #: ``timeout_s`` of each single fetch inside a read loop.
    fetch_step_s: float = 0.5
    #: How long the suite waits to be sure no further record arrives.
    quiet_period_s: float = 0.3
    #: ``timeout_s`` passed to ``flush``.
    flush_timeout_s: float = 30.0
    #: ``timeout_s`` passed to ``flush`` on an unreachable log.
    unreachable_flush_timeout_s: float = 5.0
    #: For a log with ``delete_before``: whether it deletes some of a few dozen small
    #: records in the logs ``log_config_factory`` configures (a log deleting record by
    #: record, or in units its configs make small). False only for configs whose units are
    #: larger (the file log's default 64 MiB segments): the suite then checks what is kept,
    #: not that anything went, so give it a second run with small units.
    delete_before_fine_grained: bool = True

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def open_client(self) -> Iterator[ClientOpener]:
        """Opens clients for a test and closes all of them afterwards."""
        with opened_clients() as open_:
            yield open_

    @pytest.fixture
    def config(self, log_config_factory: ConfigFactory) -> LogConfig:
        return log_config_factory(partitions=2)

    @pytest.fixture
    def client(self, config: LogConfig, open_client: ClientOpener) -> LogClient:
        """A client whose topic exists (two partitions)."""
        client = open_client(config)
        client.ensure_topic()
        return client

    # ------------------------------------------------------------------ helpers

    def produce(
        self,
        client: LogClient,
        token: str,
        partition: int,
        count: int,
        *,
        first_seq: int = 0,
        timestamp_ms: int | None = None,
        tag: str = "",
    ) -> ProduceBatch:
        """Produce ``count`` records whose keys and values say who wrote them."""
        batch = ProduceBatch(
            token=token,
            partition=partition,
            keys=[f"k-{tag}{first_seq + i}".encode() for i in range(count)],
            values=[f"v-{token}-{partition}-{tag}{first_seq + i}".encode() for i in range(count)],
            timestamp_ms=now_ms() if timestamp_ms is None else timestamp_ms,
            first_seq=first_seq,
        )
        client.produce(batch)
        return batch

    def flush(self, client: LogClient) -> list[ProducedRange]:
        return client.flush(self.flush_timeout_s)

    def read(
        self, client: LogClient, partition: int, start: int, count: int, *, max_records: int = 1000
    ) -> tuple[list[LogRecord], int]:
        """Fetch from ``start`` until ``count`` records arrived or the deadline passed.

        Returns the records (possibly fewer: the caller's assertion says what was
        missing) and the position to go on from.
        """
        records: list[LogRecord] = []
        position = start
        deadline = time.monotonic() + self.fetch_deadline_s
        while len(records) < count and time.monotonic() < deadline:
            wanted = min(max_records, count - len(records))
            result = client.fetch(partition, position, wanted, self.fetch_step_s)
            self.check_result(result, position, wanted)
            records += result.records
            position = result.next_position
        return records, position

    def read_all(
        self, client: LogClient, partition: int, start: int, count: int
    ) -> list[LogRecord]:
        """Exactly ``count`` records from ``start`` and then nothing more."""
        records, position = self.read(client, partition, start, count)
        assert len(records) == count, (
            f"expected {count} records from partition {partition}, got {len(records)}"
        )
        extra = client.fetch(partition, position, 100, self.quiet_period_s)
        assert extra.records == [], f"unexpected records after the last one: {extra.records[:3]}"
        return records

    @staticmethod
    def check_result(result: FetchResult, position: int, max_records: int) -> None:
        """What every fetch result must satisfy, whatever the test."""
        assert isinstance(result, FetchResult)
        assert len(result.records) <= max_records, "fetch returned more than max_records"
        if not result.records:
            assert result.next_position == position, "an empty fetch must not move the position"
            return
        positions = [r.position for r in result.records]
        assert positions[0] >= position, "fetch returned a record before the requested position"
        assert all(a < b for a, b in pairwise(positions)), f"positions not increasing: {positions}"
        assert result.next_position > positions[-1], (
            "next_position must be past the last record returned"
        )

    @staticmethod
    def payload(
        records: Sequence[LogRecord],
    ) -> list[tuple[bytes | None, bytes | None, str | None, int | None]]:
        return [(r.key, r.value, r.token, r.seq) for r in records]

    @staticmethod
    def expected(
        batch: ProduceBatch,
    ) -> list[tuple[bytes | None, bytes | None, str | None, int | None]]:
        return [
            (key, value, batch.token, batch.first_seq + i)
            for i, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True))
        ]
