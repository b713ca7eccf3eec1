"""Reading: end positions, seeking (by position, time or end), fetching and waiting for
the next entry."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tablelog.plugin import (
    CorruptRecordError,
    FetchResult,
    LogRecord,
    LogSystemError,
    PositionOutOfRangeError,
    SeekKind,
    SeekSpec,
    TopicError,
    hookimpl,
)

from . import positions as pos
from .streams import KEY, SEQ, TOKEN, TS, VALUE, Entry, RedisStreams

#: Entries read per XRANGE while scanning for a timestamp.
SCAN_CHUNK = 1000


class StreamReads(RedisStreams):
    """The hooks ``end_positions``, ``seek``, ``fetch`` and ``wait_for_records`` of a connection."""

    @hookimpl
    def end_positions(connection, partitions: list[int]) -> dict[int, int]:
        # One past `last-generated-id` (XINFO STREAM): exclusive, and never lower than
        # the next entry's id even after deletions.
        with connection._errors("read the end positions"):
            pipe = connection.client.pipeline(transaction=False)
            for partition in partitions:
                pipe.xinfo_stream(connection.stream(partition))
            results = pipe.execute(raise_on_error=False)
        ends = {}
        for partition, info in zip(partitions, results, strict=True):
            if isinstance(info, Exception):
                if "no such key" in str(info).lower():
                    raise TopicError(
                        f"stream {connection.stream(partition)!r} does not exist", topic=connection.topic,
                        partition=partition,
                    )
                raise LogSystemError(f"XINFO STREAM failed: {info}", topic=connection.topic, partition=partition)
            ends[partition] = connection._end(partition, info)
        return ends

    @hookimpl
    def seek(connection, partition: int, spec: SeekSpec) -> int:
        # EARLIEST: the first entry (or the end of an empty stream); LATEST: the end;
        # TIMESTAMP: a scan that starts at the id of that time (ids are time-based);
        # POSITION: validated against the end.
        with connection._errors("seek", partition):
            info = connection._info(partition)
            end = connection._end(partition, info)
            if spec.kind is SeekKind.LATEST:
                return end
            if spec.kind is SeekKind.EARLIEST:
                assert info is not None
                first = info.get("first-entry")
                return pos.encode(first[0]) if first else end
            if spec.kind is SeekKind.TIMESTAMP:
                return connection._seek_timestamp(partition, spec.value, end)
            position = spec.value
            connection._check_position(partition, position)
            if position > end:
                raise PositionOutOfRangeError(
                    f"position {pos.describe(position)} is past the end of the stream "
                    f"({pos.describe(end)})",
                    topic=connection.topic, partition=partition,
                )
            first = info.get("first-entry") if info is not None else None
            earliest = pos.encode(first[0]) if first else end
            if position < earliest:
                raise PositionOutOfRangeError(
                    f"position {pos.describe(position)} is before the earliest entry the stream still "
                    f"holds ({pos.describe(earliest)}): trimmed or deleted",
                    topic=connection.topic, partition=partition,
                )
            return position

    def _seek_timestamp(self, partition: int, millis: int, end: int) -> int:
        """The first entry with ``ts >= millis``, else ``end``.

        Entry ids start with the server's time when the entry was added, and a writer
        stamps a batch before sending it, so ``ts <= id`` up to clock skew: no entry
        whose id is older than ``millis - redis.timestamp-skew-ms`` can match, and the
        scan starts there instead of at the beginning of the stream. It stops at
        ``end`` (entries added meanwhile are past what the caller can see anyway).
        """
        start = pos.to_position(max(0, millis - self.settings.timestamp_skew_ms), 0)
        if start >= end:
            return end
        cursor, stop = pos.entry_id(start), pos.entry_id(end - 1)
        stream = self.stream(partition)
        while True:
            entries = self.client.xrange(stream, min=cursor, max=stop, count=SCAN_CHUNK)
            for raw_id, fields in entries:
                if _timestamp(raw_id, fields) >= millis:
                    return pos.encode(raw_id)
            if len(entries) < SCAN_CHUNK:
                return end
            cursor = "(" + entries[-1][0].decode()  # exclusive (Redis >= 6.2)

    @hookimpl
    def fetch(connection, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        # XRANGE from the position's id; when nothing is there, XREAD BLOCK waits for
        # the first new entry (at most timeout_s).
        connection._check_position(partition, position)
        if max_records <= 0:
            return FetchResult([], position)
        stream = connection.stream(partition)
        with connection._errors("fetch", partition):
            entries = connection.client.xrange(stream, min=pos.entry_id(position), max="+", count=max_records)
            if not entries:
                end = connection._end(partition, connection._info(partition))
                if position > end:
                    raise PositionOutOfRangeError(
                        f"position {pos.describe(position)} is past the end of the stream "
                        f"({pos.describe(end)}): the stream was replaced or the position is not from it",
                        topic=connection.topic, partition=partition,
                    )
                block_ms = int(timeout_s * 1000)
                if block_ms >= 1:
                    # XREAD takes the id *before* the first one wanted; the encoding is a
                    # bijection, so that is exactly position - 1.
                    after = pos.entry_id(position - 1) if position > 0 else "0-0"
                    reply = connection.client.xread({stream: after}, count=max_records, block=block_ms)
                    entries = reply[0][1] if reply else []
        return connection._records(partition, position, entries)

    @hookimpl
    def wait_for_records(connection, positions: Mapping[int, int], timeout_s: float) -> list[int]:
        """One ``XREAD COUNT 1 [BLOCK ms] STREAMS <stream>... <id(position - 1)>...`` over
        every partition: it answers at once with the streams that have an entry at or
        after their position, else blocks until one has. XREAD only reads (no consumer
        group): the entries it returns are still there for the fetch."""
        ready = []
        after: dict[str, str] = {}
        for partition, position in positions.items():
            try:
                connection._check_position(partition, position)
            except PositionOutOfRangeError:
                ready.append(partition)  # not a position: the fetch reports it
                continue
            after[connection.stream(partition)] = pos.entry_id(position - 1) if position > 0 else "0-0"
        if ready or not after:
            return sorted(ready)
        block_ms = math.ceil(timeout_s * 1000) if timeout_s > 0 else None
        with connection._errors("wait for records"):
            reply = connection.client.xread(after, count=1, block=block_ms)
        partition_of = {connection.stream(p): p for p in positions}
        names = (name.decode() if isinstance(name, bytes) else name for name, _entries in reply or ())
        return sorted(partition_of[name] for name in names)

    def _records(self, partition: int, position: int, entries: list[Entry]) -> FetchResult:
        if not entries:
            return FetchResult([], position)  # an empty fetch does not move
        records: list[LogRecord] = []
        for raw_id, fields in entries:
            at = pos.encode(raw_id)
            try:
                records.append(_record(at, raw_id, fields))
            except ValueError as err:
                if records:  # return what precedes it; the next fetch starts at it and raises
                    return FetchResult(records, at)
                raise CorruptRecordError(
                    f"the stream entry {raw_id.decode()} at position {at} is not a readable "
                    f"tablelog record: {err}",
                    topic=self.topic, partition=partition,
                ) from None
        return FetchResult(records, records[-1].position + 1)


def _record(position: int, raw_id: bytes, fields: Mapping[bytes, bytes]) -> LogRecord:
    token = fields.get(TOKEN)
    if token is None:  # foreign: not written by tablelog
        return LogRecord(
            position, fields.get(KEY), fields.get(VALUE), None, None, pos.parse_id(raw_id)[0]
        )
    if VALUE not in fields:
        raise ValueError("it has a writer token but no value")
    try:
        seq = int(fields[SEQ])
        stamp = int(fields[TS])
        text = token.decode()
    except (KeyError, ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"bad token, seq or ts field ({err!r})") from None
    if seq < 0:
        raise ValueError(f"negative sequence number {seq}")
    return LogRecord(position, fields.get(KEY), fields[VALUE], text, seq, stamp)


def _timestamp(raw_id: bytes, fields: Mapping[bytes, bytes]) -> int:
    """An entry's record timestamp for seeking: its ``ts`` field, else the id's time."""
    try:
        return int(fields[TS])
    except (KeyError, ValueError):
        return pos.parse_id(raw_id)[0]
