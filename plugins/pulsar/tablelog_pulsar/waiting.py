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
    from tablelog_pulsar.reader import Reader

#: How often a wait looks into the readers' receive queues.
_INTERVAL_S = 0.005
#: How often a wait asks one silent reader whether it is stuck.
_STUCK_CHECK_S = 0.2


def wait_for_records(reader: Reader, starts: dict[int, int], timeout_s: float) -> list[int]:
    """The partitions of ``starts`` whose reader has a message at or after the position,
    once one has or ``timeout_s`` passed; a position that is not one is returned at once
    (the fetch reports it)."""
    ready: list[int] = []
    for partition, position in sorted(starts.items()):
        reader._check_partition(partition)
        try:
            reader._check_position(partition, position)
        except PositionOutOfRangeError:
            ready.append(partition)
            continue
        reader._reader_at(partition, position)
    deadline = time.monotonic() + max(timeout_s, 0.0)
    last_stuck_check = time.monotonic()
    while True:
        ready += [p for p in sorted(starts) if p not in ready and _has_message(reader, p, starts[p])]
        remaining = deadline - time.monotonic()
        if ready or remaining <= 0:
            return ready
        if time.monotonic() - last_stuck_check >= _STUCK_CHECK_S:
            last_stuck_check = time.monotonic()
            _replace_if_stuck(reader, sorted(starts))
        time.sleep(min(_INTERVAL_S, remaining))


def _has_message(reader: Reader, partition: int, position: int) -> bool:
    """Whether the partition's reader has a message at or after ``position`` in its
    receive queue (kept as the reader's pending message)."""
    opened = reader._open[partition]
    if opened.pending is not None:
        if opened.pending[1] >= position:
            return True
        opened.pending = None
    topic = reader._config.partition_topic(partition)
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
        reader._close_reader(partition)
        raise translate(err, "reading", topic=topic, partition=partition) from None
    except positions.PositionRangeError as err:
        reader._close_reader(partition)
        raise LogSystemError(
            f"pulsar: message id cannot be a position: {err}", topic=topic, partition=partition
        ) from None


def _replace_if_stuck(reader: Reader, partitions: list[int]) -> None:
    """Ask one of the partitions' readers, in turn, whether it is stuck; replace it if so."""
    partition = partitions[reader.stuck_turn % len(partitions)]
    reader.stuck_turn += 1
    opened = reader._open.get(partition)
    if opened is not None and opened.pending is None and reader._stuck(opened):
        reader._close_reader(partition)
        reader._reader_at(partition, opened.position)
