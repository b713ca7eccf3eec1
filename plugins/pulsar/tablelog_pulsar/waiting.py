"""Waiting for records on several partitions at once (the ``wait_for_records`` hook), for
:class:`tablelog_pulsar.reader.Reader`.

Each partition's reader is opened (or kept) at the position asked for, and the broker
pushes messages into its receive queue; one loop looks into every queue, every
``_INTERVAL_S``, without a broker call. A message taken from a queue is kept as the
reader's pending message, which the next fetch returns first. A reader that stops
delivering (pulsar-lite, see :meth:`Reader._stuck`) would make the wait miss its records
for good, so silent readers are asked whether they are stuck, one per
``_STUCK_CHECK_S`` in turn (that asks the broker): an idle wait's broker calls do not grow
with the partitions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pulsar

from tablelog.plugin import LogSystemError, PositionOutOfRangeError
from tablelog_pulsar import positions
from tablelog_pulsar.failures import PulsarException, translate

if TYPE_CHECKING:
    from tablelog_pulsar.config import PulsarConfig
    from tablelog_pulsar.opened import OpenReader

#: How often a wait looks into the readers' receive queues.
_INTERVAL_S = 0.005
#: How often a wait asks one silent reader whether it is stuck.
_STUCK_CHECK_S = 0.2


class RecordWaits:
    """One wait for records on several partitions, of :class:`tablelog_pulsar.reader.Reader` (a mixin of it)."""

    if TYPE_CHECKING:  # what the mixin uses of the reader it is mixed into
        _config: PulsarConfig
        _open: dict[int, OpenReader]
        stuck_turn: int
        def _reader_at(self, partition: int, position: int) -> OpenReader: ...
        def _close_reader(self, partition: int) -> None: ...
        def _stuck(self, partition: int, opened: OpenReader) -> bool: ...
        def _check_partition(self, partition: int) -> None: ...
        def _check_position(self, partition: int, position: int) -> None: ...

    def wait_for_records(self, starts: dict[int, int], timeout_s: float) -> list[int]:
        """The partitions of ``starts`` whose reader has a message at or after the position,
        once one has or ``timeout_s`` passed; a position that is not one is returned at once
        (the fetch reports it)."""
        ready: list[int] = []
        for partition, position in sorted(starts.items()):
            self._check_partition(partition)
            try:
                self._check_position(partition, position)
            except PositionOutOfRangeError:
                ready.append(partition)
                continue
            self._reader_at(partition, position)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        last_stuck_check = time.monotonic()
        while True:
            ready += [p for p in sorted(starts) if p not in ready and self._has_message(p, starts[p])]
            remaining = deadline - time.monotonic()
            if ready or remaining <= 0:
                return ready
            if time.monotonic() - last_stuck_check >= _STUCK_CHECK_S:
                last_stuck_check = time.monotonic()
                self._replace_if_stuck(sorted(starts))
            time.sleep(min(_INTERVAL_S, remaining))

    def _has_message(self, partition: int, position: int) -> bool:
        """Whether the partition's reader has a message at or after ``position`` in its
        receive queue (kept as the reader's pending message)."""
        opened = self._open[partition]
        if opened.pending is not None:
            if opened.pending[1] >= position:
                return True
            opened.pending = None
        topic = self._config.partition_topic(partition)
        try:
            while True:
                message = opened.reader._reader.read_next(0)
                found = positions.encode_message_id(message.message_id())
                if found >= position:  # else delivered again (pulsar-lite): dropped, as a fetch does
                    opened.pending = (message, found)
                    opened.active = time.monotonic()
                    return True
        except pulsar.Timeout:
            return False
        except PulsarException as err:
            self._close_reader(partition)
            raise translate(err, "reading", self._config, topic=topic, partition=partition) from None
        except positions.PositionRangeError as err:
            self._close_reader(partition)
            raise LogSystemError(
                f"pulsar: message id cannot be a position: {err}", topic=topic, partition=partition
            ) from None

    def _replace_if_stuck(self, partitions: list[int]) -> None:
        """Ask one of the partitions' readers, in turn, whether it is stuck; replace it if so."""
        partition = partitions[self.stuck_turn % len(partitions)]
        self.stuck_turn += 1
        opened = self._open.get(partition)
        if opened is not None and opened.pending is None and self._stuck(partition, opened):
            self._close_reader(partition)
            self._reader_at(partition, opened.position)
