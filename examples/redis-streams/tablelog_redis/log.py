"""One table's log on Redis Streams: what the hooks in :mod:`tablelog_redis.plugin` call.

Layout on the server, for the topic ``T`` (``redis.topic``, default the table name):

* ``T:0``, ``T:1``, ... one stream per partition; table bucket b is stream ``T:b``.
* ``T:meta``, a hash: ``partitions`` (the partition count, written once with
  HSETNX, so concurrent creators agree), ``created-by``, ``table``.

A record is one stream entry with the fields ``token`` (the writer token, utf-8),
``seq`` and ``ts`` (ASCII decimal sequence number and epoch-millis timestamp),
``key`` (left out for a null key) and ``value`` (bytes, possibly empty). An entry
without ``token`` is a foreign record (someone else's XADD): it is returned with
``token=None``, and the core reports or skips it. An entry with ``token`` whose
other fields do not parse is corrupt: never returned as data.

Positions encode entry ids (:mod:`tablelog_redis.positions`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import redis

from tablelog.plugin import (
    CorruptRecordError,
    FetchResult,
    LogConfig,
    LogRecord,
    LogSystemError,
    LogUnavailableError,
    OptionError,
    PositionOutOfRangeError,
    ProduceBatch,
    ProducedRange,
    ProduceError,
    SeekKind,
    SeekSpec,
    TopicError,
)

from . import __version__
from . import positions as pos
from .config import RedisSettings, client_key

TOKEN, SEQ, TS, KEY, VALUE = b"token", b"seq", b"ts", b"key", b"value"

#: Entries read per XRANGE while scanning for a timestamp.
SCAN_CHUNK = 1000

Entry = tuple[bytes, Mapping[bytes, bytes]]


class RedisStreamsLog:
    """The connection object of the ``redis`` log system (what ``open_log`` returns).

    Opening does no I/O: redis-py connects on the first command. Used by one
    thread at a time (the hook contract); its repr never shows a secret.
    """

    def __init__(self, config: LogConfig, settings: RedisSettings):
        self.config = config
        self.settings = settings
        self.topic = config.topic
        kwargs: dict[str, Any] = {}
        if settings.password is not None:
            kwargs["password"] = settings.password
        try:
            # Any: redis-py annotates replies as one union of its sync and async forms.
            self.client: Any = redis.Redis.from_url(settings.client_url(), **kwargs)
            # Build (not connect) one connection now, so a client option redis-py does
            # not know fails here, naming its key, instead of at the first write.
            pool = self.client.connection_pool
            pool.connection_class(**pool.connection_kwargs)
        except TypeError as err:
            name = str(err).rsplit("argument", 1)[-1].strip(" '\"")
            raise OptionError(
                f"unknown option {client_key(name)!r}: not a tablelog option of the redis log "
                f"system nor a redis-py connection setting ({err})"
            ) from None
        except ValueError as err:  # redis-py's conversion of a client option's value
            raise OptionError(f"invalid redis client option: {err}") from None
        self.partitions: int | None = None  # known once ensure_topic ran
        self.closed = False
        self._pipe: Any = self.client.pipeline(transaction=False)
        self._queued: list[tuple[str, int]] = []  # (token, partition) of each queued XADD
        self._ranges: dict[tuple[str, int], list[int]] = {}  # -> [first, last, count]
        self._failed: dict[int, str] = {}  # partition -> first failure
        self._unreachable: str | None = None  # why the server could not be reached, since the last flush

    # ------------------------------------------------------------------ naming

    def stream(self, partition: int) -> str:
        return f"{self.topic}:{partition}"

    @property
    def meta_key(self) -> str:
        return f"{self.topic}:meta"

    def __repr__(self) -> str:
        return (
            f"RedisStreamsLog(table={self.config.table!r}, topic={self.topic!r}, "
            f"url={self.settings.shown_url()!r}, options={self.settings.shown_options()!r}"
            f"{', closed' if self.closed else ''})"
        )

    __str__ = __repr__

    # ------------------------------------------------------------------ errors

    @contextmanager
    def _errors(self, what: str, partition: int | None = None) -> Iterator[None]:
        """Turn redis-py's exceptions into tablelog's, naming topic and partition
        (and the server with any password redacted)."""
        if self.closed:
            raise LogSystemError("the redis log connection is closed", topic=self.topic)
        try:
            yield
        except redis.AuthenticationError as err:
            raise LogUnavailableError(
                f"redis at {self.settings.shown_url()} refused the credentials while trying to "
                f"{what} ({err}); check redis.password and the user in redis.url",
                topic=self.topic, partition=partition,
            ) from None
        except (redis.ConnectionError, redis.TimeoutError) as err:
            raise LogUnavailableError(
                f"redis at {self.settings.shown_url()} cannot be reached to {what}: {err}",
                topic=self.topic, partition=partition,
            ) from None
        except redis.ResponseError as err:
            raise LogSystemError(
                f"redis refused to {what}: {err}", topic=self.topic, partition=partition
            ) from None

    def _info(self, partition: int) -> dict[str, Any] | None:
        """XINFO STREAM of the partition's stream, or None when the stream does not exist."""
        try:
            info: dict[str, Any] = self.client.xinfo_stream(self.stream(partition))
        except redis.ResponseError as err:
            if "no such key" in str(err).lower():
                return None
            raise
        return info

    def _end(self, partition: int, info: Mapping[str, Any] | None) -> int:
        """The end position: one past the last id the stream ever generated (deleted
        entries included), so the next entry's position is >= it."""
        if info is None:
            raise PositionOutOfRangeError(
                f"stream {self.stream(partition)!r} does not exist: the topic was deleted, never "
                "created, or has fewer partitions",
                topic=self.topic, partition=partition,
            )
        return pos.encode(info["last-generated-id"]) + 1

    def _check_position(self, partition: int, position: int) -> None:
        try:
            pos.decode(position)
        except ValueError as err:
            raise PositionOutOfRangeError(str(err), topic=self.topic, partition=partition) from None

    # ------------------------------------------------------------------ topic

    def ensure_topic(self) -> int:
        needed = self.config.partitions
        with self._errors("create the topic"):
            existing = self.client.hget(self.meta_key, "partitions")
            if existing is None:
                if not self.config.auto_register:
                    raise TopicError(
                        f"topic {self.topic!r} does not exist on redis at "
                        f"{self.settings.shown_url()} (no hash {self.meta_key!r}) and "
                        "log.system.auto-register is false: create it with auto-register on once",
                        topic=self.topic,
                    )
                self._create_streams(needed)
                # HSETNX: when two writers create the topic at once, the first count wins
                # and both read it back below.
                self.client.hsetnx(self.meta_key, "partitions", needed)
                self.client.hsetnx(self.meta_key, "created-by", f"tablelog-redis-streams {__version__}")
                self.client.hsetnx(self.meta_key, "table", self.config.table)
                existing = self.client.hget(self.meta_key, "partitions")
            count = int(existing)
            if count < needed:
                raise TopicError(
                    f"topic {self.topic!r} has {count} partitions but the table needs {needed} "
                    "(bucket b is written to partition b): use another redis.topic, or delete "
                    f"the streams {self.topic}:* and {self.meta_key!r} to recreate it",
                    topic=self.topic,
                )
            pipe = self.client.pipeline(transaction=False)
            for partition in range(count):
                pipe.type(self.stream(partition))
            kinds = pipe.execute()
        wrong = [
            (p, k.decode() if isinstance(k, bytes) else k) for p, k in enumerate(kinds)
            if (k.decode() if isinstance(k, bytes) else k) != "stream"
        ]
        if wrong:
            partition, kind = wrong[0]
            raise TopicError(
                f"topic {self.topic!r} should have {count} partitions, but the key "
                f"{self.stream(partition)!r} is " + ("missing (deleted?)" if kind == "none" else f"a {kind}, not a stream"),
                topic=self.topic, partition=partition,
            )
        self.partitions = count
        return count

    def _create_streams(self, count: int) -> None:
        """Create ``count`` empty streams. Redis has no "create stream": creating a
        consumer group with MKSTREAM does, and the group is dropped at once."""
        group = f"tablelog-create-{uuid.uuid4().hex}"
        pipe = self.client.pipeline(transaction=False)
        for partition in range(count):
            pipe.xgroup_create(self.stream(partition), group, id="$", mkstream=True)
            pipe.xgroup_destroy(self.stream(partition), group)
        for partition, result in enumerate(pipe.execute(raise_on_error=False)[::2]):
            if isinstance(result, Exception):
                raise TopicError(
                    f"cannot create stream {self.stream(partition)!r}: {result}",
                    topic=self.topic, partition=partition,
                )

    # ------------------------------------------------------------------ produce

    def produce(self, batch: ProduceBatch) -> None:
        if self.closed:
            raise LogSystemError("the redis log connection is closed", topic=self.topic)
        partition = batch.partition
        if partition < 0 or (self.partitions is not None and partition >= self.partitions):
            raise ProduceError(
                f"partition {partition} does not exist: the topic has {self.partitions} partitions",
                topic=self.topic, partition=partition,
            )
        stream = self.stream(partition)
        token = batch.token.encode()
        stamp = str(batch.timestamp_ms).encode()
        for i, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True)):
            fields = {TOKEN: token, SEQ: str(batch.first_seq + i).encode(), TS: stamp, VALUE: value}
            if key is not None:
                fields[KEY] = key
            # NOMKSTREAM: a missing stream is an error, never created by a write.
            self._pipe.xadd(stream, fields, nomkstream=True)
            self._queued.append((batch.token, partition))
            if len(self._queued) >= self.settings.pipeline_size:
                self._send()

    def _send(self) -> None:
        """Send the queued XADDs in one round trip and note the ids the server gave them.

        Failures are remembered and raised by the next ``flush``. redis-py retries a
        pipeline after a dropped connection, so an XADD may land twice: both copies
        carry the same (token, seq), the range below covers the acknowledged one, and
        readers drop the other (the core's duplicate check by sequence number).
        """
        queued, self._queued = self._queued, []
        if not queued:
            return
        try:
            results = self._pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError) as err:
            self._pipe.reset()
            # An outage, not a refusal: the next flush raises LogUnavailableError.
            self._unreachable = self._unreachable or f"redis at {self.settings.shown_url()} cannot be reached: {err}"
            for _, partition in queued:
                self._failed.setdefault(partition, self._unreachable)
            return
        for (token, partition), result in zip(queued, results, strict=True):
            if result is None:
                self._failed.setdefault(
                    partition, f"the stream {self.stream(partition)!r} does not exist "
                    "(the topic has fewer partitions, or was deleted)"
                )
            elif isinstance(result, Exception):
                self._failed.setdefault(partition, f"redis refused the record: {result}")
            else:
                position = pos.encode(result)
                produced = self._ranges.get((token, partition))
                if produced is None:
                    self._ranges[(token, partition)] = [position, position, 1]
                else:
                    produced[1] = position
                    produced[2] += 1

    def flush(self, timeout_s: float) -> list[ProducedRange]:
        if self.closed:
            raise LogSystemError("the redis log connection is closed", topic=self.topic)
        self._send()
        ranges, self._ranges = self._ranges, {}
        failed, self._failed = self._failed, {}
        unreachable, self._unreachable = self._unreachable, None
        if unreachable is not None:
            raise LogUnavailableError(f"records could not be written: {unreachable}", topic=self.topic)
        if failed:
            partition, reason = next(iter(failed.items()))
            raise ProduceError(
                f"records could not be written: {reason}", topic=self.topic, partition=partition
            )
        if ranges and self.settings.wait_replicas > 0:
            wanted = self.settings.wait_replicas
            timeout_ms = max(1, min(self.settings.wait_timeout_ms, int(timeout_s * 1000)))
            with self._errors("wait for replicas"):
                acked = int(self.client.wait(wanted, timeout_ms))
            if acked < wanted:
                partition = next(iter(ranges))[1]
                raise ProduceError(
                    f"only {acked} of the {wanted} replicas (redis.wait-replicas) acknowledged the "
                    f"records within {timeout_ms} ms",
                    topic=self.topic, partition=partition,
                )
        return [
            ProducedRange(token, partition, first, last, count)
            for (token, partition), (first, last, count) in ranges.items()
        ]

    # ------------------------------------------------------------------ read

    def end_positions(self, partitions: list[int]) -> dict[int, int]:
        with self._errors("read the end positions"):
            pipe = self.client.pipeline(transaction=False)
            for partition in partitions:
                pipe.xinfo_stream(self.stream(partition))
            results = pipe.execute(raise_on_error=False)
        ends = {}
        for partition, info in zip(partitions, results, strict=True):
            if isinstance(info, Exception):
                if "no such key" in str(info).lower():
                    raise TopicError(
                        f"stream {self.stream(partition)!r} does not exist", topic=self.topic,
                        partition=partition,
                    )
                raise LogSystemError(f"XINFO STREAM failed: {info}", topic=self.topic, partition=partition)
            ends[partition] = self._end(partition, info)
        return ends

    def seek(self, partition: int, spec: SeekSpec) -> int:
        with self._errors("seek", partition):
            info = self._info(partition)
            end = self._end(partition, info)
            if spec.kind is SeekKind.LATEST:
                return end
            if spec.kind is SeekKind.EARLIEST:
                assert info is not None
                first = info.get("first-entry")
                return pos.encode(first[0]) if first else end
            if spec.kind is SeekKind.TIMESTAMP:
                return self._seek_timestamp(partition, spec.value, end)
            position = spec.value
            self._check_position(partition, position)
            if position > end:
                raise PositionOutOfRangeError(
                    f"position {pos.describe(position)} is past the end of the stream "
                    f"({pos.describe(end)})",
                    topic=self.topic, partition=partition,
                )
            first = info.get("first-entry") if info is not None else None
            earliest = pos.encode(first[0]) if first else end
            if position < earliest:
                raise PositionOutOfRangeError(
                    f"position {pos.describe(position)} is before the earliest entry the stream still "
                    f"holds ({pos.describe(earliest)}): trimmed or deleted",
                    topic=self.topic, partition=partition,
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

    def fetch(self, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        self._check_position(partition, position)
        if max_records <= 0:
            return FetchResult([], position)
        stream = self.stream(partition)
        with self._errors("fetch", partition):
            entries = self.client.xrange(stream, min=pos.entry_id(position), max="+", count=max_records)
            if not entries:
                end = self._end(partition, self._info(partition))
                if position > end:
                    raise PositionOutOfRangeError(
                        f"position {pos.describe(position)} is past the end of the stream "
                        f"({pos.describe(end)}): the stream was replaced or the position is not from it",
                        topic=self.topic, partition=partition,
                    )
                block_ms = int(timeout_s * 1000)
                if block_ms >= 1:
                    # XREAD takes the id *before* the first one wanted; the encoding is a
                    # bijection, so that is exactly position - 1.
                    after = pos.entry_id(position - 1) if position > 0 else "0-0"
                    reply = self.client.xread({stream: after}, count=max_records, block=block_ms)
                    entries = reply[0][1] if reply else []
        return self._records(partition, position, entries)

    def wait_for_records(self, positions: Mapping[int, int], timeout_s: float) -> list[int]:
        """One ``XREAD COUNT 1 [BLOCK ms] STREAMS <stream>... <id(position - 1)>...`` over
        every partition: it answers at once with the streams that have an entry at or
        after their position, else blocks until one has. XREAD only reads (no consumer
        group): the entries it returns are still there for the fetch."""
        ready = []
        after: dict[str, str] = {}
        for partition, position in positions.items():
            try:
                self._check_position(partition, position)
            except PositionOutOfRangeError:
                ready.append(partition)  # not a position: the fetch reports it
                continue
            after[self.stream(partition)] = pos.entry_id(position - 1) if position > 0 else "0-0"
        if ready or not after:
            return sorted(ready)
        block_ms = math.ceil(timeout_s * 1000) if timeout_s > 0 else None
        with self._errors("wait for records"):
            reply = self.client.xread(after, count=1, block=block_ms)
        partition_of = {self.stream(p): p for p in positions}
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

    # ------------------------------------------------------------------ close

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._pipe.reset()
        self.client.close()
        self.client.connection_pool.disconnect()


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
