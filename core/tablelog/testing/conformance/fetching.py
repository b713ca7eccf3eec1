"""Conformance tests of ``fetch``, ``fetch_values`` and ``prefetch``: what a reader gets back."""

from __future__ import annotations

import threading
import time
from itertools import pairwise

from tablelog.logs.client import LogClient
from tablelog.records import LogConfig, LogRecord, ProduceBatch, ProducedRange, SeekSpec
from tablelog.testing.conformance.base import ClientOpener, ConformanceBase, new_token, now_ms


class FetchTests(ConformanceBase):
    """Records come back whole, in order, once, from any position a fetch returned."""

    def test_fetch_returns_records_in_produce_order_within_a_partition(
        self, client: LogClient
    ) -> None:
        token = new_token()
        start = client.seek(0, SeekSpec.latest())
        batches = [self.produce(client, token, 0, 5, first_seq=5 * i) for i in range(4)]
        self.flush(client)
        records = self.read_all(client, 0, start, 20)
        assert self.payload(records) == [e for batch in batches for e in self.expected(batch)]

    def test_records_carry_token_and_sequence_numbers(self, client: LogClient) -> None:
        token = new_token()
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
        stamp = now_ms() - 5_000
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, new_token(), 0, 3, timestamp_ms=stamp)
        self.flush(client)
        assert [r.timestamp_ms for r in self.read_all(client, 0, start, 3)] == [stamp] * 3

    def test_null_keys_and_empty_values_round_trip(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = ProduceBatch(new_token(), 0, [None, b"k", None], [b"", b"", b"v"], now_ms())
        client.produce(batch)
        self.flush(client)
        records = self.read_all(client, 0, start, 3)
        assert [(r.key, r.value) for r in records] == [(None, b""), (b"k", b""), (None, b"v")]

    def test_binary_keys_and_values_round_trip_unchanged(self, client: LogClient) -> None:
        every_byte = bytes(range(256))
        start = client.seek(0, SeekSpec.latest())
        batch = ProduceBatch(
            new_token(), 0, [every_byte, b"\x00"], [every_byte * 4, b"\xff\x00\xfe"], now_ms()
        )
        client.produce(batch)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, start, 2)) == self.expected(batch)

    def test_large_batch_round_trips_count_and_content(self, client: LogClient) -> None:
        start = client.seek(1, SeekSpec.latest())
        token = new_token()
        batch = ProduceBatch(
            token,
            1,
            [f'{{"id":{i}}}'.encode() for i in range(3000)],
            [(f'{{"op":"c","after":{{"id":{i}}}}}'.encode()).ljust(120, b" ") for i in range(3000)],
            now_ms(),
        )
        client.produce(batch)
        (produced,) = self.flush(client)
        assert produced.count == 3000
        records, _ = self.read(client, 1, start, 3000, max_records=1000)
        assert len(records) == 3000
        assert self.payload(records) == self.expected(batch)

    def test_partitions_are_independent(self, client: LogClient) -> None:
        starts = client.end_positions([0, 1])
        only_zero = self.produce(client, new_token(), 0, 3)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, starts[0], 3)) == self.expected(only_zero)
        assert client.fetch(1, starts[1], 100, self.quiet_period_s).records == []

    def test_fetch_respects_max_records(self, client: LogClient) -> None:
        token = new_token()
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
        self.produce(client, new_token(), 0, 10)
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
        zero = self.produce(client, new_token(), 0, 6)
        one = self.produce(client, new_token(), 1, 4)
        self.flush(client)
        client.prefetch(dict(starts))
        assert self.payload(self.read_all(client, 0, starts[0], 6)) == self.expected(zero)
        assert self.payload(self.read_all(client, 1, starts[1], 4)) == self.expected(one)

    def test_prefetch_is_only_a_hint_a_bad_position_fails_nothing(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = self.produce(client, new_token(), 0, 3)
        self.flush(client)
        client.prefetch({0: start + 10**6, 1: 10**9})  # positions the log does not have
        assert self.payload(self.read_all(client, 0, start, 3)) == self.expected(batch)

    def test_fetch_from_position_inside_the_log_resumes_exactly(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        batch = self.produce(client, new_token(), 0, 8)
        self.flush(client)
        records = self.read_all(client, 0, start, 8)
        resumed = self.read_all(client, 0, records[3].position, 5)
        assert resumed == records[3:]
        assert self.payload(resumed) == self.expected(batch)[3:]

    def test_fetch_from_next_position_does_not_repeat_records(self, client: LogClient) -> None:
        token = new_token()
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
            self.produce(writer, new_token(), 0, 1)
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
        writers = [(client, new_token()), (other, new_token())]
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
        mine, theirs, alone = new_token(), new_token(), new_token()
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
        self.produce(client, new_token(), 1, 5)
        self.produce(client, new_token(), 1, 5)
        self.flush(client)
        positions = [r.position for r in self.read_all(client, 1, start, 10)]
        assert positions[0] >= 0
        assert all(a < b for a, b in pairwise(positions)), positions

    def test_reopened_client_reads_flushed_records_at_the_same_positions(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        start = client.seek(0, SeekSpec.latest())
        self.produce(client, new_token(), 0, 5)
        self.flush(client)
        before = self.read_all(client, 0, start, 5)
        client.close()
        reopened = open_client(config)
        assert self.read_all(reopened, 0, start, 5) == before
