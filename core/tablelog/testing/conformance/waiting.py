"""Conformance tests of ``wait_for_records``: one wait on several partitions, which tells
where records are and takes none of them (a log system without the hook is tested through
the core's fallback, which looks at the end positions)."""

from __future__ import annotations

import threading
import time

from tablelog.logs.client import LogClient
from tablelog.records import LogConfig
from tablelog.testing.conformance.base import ClientOpener, ConformanceBase, new_token


class WaitForRecordsTests(ConformanceBase):
    """An idle reader waits on all its partitions at once, and still gets every record."""

    def _wait_until_ready(self, client: LogClient, positions: dict[int, int]) -> list[int]:
        """Wait until a partition is ready: flushed records may show up a little later."""
        deadline = time.monotonic() + self.fetch_deadline_s
        ready: list[int] = []
        while not ready and time.monotonic() < deadline:
            ready = client.wait_for_records(positions, self.fetch_step_s)
        return ready

    def test_wait_for_records_returns_nothing_at_the_time_out_when_no_record_comes(
        self, client: LogClient
    ) -> None:
        ends = client.end_positions([0, 1])
        assert client.wait_for_records(ends, 0.0) == []
        began = time.monotonic()
        assert client.wait_for_records(ends, self.quiet_period_s) == []
        waited = time.monotonic() - began
        assert waited >= self.quiet_period_s * 0.9, f"it returned [] after {waited:.3f} s, before its time-out"
        assert waited < self.quiet_period_s + 5.0, f"a wait of {self.quiet_period_s} s took {waited:.2f} s"

    def test_wait_for_records_returns_the_partition_a_record_arrives_in_while_it_waits(
        self, config: LogConfig, client: LogClient, open_client: ClientOpener
    ) -> None:
        ends = client.end_positions([0, 1])
        writer = open_client(config)
        produced_at: list[float] = []

        def produce_later() -> None:
            time.sleep(0.3)
            self.produce(writer, new_token(), 1, 1)
            self.flush(writer)
            produced_at.append(time.monotonic())

        thread = threading.Thread(target=produce_later)
        thread.start()
        try:
            began = time.monotonic()
            ready = client.wait_for_records(ends, self.fetch_deadline_s)
            returned_at = time.monotonic()
        finally:
            thread.join()
        assert ready == [1], f"a record arrived in partition 1 only, and the wait returned {ready}"
        assert returned_at - began >= 0.25, "the wait returned before the record was produced"
        assert returned_at - produced_at[0] < 5.0, "the wait took more than 5 s to see the record"
        assert len(self.read_all(client, 1, ends[1], 1)) == 1

    def test_wait_for_records_takes_no_record_away_from_the_fetch(self, client: LogClient) -> None:
        ends = client.end_positions([0, 1])
        batch = self.produce(client, new_token(), 0, 5)
        self.flush(client)
        assert self._wait_until_ready(client, ends) == [0]
        assert client.wait_for_records(ends, 0.0) == [0], "a second wait no longer saw the records"
        assert self.payload(self.read_all(client, 0, ends[0], 5)) == self.expected(batch)

    def test_wait_for_records_leaves_out_partitions_not_asked_for(self, client: LogClient) -> None:
        ends = client.end_positions([0, 1])
        self.produce(client, new_token(), 1, 2)
        self.flush(client)
        assert self._wait_until_ready(client, ends) == [1]
        assert client.wait_for_records({0: ends[0]}, self.quiet_period_s) == []
        assert len(self.read_all(client, 1, ends[1], 2)) == 2
