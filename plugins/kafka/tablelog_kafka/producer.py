"""The write side: produce batches to partition = bucket and track where they landed.

Delivery tracking is cheap on purpose: the per-record Python work is one
``Producer.produce`` call. Each (token, partition) gets a :class:`_Range`; the
first and last record of every batch report their offsets. The records in
between report nothing when the producer runs with the gapless guarantee and
no message time-out (then one of them cannot fail while a later one is
delivered: any such failure is fatal and fails the flush); with a user-set
message time-out they report failures through a cheap callback.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from tablelog.plugin import (
    LogUnavailableError,
    OptionError,
    ProduceBatch,
    ProducedRange,
    ProduceError,
)

from .client_events import ClientEvents
from .config import KafkaSettings
from .failures import delivery_failure, describe, first_contact, translate

TOKEN_HEADER = "tablelog.token"
SEQ_HEADER = "tablelog.seq"

#: How long produce() waits for room in a full client queue before trying again.
_FULL_QUEUE_POLL_S = 0.05


class _Range:
    """Offsets and failures of one (token, partition) since the last flush."""

    __slots__ = ("token", "partition", "first", "last", "count", "error")

    def __init__(self, token: str, partition: int):
        self.token = token
        self.partition = partition
        self.first = -1
        self.last = -1
        self.count = 0
        self.error: KafkaError | None = None

    def on_edge(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            if self.error is None:
                self.error = err
            return
        offset = msg.offset()
        if offset is None or offset < 0:
            return
        if self.first < 0 or offset < self.first:
            self.first = offset
        if offset > self.last:
            self.last = offset

    def on_middle(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None and self.error is None:
            self.error = err


class ProduceSide:
    """One idempotent producer per connection, created on first use."""

    def __init__(self, settings: KafkaSettings):
        self._settings = settings
        self._producer: Producer | None = None
        self._ranges: dict[tuple[str, int], _Range] = {}
        self._events = ClientEvents(settings)

    def _client(self) -> Producer:
        if self._producer is None:
            config: dict[str, Any] = {**self._settings.producer_config(), **self._events.hooks()}
            try:
                producer = Producer(config)
            except KafkaException as exc:
                raise OptionError(
                    "invalid kafka producer option: " + describe(exc, self._settings.secrets)
                ) from None
            self._producer = producer
        return self._producer

    def reach(self) -> Producer:
        """The producer, once it has had an answer from the brokers (see
        :func:`~tablelog_kafka.failures.first_contact`); a produce alone never waits for that."""
        producer = self._client()
        first_contact(self._events, producer)
        return producer

    def produce(self, batch: ProduceBatch) -> None:
        n = len(batch.values)
        if n == 0:
            return
        keys = batch.keys
        if len(keys) != n:
            raise ValueError(f"batch has {len(keys)} keys for {n} values")
        partition = batch.partition
        topic = self._settings.topic
        key = (batch.token, partition)
        rng = self._ranges.get(key)
        if rng is None:
            rng = self._ranges[key] = _Range(batch.token, partition)
        produce = self._client().produce
        values = batch.values
        timestamp = batch.timestamp_ms
        token_header = (TOKEN_HEADER, batch.token.encode())
        seq = batch.first_seq
        edge = rng.on_edge
        middle = None if self._settings.edge_reports_only else rng.on_middle
        last = n - 1
        # First and last record report their offsets; the ones between report failures
        # only (or nothing): three runs, so that the loop picks no callback per record.
        runs = ((0, 1, edge), (1, last, middle), (last, n, edge)) if n > 1 else ((0, 1, edge),)
        i = 0
        try:
            for start, stop, callback in runs:
                i = start
                while i < stop:
                    try:
                        # The loop stays tight: one produce call per record, headers built
                        # inline, arguments by position (no keyword dict per call):
                        # (topic, value, key, partition, on_delivery, callback, timestamp,
                        # headers), the order of confluent-kafka's C signature.
                        while i < stop:
                            produce(topic, values[i], keys[i], partition, callback, None, timestamp,
                                    [token_header, (SEQ_HEADER, b"%d" % (seq + i))])
                            i += 1
                    except BufferError:
                        # The client queue is full: serve delivery reports until there is room.
                        self._producer.poll(_FULL_QUEUE_POLL_S)  # type: ignore[union-attr]
        except KafkaException as exc:
            raise translate(
                exc, self._settings, f"cannot produce record {i} of the batch",
                ProduceError, topic=topic, partition=partition, events=self._events,
            ) from None
        finally:
            rng.count += i

    def flush(self, timeout_s: float) -> list[ProducedRange]:
        ranges, self._ranges = self._ranges, {}
        if self._producer is None:
            return []
        topic = self._settings.topic
        remaining = self._producer.flush(max(0.0, timeout_s))
        failure: ProduceError | LogUnavailableError | None = None
        if self._events.fatal is not None:
            failure = ProduceError(
                "the kafka producer failed fatally: " + delivery_failure(self._events.fatal, self._settings),
                topic=topic,
                partition=next(iter(ranges.values())).partition if ranges else None,
            )
        else:
            for rng in ranges.values():
                if rng.error is not None:
                    failure = ProduceError(
                        f"delivery failed for writer token {rng.token!r} ({rng.count} record(s) "
                        "produced since the last flush): "
                        + delivery_failure(rng.error, self._settings),
                        topic=topic, partition=rng.partition,
                    )
                    break
        if failure is None and remaining > 0 and self._events.unreachable is not None:
            failure = LogUnavailableError(
                f"{remaining} record(s) not acknowledged within {timeout_s:g} s: the brokers "
                f"{self._settings.bootstrap_servers} cannot be reached ("
                + describe(self._events.unreachable, self._settings.secrets) + ")",
                topic=topic,
            )
        if failure is None and remaining > 0:
            unacked = [r for r in ranges.values() if r.count and r.last < 0] or list(ranges.values())
            cause = self._events.cause()
            why = f" ({delivery_failure(cause, self._settings)})" if cause is not None else ""
            failure = ProduceError(
                f"{remaining} record(s) not acknowledged by the Kafka brokers at "
                f"{self._settings.bootstrap_servers} within {timeout_s:g} s{why}",
                topic=topic,
                partition=unacked[0].partition if unacked else None,
            )
        if failure is None:
            missing = [r for r in ranges.values() if r.count and (r.first < 0 or r.last < 0)]
            if missing:
                failure = ProduceError(
                    "the log acknowledged records without their positions",
                    topic=topic, partition=missing[0].partition,
                )
        if failure is not None:
            self._discard_pending()
            raise failure
        self._events.unreachable = None
        return [
            ProducedRange(token=r.token, partition=r.partition, first=r.first, last=r.last, count=r.count)
            for r in ranges.values()
            if r.count
        ]

    def _discard_pending(self) -> None:
        """After a failed flush: drop what is still queued so that the next flush
        does not wait for this attempt, and replace a producer in a fatal state."""
        producer = self._producer
        if producer is None:
            return
        try:
            producer.purge(True, True, False)
            producer.poll(0)
        except (KafkaException, RuntimeError, NotImplementedError):
            pass
        # A fresh producer (new idempotent producer id) for the next attempt: the old
        # one may be in a fatal state, or turn fatal over what was just purged.
        self._producer = None
        self._events = ClientEvents(self._settings)

    def close(self) -> None:
        producer, self._producer = self._producer, None
        self._ranges = {}
        if producer is None:
            return
        # Unflushed records may be lost (the hook's contract): do not wait for them.
        try:
            producer.purge(True, True, False)
            producer.flush(0)
        except (KafkaException, RuntimeError, NotImplementedError):
            pass
