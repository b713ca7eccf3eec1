"""The read side: fetch records of a partition from an explicit position.

One consumer per connection, assigned (never subscribed: no consumer group)
to every partition fetched so far. The consumer keeps fetching ahead on all
of them; records of other partitions than the one asked for wait in a
per-partition buffer, and a partition whose buffer is full is paused. A
partition is re-positioned only when a fetch asks for another position than
where it stands (or somewhere in its buffer), so sequential fetches cost no
round trip of their own. ``prefetch`` positions every partition a reader is
about to read at once, so that switching partitions waits for nothing.

``fetch_values`` skips the headers: reading them is confluent-kafka's largest
per-record cost (``Message.headers()`` builds a list of tuples per record; see
docs/performance-history.md), and the reader asks for values only where it knows every
record is a committed one. Messages become records in :mod:`tablelog_kafka.records`.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from tablelog.plugin import (
    FetchResult,
    LogSystemError,
    OptionError,
    PositionOutOfRangeError,
    ValuesResult,
)

from .client_events import ClientEvents
from .config import KafkaSettings
from .failures import describe, translate
from .records import Tokens, to_records

#: Records (and bytes of values) of a partition buffered while another one is read;
#: then it is paused.
_BUFFER_LIMIT = 50_000
_BUFFER_BYTES = 32 << 20
#: Messages a wait takes from the consumer without waiting, to learn which partitions have some.
_WAIT_TAKES = 10_000

# Unbound C methods: map() and groupby() call them without a Python frame per message.
_offset: Any = Message.offset
_value: Any = Message.value
_error: Any = Message.error
_partition: Any = Message.partition

_EOF = KafkaError._PARTITION_EOF
_OUT_OF_RANGE = frozenset({KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET})


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
        self._buffered_bytes: dict[int, int] = {}
        self._paused: set[int] = set()
        #: partition -> error seen while reading another partition
        self._errors: dict[int, KafkaError] = {}
        self._tokens = Tokens()
        self._events = ClientEvents(settings)

    def _client(self) -> Consumer:
        if self._consumer is None:
            config: dict[str, Any] = self._settings.consumer_config("tablelog-fetch")
            try:
                self._consumer = Consumer({**config, **self._events.hooks()})
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

    def _reposition(self, consumer: Consumer, partition: int, position: int, check_start: bool = True) -> None:
        if check_start:
            low = self._start_position(partition)
            if position < low:
                raise self._out_of_range(partition, position, f"the log starts at {low}")
        tp = TopicPartition(self._settings.topic, partition, position)
        self._buffers.pop(partition, None)
        self._buffered_bytes.pop(partition, None)
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
        messages = self._fetched(partition, position, max_records, timeout_s)
        if not messages:
            return FetchResult([], position)
        records = to_records(messages, self._tokens)
        return FetchResult(records, records[-1].position + 1)

    def fetch_values(self, partition: int, position: int, max_records: int, timeout_s: float) -> ValuesResult:
        messages = self._fetched(partition, position, max_records, timeout_s)
        if not messages:
            return ValuesResult([], range(0), position)
        first: Any = messages[0].offset()
        last: Any = messages[-1].offset()
        # Offsets of a partition only grow: the first and last tell whether they are
        # consecutive, and then no offset needs reading one by one.
        positions = range(first, last + 1) if last - first + 1 == len(messages) else list(map(_offset, messages))
        return ValuesResult(list(map(_value, messages)), positions, last + 1)

    def _fetched(self, partition: int, position: int, max_records: int, timeout_s: float) -> list[Message]:
        """``_messages`` with the arguments checked and client errors as LogSystemErrors."""
        if position < 0:
            raise ValueError(f"position must be >= 0, got {position}")
        if max_records <= 0:
            return []
        try:
            return self._messages(partition, position, max_records, timeout_s)
        except KafkaException as exc:
            self._forget(partition)
            raise translate(
                exc, self._settings, f"cannot fetch from position {position}",
                LogSystemError, topic=self._settings.topic, partition=partition, events=self._events,
            ) from None

    def _forget(self, partition: int) -> None:
        """Drop what we believe about a partition so that the next fetch re-positions it."""
        self._next.pop(partition, None)
        self._buffers.pop(partition, None)
        self._buffered_bytes.pop(partition, None)
        if self._consumer is not None:
            with contextlib.suppress(KafkaException):
                self._consumer.incremental_unassign([TopicPartition(self._settings.topic, partition)])
        self._paused.discard(partition)

    def prefetch(self, positions: dict[int, int]) -> None:
        """Assign and position every partition now, so that the consumer fetches all of
        them at once; their records wait in the buffers until they are asked for."""
        consumer = self._client()
        try:
            for partition, position in sorted(positions.items()):
                if position >= 0 and not self._stands_at(partition, position):
                    self._reposition(consumer, partition, position, check_start=False)
        except KafkaException:
            pass  # only a hint: the fetch at that position reports what is wrong

    def wait_for_records(self, positions: dict[int, int], timeout_s: float) -> list[int]:
        """The partitions of ``positions`` with records (or an error) waiting in the buffers,
        once one has or ``timeout_s`` passed. Every partition is assigned and positioned, as
        ``prefetch`` does, so the one consumer waits on all of them; what it receives
        meanwhile stays in the buffers for the next ``fetch``."""
        consumer = self._client()
        try:
            for partition, position in sorted(positions.items()):
                if not self._stands_at(partition, position):
                    self._reposition(consumer, partition, position, check_start=False)
            deadline = time.monotonic() + max(0.0, timeout_s)
            messages = consumer.consume(_WAIT_TAKES, 0)
            while True:
                # No partition is being fetched (-1): every message goes to its buffer.
                self._sort(messages, -1, 0, [])
                ready = [p for p in sorted(positions) if self._buffers.get(p) or p in self._errors]
                remaining = deadline - time.monotonic()
                if ready or remaining <= 0:
                    return ready
                messages = consumer.consume(1, remaining)
        except KafkaException as exc:
            raise translate(
                exc, self._settings, "cannot wait for records", LogSystemError,
                topic=self._settings.topic, events=self._events,
            ) from None

    def _stands_at(self, partition: int, position: int) -> bool:
        """Whether the next record of ``partition`` the consumer gives (or has buffered)
        is at ``position``; buffered records before it are dropped (skipped over)."""
        buffered = self._buffers.get(partition)
        if buffered:
            head: Any = buffered[0].offset()
            if head == position:
                return True
            tail: Any = buffered[-1].offset()
            if head < position <= tail + 1:
                skip = bisect.bisect_left(buffered, position, key=_offset)
                self._unbuffer(partition, skip)
                self._next[partition] = position
                return True
            return False
        return self._next.get(partition) == position

    def _messages(self, partition: int, position: int, max_records: int, timeout_s: float) -> list[Message]:
        """Up to ``max_records`` messages of ``partition`` at ``position`` or later, from
        the buffer or the consumer; waits up to ``timeout_s`` for the first one."""
        consumer = self._client()
        if not self._stands_at(partition, position):
            self._reposition(consumer, partition, position)
        error = self._errors.pop(partition, None)
        if error is not None:
            self._forget(partition)
            raise self._out_of_range(partition, position, describe(error, self._settings.secrets))

        out: list[Message] = []
        if self._buffers.get(partition):
            out = self._unbuffer(partition, max_records)
        else:
            deadline = time.monotonic() + max(0.0, timeout_s)
            while not out:
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
                self._sort(messages, partition, position, out)
        if out:
            last: Any = out[-1].offset()
            self._next[partition] = last + 1
        else:
            self._check_not_past_end(consumer, partition, position)
        return out

    def _sort(self, messages: list[Message], partition: int, position: int, out: list[Message]) -> None:
        """Append the messages of ``partition`` to ``out`` in order; buffer the other
        partitions' messages; turn errors into exceptions. Messages come in runs of
        one partition (a fetch response's batch): one check per run, not per message."""
        for p, run in itertools.groupby(messages, _partition):
            group = list(run)
            if any(map(_error, group)):
                for msg in group:
                    self._one(msg, partition, position, out)
            elif p == partition:
                first: Any = group[0].offset()
                if first < position:
                    group = [m for m in group if _offset(m) >= position]
                out.extend(group)
            elif p in self._next:
                self._buffer(p, group)

    def _buffer(self, partition: int, messages: list[Message]) -> None:
        """Keep another partition's messages until it is fetched; pause it when full."""
        buffer = self._buffers.setdefault(partition, [])
        buffer.extend(messages)
        size = self._buffered_bytes.get(partition, 0) + sum(map(len, messages))
        self._buffered_bytes[partition] = size
        if (len(buffer) >= _BUFFER_LIMIT or size >= _BUFFER_BYTES) and partition not in self._paused:
            self._client().pause([TopicPartition(self._settings.topic, partition)])
            self._paused.add(partition)

    def _one(self, msg: Message, partition: int, position: int, out: list[Message]) -> None:
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
            if _offset(msg) >= position:
                out.append(msg)
        elif p in self._next:
            self._buffer(p, [msg])

    def _unbuffer(self, partition: int, count: int) -> list[Message]:
        """Take the first ``count`` buffered messages of ``partition``; resume it once empty."""
        buffered = self._buffers[partition]
        taken = buffered[:count]
        del buffered[:count]
        if buffered:
            self._buffered_bytes[partition] -= sum(map(len, taken))
        else:
            self._buffered_bytes.pop(partition, None)
            if partition in self._paused:
                self._client().resume([TopicPartition(self._settings.topic, partition)])
                self._paused.discard(partition)
        return taken

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
        self._buffered_bytes.clear()
        self._paused.clear()
        self._errors.clear()
        if consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()
