"""The LogSystem conformance suite: what every log system must do, as pytest tests.

Use it from a plugin's test module::

    import uuid
    import pytest
    from tablelog.records import LogConfig
    from tablelog.testing import LogSystemConformance

    class TestMyLogConformance(LogSystemConformance):
        @pytest.fixture
        def log_config_factory(self, my_broker):
            def make(partitions: int = 2, auto_register: bool = True) -> LogConfig:
                return LogConfig(
                    system="mylog", table="db.t", topic=f"conformance-{uuid.uuid4().hex}",
                    partitions=partitions, auto_register=auto_register,
                    options={"url": my_broker.url},
                )
            return make

Contract for the fixture ``log_config_factory``: a callable
``(partitions: int = 2, auto_register: bool = True) -> LogConfig`` returning a
config for a *fresh, unique topic* on every call (for a broker-backed plugin,
pointing at a real broker).

A second fixture, ``unreachable_log_config``, gives a config of the same system
whose log cannot be reached (a server address where nothing listens, with short
client time-outs; for a local log, a path that cannot be accessed)::

        @pytest.fixture
        def unreachable_log_config(self, log_config_factory):
            config = log_config_factory()
            port = tablelog.testing.free_port()  # nothing listens there
            return attrs.evolve(config, options={**config.options, "url": f"mylog://127.0.0.1:{port}"})

The suite loads the system with
:func:`tablelog.registry.load_log_system` (``config.system``), opens clients
itself and closes every one of them after each test.

The tests only use what the hook contracts promise: positions are ints that grow
strictly within a partition but need not be dense, so the suite never computes
"position + 1"; it follows :attr:`FetchResult.next_position` and the ranges that
``flush`` returns. Brokers may show flushed records a little later, so every read
is a loop of short fetches until the expected count or a deadline, never a sleep.
A subclass may tune the class attributes below for a slow broker.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise

import attrs
import pytest

from tablelog.errors import LogSystemError, LogUnavailableError, PositionOutOfRangeError, TopicError
from tablelog.records import (
    CommittedLog,
    FetchResult,
    LogConfig,
    LogRecord,
    ProduceBatch,
    ProducedRange,
    SeekSpec,
)
from tablelog.registry import LogClient, load_log_system

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


def _token() -> str:
    return f"conformance-{uuid.uuid4().hex}"


def _now_ms() -> int:
    return int(time.time() * 1000)


class LogSystemConformance:
    """Base class of the conformance tests; see the module docstring for how to use it."""

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

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def open_client(self) -> Iterator[ClientOpener]:
        """Opens clients for a test and closes all of them afterwards."""
        with opened_clients() as open_:
            yield open_

    @pytest.fixture
    def unreachable_log_config(self) -> LogConfig:
        message = (
            "provide an `unreachable_log_config` fixture: a LogConfig of your log system whose log "
            "cannot be reached (see tablelog.testing.conformance)"
        )
        pytest.fail(message, pytrace=False)
        raise AssertionError(message)  # not reached; for type checkers that do not know pytest

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
            timestamp_ms=_now_ms() if timestamp_ms is None else timestamp_ms,
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

    # ------------------------------------------------------------------ topics

    def test_option_specs_use_the_system_prefix(self, config: LogConfig) -> None:
        specs = load_log_system(config.system).option_specs()
        assert all(spec.key.startswith(config.system + ".") for spec in specs), [
            s.key for s in specs
        ]

    def test_ensure_topic_creates_requested_partitions(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        client = open_client(log_config_factory(partitions=3))
        assert client.ensure_topic() == 3
        start = client.seek(2, SeekSpec.latest())
        batch = self.produce(client, _token(), 2, 2)
        self.flush(client)
        assert self.payload(self.read_all(client, 2, start, 2)) == self.expected(batch)

    def test_ensure_topic_is_idempotent(self, config: LogConfig, open_client: ClientOpener) -> None:
        first = open_client(config)
        assert first.ensure_topic() == 2
        assert first.ensure_topic() == 2
        assert open_client(config).ensure_topic() == 2

    def test_ensure_topic_rejects_topic_with_fewer_partitions_than_needed(
        self, config: LogConfig, open_client: ClientOpener
    ) -> None:
        assert open_client(config).ensure_topic() == 2
        bigger = open_client(attrs.evolve(config, partitions=4))
        with pytest.raises(TopicError) as raised:
            bigger.ensure_topic()
        message = str(raised.value)
        assert re.search(r"\b2\b", message) and re.search(r"\b4\b", message), (
            f"the error must name both partition counts: {message}"
        )

    def test_ensure_topic_accepts_topic_with_more_partitions_than_needed(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        config = log_config_factory(partitions=3)
        assert open_client(config).ensure_topic() == 3
        assert open_client(attrs.evolve(config, partitions=2)).ensure_topic() == 3

    def test_ensure_topic_without_auto_register_fails_for_missing_topic(
        self, log_config_factory: ConfigFactory, open_client: ClientOpener
    ) -> None:
        client = open_client(log_config_factory(auto_register=False))
        with pytest.raises(TopicError):
            client.ensure_topic()

    def test_ensure_topic_without_auto_register_accepts_existing_topic(
        self, config: LogConfig, open_client: ClientOpener
    ) -> None:
        assert open_client(config).ensure_topic() == 2
        assert open_client(attrs.evolve(config, auto_register=False)).ensure_topic() == 2

    # ------------------------------------------------------------------ produce and flush

    def test_flush_returns_one_range_per_token_and_partition(self, client: LogClient) -> None:
        a, b = _token(), _token()
        self.produce(client, a, 0, 3)
        self.produce(client, a, 0, 2, first_seq=3)
        self.produce(client, a, 1, 4)
        self.produce(client, b, 0, 1)
        ranges = self.flush(client)
        counts = sorted((r.token, r.partition, r.count) for r in ranges)
        assert counts == sorted([(a, 0, 5), (a, 1, 4), (b, 0, 1)])
        for r in ranges:
            assert 0 <= r.first <= r.last
            assert (r.first == r.last) == (r.count == 1)

    def test_flush_without_produce_returns_no_ranges(self, client: LogClient) -> None:
        assert self.flush(client) == []
        self.produce(client, _token(), 0, 2)
        assert len(self.flush(client)) == 1
        assert self.flush(client) == [], (
            "a flush reports only what was produced since the last flush"
        )

    def test_flush_ranges_match_fetched_positions(self, client: LogClient) -> None:
        a, b = _token(), _token()
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, a, 0, 3)
        self.produce(client, b, 0, 2)
        self.produce(client, a, 0, 3, first_seq=3)
        ranges = {r.token: r for r in self.flush(client)}
        records = self.read_all(client, 0, start, 8)
        for token, expected_count in ((a, 6), (b, 2)):
            mine = [r.position for r in records if r.token == token]
            assert len(mine) == expected_count
            assert (ranges[token].first, ranges[token].last, ranges[token].count) == (
                mine[0],
                mine[-1],
                expected_count,
            )

    def test_produce_to_a_missing_partition_fails(self, client: LogClient) -> None:
        with pytest.raises(LogSystemError):
            self.produce(client, _token(), 7, 1)
            client.flush(5.0)

    # ------------------------------------------------------------------ fetch

    def test_fetch_returns_records_in_produce_order_within_a_partition(
        self, client: LogClient
    ) -> None:
        token = _token()
        start = client.seek(0, SeekSpec.latest())
        batches = [self.produce(client, token, 0, 5, first_seq=5 * i) for i in range(4)]
        self.flush(client)
        records = self.read_all(client, 0, start, 20)
        assert self.payload(records) == [e for batch in batches for e in self.expected(batch)]

    def test_records_carry_token_and_sequence_numbers(self, client: LogClient) -> None:
        token = _token()
        start = client.seek(1, SeekSpec.latest())
        self.produce(client, token, 1, 4, first_seq=17)
        self.flush(client)
        records = self.read_all(client, 1, start, 4)
        assert [(r.token, r.seq) for r in records] == [
            (token, 17),
            (token, 18),
            (token, 19),
            (token, 20),
        ]

    def test_records_carry_the_batch_timestamp(self, client: LogClient) -> None:
        stamp = _now_ms() - 5_000
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, _token(), 0, 3, timestamp_ms=stamp)
        self.flush(client)
        assert [r.timestamp_ms for r in self.read_all(client, 0, start, 3)] == [stamp] * 3

    def test_null_keys_and_empty_values_round_trip(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = ProduceBatch(_token(), 0, [None, b"k", None], [b"", b"", b"v"], _now_ms())
        client.produce(batch)
        self.flush(client)
        records = self.read_all(client, 0, start, 3)
        assert [(r.key, r.value) for r in records] == [(None, b""), (b"k", b""), (None, b"v")]

    def test_binary_keys_and_values_round_trip_unchanged(self, client: LogClient) -> None:
        every_byte = bytes(range(256))
        start = client.seek(0, SeekSpec.latest())
        batch = ProduceBatch(
            _token(), 0, [every_byte, b"\x00"], [every_byte * 4, b"\xff\x00\xfe"], _now_ms()
        )
        client.produce(batch)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, start, 2)) == self.expected(batch)

    def test_large_batch_round_trips_count_and_content(self, client: LogClient) -> None:
        start = client.seek(1, SeekSpec.latest())
        token = _token()
        batch = ProduceBatch(
            token,
            1,
            [f'{{"id":{i}}}'.encode() for i in range(3000)],
            [(f'{{"op":"c","after":{{"id":{i}}}}}'.encode()).ljust(120, b" ") for i in range(3000)],
            _now_ms(),
        )
        client.produce(batch)
        (produced,) = self.flush(client)
        assert produced.count == 3000
        records, _ = self.read(client, 1, start, 3000, max_records=1000)
        assert len(records) == 3000
        assert self.payload(records) == self.expected(batch)

    def test_partitions_are_independent(self, client: LogClient) -> None:
        starts = client.end_positions([0, 1])
        only_zero = self.produce(client, _token(), 0, 3)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, starts[0], 3)) == self.expected(only_zero)
        assert client.fetch(1, starts[1], 100, self.quiet_period_s).records == []

    def test_fetch_respects_max_records(self, client: LogClient) -> None:
        token = _token()
        start = client.seek(0, SeekSpec.latest())
        batch = self.produce(client, token, 0, 10)
        self.flush(client)
        records: list[LogRecord] = []
        sizes = []
        position = start
        deadline = time.monotonic() + self.fetch_deadline_s
        while len(records) < 10 and time.monotonic() < deadline:
            result = client.fetch(0, position, 3, self.fetch_step_s)
            self.check_result(result, position, 3)
            if result.records:
                sizes.append(len(result.records))
            records += result.records
            position = result.next_position
        assert all(size <= 3 for size in sizes), sizes
        assert self.payload(records) == self.expected(batch)

    def test_fetch_values_returns_the_values_and_positions_that_fetch_returns(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, _token(), 0, 10)
        self.flush(client)
        records = self.read_all(client, 0, start, 10)
        values: list[bytes | None] = []
        positions: list[int] = []
        position = start
        deadline = time.monotonic() + self.fetch_deadline_s
        while len(values) < 10 and time.monotonic() < deadline:
            result = client.fetch_values(0, position, 3, self.fetch_step_s)
            assert len(result.values) == len(result.positions) <= 3
            if result.values:
                assert result.positions[0] >= position
                assert result.next_position > result.positions[-1]
            else:
                assert result.next_position == position
            values += result.values
            positions += result.positions
            position = result.next_position
        assert values == [r.value for r in records]
        assert positions == [r.position for r in records]
        assert client.fetch_values(0, position, 100, self.quiet_period_s).values == []

    def test_prefetch_of_every_partition_then_fetch_each_in_turn_returns_each_once(
        self, client: LogClient
    ) -> None:
        starts = client.end_positions([0, 1])
        zero = self.produce(client, _token(), 0, 6)
        one = self.produce(client, _token(), 1, 4)
        self.flush(client)
        client.prefetch(dict(starts))
        assert self.payload(self.read_all(client, 0, starts[0], 6)) == self.expected(zero)
        assert self.payload(self.read_all(client, 1, starts[1], 4)) == self.expected(one)

    def test_prefetch_is_only_a_hint_a_bad_position_fails_nothing(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = self.produce(client, _token(), 0, 3)
        self.flush(client)
        client.prefetch({0: start + 10**6, 1: 10**9})  # positions the log does not have
        assert self.payload(self.read_all(client, 0, start, 3)) == self.expected(batch)

    def test_fetch_from_position_inside_the_log_resumes_exactly(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = self.produce(client, _token(), 0, 8)
        self.flush(client)
        records = self.read_all(client, 0, start, 8)
        resumed = self.read_all(client, 0, records[3].position, 5)
        assert resumed == records[3:]
        assert self.payload(resumed) == self.expected(batch)[3:]

    def test_fetch_from_next_position_does_not_repeat_records(self, client: LogClient) -> None:
        token = _token()
        start = client.seek(0, SeekSpec.latest())
        first = self.produce(client, token, 0, 4)
        self.flush(client)
        records, position = self.read(client, 0, start, 4)
        assert self.payload(records) == self.expected(first)
        second = self.produce(client, token, 0, 2, first_seq=4)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, position, 2)) == self.expected(second)

    def test_fetch_empty_returns_quickly_with_unchanged_position(self, client: LogClient) -> None:
        position = client.seek(1, SeekSpec.latest())
        began = time.monotonic()
        result = client.fetch(1, position, 100, 0.2)
        elapsed = time.monotonic() - began
        assert result.records == []
        assert result.next_position == position
        assert elapsed < 2.0, f"an empty fetch with timeout 0.2 s took {elapsed:.2f} s"

    def test_fetch_sees_a_record_produced_while_waiting(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        position = client.seek(0, SeekSpec.latest())
        writer = open_client(config)
        produced_at: list[float] = []

        def produce_later() -> None:
            time.sleep(0.3)
            self.produce(writer, _token(), 0, 1)
            self.flush(writer)
            produced_at.append(time.monotonic())

        thread = threading.Thread(target=produce_later)
        thread.start()
        try:
            records, _ = self.read(client, 0, position, 1)
            arrived_at = time.monotonic()
        finally:
            thread.join()
        assert len(records) == 1
        assert arrived_at - produced_at[0] < 5.0, (
            "a waiting fetch took more than 5 s to see a record"
        )

    def test_two_clients_interleaving_keep_each_partition_ordered(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        other = open_client(config)
        start = client.seek(0, SeekSpec.latest())
        writers = [(client, _token()), (other, _token())]
        ranges: list[ProducedRange] = []
        for round_ in range(4):
            for writer, token in writers:
                self.produce(writer, token, 0, 3, first_seq=3 * round_)
                ranges += self.flush(writer)
        records = self.read_all(client, 0, start, 24)
        for _, token in writers:
            mine = [r for r in records if r.token == token]
            assert [r.seq for r in mine] == list(range(12)), f"records of {token} out of order"
            positions = {r.position for r in mine}
            for produced in (r for r in ranges if r.token == token):
                assert produced.first in positions and produced.last in positions

    def test_a_range_reported_contiguous_holds_only_its_own_records(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        other = open_client(config)
        start = client.seek(0, SeekSpec.latest())
        mine, theirs, alone = _token(), _token(), _token()
        self.produce(client, mine, 0, 3)
        self.produce(other, theirs, 0, 3)  # another client between mine
        self.produce(client, mine, 0, 3, first_seq=3)
        self.produce(client, alone, 1, 5)
        ranges = self.flush(client) + self.flush(other)
        self.produce(client, mine, 0, 2, first_seq=6)
        self.produce(client, theirs, 0, 2, first_seq=3)  # one client, two tokens, one flush
        ranges += self.flush(client)
        records = self.read_all(client, 0, start, 13)
        for produced in (r for r in ranges if r.contiguous and r.partition == 0):
            inside = [r for r in records if produced.first <= r.position <= produced.last]
            assert {r.token for r in inside} == {produced.token}, (
                f"range {produced} is reported contiguous, but other records lie inside it")
            assert len(inside) == produced.count

    def test_positions_are_strictly_increasing_and_non_negative(self, client: LogClient) -> None:
        start = client.seek(1, SeekSpec.latest())
        self.produce(client, _token(), 1, 5)
        self.produce(client, _token(), 1, 5)
        self.flush(client)
        positions = [r.position for r in self.read_all(client, 1, start, 10)]
        assert positions[0] >= 0
        assert all(a < b for a, b in pairwise(positions)), positions

    def test_reopened_client_reads_flushed_records_at_the_same_positions(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, _token(), 0, 5)
        self.flush(client)
        before = self.read_all(client, 0, start, 5)
        client.close()
        reopened = open_client(config)
        assert self.read_all(reopened, 0, start, 5) == before

    # ------------------------------------------------------------------ end positions

    def test_end_positions_advance_by_what_was_flushed(self, client: LogClient) -> None:
        before = client.end_positions([0, 1])
        self.produce(client, _token(), 0, 6)
        (produced,) = self.flush(client)
        after = client.end_positions([0, 1])
        assert before[0] <= produced.first <= produced.last < after[0]
        assert after[1] == before[1], "a partition nobody wrote to must keep its end"
        assert len(self.read_all(client, 0, before[0], 6)) == 6

    def test_next_record_lands_at_or_after_the_end_position(self, client: LogClient) -> None:
        token = _token()
        self.produce(client, token, 1, 2)
        self.flush(client)
        end = client.end_positions([1])[1]
        self.produce(client, token, 1, 2, first_seq=2)
        (produced,) = self.flush(client)
        assert produced.first >= end

    def test_end_positions_of_an_empty_partition_equal_earliest(self, client: LogClient) -> None:
        ends = client.end_positions([0, 1])
        assert ends == client.end_positions([0, 1])
        assert ends[1] == client.seek(1, SeekSpec.earliest())

    def test_end_positions_of_a_missing_partition_raise_a_topic_error_naming_it(
        self, client: LogClient
    ) -> None:
        with pytest.raises(TopicError) as raised:
            client.end_positions([0, 7])
        assert re.search(r"\b7\b", str(raised.value)), f"the error must name partition 7: {raised.value}"

    # ------------------------------------------------------------------ seek

    def test_seek_earliest_latest_and_position(self, client: LogClient) -> None:
        token = _token()
        batch = self.produce(client, token, 0, 4)
        (produced,) = self.flush(client)
        earliest = client.seek(0, SeekSpec.earliest())
        assert earliest <= produced.first
        assert self.payload(self.read_all(client, 0, earliest, 4)) == self.expected(batch)
        assert client.seek(0, SeekSpec.latest()) == client.end_positions([0])[0]
        assert client.seek(0, SeekSpec.position(produced.last)) == produced.last

    def test_seek_position_past_the_end_is_rejected(self, client: LogClient) -> None:
        self.produce(client, _token(), 0, 2)
        self.flush(client)
        end = client.end_positions([0])[0]
        with pytest.raises(PositionOutOfRangeError):
            client.seek(0, SeekSpec.position(end + 10**9))

    def test_seek_position_at_the_end_is_accepted_and_a_fetch_there_waits_for_the_next_record(
        self, client: LogClient
    ) -> None:
        empty_end = client.end_positions([1])[1]
        assert client.seek(1, SeekSpec.position(empty_end)) == empty_end  # an empty partition
        self.produce(client, _token(), 0, 2)
        self.flush(client)
        end = client.end_positions([0])[0]
        assert client.seek(0, SeekSpec.position(end)) == end
        assert client.fetch(0, end, 100, self.quiet_period_s).records == []
        batch = self.produce(client, _token(), 0, 1)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, end, 1)) == self.expected(batch)

    def test_seek_position_below_the_earliest_is_rejected(self, client: LogClient) -> None:
        self.produce(client, _token(), 0, 2)
        self.flush(client)
        earliest = client.seek(0, SeekSpec.earliest())
        with pytest.raises(PositionOutOfRangeError):
            client.seek(0, SeekSpec.position(-1))
        if earliest > 0:  # a log whose positions do not start at 0, or after retention
            with pytest.raises(PositionOutOfRangeError):
                client.seek(0, SeekSpec.position(earliest - 1))

    def test_seek_timestamp_finds_first_record_at_or_after_time(self, client: LogClient) -> None:
        token = _token()
        base = _now_ms() - 60_000
        self.produce(client, token, 0, 2, timestamp_ms=base)
        self.flush(client)
        middle = self.produce(client, token, 0, 2, first_seq=2, timestamp_ms=base + 10_000)
        (second,) = self.flush(client)
        self.produce(client, token, 0, 2, first_seq=4, timestamp_ms=base + 20_000)
        self.flush(client)
        assert client.seek(0, SeekSpec.timestamp(base + 5_000)) == second.first
        assert client.seek(0, SeekSpec.timestamp(base + 10_000)) == second.first
        found = client.seek(0, SeekSpec.timestamp(base + 5_000))
        assert self.payload(self.read(client, 0, found, 2)[0]) == self.expected(middle)

    def test_seek_timestamp_before_every_record_gives_the_first_record(
        self, client: LogClient
    ) -> None:
        base = _now_ms() - 60_000
        self.produce(client, _token(), 1, 3, timestamp_ms=base)
        (produced,) = self.flush(client)
        assert client.seek(1, SeekSpec.timestamp(base - 3_600_000)) == produced.first

    def test_seek_timestamp_later_than_every_record_gives_the_end_not_the_start(
        self, client: LogClient
    ) -> None:
        base = _now_ms() - 60_000
        self.produce(client, _token(), 0, 3, timestamp_ms=base)
        (produced,) = self.flush(client)
        found = client.seek(0, SeekSpec.timestamp(base + 3_600_000))
        assert found > produced.last, f"seek past every timestamp returned {found}, not the end"
        assert found == client.end_positions([0])[0]
        assert client.fetch(0, found, 100, self.quiet_period_s).records == []

    # ------------------------------------------------------------------ an unreachable log

    def test_ensure_topic_on_an_unreachable_log_raises_log_unavailable_not_topic_error(
        self, unreachable_log_config: LogConfig, open_client: ClientOpener
    ) -> None:
        with pytest.raises(LogUnavailableError):
            open_client(unreachable_log_config).ensure_topic()

    def test_writing_to_an_unreachable_log_raises_log_unavailable_by_the_flush(
        self, unreachable_log_config: LogConfig, open_client: ClientOpener
    ) -> None:
        # open_log may connect lazily and produce may only queue: whichever hook finds out,
        # an outage is a LogUnavailableError, never a ProduceError or a TopicError.
        with pytest.raises(LogUnavailableError):
            client = open_client(unreachable_log_config)
            self.produce(client, _token(), 0, 2)
            client.flush(self.unreachable_flush_timeout_s)

    # ------------------------------------------------------------------ commit and close

    def test_commit_hook_is_idempotent(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        token = _token()
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, token, 0, 3)
        ranges = self.flush(client)
        committed = CommittedLog(
            snapshot_id=1,
            writer="conformance",
            commit_identifier=1,
            ranges=tuple(ranges),
            end_positions=client.end_positions([0, 1]),
        )
        before = [r for r in self.read(client, 0, start, 3)[0] if r.token == token]
        client.commit(committed)
        client.commit(committed)
        open_client(config).commit(committed)  # again after a "crash", from a new connection
        after, _ = self.read(client, 0, start, 3)
        assert [r for r in after if r.token == token] == before
        assert len(before) == 3

    def test_close_twice_is_allowed(self, config: LogConfig, open_client: ClientOpener) -> None:
        client = open_client(config)
        client.ensure_topic()
        hook = client.system.pm.hook
        # Call the hook itself: LogClient.close() would not call it a second time.
        hook.close_log(connection=client.connection)
        hook.close_log(connection=client.connection)
        client.closed = True
