"""Reading: fetch, seek and end positions of the partition topics.

**Fetch.** One ``pulsar.Reader`` per partition, opened *inclusive* at the message
id that the requested position decodes to, and kept open while fetches continue
where the previous one stopped or a little after it (up to 64 entries: the next
snapshot's records). A fetch from any other position closes it and opens a new
reader there: ``Reader.seek`` does not redeliver on pulsar-lite, and a new
reader at a message id is what works on every broker. Every message below the
requested position is dropped on our side, so a position that is not a message
id (an end position, ``last + 1``) never returns a record twice: the broker may
start at the whole entry (a batch) or at the next one. ``fetch_values`` reads
only each message's id and data. There is no ``prefetch``: a reader opened while
others receive opens much more slowly than one opened alone, which costs more than
reading the partitions in turn (docs/performance-history.md). An idle reader waits on the open
readers of all its partitions at once (:mod:`tablelog_pulsar.waiting`).

**End positions and seeks** are in :mod:`tablelog_pulsar.ends`: the end position is
the position of the last message + 1; seek by time scans the records.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import pulsar

from tablelog.plugin import (
    FetchResult,
    LogRecord,
    LogSystemError,
    PositionOutOfRangeError,
    TopicError,
    ValuesResult,
)
from tablelog_pulsar import codec, positions
from tablelog_pulsar.config import PulsarConfig
from tablelog_pulsar.ends import EndPositions
from tablelog_pulsar.failures import PulsarException, translate
from tablelog_pulsar.opened import OpenReader
from tablelog_pulsar.waiting import RecordWaits

_TIMEOUT = pulsar.Timeout

#: How far ahead of an open reader a fetch may start and still use it: 64 entries.
_SKIP_AHEAD = 64 << positions.BATCH_BITS

#: A reader that delivered nothing for this long is checked (at most every
#: _STUCK_CHECK_EVERY_S) against the broker's end of its partition; if the partition has
#: more for it, it is stuck and is replaced. Seen on pulsar-lite: a reader that had caught up
#: stopped delivering while a new reader at the same position got the messages at once; and
#: a reader that was waiting when its broker went down and came back delivers nothing, and
#: its has_message_available() waits the operation time-out (and is never answered at all
#: once the reader is closed), so the broker is asked through a consumer of its own.
_STUCK_AFTER_S = 0.2
_STUCK_CHECK_EVERY_S = 0.5
#: The longest one wait of a fetch for its first record, in milliseconds.
_READ_SLICE_MS = 500


class Reader(EndPositions, RecordWaits):
    """The reading side of one connection."""

    def __init__(self, config: PulsarConfig, client: Callable[[], Any]):
        self._config = config
        self._client = client
        self._open: dict[int, OpenReader] = {}
        self.stuck_turn = 0  # which silent reader a wait for records asks next whether it is stuck
        self._topic_exists = False  # known once an empty-looking partition made us look
        self.operation_timeout_ms = config.operation_timeout_s * 1000

    # -- readers -------------------------------------------------------------------------

    def _create_reader(self, partition: int, position: int, *, queue: int | None = None) -> Any:
        topic = self._config.partition_topic(partition)
        start = pulsar.MessageId.earliest if position == 0 else positions.to_message_id(position)
        kwargs = dict(self._config.reader_kwargs)
        if queue is not None:
            kwargs["receiver_queue_size"] = queue
        try:
            return self._client().create_reader(topic, start, start_message_id_inclusive=True, **kwargs)
        except PulsarException as err:
            raise translate(err, "opening a reader", self._config, topic=topic, partition=partition) from None

    def _reader_at(self, partition: int, position: int) -> OpenReader:
        current = self._open.get(partition)
        if current is not None and current.position <= position <= current.position + _SKIP_AHEAD:
            # Nearly where the open reader stands (the next snapshot's records start a
            # little after the last one's end): read on and drop what lies before, rather
            # than a new reader (a round trip, and the messages it had received).
            return current
        if current is not None:
            self._close_reader(partition)
        opened = OpenReader(self._create_reader(partition, position), position)
        self._open[partition] = opened
        return opened

    def _close_reader(self, partition: int) -> None:
        current = self._open.pop(partition, None)
        if current is not None:
            with contextlib.suppress(Exception):
                current.reader.close()

    # -- fetch ---------------------------------------------------------------------------

    def fetch(self, partition: int, position: int, max_records: int, timeout_s: float) -> FetchResult:
        messages, found = self._messages(partition, position, max_records, timeout_s)
        records: list[LogRecord] = []
        append = records.append
        new = tuple.__new__  # what LogRecord(...) does, without its Python-level __new__
        # codec.to_record inlined: it runs for every record.
        TOKEN, SEQ, KEY_ENCODING = codec.TOKEN, codec.SEQ, codec.KEY_ENCODING  # noqa: N806
        for message, record_position in zip(messages, found, strict=True):
            properties = message.properties()
            token = properties.get(TOKEN)
            seq_text = properties.get(SEQ)
            seq: int | None = None
            if seq_text is not None:
                try:
                    seq = int(seq_text)
                except ValueError:
                    seq = None
            if seq is None:
                token = None  # not written by tablelog (or damaged metadata): foreign
            encoding = properties.get(KEY_ENCODING)
            if encoding is None:
                partition_key = message.partition_key()
                key = partition_key.encode("utf-8") if partition_key else None
            else:
                key = codec.record_key(message.partition_key(), encoding)
            timestamp = message.event_timestamp() or message.publish_timestamp()
            append(new(LogRecord, (record_position, key, message.data(), token, seq, int(timestamp))))
        return FetchResult(records, found[-1] + 1 if found else position)

    def fetch_values(self, partition: int, position: int, max_records: int, timeout_s: float) -> ValuesResult:
        messages, found = self._messages(partition, position, max_records, timeout_s)
        return ValuesResult([message.data() for message in messages], found, found[-1] + 1 if found else position)

    def _messages(self, partition: int, position: int, max_records: int, timeout_s: float) -> tuple[list[Any], list[int]]:
        """Up to ``max_records`` messages at ``position`` or later and their positions, in
        order, each once; waits up to ``timeout_s`` for the first one."""
        self._check_partition(partition)
        self._check_position(partition, position)
        messages: list[Any] = []
        found: list[int] = []
        if max_records <= 0:
            return messages, found
        opened = self._reader_at(partition, position)
        raw = opened.reader._reader  # the _pulsar.Reader: no per-message wrapper objects
        deadline = time.monotonic() + max(timeout_s, 0.0)
        floor = position
        keep, note = messages.append, found.append
        pending, opened.pending = opened.pending, None
        if pending is not None and pending[1] >= floor:
            keep(pending[0])
            note(pending[1])
            floor = pending[1] + 1
        # positions.encode_message_id inlined (it runs for every record; the ids' range
        # checks stay, as one comparison chain).
        max_entry, max_batch = positions.MAX_ENTRY_ID, positions.MAX_BATCH_INDEX
        entry_shift = positions.BATCH_BITS
        ledger_shift = positions.ENTRY_BITS + positions.BATCH_BITS
        try:
            while len(found) < max_records:
                # In slices: a reader that went silent is found stuck within the time-out.
                wait_ms = 0 if found else min(max(0, int((deadline - time.monotonic()) * 1000)), _READ_SLICE_MS)
                try:
                    message = raw.read_next(wait_ms)
                except _TIMEOUT:
                    if found:
                        break
                    if self._stuck(partition, opened):
                        # Replaced at the same place; it waits for what is left of the time-out.
                        self._close_reader(partition)
                        opened = self._reader_at(partition, floor)
                        raw = opened.reader._reader
                    if time.monotonic() >= deadline:
                        break
                    continue
                mid = message.message_id()
                ledger, entry, batch = mid.ledger_id(), mid.entry_id(), mid.batch_index()
                if ledger >= 0 and 0 <= entry <= max_entry and -1 <= batch <= max_batch:
                    record_position = (ledger << ledger_shift) | (entry << entry_shift) | (batch + 1)
                else:
                    record_position = positions.encode(ledger, entry, batch)  # raises
                if record_position < floor:
                    # The broker started at the whole entry (we asked for later), or it
                    # delivered entries again: pulsar-lite re-sends already delivered
                    # entries to a reader now and then (docs/performance-history.md). Never
                    # return a record twice.
                    continue
                floor = record_position + 1
                keep(message)
                note(record_position)
        except PulsarException as err:
            self._close_reader(partition)
            raise translate(err, "reading", self._config, topic=self._config.partition_topic(partition),
                            partition=partition) from None
        except positions.PositionRangeError as err:
            self._close_reader(partition)
            raise LogSystemError(f"pulsar: message id cannot be a position: {err}",
                                 topic=self._config.partition_topic(partition), partition=partition) from None
        opened.position = floor
        if found:
            opened.active = time.monotonic()
        return messages, found

    def _stuck(self, partition: int, opened: OpenReader) -> bool:
        """Whether a reader that returns nothing is stuck: it has been silent for a while
        and the broker's end of its partition lies past its position (see _STUCK_AFTER_S;
        docs/performance-history.md)."""
        now = time.monotonic()
        if now - opened.active < _STUCK_AFTER_S or now - opened.checked < _STUCK_CHECK_EVERY_S:
            return False
        opened.checked = now
        try:
            return self.end_position(partition) > opened.position
        except (PulsarException, LogSystemError):
            return False  # the next read reports what is wrong

    # -- misc ----------------------------------------------------------------------------

    def _check_partition(self, partition: int) -> None:
        if not 0 <= partition < self._config.partitions:
            raise TopicError(
                f"partition {partition} outside 0..{self._config.partitions - 1}",
                topic=self._config.topic, partition=partition,
            )

    def _check_position(self, partition: int, position: int) -> None:
        try:
            positions.decode(position)
        except positions.PositionRangeError as err:
            raise PositionOutOfRangeError(f"pulsar: {err}", topic=self._config.partition_topic(partition),
                                          partition=partition) from None

    def close(self) -> None:
        for partition in list(self._open):
            self._close_reader(partition)
