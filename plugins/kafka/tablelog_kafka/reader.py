"""The read side: fetch records of a partition from an explicit position.

One consumer per connection, assigned (never subscribed: no consumer group)
to every partition fetched so far. The consumer keeps fetching ahead on all
of them; records of other partitions than the one asked for wait in a
per-partition buffer, and a partition whose buffer is full is paused. A
partition is re-positioned only when a fetch asks for another position than
where it stands, so sequential fetches cost no round trip of their own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from tablelog.errors import LogSystemError, OptionError, PositionOutOfRangeError
from tablelog.records import FetchResult, LogRecord

from .config import KafkaSettings
from .failures import describe, translate
from .producer import SEQ_HEADER, TOKEN_HEADER

#: Records of a partition buffered while another one is read; then it is paused.
_BUFFER_LIMIT = 50_000

_EOF = KafkaError._PARTITION_EOF
_OUT_OF_RANGE = frozenset({KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET})


class _Tokens(dict[bytes, str]):
    """utf-8 token bytes -> str, decoded once per distinct token."""

    def __missing__(self, raw: bytes) -> str:
        if len(self) > 10_000:
            self.clear()
        text = raw.decode("utf-8")
        self[raw] = text
        return text


def _to_record(msg: Message, tokens: _Tokens) -> LogRecord:
    """Slow path: headers in another order, missing, or undecodable (foreign records)."""
    token: str | None = None
    seq: int | None = None
    headers: Any = msg.headers() or ()
    for name, raw in headers:
        if not isinstance(raw, bytes):
            continue
        if name == TOKEN_HEADER and token is None:
            try:
                token = tokens[raw]
            except UnicodeDecodeError:
                token = None
        elif name == SEQ_HEADER and seq is None:
            try:
                seq = int(raw) if raw.isdigit() else None
            except ValueError:
                seq = None
    if token is None or seq is None:
        token, seq = None, None
    return LogRecord(msg.offset() or 0, msg.key(), msg.value(), token, seq, msg.timestamp()[1])


class FetchSide:
    def __init__(self, settings: KafkaSettings, start_position: Callable[[int], int],
                 end_position: Callable[[int], int]):
        self._settings = settings
        self._start_position = start_position
        self._end_position = end_position
        self._consumer: Consumer | None = None
        #: partition -> the position its next record from the consumer will have
        self._next: dict[int, int] = {}
        #: partition -> messages consumed for it but not returned yet (in order)
        self._buffers: dict[int, list[Message]] = {}
        self._paused: set[int] = set()
        #: partition -> error seen while reading another partition
        self._errors: dict[int, KafkaError] = {}
        self._tokens = _Tokens()

    def _client(self) -> Consumer:
        if self._consumer is None:
            config: dict[str, Any] = self._settings.consumer_config("tablelog-fetch")
            try:
                self._consumer = Consumer(config)
            except KafkaException as exc:
                raise OptionError(
                    "invalid kafka consumer option: " + describe(exc, self._settings.secrets)
                ) from None
        return self._consumer

    def _out_of_range(self, partition: int, position: int, detail: str) -> PositionOutOfRangeError:
        return PositionOutOfRangeError(
            f"position {position} is not in the log: {detail}",
            topic=self._settings.topic, partition=partition,
        )

    def _reposition(self, consumer: Consumer, partition: int, position: int) -> None:
        low = self._start_position(partition)
        if position < low:
            raise self._out_of_range(partition, position, f"the log starts at {low}")
        tp = TopicPartition(self._settings.topic, partition, position)
        self._buffers.pop(partition, None)
        self._errors.pop(partition, None)
        if partition in self._next:
            if partition in self._paused:
                consumer.resume([TopicPartition(self._settings.topic, partition)])
                self._paused.discard(partition)
            consumer.seek(tp)
        else:
            consumer.incremental_assign([tp])
        self._next[partition] = position

    def fetch(self, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        if position < 0:
            raise ValueError(f"position must be >= 0, got {position}")
        if max_records <= 0:
            return FetchResult([], position)
        topic = self._settings.topic
        try:
            return self._fetch(partition, position, max_records, timeout_s)
        except KafkaException as exc:
            self._forget(partition)
            raise translate(
                exc, self._settings.secrets, f"cannot fetch from position {position}",
                LogSystemError, topic=topic, partition=partition,
            ) from None

    def _forget(self, partition: int) -> None:
        """Drop what we believe about a partition so that the next fetch re-positions it."""
        self._next.pop(partition, None)
        self._buffers.pop(partition, None)
        if self._consumer is not None:
            with contextlib.suppress(KafkaException):
                self._consumer.incremental_unassign([TopicPartition(self._settings.topic, partition)])
        self._paused.discard(partition)

    def _fetch(self, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        consumer = self._client()
        buffered = self._buffers.get(partition)
        expected = buffered[0].offset() if buffered else self._next.get(partition)
        if expected != position:
            self._reposition(consumer, partition, position)
            buffered = None
        error = self._errors.pop(partition, None)
        if error is not None:
            self._forget(partition)
            raise self._out_of_range(partition, position, describe(error, self._settings.secrets))

        records: list[LogRecord] = []
        if buffered:
            take = buffered[:max_records]
            del buffered[:max_records]
            self._take(take, partition, position, records)
            if not buffered and partition in self._paused:
                consumer.resume([TopicPartition(self._settings.topic, partition)])
                self._paused.discard(partition)
            if records:
                self._next[partition] = records[-1].position + 1
                return FetchResult(records, records[-1].position + 1)

        deadline = time.monotonic() + max(0.0, timeout_s)
        while not records:
            messages = consumer.consume(max_records, 0)
            if not messages:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Wait for the first record only, then take what is already there.
                messages = consumer.consume(1, remaining)
                if not messages:
                    break
                if max_records > 1:
                    messages.extend(consumer.consume(max_records - 1, 0))
            self._take(messages, partition, position, records)
        if records:
            self._next[partition] = records[-1].position + 1
            return FetchResult(records, records[-1].position + 1)
        self._check_not_past_end(consumer, partition, position)
        return FetchResult([], position)

    def _take(self, messages: list[Message], partition: int, position: int, out: list[LogRecord]) -> None:
        """Append the records of ``partition`` to ``out`` in order; buffer the
        other partitions' records; turn errors into exceptions."""
        tokens = self._tokens
        append = out.append
        new = tuple.__new__  # what LogRecord(...) does, without its Python-level __new__
        for msg in messages:
            h: Any = msg.headers()  # list of (str, bytes | None) for a record
            # Fast path: a record of this partition with the two headers tablelog
            # writes, in the order it writes them (error events carry no headers).
            if h is not None and len(h) == 2 and msg.partition() == partition:
                (tname, traw), (sname, sraw) = h
                if tname == TOKEN_HEADER and sname == SEQ_HEADER and traw and sraw.isdigit():
                    try:
                        token = tokens[traw]
                    except UnicodeDecodeError:
                        pass
                    else:
                        offset: Any = msg.offset()
                        if offset >= position:
                            append(new(LogRecord, (offset, msg.key(), msg.value(), token,
                                                   int(sraw), msg.timestamp()[1])))
                        continue
            self._slow(msg, partition, position, out)

    def _slow(self, msg: Message, partition: int, position: int, out: list[LogRecord]) -> None:
        p = msg.partition()
        err = msg.error()
        if err is not None:
            code = err.code()
            if code == _EOF:
                return
            if p is None or p < 0:
                raise KafkaException(err)
            if p != partition:
                self._errors[p] = err  # raised when that partition is fetched
                return
            self._forget(partition)
            if code in _OUT_OF_RANGE:
                raise self._out_of_range(partition, position, describe(err, self._settings.secrets))
            raise LogSystemError(
                f"cannot fetch from position {position}: " + describe(err, self._settings.secrets),
                topic=self._settings.topic, partition=partition,
            )
        if p == partition:
            if (msg.offset() or 0) >= position:
                out.append(_to_record(msg, self._tokens))
        elif p in self._next:
            buffer = self._buffers.setdefault(p, [])
            buffer.append(msg)
            if len(buffer) >= _BUFFER_LIMIT and p not in self._paused:
                self._client().pause([TopicPartition(self._settings.topic, p)])
                self._paused.add(p)

    def _check_not_past_end(self, consumer: Consumer, partition: int, position: int) -> None:
        """An empty fetch: the position may lie past the end (a lost or recreated topic).
        Cheap check against the high watermark of the last fetch response; confirmed
        with a real end look-up before raising."""
        try:
            _, high = consumer.get_watermark_offsets(
                TopicPartition(self._settings.topic, partition), cached=True
            )
        except KafkaException:
            return
        if high is None or high < 0 or position <= high:
            return
        end = self._end_position(partition)
        if position > end:
            self._forget(partition)
            raise self._out_of_range(partition, position, f"the log ends at {end}")

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        self._next.clear()
        self._buffers.clear()
        self._paused.clear()
        self._errors.clear()
        if consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()
