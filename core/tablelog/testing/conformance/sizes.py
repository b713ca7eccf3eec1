"""Conformance tests of large records: what the writer lets through, the log carries.

A tablelog writer refuses, before producing anything, a record larger than the table's
``log.max-record-bytes`` (its default is :data:`WRITER_DEFAULT_MAX_RECORD_BYTES`). Every
log system must therefore carry a record of that size with its default settings, byte
for byte. Above its own limit, a log must refuse the record with a
:class:`~tablelog.errors.ProduceError` from ``produce`` or ``flush`` that says the record
is too large, and the records produced next must still arrive: a too-large record is
never cut, dropped in silence, or left to wedge the partition.

A plugin declares its limit in its conformance class::

    class TestMyLogConformance(LogSystemConformance):
        max_record_bytes = 5 * 1024 * 1024   # the largest value the log takes

``None`` (the default) declares that the log has no limit below
:attr:`~tablelog.testing.conformance.sizes.RecordSizeTests.unlimited_probe_bytes`;
the suite then checks that a record of that size round-trips.
"""

from __future__ import annotations

import pytest

from tablelog.errors import ProduceError
from tablelog.logs.client import LogClient
from tablelog.options import TableOptions
from tablelog.records import ProduceBatch, SeekSpec
from tablelog.testing.conformance.base import ConformanceBase, new_token, now_ms

#: The writer's default ``log.max-record-bytes``: the largest record every log must carry.
WRITER_DEFAULT_MAX_RECORD_BYTES: int = TableOptions().log_max_record_bytes

#: The key of the suite's large records: a primary key's size, as a writer produces it.
_KEY = b'{"id":1234567890}'


def _payload(size: int, tag: bytes) -> bytes:
    """``size`` bytes that differ at both ends between calls, so a cut record shows."""
    body = (tag * (size // max(1, len(tag)) + 1))[:size]
    return body[:-len(tag)] + tag if size >= 2 * len(tag) else body


class RecordSizeTests(ConformanceBase):
    """Records as large as the writer allows round-trip; larger than the log allows fail loudly."""

    #: The largest record value (bytes) the log accepts in the suite's configuration;
    #: ``None``: no limit below :attr:`unlimited_probe_bytes`.
    max_record_bytes: int | None = None
    #: The record size a log without a limit is checked with.
    unlimited_probe_bytes: int = 4 * WRITER_DEFAULT_MAX_RECORD_BYTES

    def _produce_one(self, client: LogClient, token: str, value: bytes, seq: int = 0) -> None:
        client.produce(ProduceBatch(
            token=token, partition=0, keys=[_KEY], values=[value], timestamp_ms=now_ms(), first_seq=seq,
        ))

    def test_a_record_of_the_writers_largest_size_round_trips(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        token = new_token()
        value = _payload(WRITER_DEFAULT_MAX_RECORD_BYTES, token.encode())
        self._produce_one(client, token, value)
        (produced,) = self.flush(client)
        assert produced.count == 1
        (record,) = self.read_all(client, 0, start, 1)
        assert record.value == value, "the record came back changed"
        assert record.key == _KEY
        assert record.token == token

    def test_a_record_larger_than_the_log_accepts_fails_and_the_next_arrives(self, client: LogClient) -> None:
        if self.max_record_bytes is None:
            self._check_unlimited(client)
            return
        start = client.seek(0, SeekSpec.latest())
        too_large = new_token()
        with pytest.raises(ProduceError) as refused:
            self._produce_one(client, too_large, _payload(self.max_record_bytes + 1, too_large.encode()))
            self.flush(client)
        message = str(refused.value).lower()
        assert "large" in message or "size" in message or "bytes" in message, (
            f"the error does not say the record is too large: {refused.value}"
        )
        # The client stays usable: a record within the limit produced next arrives, alone.
        after = new_token()
        self._produce_one(client, after, b"after the refused record")
        self.flush(client)
        records = self.read_all(client, 0, start, 1)
        assert [r.token for r in records] == [after], "the too-large record (or a part of it) was stored"

    def _check_unlimited(self, client: LogClient) -> None:
        start = client.seek(0, SeekSpec.latest())
        token = new_token()
        value = _payload(self.unlimited_probe_bytes, token.encode())
        self._produce_one(client, token, value)
        self.flush(client)
        (record,) = self.read_all(client, 0, start, 1)
        assert record.value == value
