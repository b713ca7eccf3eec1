"""Producing: one batching producer per partition topic, acknowledgements tracked per
(token, partition) until ``flush``.

``produce`` hands each record to ``send_async``; the client's callback thread
records the acknowledged message id (or the failure). ``flush`` asks every
producer to send its open batch and waits, up to its time-out, until every
record produced since the previous flush is acknowledged; then it returns the
ranges. A failure or a time-out raises ProduceError and starts a new
generation: late callbacks of the failed attempt are ignored.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import _pulsar
import attrs
import pulsar

from tablelog.plugin import ProduceBatch, ProducedRange, ProduceError
from tablelog_pulsar import codec, positions
from tablelog_pulsar.config import PulsarConfig
from tablelog_pulsar.failures import PulsarException, describe, translate

_OK = pulsar.Result.Ok
#: The broker's default ``maxMessageSize``.
PULSAR_DEFAULT_MAX_MESSAGE_BYTES = 5 * 1024 * 1024


def _send_failure(result: Any) -> str:
    if result == pulsar.Result.MessageTooBig:
        return (
            f"send failed: {result}: a record is larger than the broker accepts (its maxMessageSize, "
            f"{PULSAR_DEFAULT_MAX_MESSAGE_BYTES} bytes by default): raise maxMessageSize on the broker, "
            "or lower the table's log.max-record-bytes (the writer's own limit) below it"
        )
    return f"send failed: {result}"


@attrs.define
class _Range:
    token: str
    partition: int
    sent: int = 0
    acked: int = 0
    first: int | None = None
    last: int | None = None
    # Whether the acknowledged ids so far follow one another with nothing between
    # (see flush), and the last one acknowledged.
    contiguous: bool = True
    previous: int = -1


@attrs.define
class _Failure:
    partition: int
    detail: str


class Writer:
    """The producing side of one connection."""

    def __init__(self, config: PulsarConfig, client: Callable[[], Any]):
        self._config = config
        self._client = client
        self._producers: dict[int, Any] = {}
        self._cond = threading.Condition()
        self._generation = 0
        self._ranges: dict[tuple[str, int], _Range] = {}
        self._outstanding = 0
        self._failures: list[_Failure] = []

    def producer(self, partition: int) -> Any:
        producer = self._producers.get(partition)
        if producer is None:
            topic = self._config.partition_topic(partition)
            kwargs = dict(self._config.producer_kwargs)
            kwargs["compression_type"] = getattr(pulsar.CompressionType, kwargs.pop("compression_type", "NONE"))
            try:
                producer = self._client().create_producer(topic, block_if_queue_full=True, **kwargs)
            except PulsarException as err:
                raise translate(err, "creating a producer", self._config, topic=topic, partition=partition) from None
            self._producers[partition] = producer
        return producer

    def produce(self, batch: ProduceBatch) -> None:
        partition = batch.partition
        if not 0 <= partition < self._config.partitions:
            raise ProduceError(
                f"partition {partition} outside 0..{self._config.partitions - 1}",
                topic=self._config.topic, partition=partition,
            )
        if len(batch.keys) != len(batch.values):
            raise ValueError(f"batch has {len(batch.keys)} keys but {len(batch.values)} values")
        producer = self.producer(partition)
        with self._cond:
            generation = self._generation
            state = self._ranges.get((batch.token, partition))
            if state is None:
                state = self._ranges[(batch.token, partition)] = _Range(batch.token, partition)

        def on_ack(result: Any, message_id: Any) -> None:
            # Runs on the client's thread; an exception escaping here would end the process.
            try:
                failure = None if result == _OK else _send_failure(result)
                position = positions.encode_message_id(message_id) if failure is None else 0
            except Exception as err:  # noqa: BLE001 - must not escape into the client thread
                failure, position = f"bad acknowledgement: {err!r}", 0
            with self._cond:
                if generation != self._generation:
                    return
                self._outstanding -= 1
                if failure is not None:
                    self._failures.append(_Failure(partition, failure))
                else:
                    state.acked += 1
                    if state.contiguous:
                        previous = state.previous
                        state.contiguous = (positions.starts_entry(position) if previous < 0
                                            else positions.follows(previous, position))
                    state.previous = position
                    if state.first is None or position < state.first:
                        state.first = position
                    if state.last is None or position > state.last:
                        state.last = position
                if self._outstanding <= 0:
                    self._cond.notify_all()

        timestamp = batch.timestamp_ms if batch.timestamp_ms > 0 else None
        count = len(batch.values)
        with self._cond:
            if generation == self._generation:
                self._outstanding += count
                state.sent += count
        # The loop builds each message with the client's native builder and hands it to
        # the native producer: what ``pulsar.Producer.send_async`` does, without its
        # per-message argument checks and keyword handling (they cost more than the send).
        send = producer._producer.send_async
        builder = _pulsar.MessageBuilder
        token = batch.token
        first_seq = batch.first_seq
        TOKEN, SEQ, KEY_ENCODING = codec.TOKEN, codec.SEQ, codec.KEY_ENCODING  # noqa: N806
        for index, (key, value) in enumerate(zip(batch.keys, batch.values, strict=True)):
            seq = first_seq + index
            if not isinstance(value, bytes):
                # as pulsar.Producer.send_async reports it
                raise ValueError(f"Argument data is expected to be of type 'bytes' and not '{type(value).__name__}'")
            message = builder().content(value).property(TOKEN, token).property(SEQ, str(seq))
            if key:
                try:
                    message.partition_key(key.decode("utf-8"))
                except UnicodeDecodeError:
                    partition_key, key_encoding = codec.key_fields(key)
                    message.partition_key(partition_key).property(KEY_ENCODING, key_encoding)
            elif key is not None:
                message.property(KEY_ENCODING, codec.KEY_EMPTY)
            if timestamp:
                message.event_timestamp(timestamp)
            try:
                send(message.build(), on_ack)
            except PulsarException as err:
                with self._cond:
                    if generation == self._generation:
                        self._outstanding -= count - index  # this record and the rest were not sent
                        state.sent -= count - index
                        self._failures.append(_Failure(partition, f"send rejected: {describe(err)}"))
                raise ProduceError(
                    f"pulsar: send of record seq {seq} rejected: {describe(err)}",
                    topic=self._config.partition_topic(partition), partition=partition,
                ) from None

    def flush(self, timeout_s: float) -> list[ProducedRange]:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        # Open batches go out after batching-max-publish-delay-ms (10 ms by default). We do
        # not call the client's flush_async: its binding keeps the GIL while it waits for
        # the producer lock, which the client thread holds while it waits for the GIL to
        # run our acknowledgement callback (a deadlock, seen with pulsar-client 3.13).
        with self._cond:
            while self._outstanding > 0 and not self._failures:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, 0.5))
            ranges = list(self._ranges.values())
            failures = list(self._failures)
            outstanding = self._outstanding
            self._generation += 1
            self._ranges = {}
            self._outstanding = 0
            self._failures = []
        if failures:
            first = failures[0]
            others = sorted({f.partition for f in failures} - {first.partition})
            raise ProduceError(
                f"pulsar: {len(failures)} record(s) not written: {first.detail}"
                + (f"; partitions {others} failed too" if others else ""),
                topic=self._config.partition_topic(first.partition), partition=first.partition,
            )
        if outstanding > 0:
            waiting = sorted({r.partition for r in ranges if r.acked < r.sent})
            first_partition = waiting[0] if waiting else 0
            raise ProduceError(
                f"pulsar: {outstanding} record(s) not acknowledged within {timeout_s}s"
                + (f"; partitions {waiting} waiting" if len(waiting) > 1 else ""),
                topic=self._config.partition_topic(first_partition), partition=first_partition,
            )
        # Contiguous: the token's acknowledged ids follow one another from an entry's
        # first message on, and it was the only token this connection's producer sent
        # to the partition since the last flush. Then its entries hold its records only:
        # an entry is one producer's batch; records of an earlier flush sit before them
        # (a producer sends in order), and later ones were sent after every one of these
        # was acknowledged. Anything else (acknowledgements out of order, a new ledger,
        # another token in the same batches) is read record by record.
        tokens_per_partition = Counter(r.partition for r in ranges)
        return [
            ProducedRange(r.token, r.partition, r.first, r.last, r.acked,
                          r.contiguous and tokens_per_partition[r.partition] == 1)
            for r in ranges
            if r.acked and r.first is not None and r.last is not None
        ]

    def close(self) -> None:
        producers, self._producers = self._producers, {}
        for producer in producers.values():
            with contextlib.suppress(Exception):
                producer.close()
        with self._cond:
            self._generation += 1
            self._ranges, self._outstanding, self._failures = {}, 0, []
            self._cond.notify_all()
