"""Conformance tests of ``end_positions`` and ``seek``: where a reader starts."""

from __future__ import annotations

import re

import pytest

from tablelog.errors import PositionOutOfRangeError, TopicError
from tablelog.logs.client import LogClient
from tablelog.records import SeekSpec
from tablelog.testing.conformance.base import ConformanceBase, new_token, now_ms


class PositionTests(ConformanceBase):
    """End positions follow what was flushed; seeks land on records or on the end."""

    def test_end_positions_advance_by_what_was_flushed(self, client: LogClient) -> None:
        before = client.end_positions([0, 1])
        self.produce(client, new_token(), 0, 6)
        (produced,) = self.flush(client)
        after = client.end_positions([0, 1])
        assert before[0] <= produced.first <= produced.last < after[0]
        assert after[1] == before[1], "a partition nobody wrote to must keep its end"
        assert len(self.read_all(client, 0, before[0], 6)) == 6

    def test_next_record_lands_at_or_after_the_end_position(self, client: LogClient) -> None:
        token = new_token()
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
        token = new_token()
        batch = self.produce(client, token, 0, 4)
        (produced,) = self.flush(client)
        earliest = client.seek(0, SeekSpec.earliest())
        assert earliest <= produced.first
        assert self.payload(self.read_all(client, 0, earliest, 4)) == self.expected(batch)
        assert client.seek(0, SeekSpec.latest()) == client.end_positions([0])[0]
        assert client.seek(0, SeekSpec.position(produced.last)) == produced.last

    def test_seek_position_past_the_end_is_rejected(self, client: LogClient) -> None:
        self.produce(client, new_token(), 0, 2)
        self.flush(client)
        end = client.end_positions([0])[0]
        with pytest.raises(PositionOutOfRangeError):
            client.seek(0, SeekSpec.position(end + 10**9))

    def test_seek_position_at_the_end_is_accepted_and_a_fetch_there_waits_for_the_next_record(
        self, client: LogClient
    ) -> None:
        empty_end = client.end_positions([1])[1]
        assert client.seek(1, SeekSpec.position(empty_end)) == empty_end  # an empty partition
        self.produce(client, new_token(), 0, 2)
        self.flush(client)
        end = client.end_positions([0])[0]
        assert client.seek(0, SeekSpec.position(end)) == end
        assert client.fetch(0, end, 100, self.quiet_period_s).records == []
        batch = self.produce(client, new_token(), 0, 1)
        self.flush(client)
        assert self.payload(self.read_all(client, 0, end, 1)) == self.expected(batch)

    def test_seek_position_below_the_earliest_is_rejected(self, client: LogClient) -> None:
        self.produce(client, new_token(), 0, 2)
        self.flush(client)
        earliest = client.seek(0, SeekSpec.earliest())
        with pytest.raises(PositionOutOfRangeError):
            client.seek(0, SeekSpec.position(-1))
        if earliest > 0:  # a log whose positions do not start at 0, or after retention
            with pytest.raises(PositionOutOfRangeError):
                client.seek(0, SeekSpec.position(earliest - 1))

    def test_seek_timestamp_finds_first_record_at_or_after_time(self, client: LogClient) -> None:
        token = new_token()
        base = now_ms() - 60_000
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
        base = now_ms() - 60_000
        self.produce(client, new_token(), 1, 3, timestamp_ms=base)
        (produced,) = self.flush(client)
        assert client.seek(1, SeekSpec.timestamp(base - 3_600_000)) == produced.first

    def test_seek_timestamp_later_than_every_record_gives_the_end_not_the_start(
        self, client: LogClient
    ) -> None:
        base = now_ms() - 60_000
        self.produce(client, new_token(), 0, 3, timestamp_ms=base)
        (produced,) = self.flush(client)
        found = client.seek(0, SeekSpec.timestamp(base + 3_600_000))
        assert found > produced.last, f"seek past every timestamp returned {found}, not the end"
        assert found == client.end_positions([0])[0]
        assert client.fetch(0, found, 100, self.quiet_period_s).records == []

    # ------------------------------------------------------------------ delete_before (optional)

    def test_delete_before_keeps_every_record_at_or_after_the_position(self, client: LogClient) -> None:
        token = new_token()
        # Eight produces: a log deleting in units (segments) may start a unit between two.
        batches = [self.produce(client, token, 0, 5, first_seq=5 * i) for i in range(8)]
        expected = [record for batch in batches for record in self.expected(batch)]
        (produced,) = self.flush(client)
        records = self.read_all(client, 0, produced.first, 40)
        middle = records[20].position
        held = client.delete_before({0: middle})
        if not client.deletes_before:
            # The log system leaves retention to itself: tablelog asks nothing and deletes nothing.
            assert held is None
            assert self.payload(self.read_all(client, 0, produced.first, 40)) == expected
            return
        assert held is not None
        earliest = held[0]
        assert earliest <= middle, "delete_before must keep the record at the position"
        if self.delete_before_fine_grained:
            assert earliest > produced.first, (
                f"delete_before({{0: {middle}}}) deleted none of the 20 records before the position (the log "
                f"still starts at {earliest}); a log deleting in units larger than that sets "
                "delete_before_fine_grained = False"
            )
        assert client.seek(0, SeekSpec.earliest()) == earliest
        kept = self.read_all(client, 0, middle, 20)
        assert self.payload(kept) == expected[20:]
        if earliest > produced.first:
            with pytest.raises(PositionOutOfRangeError):
                client.fetch(0, produced.first, 10, self.fetch_step_s)
        assert client.delete_before({0: middle}) == {0: earliest}, "delete_before must be idempotent"
