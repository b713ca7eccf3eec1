"""Where partitions start and end, and which position a timestamp maps to.

A second consumer (never used for ``fetch``) answers these, so that looking up
positions never moves the fetch consumer. Two guards for the Tansu test broker
(both harmless against Apache Kafka):

* its ListOffsets "latest" answered the base offset of the last record batch
  plus one, not the end (12 records in batches of 3 reported 10), while the
  high watermark in fetch responses was right. So the end is probed: fetch
  from ``latest - 1`` and take the largest of the listed end, the fetch
  response's high watermark and the last offset seen plus one;
* its offsets-for-times answered the partition start for every timestamp
  (Kafka answers the first offset with a timestamp >= t, or -1 when there is
  none). So the answer is verified by reading forward from it to the first
  record whose timestamp is >= t, or to the end.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from tablelog.plugin import LogSystemError, OptionError, PositionOutOfRangeError, TopicError

from .client_events import ClientEvents
from .config import KafkaSettings
from .failures import describe, first_contact, kafka_error_of, translate

_BATCH = 10_000
_MISSING = frozenset({KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART})


class OffsetsSide:
    def __init__(self, settings: KafkaSettings):
        self._settings = settings
        self._consumer: Consumer | None = None
        self._events = ClientEvents(settings)

    def _client(self) -> Consumer:
        if self._consumer is None:
            # Probes re-position for every look-up: keep the broker's long-poll short.
            config = self._settings.consumer_config("tablelog-offsets", **{"fetch.wait.max.ms": 10})
            try:
                consumer = Consumer({**config, **self._events.hooks()})
            except KafkaException as exc:
                raise OptionError(
                    "invalid kafka consumer option: " + describe(exc, self._settings.secrets)
                ) from None
            try:
                first_contact(self._events, consumer)
            except BaseException:
                consumer.close()
                raise
            self._consumer = consumer
        return self._consumer

    def _fail(self, exc: BaseException, what: str, partition: int | None) -> LogSystemError:
        # A topic or partition the brokers do not know (deleted, or a broker that lost
        # its storage) is a TopicError: readers of committed positions report lost data.
        error = kafka_error_of(exc)
        missing = error is not None and error.code() in _MISSING
        return translate(
            exc, self._settings, what, TopicError if missing else LogSystemError,
            topic=self._settings.topic, partition=partition, events=self._events,
        )

    def watermarks(self, partition: int) -> tuple[int, int]:
        """(low, high) as the broker lists them (high may be short on Tansu)."""
        tp = TopicPartition(self._settings.topic, partition)
        try:
            low, high = self._client().get_watermark_offsets(tp, timeout=self._settings.admin_timeout_s)
        except KafkaException as exc:
            raise self._fail(exc, "cannot look up the partition's offsets", partition) from None
        return int(low), int(high)

    def end_positions(self, partitions: Iterable[int]) -> dict[int, int]:
        wanted = list(dict.fromkeys(partitions))
        listed = {p: self.watermarks(p) for p in wanted}
        ends = {p: high for p, (_, high) in listed.items()}
        probe = {p: max(low, high - 1) for p, (low, high) in listed.items() if high > low}
        if probe:
            self._read(probe, ends, until_ts=None)
        return ends

    def start_position(self, partition: int) -> int:
        return self.watermarks(partition)[0]

    def timestamp_position(self, partition: int, timestamp_ms: int) -> int:
        """The first position whose record has a timestamp >= ``timestamp_ms``,
        or the end position when there is none."""
        topic = self._settings.topic
        end = self.end_positions([partition])[partition]
        low = self.start_position(partition)
        try:
            found = self._client().offsets_for_times(
                [TopicPartition(topic, partition, timestamp_ms)], timeout=self._settings.admin_timeout_s
            )[0]
        except KafkaException as exc:
            raise self._fail(exc, "cannot look up offsets for a timestamp", partition) from None
        if found.error is not None:
            raise LogSystemError(
                "cannot look up offsets for a timestamp: " + describe(found.error, self._settings.secrets),
                topic=topic, partition=partition,
            )
        start = found.offset
        if start < 0 or start >= end:
            return end
        ends = {partition: end}
        hit = self._read({partition: max(start, low)}, ends, until_ts=timestamp_ms)
        return hit if hit is not None else ends[partition]

    def _read(self, starts: dict[int, int], ends: dict[int, int], until_ts: int | None) -> int | None:
        """Read each partition from ``starts`` to its end, raising ``ends`` to the
        true end. With ``until_ts`` (one partition only): stop at and return the
        first offset with a timestamp >= until_ts."""
        topic = self._settings.topic
        consumer = self._client()
        pending = set(starts)
        deadline = time.monotonic() + self._settings.admin_timeout_s
        try:
            consumer.assign([TopicPartition(topic, p, o) for p, o in starts.items()])
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LogSystemError(
                        f"end of partition(s) {sorted(pending)} not reached within "
                        f"{self._settings.admin_timeout_s:g} s", topic=topic,
                    )
                messages = consumer.consume(_BATCH, 0) or consumer.consume(1, min(remaining, 0.5))
                for msg in messages:
                    p = msg.partition()
                    if p not in pending:
                        continue
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            ends[p] = max(ends[p], msg.offset() or 0)
                            pending.discard(p)
                            continue
                        if err.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                            raise PositionOutOfRangeError(
                                f"position {starts[p]} is out of range: "
                                + describe(err, self._settings.secrets),
                                topic=topic, partition=p,
                            )
                        raise LogSystemError(
                            "cannot read the partition: " + describe(err, self._settings.secrets),
                            topic=topic, partition=p,
                        )
                    offset = msg.offset() or 0
                    if until_ts is not None and msg.timestamp()[1] >= until_ts:
                        return offset
                    if offset + 1 >= ends[p]:
                        # At the end we believed in: the fetch response that carried this
                        # record also carried the partition's high watermark, the real end.
                        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
                        ends[p] = max(ends[p], offset + 1, high)
                        if offset + 1 >= ends[p]:
                            pending.discard(p)
        except KafkaException as exc:
            raise self._fail(exc, "cannot read the partition's end", None) from None
        finally:
            with contextlib.suppress(KafkaException):
                consumer.unassign()
        return None

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                consumer.close()
