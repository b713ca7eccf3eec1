"""Conformance tests of ``produce`` and ``flush``: the ranges a flush reports."""

from __future__ import annotations

import pytest

from tablelog.errors import LogSystemError
from tablelog.logs.client import LogClient
from tablelog.records import SeekSpec
from tablelog.testing.conformance.base import ConformanceBase, new_token


class ProduceFlushTests(ConformanceBase):
    """Every flush reports, per token and partition, where its records landed."""

    def test_flush_returns_one_range_per_token_and_partition(self, client: LogClient) -> None:
        a, b = new_token(), new_token()
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
        self.produce(client, new_token(), 0, 2)
        assert len(self.flush(client)) == 1
        assert self.flush(client) == [], (
            "a flush reports only what was produced since the last flush"
        )

    def test_flush_ranges_match_fetched_positions(self, client: LogClient) -> None:
        a, b = new_token(), new_token()
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
            self.produce(client, new_token(), 7, 1)
            client.flush(5.0)
