"""End positions and seeks of the partitions, for :class:`tablelog_pulsar.reader.Reader`.

**End position** = position of the last message + 1. The broker's
``getLastMessageId`` (only a Consumer exposes it in the Python client, so a
throw-away subscription is created and removed) names the last *entry*; its
batch index is -1 on pulsar-lite, so the last entry is read to find its last
batch index. A topic with no message (pulsar-lite answers getLastMessageId with
``UnknownError: Topic has no messages``) has end position 0, once the topic's record
says that the topic exists (a missing topic looks the same to the broker).

**Seek by time** scans from the earliest record to the end position and returns
the first record whose timestamp (event time, else publish time) is >= the
time, else the end position: ``seek``-by-time on the broker does not redeliver
on pulsar-lite, and event times need not be monotonic.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pulsar

from tablelog.plugin import (
    LogRecord,
    LogUnavailableError,
    PositionOutOfRangeError,
    SeekKind,
    SeekSpec,
    TopicError,
)
from tablelog_pulsar import codec, positions, topics
from tablelog_pulsar.failures import PulsarException, translate

if TYPE_CHECKING:
    from tablelog_pulsar.config import PulsarConfig

_TIMEOUT = pulsar.Timeout


class EndPositions:
    """End positions and seeks of :class:`tablelog_pulsar.reader.Reader` (a mixin of it)."""

    if TYPE_CHECKING:  # what the mixin uses of the reader it is mixed into
        _config: PulsarConfig
        _topic_exists: bool
        operation_timeout_ms: int
        _client: Callable[[], Any]
        def _create_reader(self, partition: int, position: int, *, queue: int | None = None) -> Any: ...
        def _check_partition(self, partition: int) -> None: ...
        def _check_position(self, partition: int, position: int) -> None: ...

    def last_message_id(self, partition: int) -> Any | None:
        """The broker's last message id of the partition (entry level), None when empty."""
        topic = self._config.partition_topic(partition)
        try:
            consumer = self._client().subscribe(
                topic, f"tablelog-end-{uuid.uuid4().hex}",
                consumer_type=pulsar.ConsumerType.Exclusive,
                initial_position=pulsar.InitialPosition.Latest,
                receiver_queue_size=1,
            )
        except PulsarException as err:
            raise translate(err, "looking up the last message", self._config, topic=topic, partition=partition) from None
        try:
            return consumer.get_last_message_id()
        except pulsar.UnknownError:
            return None  # pulsar-lite: "Topic has no messages"
        except PulsarException as err:
            raise translate(err, "looking up the last message", self._config, topic=topic, partition=partition) from None
        finally:
            try:
                consumer.unsubscribe()  # a durable subscription would hold back retention
            except Exception:  # noqa: BLE001
                with contextlib.suppress(Exception):
                    consumer.close()

    def end_position(self, partition: int) -> int:
        self._check_partition(partition)
        last = self.last_message_id(partition)
        if last is None:
            return self._end_of_empty(partition)
        ledger, entry, batch = int(last.ledger_id()), int(last.entry_id()), int(last.batch_index())
        if ledger < 0:
            return self._end_of_empty(partition)
        if entry < 0:
            return positions.encode(ledger, 0, -1)  # ledger without entries yet
        if batch >= 0:
            return positions.encode(ledger, entry, batch) + 1
        return self._end_of_entry(partition, ledger, entry)

    def _end_of_empty(self, partition: int) -> int:
        """0, the end of a partition without messages, once the topic is known to exist: the
        broker answers a missing topic as an empty one, so its record tells (see
        :mod:`tablelog_pulsar.topics`); a missing topic is a ``TopicError``, never a made-up 0."""
        if not self._topic_exists:
            client = self._client()
            if not topics.partitioned_count(self._config, client) and topics.recorded_partitions(
                self._config, client, self.operation_timeout_ms
            ) is None:
                raise TopicError(
                    f"pulsar: topic {self._config.topic!r} does not exist (no topic record on "
                    f"{topics.meta_topic(self._config)!r})", topic=self._config.topic, partition=partition,
                )
            self._topic_exists = True
        return 0

    def _end_of_entry(self, partition: int, ledger: int, entry: int) -> int:
        """Last position of entry (ledger, entry) + 1: read the entry's first message, whose
        id tells whether it is a batch and how many messages the batch holds."""
        scanner = self._create_reader(partition, positions.encode(ledger, entry, -1), queue=1)
        try:
            message = scanner._reader.read_next(self.operation_timeout_ms)
            message_id = message.message_id()
        except _TIMEOUT:
            message_id = None
        except PulsarException as err:
            raise translate(err, "reading the last entry", self._config, topic=self._config.partition_topic(partition),
                            partition=partition) from None
        finally:
            with contextlib.suppress(Exception):
                scanner.close()
        if message_id is None or (int(message_id.ledger_id()), int(message_id.entry_id())) != (ledger, entry):
            # The entry could not be read back: the first position of the next entry is
            # still an exact exclusive bound.
            return positions.next_entry(ledger, entry)
        batch_index = int(message_id.batch_index())
        if batch_index < 0:
            return positions.encode(ledger, entry, -1) + 1  # not a batch: one message
        size = positions.batch_size(message_id)
        if size is None:
            return positions.next_entry(ledger, entry)
        return positions.encode(ledger, entry, size - 1) + 1

    def seek(self, partition: int, spec: SeekSpec) -> int:
        self._check_partition(partition)
        if spec.kind is SeekKind.POSITION:
            self._check_position(partition, spec.value)
        end = self.end_position(partition)
        if spec.kind is SeekKind.POSITION:
            if spec.value > end:
                raise PositionOutOfRangeError(
                    f"pulsar: position {spec.value} is past the end position {end}",
                    topic=self._config.partition_topic(partition), partition=partition,
                )
            if spec.value < end and spec.value < (earliest := self._scan(partition, end, lambda record: True)):
                raise PositionOutOfRangeError(
                    f"pulsar: position {spec.value} is before the earliest record still held ({earliest})",
                    topic=self._config.partition_topic(partition), partition=partition,
                )
            return int(spec.value)
        if spec.kind is SeekKind.LATEST or end == 0:
            return end
        if spec.kind is SeekKind.EARLIEST:
            return self._scan(partition, end, lambda record: True)
        if spec.kind is SeekKind.TIMESTAMP:
            millis = int(spec.value)
            return self._scan(partition, end, lambda record: record.timestamp_ms >= millis)
        raise ValueError(f"unknown seek kind {spec.kind!r}")

    def _scan(self, partition: int, end: int, wanted: Callable[[LogRecord], bool]) -> int:
        """The first position below ``end`` whose record is ``wanted``, else ``end``."""
        scanner = self._create_reader(partition, 0, queue=5000)
        topic = self._config.partition_topic(partition)
        try:
            raw = scanner._reader
            floor = 0
            while True:
                try:
                    message = raw.read_next(self.operation_timeout_ms)
                except _TIMEOUT:
                    # Only when `end` is a bound past the last entry (not last + 1): nothing
                    # more is there if the broker says so.
                    if not raw.has_message_available():
                        return end
                    raise LogUnavailableError(
                        f"pulsar: records below end position {end} could not be read within "
                        f"{self.operation_timeout_ms} ms", topic=topic, partition=partition,
                    ) from None
                position = positions.encode_message_id(message.message_id())
                if position < floor:
                    continue  # an entry delivered again (pulsar-lite)
                floor = position + 1
                if position >= end:
                    return end
                if wanted(codec.to_record(message, position)):
                    return position
                if position + 1 >= end:
                    return end  # that was the last record
        except PulsarException as err:
            raise translate(err, "scanning", self._config, topic=topic, partition=partition) from None
        finally:
            with contextlib.suppress(Exception):
                scanner.close()
